// table_test.cpp - the file interface of <uepoll/file.h> (uep_file_create
// and its wakes, pins and blocking) against its contract, with a "stack"
// whose one lock is NOT recursive: the stack holds it across every
// uep_file_notify / uep_file_set_mask / uep_file_set_error, and takes it
// inside poll, read_iter, write_iter, the socket operations and release.
// A re-entry of that lock from its own thread (what a wake running poll or
// release would do) is recorded instead of deadlocking; every test checks
// there was none.  Run under TSan with a build-tsan (-DUEPOLL_SANITIZE=thread).
#include <gtest/gtest.h>
#include <uepoll/file.h>
#include <uepoll/uepoll.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <mutex>
#include <netinet/in.h>
#include <string>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <thread>
#include <vector>

namespace {

// The stack's lock: a plain mutex that notices its owner taking it again.
struct StackLock {
  std::mutex mu;
  std::atomic<std::thread::id> owner{};
  std::atomic<int> reentered{0};
  void lock() {
    if (owner.load() == std::this_thread::get_id()) {
      reentered++;  // a deadlock on a real non-recursive lock
      return;
    }
    mu.lock();
    owner = std::this_thread::get_id();
  }
  void unlock() {
    owner = std::thread::id();
    mu.unlock();
  }
};
StackLock g_stack;

// One socket of the stack: a receive buffer filled by its peer.  Push mode
// (the stack sets the mask) or pull mode (poll reads the buffer).
struct Sock {
  std::string rx;             // guarded by g_stack
  Sock* peer = nullptr;       // guarded by g_stack
  size_t write_limit = 4096;  // bytes one write_iter takes (stream tests)
  bool eof = false;           // guarded by g_stack
  int connect_result = 0;
  uep_file* h = nullptr;
  std::atomic<int> releases{0};
  std::atomic<std::thread::id> release_thread{};
  int last_level = 0, last_name = 0;  // setsockopt seen
};

uint32_t mask_locked(Sock* s) {
  uint32_t m = EPOLLOUT | EPOLLWRNORM;
  if (!s->rx.empty()) m |= EPOLLIN | EPOLLRDNORM;
  if (s->eof) m |= EPOLLIN | EPOLLRDHUP;
  return m;
}

uint32_t op_poll(void* c) {
  std::lock_guard<StackLock> g(g_stack);
  return mask_locked(static_cast<Sock*>(c));
}

ssize_t op_read(void* c, const struct iovec* iov, int n, const uep_file_call*) {
  auto* s = static_cast<Sock*>(c);
  std::lock_guard<StackLock> g(g_stack);
  if (s->rx.empty()) return s->eof ? 0 : -EAGAIN;
  size_t done = 0;
  for (int i = 0; i < n && done < s->rx.size(); ++i) {
    const size_t k = std::min(iov[i].iov_len, s->rx.size() - done);
    std::memcpy(iov[i].iov_base, s->rx.data() + done, k);
    done += k;
  }
  s->rx.erase(0, done);
  uep_file_set_mask(s->h, mask_locked(s));  // readiness going away, lock held
  if (s->peer) uep_file_notify(s->peer->h, EPOLLOUT | EPOLLWRNORM);
  return static_cast<ssize_t>(done);
}

ssize_t op_write(void* c, const struct iovec* iov, int n, const uep_file_call*) {
  auto* s = static_cast<Sock*>(c);
  std::lock_guard<StackLock> g(g_stack);
  if (!s->peer) return -EPIPE;
  if (s->peer->rx.size() >= 8192) return -EAGAIN;
  size_t done = 0;
  for (int i = 0; i < n && done < s->write_limit; ++i) {
    const size_t k = std::min(iov[i].iov_len, s->write_limit - done);
    s->peer->rx.append(static_cast<const char*>(iov[i].iov_base), k);
    done += k;
  }
  uep_file_notify(s->peer->h, EPOLLIN | EPOLLRDNORM);  // with the stack lock held
  return static_cast<ssize_t>(done);
}

ssize_t op_sendmsg(void* c, const struct msghdr* m, const uep_file_call* call) {
  return op_write(c, m->msg_iov, static_cast<int>(m->msg_iovlen), call);
}
ssize_t op_recvmsg(void* c, struct msghdr* m, const uep_file_call* call) {
  if (call->flags & MSG_PEEK) return -EOPNOTSUPP;
  const ssize_t r = op_read(c, m->msg_iov, static_cast<int>(m->msg_iovlen), call);
  m->msg_namelen = 0;
  return r;
}

void op_release(void* c) {
  auto* s = static_cast<Sock*>(c);
  std::lock_guard<StackLock> g(g_stack);
  s->releases++;
  s->release_thread = std::this_thread::get_id();
  if (s->peer) {
    s->peer->eof = true;
    s->peer->peer = nullptr;
    uep_file_notify(s->peer->h, EPOLLIN | EPOLLRDHUP | EPOLLHUP);
  }
}

int op_ioctl(void* c, unsigned long req, void* arg, const uep_file_call*) {
  if (req != FIONREAD) return -ENOTTY;
  std::lock_guard<StackLock> g(g_stack);
  *static_cast<int*>(arg) = static_cast<int>(static_cast<Sock*>(c)->rx.size());
  return 0;
}
int op_connect(void* c, const struct sockaddr*, socklen_t, const uep_file_call*) {
  return static_cast<Sock*>(c)->connect_result;
}
int op_setsockopt(void* c, int level, int name, const void*, socklen_t) {
  auto* s = static_cast<Sock*>(c);
  s->last_level = level;
  s->last_name = name;
  return 0;
}
int op_getsockname(void*, struct sockaddr* a, socklen_t* len) {
  sockaddr_in in{};
  in.sin_family = AF_INET;
  in.sin_port = htons(7);
  std::memcpy(a, &in, std::min<size_t>(*len, sizeof in));
  *len = sizeof in;
  return 0;
}
int op_listen(void*, int backlog) { return backlog == 42 ? 0 : -EINVAL; }
ssize_t op_fdinfo(void*, char* buf, size_t len) { return snprintf(buf, len, "stack-socket: 1\n"); }

uep_file_operations make_ops(bool push) {
  uep_file_operations o{};
  o.size = sizeof o;
  o.flags = UEP_FILE_STREAM | (push ? UEP_FILE_PUSH : 0u);
  o.sock_family = AF_INET;
  o.sock_type = SOCK_STREAM;
  o.sock_protocol = IPPROTO_TCP;
  o.poll = push ? nullptr : op_poll;
  o.read_iter = op_read;
  o.write_iter = op_write;
  o.ioctl = op_ioctl;
  o.show_fdinfo = op_fdinfo;
  o.release = op_release;
  o.listen = op_listen;
  o.connect = op_connect;
  o.sendmsg = op_sendmsg;
  o.recvmsg = op_recvmsg;
  o.setsockopt = op_setsockopt;
  o.getsockname = op_getsockname;
  return o;
}
const uep_file_operations kPush = make_ops(true);
const uep_file_operations kPull = make_ops(false);

// A connected pair of stack sockets.
struct Pair {
  Sock a, b;
  int fa = -1, fb = -1;
  explicit Pair(const uep_file_operations* ops = &kPush, int flags = 0) {
    a.peer = &b;
    b.peer = &a;
    fa = uep_file_create(ops, &a, flags, EPOLLOUT | EPOLLWRNORM, &a.h);
    fb = uep_file_create(ops, &b, flags, EPOLLOUT | EPOLLWRNORM, &b.h);
  }
  ~Pair() {
    if (fa >= 0) uep_close(fa);
    if (fb >= 0) uep_close(fb);
    uep_file_put(a.h);
    uep_file_put(b.h);
  }
};

uint32_t poll_mask(int fd) {
  struct pollfd p = {fd, static_cast<short>(POLLIN | POLLOUT | POLLRDHUP), 0};
  return uep_poll(&p, 1, 0) == 1 ? static_cast<uint32_t>(p.revents) : 0;
}

TEST(FileTable, CreateErrors) {
  Sock s;
  uep_file* h = nullptr;
  EXPECT_EQ(-1, uep_file_create(&kPush, &s, O_APPEND, 0, &h));
  EXPECT_EQ(EINVAL, errno);
  EXPECT_EQ(-1, uep_file_create(nullptr, &s, 0, 0, &h));
  EXPECT_EQ(EFAULT, errno);
  EXPECT_EQ(-1, uep_file_create(&kPush, &s, 0, 0, nullptr));
  EXPECT_EQ(EFAULT, errno);
  uep_file_operations small = kPush;
  small.size = 8;
  EXPECT_EQ(-1, uep_file_create(&small, &s, 0, 0, &h));
  EXPECT_EQ(EINVAL, errno);
  uep_file_operations nopoll = kPull;
  nopoll.poll = nullptr;
  EXPECT_EQ(-1, uep_file_create(&nopoll, &s, 0, 0, &h));
  EXPECT_EQ(EINVAL, errno);
  EXPECT_EQ(0, s.releases.load());
}

TEST(FileTable, PushedMaskDrivesEpollAndPoll) {
  Pair p;
  ASSERT_GE(p.fa, 0);
  const int ep = uep_epoll_create1(0);
  epoll_event ev{EPOLLIN | EPOLLET, {}};
  ev.data.u32 = 1;
  ASSERT_EQ(0, uep_epoll_ctl(ep, EPOLL_CTL_ADD, p.fb, &ev));
  epoll_event out[4];
  EXPECT_EQ(0, uep_epoll_wait(ep, out, 4, 0));
  EXPECT_EQ(POLLOUT, poll_mask(p.fb) & (POLLIN | POLLOUT));
  ASSERT_EQ(3, uep_write(p.fa, "abc", 3));
  EXPECT_EQ(1, uep_epoll_wait(ep, out, 4, 0));
  EXPECT_EQ(0, uep_epoll_wait(ep, out, 4, 0));  // ET: one edge per notify
  EXPECT_TRUE(poll_mask(p.fb) & POLLIN);
  int n = 0;
  ASSERT_EQ(0, uep_ioctl(p.fb, FIONREAD, &n));
  EXPECT_EQ(3, n);
  char buf[8];
  ASSERT_EQ(3, uep_read(p.fb, buf, sizeof buf));
  EXPECT_FALSE(poll_mask(p.fb) & POLLIN);  // set_mask took it away
  {
    std::lock_guard<StackLock> g(g_stack);  // wakes under the stack lock
    uep_file_set_mask(p.b.h, EPOLLIN | EPOLLOUT);
  }
  EXPECT_EQ(1, uep_epoll_wait(ep, out, 4, 0));
  uep_close(ep);
  EXPECT_EQ(0, g_stack.reentered.load());
}

TEST(FileTable, NotifyMaskSetsTheMaskAndWakesForTheKey) {
  Pair p;
  const int ep = uep_epoll_create1(0);
  epoll_event ev{EPOLLIN | EPOLLET, {}};
  ASSERT_EQ(0, uep_epoll_ctl(ep, EPOLL_CTL_ADD, p.fb, &ev));
  epoll_event out[2];
  {
    std::lock_guard<StackLock> g(g_stack);
    uep_file_notify_mask(p.b.h, EPOLLIN | EPOLLOUT, EPOLLOUT);  // IN rises, the wake is for OUT only
  }
  EXPECT_EQ(0, uep_epoll_wait(ep, out, 2, 0));  // the ET item wanted IN: not woken
  EXPECT_TRUE(poll_mask(p.fb) & POLLIN);        // but the mask has it
  uep_file_notify_mask(p.b.h, EPOLLIN | EPOLLOUT, EPOLLIN);  // no change, a wake for IN: an edge
  EXPECT_EQ(1, uep_epoll_wait(ep, out, 2, 0));
  uep_file_notify_mask(p.b.h, EPOLLOUT, 0);  // IN falls; key 0 wakes every waiter
  EXPECT_FALSE(poll_mask(p.fb) & POLLIN);
  uep_close(ep);
  EXPECT_EQ(0, g_stack.reentered.load());
}

TEST(FileTable, PullFileIsPolledAfterOperationsOnly) {
  Pair p(&kPull);
  ASSERT_GE(p.fa, 0);
  EXPECT_EQ(POLLOUT, poll_mask(p.fb) & (POLLIN | POLLOUT));
  ASSERT_EQ(2, uep_write(p.fa, "hi", 2));  // notifies b with the stack lock held
  EXPECT_TRUE(poll_mask(p.fb) & POLLIN);
  char buf[4];
  ASSERT_EQ(2, uep_read(p.fb, buf, sizeof buf));
  EXPECT_FALSE(poll_mask(p.fb) & POLLIN);  // the refresh after the read
  EXPECT_EQ(0, g_stack.reentered.load());
}

TEST(FileTable, ReleaseRunsInTheClosingThreadOrTheReleaseThread) {
  auto* p = new Pair;
  const int fa = p->fa;
  p->fa = -1;
  // A dup keeps the file open; the last close releases in this thread.
  const int d = uep_dup(fa);
  ASSERT_EQ(0, uep_close(fa));
  EXPECT_EQ(0, p->a.releases.load());
  ASSERT_EQ(0, uep_close(d));
  EXPECT_EQ(1, p->a.releases.load());
  EXPECT_EQ(std::this_thread::get_id(), p->a.release_thread.load());
  uep_file_notify(p->a.h, EPOLLIN);  // after release: nothing
  uep_file_set_error(p->a.h, ECONNRESET);
  // A pin outlives the close; its put hands the release to uepoll's thread.
  void* ctx = nullptr;
  uep_file* pin = uep_file_get(p->fb, &kPush, &ctx);
  ASSERT_NE(nullptr, pin);
  EXPECT_EQ(&p->b, ctx);
  ASSERT_EQ(0, uep_close(p->fb));
  p->fb = -1;
  EXPECT_EQ(0, p->b.releases.load());
  {
    std::lock_guard<StackLock> g(g_stack);
    uep_file_put(pin);  // never the release here (it takes the stack lock)
  }
  for (int i = 0; i < 2000 && p->b.releases.load() == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(1, p->b.releases.load());
  EXPECT_NE(std::this_thread::get_id(), p->b.release_thread.load());
  delete p;
  EXPECT_EQ(0, g_stack.reentered.load());
}

TEST(FileTable, GetChecksTheDescriptor) {
  Pair p;
  EXPECT_EQ(nullptr, uep_file_get(UEP_FD_BASE + 999999, &kPush, nullptr));
  EXPECT_EQ(EBADF, errno);
  const int e = uep_eventfd(0, 0);
  EXPECT_EQ(nullptr, uep_file_get(e, &kPush, nullptr));
  EXPECT_EQ(ENOTSOCK, errno);
  EXPECT_EQ(nullptr, uep_file_get(0, &kPush, nullptr));  // a kernel descriptor
  EXPECT_EQ(ENOTSOCK, errno);
  EXPECT_EQ(nullptr, uep_file_get(p.fa, &kPull, nullptr));  // another table
  EXPECT_EQ(ENOTSOCK, errno);
  const int d = uep_dup(p.fa);
  void* ctx = nullptr;
  uep_file* pin = uep_file_get(d, &kPush, &ctx);
  ASSERT_NE(nullptr, pin);
  EXPECT_EQ(&p.a, ctx);
  uep_file_put(pin);
  uep_close(d);
  uep_close(e);
}

TEST(FileTable, SocketCallsReachTheOperations) {
  Pair p;
  ASSERT_EQ(4, uep_send(p.fa, "ping", 4, 0));
  char buf[16];
  ASSERT_EQ(4, uep_recv(p.fb, buf, sizeof buf, 0));
  struct iovec iov[2] = {{const_cast<char*>("ab"), 2}, {const_cast<char*>("cd"), 2}};
  ASSERT_EQ(4, uep_writev(p.fa, iov, 2));
  struct msghdr m{};
  struct iovec riov = {buf, sizeof buf};
  m.msg_iov = &riov;
  m.msg_iovlen = 1;
  ASSERT_EQ(4, uep_recvmsg(p.fb, &m, 0));
  EXPECT_EQ(0, std::memcmp(buf, "abcd", 4));
  EXPECT_EQ(-1, uep_recv(p.fb, buf, sizeof buf, MSG_DONTWAIT));
  EXPECT_EQ(EAGAIN, errno);
  int v = 0;
  socklen_t len = sizeof v;
  ASSERT_EQ(0, uep_getsockopt(p.fa, SOL_SOCKET, SO_TYPE, &v, &len));
  EXPECT_EQ(SOCK_STREAM, v);
  ASSERT_EQ(0, uep_getsockopt(p.fa, SOL_SOCKET, SO_DOMAIN, &v, &len));
  EXPECT_EQ(AF_INET, v);
  ASSERT_EQ(0, uep_setsockopt(p.fa, IPPROTO_TCP, 1, &v, sizeof v));
  EXPECT_EQ(IPPROTO_TCP, p.a.last_level);
  sockaddr_in in{};
  len = sizeof in;
  ASSERT_EQ(0, uep_getsockname(p.fa, reinterpret_cast<sockaddr*>(&in), &len));
  EXPECT_EQ(htons(7), in.sin_port);
  EXPECT_EQ(-1, uep_getpeername(p.fa, reinterpret_cast<sockaddr*>(&in), &len));
  EXPECT_EQ(EOPNOTSUPP, errno);
  EXPECT_EQ(0, uep_listen(p.fa, 42));
  EXPECT_EQ(-1, uep_accept4(p.fa, nullptr, nullptr, 0));
  EXPECT_EQ(EOPNOTSUPP, errno);
  EXPECT_EQ(-1, uep_accept4(p.fa, nullptr, nullptr, 0x7));
  EXPECT_EQ(EINVAL, errno);
  EXPECT_EQ(-1, uep_bind(p.fa, reinterpret_cast<sockaddr*>(&in), sizeof in));
  EXPECT_EQ(EOPNOTSUPP, errno);
  struct stat st;
  ASSERT_EQ(0, uep_fstat(p.fa, &st));
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  char info[512];
  ASSERT_GT(uep_fdinfo(p.fa, info, sizeof info), 0);
  EXPECT_NE(nullptr, std::strstr(info, "stack-socket: 1\n"));
  const int e = uep_eventfd(0, 0);
  EXPECT_EQ(-1, uep_listen(e, 1));
  EXPECT_EQ(ENOTSOCK, errno);
  uep_close(e);
  EXPECT_EQ(0, g_stack.reentered.load());
}

TEST(FileTable, PendingErrorChannel) {
  Pair p;
  {
    std::lock_guard<StackLock> g(g_stack);
    uep_file_set_error(p.a.h, ECONNRESET);
  }
  EXPECT_TRUE(poll_mask(p.fa) & POLLERR);
  char buf[4];
  EXPECT_EQ(-1, uep_recv(p.fa, buf, sizeof buf, MSG_DONTWAIT));
  EXPECT_EQ(ECONNRESET, errno);  // once
  EXPECT_FALSE(poll_mask(p.fa) & POLLERR);
  EXPECT_EQ(-1, uep_recv(p.fa, buf, sizeof buf, MSG_DONTWAIT));
  EXPECT_EQ(EAGAIN, errno);
  uep_file_set_error(p.a.h, EPIPE);
  int v = 0;
  socklen_t len = sizeof v;
  ASSERT_EQ(0, uep_getsockopt(p.fa, SOL_SOCKET, SO_ERROR, &v, &len));
  EXPECT_EQ(EPIPE, v);
  ASSERT_EQ(0, uep_getsockopt(p.fa, SOL_SOCKET, SO_ERROR, &v, &len));
  EXPECT_EQ(0, v);
}

TEST(FileTable, BlockingConnectReturnsThePendingError) {
  Pair p;
  p.a.connect_result = -EINPROGRESS;
  uep_file_set_mask(p.a.h, 0);  // connecting: not writable yet
  sockaddr_in in{};
  in.sin_family = AF_INET;
  std::thread t([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    std::lock_guard<StackLock> g(g_stack);
    uep_file_set_error(p.a.h, ECONNREFUSED);
  });
  EXPECT_EQ(-1, uep_connect(p.fa, reinterpret_cast<sockaddr*>(&in), sizeof in));
  EXPECT_EQ(ECONNREFUSED, errno);
  t.join();
  int fl = uep_fcntl(p.fa, F_GETFL);
  uep_fcntl(p.fa, F_SETFL, fl | O_NONBLOCK);
  EXPECT_EQ(-1, uep_connect(p.fa, reinterpret_cast<sockaddr*>(&in), sizeof in));
  EXPECT_EQ(EINPROGRESS, errno);
}

TEST(FileTable, BlockingReadWaitsForItsKeyAndTimesOut) {
  Pair p;
  std::atomic<long> got{-2};
  std::thread r([&] {
    char buf[8];
    got = uep_read(p.fb, buf, sizeof buf);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  {
    std::lock_guard<StackLock> g(g_stack);
    uep_file_notify(p.b.h, EPOLLOUT);  // not a key the reader waits for
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  EXPECT_EQ(-2, got.load());
  ASSERT_EQ(2, uep_write(p.fa, "ok", 2));
  r.join();
  EXPECT_EQ(2, got.load());
  struct timeval tv = {0, 50000};
  ASSERT_EQ(0, uep_setsockopt(p.fb, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv));
  struct timeval back{};
  socklen_t len = sizeof back;
  ASSERT_EQ(0, uep_getsockopt(p.fb, SOL_SOCKET, SO_RCVTIMEO, &back, &len));
  EXPECT_EQ(50000, back.tv_usec);
  const auto t0 = std::chrono::steady_clock::now();
  char buf[8];
  EXPECT_EQ(-1, uep_read(p.fb, buf, sizeof buf));
  EXPECT_EQ(EAGAIN, errno);
  EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(45));
}

void on_usr1(int) {}

TEST(FileTable, SignalEndsABlockedRecvWithEintr) {
  Pair p;
  struct sigaction sa{}, old{};
  sa.sa_handler = on_usr1;
  sigaction(SIGUSR1, &sa, &old);
  std::atomic<long> got{-2};
  std::atomic<int> err{0};
  pthread_t self{};
  std::atomic<bool> started{false}, done{false};
  std::thread r([&] {
    self = pthread_self();
    started = true;
    char buf[8];
    got = uep_recv(p.fb, buf, sizeof buf, 0);
    err = errno;
    done = true;
  });
  while (!started) std::this_thread::yield();
  // A signal that lands before the thread is asleep runs its handler and is
  // gone; the call then blocks.  So it is sent again until the call returns.
  for (int i = 0; i < 500 && !done; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    if (!done) pthread_kill(self, SIGUSR1);
  }
  r.join();
  EXPECT_EQ(-1, got.load());
  EXPECT_EQ(EINTR, err.load());
  sigaction(SIGUSR1, &old, nullptr);
}

TEST(FileTable, BlockingStreamWriteCompletes) {
  Pair p;
  p.a.write_limit = 1000;  // the stack takes at most 1000 bytes a call
  std::string big(100000, 'x');
  std::atomic<size_t> drained{0};
  std::thread reader([&] {
    char buf[4096];
    while (drained < big.size()) {
      const ssize_t r = uep_read(p.fb, buf, sizeof buf);
      if (r <= 0) break;
      drained += static_cast<size_t>(r);
    }
  });
  EXPECT_EQ(static_cast<ssize_t>(big.size()), uep_write(p.fa, big.data(), big.size()));
  reader.join();
  EXPECT_EQ(big.size(), drained.load());
  // Non-blocking: the partial count the stack takes.
  uep_fcntl(p.fa, F_SETFL, O_NONBLOCK);
  EXPECT_EQ(1000, uep_write(p.fa, big.data(), big.size()));
}

// MSG_WAITALL on a blocking stream socket: uepoll repeats the receive until
// the whole count (the writer's stack takes 1000 bytes a call), then stops
// at the end of the stream with the partial count; push and pull files.
TEST(FileTable, BlockingRecvWaitallCompletes) {
  for (const uep_file_operations* ops : {&kPush, &kPull}) {
    Pair p(ops);
    p.a.write_limit = 1000;
    std::string big(100000, 'x');
    for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>('a' + i % 26);
    std::thread writer([&] { EXPECT_EQ(static_cast<ssize_t>(big.size()), uep_write(p.fa, big.data(), big.size())); });
    std::string got(big.size(), '\0');
    EXPECT_EQ(static_cast<ssize_t>(big.size()), uep_recv(p.fb, got.data(), got.size(), MSG_WAITALL));
    writer.join();
    EXPECT_EQ(big, got);
    // 10 bytes, then the peer's close: the 10, then 0.
    ASSERT_EQ(10, uep_write(p.fa, big.data(), 10));
    std::thread closer([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(30));
      uep_close(p.fa);
      p.fa = -1;
    });
    char buf[100];
    EXPECT_EQ(10, uep_recv(p.fb, buf, sizeof buf, MSG_WAITALL));
    closer.join();
    EXPECT_EQ(0, uep_recv(p.fb, buf, sizeof buf, MSG_WAITALL));
    EXPECT_EQ(0, g_stack.reentered.load());
  }
}

// Stack threads wake under the stack lock while other threads wait, read,
// write and close: no deadlock (the test's timeout), no re-entry, every
// release exactly once.
TEST(FileTable, StackLockHeldAcrossWakesUnderThreads) {
  constexpr int kRounds = 200;
  std::atomic<bool> stop{false};
  std::vector<Pair*> live(4, nullptr);
  std::mutex live_mu;
  for (auto& q : live) q = new Pair;
  std::thread stack([&] {
    while (!stop) {
      std::lock_guard<std::mutex> lg(live_mu);
      std::lock_guard<StackLock> g(g_stack);
      for (Pair* q : live) {
        uep_file_notify(q->a.h, EPOLLIN);
        uep_file_set_mask(q->b.h, mask_locked(&q->b));
        uep_file_set_error(q->a.h, 0);
      }
    }
  });
  const int ep = uep_epoll_create1(0);
  std::thread waiter([&] {
    epoll_event out[8];
    while (!stop) uep_epoll_wait(ep, out, 8, 1);
  });
  for (int i = 0; i < kRounds; ++i) {
    Pair* fresh = new Pair;
    epoll_event ev{EPOLLIN | EPOLLOUT, {}};
    uep_epoll_ctl(ep, EPOLL_CTL_ADD, fresh->fa, &ev);
    uep_epoll_ctl(ep, EPOLL_CTL_ADD, fresh->fb, &ev);
    uep_write(fresh->fa, "x", 1);
    Pair* old;
    {
      std::lock_guard<std::mutex> lg(live_mu);
      old = live[static_cast<size_t>(i) % live.size()];
      live[static_cast<size_t>(i) % live.size()] = fresh;
    }
    char c;
    uep_recv(old->fb, &c, 1, MSG_DONTWAIT);
    uep_close(old->fa);
    old->fa = -1;
    EXPECT_EQ(1, old->a.releases.load());
    delete old;  // closes fb: releases b
  }
  stop = true;
  stack.join();
  waiter.join();
  uep_close(ep);
  for (Pair* q : live) delete q;
  EXPECT_EQ(0, g_stack.reentered.load());
}

}  // namespace
