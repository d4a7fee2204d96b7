// table_objects.h - uepoll's built-in object kinds written again by "a
// provider" through the file interface (<uepoll/file.h>, uep_file_create),
// for the tests: an eventfd with Linux's eventfd semantics (fs/eventfd.c:
// counter, semaphore mode, overflow, the EPOLLIN / EPOLLOUT wakeup of every
// write / read), a pipe (fs/pipe.c's ring) and a socket pair (backed by a
// kernel pair: the bytes are the kernel's, the file is the interface's).  Only the public C API; the provider's state is under its
// own std::mutex, held across every uep_file_notify it makes (the file
// interface allows it: wakes never call back).
//
// table_objects_api(base): `base` with eventfd(), pipe(), pipe2() and
// socketpair() replaced, so that any
// scenario written against an Api runs unchanged on provider files (the
// conformance harness's "user-files" variant, tests/conformance/variants.h).
#pragma once

#include "api.h"
#include "eventfd_rules.h"

#include <uepoll/file.h>
#include <uepoll/uepoll.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <climits>
#include <cstdint>
#include <cstring>
#include <deque>
#include <fcntl.h>
#include <mutex>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>
#include <pthread.h>
#include <string>
#include <sys/ioctl.h>
#include <sys/eventfd.h>

namespace uepoll_test {

struct TableEventFd {
  std::mutex mu;
  uint64_t count = 0;      // guarded by mu
  bool semaphore = false;  // immutable after creation
  uep_file* handle = nullptr;

  static uint32_t poll(void* ctx) {  // Linux eventfd_poll
    auto* e = static_cast<TableEventFd*>(ctx);
    std::lock_guard<std::mutex> g(e->mu);
    return eventfd_rules::poll_mask(e->count);
  }
  // Linux eventfd_read (->read_iter): at least 8 bytes, across segments.
  static ssize_t read_iter(void* ctx, const struct iovec* iov, int n, const uep_file_call*) {
    auto* e = static_cast<TableEventFd*>(ctx);
    size_t total = 0;
    for (int i = 0; i < n; ++i) total += iov[i].iov_len;
    if (total < 8) return -EINVAL;
    uint64_t v;
    {
      std::lock_guard<std::mutex> g(e->mu);
      if (e->count == 0) return -EAGAIN;  // uepoll sleeps for a blocking read
      v = eventfd_rules::read_value(e->count, e->semaphore);
      e->count -= v;
      uep_file_notify(e->handle, EPOLLOUT);  // wake_up_locked_poll, lock held
    }
    // Linux copy_to_iter fails after the counter was consumed.
    for (int i = 0; i < n; ++i)
      if (iov[i].iov_len && reinterpret_cast<uintptr_t>(iov[i].iov_base) < 4096) return -EFAULT;
    const char* src = reinterpret_cast<const char*>(&v);
    size_t done = 0;
    for (int i = 0; i < n && done < 8; ++i) {
      const size_t k = iov[i].iov_len < 8 - done ? iov[i].iov_len : 8 - done;
      std::memcpy(iov[i].iov_base, src + done, k);
      done += k;
    }
    return 8;
  }
  // Linux eventfd_write (->write only: writev goes segment by segment).
  static ssize_t write_iter(void* ctx, const struct iovec* iov, int n, const uep_file_call*) {
    auto* e = static_cast<TableEventFd*>(ctx);
    ssize_t done = 0;
    // A zero-length write(2) reaches ->write (writev returns 0 before it).
    if (n == 1 && iov[0].iov_len == 0) return write_one(e, iov[0].iov_base, 0);
    for (int i = 0; i < n; ++i) {
      if (!iov[i].iov_len) continue;
      const ssize_t r = write_one(e, iov[i].iov_base, iov[i].iov_len);
      if (r < 0) return done ? done : r;
      done += r;
    }
    return done;
  }
  static ssize_t write_one(TableEventFd* e, const void* buf, size_t len) {
    if (len != 8) return -EINVAL;
    if (reinterpret_cast<uintptr_t>(buf) < 4096) return -EFAULT;  // copy_from_user
    uint64_t v;
    std::memcpy(&v, buf, 8);
    if (v == ULLONG_MAX) return -EINVAL;
    std::lock_guard<std::mutex> g(e->mu);
    if (!eventfd_rules::write_fits(e->count, v)) return -EAGAIN;
    e->count += v;
    uep_file_notify(e->handle, EPOLLIN);
    return 8;
  }
  static void release(void* ctx) {
    auto* e = static_cast<TableEventFd*>(ctx);
    uep_file_put(e->handle);
    delete e;
  }
  static const uep_file_operations& ops() {
    static const uep_file_operations o = [] {
      uep_file_operations t{};
      t.size = sizeof t;
      t.poll = &poll;
      t.read_iter = &read_iter;
      t.write_iter = &write_iter;
      t.release = &release;
      return t;
    }();
    return o;
  }

  // eventfd(2) over uep_file_create: same flags, same errors.
  static int create(unsigned int initval, int flags) {
    if (!eventfd_rules::create_flags_ok(flags)) return errno = EINVAL, -1;
    auto* e = new TableEventFd;
    e->count = initval;
    e->semaphore = (flags & EFD_SEMAPHORE) != 0;
    const int fd = uep_file_create(&ops(), e, flags & (O_NONBLOCK | O_CLOEXEC), 0, &e->handle);
    if (fd < 0) {
      const int err = errno;
      delete e;
      errno = err;
    }
    return fd;
  }
};

// ---- a pipe ------------------------------------------------------------------
// Linux fs/pipe.c's ring as a provider sees it: 16 slots of at most 4096
// bytes, a write's sub-page remainder merged into the last slot, O_DIRECT
// packets, EOF / EPOLLHUP without writers, EPIPE + SIGPIPE and EPOLLERR
// without readers, FIONREAD.  Pull readiness (poll); the wakeup keys are
// Linux's: every write wakes the readers with EPOLLIN|EPOLLRDNORM, a read
// from a full pipe wakes the writers with EPOLLOUT|EPOLLWRNORM, a close
// wakes the other end's every waiter (uep_file_set_mask for its new HUP or
// ERR, then key 0).  Blocking, complete stream writes included, is
// uepoll's (UEP_FILE_STREAM).
struct TablePipe {
  struct Slot {
    std::string data;
    bool packet;
  };
  static constexpr size_t kSlots = 16, kPage = 4096;
  std::mutex mu;
  std::deque<Slot> ring;     // guarded by mu
  bool readers = true, writers = true;  // guarded by mu
  int ends = 2;              // guarded by mu: ends not yet released
  uep_file* rd = nullptr;
  uep_file* wr = nullptr;

  struct End {
    TablePipe* p;
    bool reader;
  };
  End rd_end{this, true}, wr_end{this, false};

  bool full_locked() const { return ring.size() >= kSlots; }
  uint32_t rd_mask_locked() const {
    return (ring.empty() ? 0u : uint32_t(EPOLLIN | EPOLLRDNORM)) | (writers ? 0u : uint32_t(EPOLLHUP));
  }
  uint32_t wr_mask_locked() const {
    return (full_locked() ? 0u : uint32_t(EPOLLOUT | EPOLLWRNORM)) | (readers ? 0u : uint32_t(EPOLLERR));
  }
  static uint32_t poll(void* ctx) {
    auto* e = static_cast<End*>(ctx);
    std::lock_guard<std::mutex> g(e->p->mu);
    return e->reader ? e->p->rd_mask_locked() : e->p->wr_mask_locked();
  }
  // A copy that faults on Linux: NULL, the first page, or past TASK_SIZE.
  static bool faulting(const void* b) {
    const auto a = reinterpret_cast<uintptr_t>(b);
    return a < 4096 || a >= 0x00007ffffffff000ULL;
  }

  static ssize_t read_iter(void* ctx, const struct iovec* iov, int n, const uep_file_call*) {
    TablePipe* p = static_cast<End*>(ctx)->p;
    size_t total = 0;
    for (int i = 0; i < n; ++i) total += iov[i].iov_len;
    if (total == 0) return 0;  // "Null read succeeds."
    std::lock_guard<std::mutex> g(p->mu);
    if (p->ring.empty()) return p->writers ? -EAGAIN : 0;
    if (faulting(iov[0].iov_base)) return -EFAULT;  // copy_page_to_iter
    const bool was_full = p->full_locked();
    size_t done = 0;
    int seg = 0;
    size_t off = 0;
    while (done < total && !p->ring.empty()) {
      Slot& s = p->ring.front();
      size_t take = std::min(s.data.size(), total - done);
      for (size_t k = 0; k < take;) {  // scatter into the vector
        const size_t c = std::min(take - k, iov[seg].iov_len - off);
        std::memcpy(static_cast<char*>(iov[seg].iov_base) + off, s.data.data() + k, c);
        k += c;
        off += c;
        if (off == iov[seg].iov_len) {
          ++seg;
          off = 0;
        }
      }
      done += take;
      const bool packet = s.packet;
      if (packet || take == s.data.size())
        p->ring.pop_front();  // a packet is read whole or its rest dropped
      else
        s.data.erase(0, take);
      if (packet) break;
    }
    if (was_full && !p->full_locked()) uep_file_notify(p->wr, EPOLLOUT | EPOLLWRNORM);  // a slot freed
    return static_cast<ssize_t>(done);
  }

  static ssize_t write_iter(void* ctx, const struct iovec* iov, int n, const uep_file_call* call) {
    TablePipe* p = static_cast<End*>(ctx)->p;
    std::string buf;
    for (int i = 0; i < n; ++i) {
      if (iov[i].iov_len && faulting(iov[i].iov_base)) {
        if (buf.empty()) return -EFAULT;
        break;
      }
      buf.append(static_cast<const char*>(iov[i].iov_base), iov[i].iov_len);
    }
    if (buf.empty()) return 0;
    const bool packet = (call->f_flags & O_DIRECT) != 0;
    size_t done = 0;
    {
      std::lock_guard<std::mutex> g(p->mu);
      if (!p->readers) {
        pthread_kill(pthread_self(), SIGPIPE);
        return -EPIPE;
      }
      const size_t chars = buf.size() & (kPage - 1);
      if (!p->ring.empty() && chars && !p->ring.back().packet && p->ring.back().data.size() + chars <= kPage) {
        p->ring.back().data.append(buf, 0, chars);  // merges small writes
        done = chars;
      }
      while (done < buf.size() && !p->full_locked()) {
        const size_t k = std::min(kPage, buf.size() - done);
        p->ring.push_back({buf.substr(done, k), packet});
        done += k;
      }
      // "Epoll nonsensically wants a wakeup whether the pipe was already
      // empty or not" (every write, even one that returns EAGAIN).
      uep_file_notify(p->rd, EPOLLIN | EPOLLRDNORM);
    }
    return done ? static_cast<ssize_t>(done) : -EAGAIN;
  }

  static int ioctl(void* ctx, unsigned long req, void* arg, const uep_file_call*) {
    TablePipe* p = static_cast<End*>(ctx)->p;
    constexpr unsigned long kSize = kSlots * kPage;
    if (req == F_GETPIPE_SZ) return static_cast<int>(kSize);
    if (req == F_SETPIPE_SZ) {  // the ring is fixed: the size it has, or EPERM
      const auto want = reinterpret_cast<unsigned long>(arg);
      return want <= kSize && want > kSize / 2 ? static_cast<int>(kSize) : -EPERM;
    }
    if (req != FIONREAD) return -ENOTTY;
    if (faulting(arg)) return -EFAULT;
    std::lock_guard<std::mutex> g(p->mu);
    int q = 0;
    for (const Slot& s : p->ring) q += static_cast<int>(s.data.size());
    *static_cast<int*>(arg) = q;
    return 0;
  }

  static void release(void* ctx) {
    auto* e = static_cast<End*>(ctx);
    TablePipe* p = e->p;
    bool last;
    {
      std::lock_guard<std::mutex> g(p->mu);
      (e->reader ? p->readers : p->writers) = false;
      uep_file* peer = e->reader ? p->wr : p->rd;
      uep_file_set_mask(peer, e->reader ? p->wr_mask_locked() : p->rd_mask_locked());
      uep_file_notify(peer, 0);  // wake_up_interruptible_all
      last = --p->ends == 0;
    }
    if (last) {
      uep_file_put(p->rd);
      uep_file_put(p->wr);
      delete p;
    }
  }

  static uep_file_operations make_ops(bool reader) {
    uep_file_operations t{};
    t.size = sizeof t;
    t.flags = UEP_FILE_FIFO | UEP_FILE_STREAM | (reader ? UEP_FILE_RDONLY : UEP_FILE_WRONLY);
    t.poll = &poll;
    t.read_iter = reader ? &read_iter : nullptr;
    t.write_iter = reader ? nullptr : &write_iter;
    t.ioctl = &ioctl;
    t.release = &release;
    return t;
  }
  static const uep_file_operations& ops(bool reader) {
    static const uep_file_operations r = make_ops(true), w = make_ops(false);
    return reader ? r : w;
  }

  // pipe2(2) over uep_file_create.
  static int create(int fds[2], int flags) {
    if (faulting(fds)) return errno = EFAULT, -1;  // copy_to_user of the pair
    if (flags & ~(O_CLOEXEC | O_NONBLOCK | O_DIRECT | O_EXCL)) return errno = EINVAL, -1;
    if (flags & O_EXCL) return errno = ENOPKG, -1;  // O_NOTIFICATION_PIPE, no watch queues
    auto* p = new TablePipe;
    const int f = flags & (O_NONBLOCK | O_CLOEXEC);
    fds[0] = uep_file_create(&ops(true), &p->rd_end, f, 0, &p->rd);
    if (fds[0] < 0) {
      const int err = errno;
      delete p;
      return errno = err, -1;
    }
    fds[1] = uep_file_create(&ops(false), &p->wr_end, f, 0, &p->wr);
    if (fds[1] < 0) {
      const int err = errno;
      {
        std::lock_guard<std::mutex> g(p->mu);
        --p->ends;  // the write end never existed
        p->writers = false;
      }
      uep_close(fds[0]);  // releases the read end, which frees p
      return errno = err, -1;
    }
    if (flags & O_DIRECT) uep_fcntl(fds[1], F_SETFL, (flags & O_NONBLOCK) | O_DIRECT);  // the write end's only
    return 0;
  }
};

// ---- a socket pair --------------------------------------------------------------
// A provider whose sockets are backed by a kernel AF_UNIX stream pair (as a
// stack wraps its own transport): every byte, flag, option and error is
// the kernel's, every epoll/poll/blocking behaviour is uepoll's through the
// file interface.  Pull readiness (poll(2) on the kernel socket, timeout 0);
// the wakeup keys are Linux's (net/unix, net/core/sock.c): data queued
// wakes the peer with EPOLLIN|EPOLLPRI|EPOLLRDNORM|EPOLLRDBAND
// (sock_def_readable), data consumed wakes a now-writable peer with
// EPOLLOUT|EPOLLWRNORM|EPOLLWRBAND (unix_write_space), shutdown and close
// wake every waiter (key 0), each with the peer's new mask
// (uep_file_notify_mask).
struct TableSockPair {
  struct End {
    TableSockPair* sp;
    int i;
  };
  std::mutex mu;
  int k[2] = {-1, -1};             // the kernel sockets (closed at release)
  uep_file* h[2] = {nullptr, nullptr};
  bool open_[2] = {true, true};    // guarded by mu
  int ends = 2;                    // guarded by mu
  End e[2] = {{this, 0}, {this, 1}};

  static uint32_t kpoll(int fd) {
    struct pollfd p = {fd, static_cast<short>(POLLIN | POLLPRI | POLLOUT | POLLRDNORM | POLLRDBAND | POLLWRNORM |
                                              POLLWRBAND | POLLRDHUP),
                       0};
    return ::poll(&p, 1, 0) == 1 ? static_cast<uint16_t>(p.revents) : 0u;
  }
  static uint32_t poll(void* ctx) {
    auto* x = static_cast<End*>(ctx);
    return kpoll(x->sp->k[x->i]);
  }
  // Wakes the peer of end i for key with its new mask (if it is open).
  void wake_peer(int i, uint32_t key, bool only_if_writable = false) {
    std::lock_guard<std::mutex> g(mu);
    const int j = 1 - i;
    if (!open_[j]) return;
    const uint32_t m = kpoll(k[j]);
    if (only_if_writable && !(m & EPOLLOUT)) return;
    uep_file_notify_mask(h[j], m, key);  // with the provider's lock held
  }
  static constexpr uint32_t kReadable = EPOLLIN | EPOLLPRI | EPOLLRDNORM | EPOLLRDBAND;
  static constexpr uint32_t kWritable = EPOLLOUT | EPOLLWRNORM | EPOLLWRBAND;
  static long res(ssize_t r) { return r < 0 ? -errno : r; }
  static long after(End* x, long r, bool wrote) {
    if (r > 0) {
      if (wrote)
        x->sp->wake_peer(x->i, kReadable);
      else
        x->sp->wake_peer(x->i, kWritable, true);
    }
    return r;
  }

  static ssize_t read_iter(void* ctx, const struct iovec* iov, int n, const uep_file_call*) {
    auto* x = static_cast<End*>(ctx);
    return after(x, res(::readv(x->sp->k[x->i], iov, n)), false);
  }
  static ssize_t write_iter(void* ctx, const struct iovec* iov, int n, const uep_file_call*) {
    auto* x = static_cast<End*>(ctx);
    return after(x, res(::writev(x->sp->k[x->i], iov, n)), true);
  }
  static ssize_t sendmsg(void* ctx, const struct msghdr* m, const uep_file_call* c) {
    auto* x = static_cast<End*>(ctx);
    return after(x, res(::sendmsg(x->sp->k[x->i], m, c->flags | MSG_DONTWAIT)), true);
  }
  static ssize_t recvmsg(void* ctx, struct msghdr* m, const uep_file_call* c) {
    auto* x = static_cast<End*>(ctx);
    const long r = res(::recvmsg(x->sp->k[x->i], m, c->flags | MSG_DONTWAIT));
    return (c->flags & MSG_PEEK) ? r : after(x, r, false);
  }
  static int shutdown(void* ctx, int how) {
    auto* x = static_cast<End*>(ctx);
    const int r = ::shutdown(x->sp->k[x->i], how) < 0 ? -errno : 0;
    if (r == 0) {
      // unix_shutdown: sk_state_change of this socket, then of the peer.
      x->sp->wake_peer(1 - x->i, 0);  // this end (the peer of its peer)
      x->sp->wake_peer(x->i, 0);
    }
    return r;
  }
  static int ioctl(void* ctx, unsigned long req, void* arg, const uep_file_call*) {
    auto* x = static_cast<End*>(ctx);
    return ::ioctl(x->sp->k[x->i], req, arg) < 0 ? -errno : 0;
  }
  static int getsockopt(void* ctx, int level, int name, void* val, socklen_t* len) {
    auto* x = static_cast<End*>(ctx);
    return ::getsockopt(x->sp->k[x->i], level, name, val, len) < 0 ? -errno : 0;
  }
  static int setsockopt(void* ctx, int level, int name, const void* val, socklen_t len) {
    auto* x = static_cast<End*>(ctx);
    if (::setsockopt(x->sp->k[x->i], level, name, val, len) < 0) return -errno;
    if (level == SOL_SOCKET && (name == SO_SNDBUF || name == SO_SNDBUFFORCE)) {
      // sk_write_space: a larger send buffer can make this end writable.
      std::lock_guard<std::mutex> g(x->sp->mu);
      const uint32_t m = kpoll(x->sp->k[x->i]);
      if (m & EPOLLOUT) uep_file_notify_mask(x->sp->h[x->i], m, kWritable);
    }
    return 0;
  }
  static int getsockname(void* ctx, struct sockaddr* a, socklen_t* len) {
    auto* x = static_cast<End*>(ctx);
    return ::getsockname(x->sp->k[x->i], a, len) < 0 ? -errno : 0;
  }
  static int getpeername(void* ctx, struct sockaddr* a, socklen_t* len) {
    auto* x = static_cast<End*>(ctx);
    return ::getpeername(x->sp->k[x->i], a, len) < 0 ? -errno : 0;
  }
  static int bind(void* ctx, const struct sockaddr* a, socklen_t len) {
    auto* x = static_cast<End*>(ctx);
    return ::bind(x->sp->k[x->i], a, len) < 0 ? -errno : 0;
  }
  static int listen(void* ctx, int backlog) {
    auto* x = static_cast<End*>(ctx);
    return ::listen(x->sp->k[x->i], backlog) < 0 ? -errno : 0;
  }
  static int accept4(void* ctx, struct sockaddr* a, socklen_t* len, const uep_file_call* c) {
    auto* x = static_cast<End*>(ctx);
    const int fd = ::accept4(x->sp->k[x->i], a, len, c->flags);
    if (fd >= 0) ::close(fd);  // a connected pair never gets here
    return fd < 0 ? -errno : -EOPNOTSUPP;
  }
  static int connect(void* ctx, const struct sockaddr* a, socklen_t len, const uep_file_call*) {
    auto* x = static_cast<End*>(ctx);
    return ::connect(x->sp->k[x->i], a, len) < 0 ? -errno : 0;
  }
  static void release(void* ctx) {
    auto* x = static_cast<End*>(ctx);
    TableSockPair* sp = x->sp;
    bool last;
    {
      std::lock_guard<std::mutex> g(sp->mu);
      ::close(sp->k[x->i]);
      sp->open_[x->i] = false;
      const int j = 1 - x->i;
      if (sp->open_[j]) uep_file_notify_mask(sp->h[j], kpoll(sp->k[j]), 0);  // close wakes the peer, every waiter
      last = --sp->ends == 0;
    }
    if (last) {
      uep_file_put(sp->h[0]);
      uep_file_put(sp->h[1]);
      delete sp;
    }
  }
  static const uep_file_operations& ops() {
    static const uep_file_operations o = [] {
      uep_file_operations t{};
      t.size = sizeof t;
      t.flags = UEP_FILE_STREAM;
      t.sock_family = AF_UNIX;
      t.sock_type = SOCK_STREAM;
      t.poll = &poll;
      t.read_iter = &read_iter;
      t.write_iter = &write_iter;
      t.ioctl = &ioctl;
      t.release = &release;
      t.bind = &bind;
      t.listen = &listen;
      t.accept4 = &accept4;
      t.connect = &connect;
      t.sendmsg = &sendmsg;
      t.recvmsg = &recvmsg;
      t.shutdown = &shutdown;
      t.getsockopt = &getsockopt;
      t.setsockopt = &setsockopt;
      t.getsockname = &getsockname;
      t.getpeername = &getpeername;
      return t;
    }();
    return o;
  }

  // socketpair(2): stream pairs over the file interface; anything else is
  // uepoll's own answer.
  static int create(int domain, int type, int protocol, int sv[2]) {
    if (domain != AF_UNIX || (type & ~(SOCK_NONBLOCK | SOCK_CLOEXEC)) != SOCK_STREAM)
      return ::uep_socketpair(domain, type, protocol, sv);
    auto* sp = new TableSockPair;
    if (::socketpair(domain, type | SOCK_NONBLOCK | SOCK_CLOEXEC, protocol, sp->k) < 0) {
      const int err = errno;
      delete sp;
      return errno = err, -1;
    }
    const int f = ((type & SOCK_NONBLOCK) ? O_NONBLOCK : 0) | ((type & SOCK_CLOEXEC) ? O_CLOEXEC : 0);
    int fds[2];
    fds[0] = uep_file_create(&ops(), &sp->e[0], f, 0, &sp->h[0]);
    fds[1] = fds[0] < 0 ? -1 : uep_file_create(&ops(), &sp->e[1], f, 0, &sp->h[1]);
    if (fds[1] < 0) {
      const int err = errno;
      if (fds[0] >= 0) {
        {
          std::lock_guard<std::mutex> g(sp->mu);
          --sp->ends;  // end 1 never existed
          sp->open_[1] = false;
          ::close(sp->k[1]);
        }
        uep_close(fds[0]);  // releases end 0, which frees sp
      } else {
        ::close(sp->k[0]);
        ::close(sp->k[1]);
        delete sp;
      }
      return errno = err, -1;
    }
    if (reinterpret_cast<uintptr_t>(sv) < 4096) {  // Linux: the pair is made, then copy_to_user fails
      uep_close(fds[0]);
      uep_close(fds[1]);
      return errno = EFAULT, -1;
    }
    sv[0] = fds[0];
    sv[1] = fds[1];
    return 0;
  }
};

namespace detail {
inline int table_socketpair(int d, int t, int p, int sv[2]) { return TableSockPair::create(d, t, p, sv); }
inline int table_pipe(int fds[2]) { return TablePipe::create(fds, 0); }
inline int table_pipe2(int fds[2], int f) { return TablePipe::create(fds, f); }
inline int table_eventfd(unsigned int v, int f) { return TableEventFd::create(v, f); }
}  // namespace detail

inline const Api& table_objects_api(const Api& base, const char* name) {
  static Api api = [&] {
    Api a = base;
    a.name = name;
    a.eventfd = &detail::table_eventfd;
    a.pipe = &detail::table_pipe;
    a.pipe2 = &detail::table_pipe2;
    a.socketpair = &detail::table_socketpair;
    return a;
  }();
  return api;
}

}  // namespace uepoll_test
