// examples/user_channel.cpp - a program's own object as an epoll-able
// descriptor: an in-memory message channel written with uep_file_open
// (uepoll.h, "user-defined files"), served by one epoll loop together with a
// real TCP listener on 127.0.0.1 and its connections:
//
//                     loop (one uepoll instance, level-triggered)
//          +------------------+----------------------+----------------+
//          |                  |                      |                |
//    channel read end    TCP listener          TCP connection   (more conns)
//    (user file)         127.0.0.1:<any>       EPOLLIN|EPOLLRDHUP
//          ^
//          | messages, blocking uep_write (the channel holds 4)
//    producer thread: channel write end (user file)
//
// The channel is two user files over one queue, like a pipe of messages:
// each write is one message, each read returns one; the read end polls
// EPOLLIN while messages wait and EPOLLHUP once the write end is closed;
// the write end polls EPOLLOUT while there is room and EPOLLERR once the
// read end is closed.  Its release callback -- "this end was closed" --
// wakes the other end, exactly as closing a pipe end does.
//
// A client thread connects to the listener and sends "ping <i>" lines.  The
// loop accepts it, starts the producer, answers each ping with "pong <i>"
// and forwards every channel message to the client as "job <text>".  When
// the producer has sent its messages it closes the write end; the loop
// drains the channel, sees end-of-file, tells the client "bye", and the
// client, having counted every pong and every job, closes; the loop sees
// EPOLLRDHUP / end-of-file and ends.  Exits 0 when every message arrived in
// order; 1 with a message otherwise; nothing may stay silent for 5 s.
//
// The TCP descriptors are kernel descriptors inside the same uepoll
// instance as the channel (uepoll watches both kinds).
//
// Build: part of the default build (target user_channel); run:
//   build/examples/user_channel
#include <uepoll/uepoll.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <string>
#include <thread>

namespace {

constexpr int kMessages = 40;  // sent through the channel
constexpr int kPings = 10;     // sent by the TCP client
constexpr size_t kCapacity = 4;

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "user_channel: FAILED: %s (%s)\n", what.c_str(), std::strerror(errno));
  std::exit(1);
}

// ---------------------------------------------------------------------------
// The channel: everything a program writes to make its object a descriptor.

struct Channel;
struct End {
  Channel* ch;
  bool reader;
  uep_file* handle = nullptr;  // to wake this end
};

struct Channel {
  std::mutex mu;
  std::deque<std::string> queue;  // guarded by mu
  bool reader_open = true;        // guarded by mu
  bool writer_open = true;        // guarded by mu
  int ends = 2;                   // guarded by mu: ends not yet released
  End rd{this, true};
  End wr{this, false};
};

// Readiness now.  Called by uepoll with none of its locks held: take ours.
uint32_t chan_poll(void* ctx) {
  End* e = static_cast<End*>(ctx);
  Channel* c = e->ch;
  std::lock_guard<std::mutex> g(c->mu);
  uint32_t m = 0;
  if (e->reader) {
    if (!c->queue.empty()) m |= EPOLLIN | EPOLLRDNORM;
    if (!c->writer_open) m |= EPOLLHUP;
  } else {
    if (c->queue.size() < kCapacity) m |= EPOLLOUT | EPOLLWRNORM;
    if (!c->reader_open) m |= EPOLLERR;
  }
  return m;
}

// One message per read (truncated to len).  -1/EAGAIN when empty: uepoll
// returns it on an O_NONBLOCK descriptor, or sleeps until a wake.
ssize_t chan_read(void* ctx, void* buf, size_t len) {
  Channel* c = static_cast<End*>(ctx)->ch;
  std::string msg;
  bool was_full;
  {
    std::lock_guard<std::mutex> g(c->mu);
    if (c->queue.empty()) {
      if (!c->writer_open) return 0;  // end of file
      errno = EAGAIN;
      return -1;
    }
    was_full = c->queue.size() >= kCapacity;
    msg = std::move(c->queue.front());
    c->queue.pop_front();
  }
  // Wake after unlocking: uep_file_wake calls chan_poll, which locks mu.
  if (was_full) uep_file_wake(c->wr.handle, EPOLLOUT | EPOLLWRNORM);
  const size_t n = msg.size() < len ? msg.size() : len;
  std::memcpy(buf, msg.data(), n);
  return static_cast<ssize_t>(n);
}

ssize_t chan_write(void* ctx, const void* buf, size_t len) {
  Channel* c = static_cast<End*>(ctx)->ch;
  {
    std::lock_guard<std::mutex> g(c->mu);
    if (!c->reader_open) {
      errno = EPIPE;
      return -1;
    }
    if (c->queue.size() >= kCapacity) {
      errno = EAGAIN;  // a blocking writer sleeps until chan_read wakes it
      return -1;
    }
    c->queue.emplace_back(static_cast<const char*>(buf), len);
  }
  uep_file_wake(c->rd.handle, EPOLLIN | EPOLLRDNORM);
  return static_cast<ssize_t>(len);
}

// This end's last descriptor was closed.  Wake the other end (it now sees
// EPOLLHUP / EPOLLERR); the last end to go drops both handles and frees the
// channel, so no wake can reach a dropped handle.
void chan_release(void* ctx) {
  End* e = static_cast<End*>(ctx);
  Channel* c = e->ch;
  uep_file* peer;
  {
    std::lock_guard<std::mutex> g(c->mu);
    (e->reader ? c->reader_open : c->writer_open) = false;
    peer = e->reader ? c->wr.handle : c->rd.handle;
  }
  uep_file_wake(peer, 0);  // 0: every waiter, whatever it waits for
  bool last;
  {
    std::lock_guard<std::mutex> g(c->mu);
    last = --c->ends == 0;
  }
  if (last) {
    uep_file_unref(c->rd.handle);
    uep_file_unref(c->wr.handle);
    delete c;
  }
}

const uep_file_ops kReadEndOps = {chan_poll, chan_read, nullptr, chan_release};
const uep_file_ops kWriteEndOps = {chan_poll, nullptr, chan_write, chan_release};

// fds[0]: read end (non-blocking, for the loop); fds[1]: write end
// (blocking, for the producer).
void channel_open(int fds[2]) {
  Channel* c = new Channel;
  fds[0] = uep_file_open(&kReadEndOps, &c->rd, O_NONBLOCK | O_CLOEXEC, &c->rd.handle);
  if (fds[0] < 0) fail("uep_file_open");
  fds[1] = uep_file_open(&kWriteEndOps, &c->wr, O_CLOEXEC, &c->wr.handle);
  if (fds[1] < 0) fail("uep_file_open");
}

// ---------------------------------------------------------------------------
// The TCP client (plain kernel sockets, its own thread).

void client(uint16_t port, bool* ok) {
  int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  timeval tv{5, 0};  // nothing may stay silent for 5 s
  setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  if (::connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) < 0) fail("client connect");
  for (int i = 0; i < kPings; ++i) {
    std::string line = "ping " + std::to_string(i) + "\n";
    if (::send(s, line.data(), line.size(), MSG_NOSIGNAL) < 0) fail("client send");
  }
  std::string in;
  int pongs = 0, jobs = 0;
  bool bye = false;
  char buf[512];
  while (!bye) {
    ssize_t n = ::recv(s, buf, sizeof buf, 0);
    if (n <= 0) fail("client recv");
    in.append(buf, static_cast<size_t>(n));
    size_t nl;
    while ((nl = in.find('\n')) != std::string::npos) {
      std::string line = in.substr(0, nl);
      in.erase(0, nl + 1);
      if (line == "pong " + std::to_string(pongs)) {
        ++pongs;
      } else if (line == "job message " + std::to_string(jobs)) {
        ++jobs;
      } else if (line == "bye") {
        bye = true;
      } else {
        fail("client: unexpected line \"" + line + "\"");
      }
    }
  }
  std::printf("client: %d pongs, %d jobs, bye\n", pongs, jobs);
  *ok = pongs == kPings && jobs == kMessages;
  ::close(s);
}

void producer(int wr) {
  for (int i = 0; i < kMessages; ++i) {
    std::string m = "message " + std::to_string(i);
    if (uep_write(wr, m.data(), m.size()) != static_cast<ssize_t>(m.size())) fail("producer write");
  }
  uep_close(wr);  // the reader sees EPOLLHUP, then end of file
}

// ---------------------------------------------------------------------------
// The loop.

enum : uint64_t { kChannel = 1, kListener = 2, kConnBase = 100 };

void watch(int ep, int fd, uint32_t events, uint64_t tag) {
  epoll_event ev{};
  ev.events = events;
  ev.data.u64 = tag;
  if (uep_epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0) fail("epoll_ctl ADD");
}

int run() {
  int ch[2];
  channel_open(ch);
  const int ep = uep_epoll_create1(EPOLL_CLOEXEC);
  watch(ep, ch[0], EPOLLIN, kChannel);

  const int lst = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);  // 127.0.0.1 only
  socklen_t alen = sizeof a;
  if (lst < 0 || ::bind(lst, reinterpret_cast<sockaddr*>(&a), sizeof a) < 0 || ::listen(lst, 8) < 0 ||
      ::getsockname(lst, reinterpret_cast<sockaddr*>(&a), &alen) < 0)
    fail("listener");
  epoll_event lev{};
  lev.events = EPOLLIN;
  lev.data.u64 = kListener;
  if (uep_epoll_ctl(ep, EPOLL_CTL_ADD, lst, &lev) < 0) fail("epoll_ctl ADD listener");

  bool client_ok = false;
  std::thread client_thread, producer_thread;
  client_thread = std::thread(client, ntohs(a.sin_port), &client_ok);

  int conn = -1;
  bool channel_eof = false, conn_done = false, bye_sent = false;
  int received = 0, pongs = 0;
  std::string conn_in;
  auto send_line = [&](const std::string& l) {
    if (conn >= 0 && ::send(conn, l.data(), l.size(), MSG_NOSIGNAL) < 0) fail("send");
  };
  auto maybe_bye = [&] {  // once every job and every pong went out
    if (channel_eof && pongs == kPings && !bye_sent) {
      send_line("bye\n");
      bye_sent = true;
    }
  };
  while (!(channel_eof && conn_done)) {
    epoll_event evs[8];
    const int n = uep_epoll_wait(ep, evs, 8, 5000);
    if (n < 0) fail("epoll_wait");
    if (n == 0) fail("nothing happened for 5 s");
    for (int i = 0; i < n; ++i) {
      const uint64_t tag = evs[i].data.u64;
      if (tag == kListener) {  // a connection: serve it, start producing
        const int c = ::accept4(lst, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (c < 0) continue;
        if (conn >= 0) fail("a second client");
        conn = c;
        watch(ep, conn, EPOLLIN | EPOLLRDHUP, kConnBase);
        std::printf("loop: accepted a TCP client\n");
        producer_thread = std::thread(producer, ch[1]);
      } else if (tag == kChannel) {  // level-triggered: one message per event
        char m[256];
        const ssize_t r = uep_read(ch[0], m, sizeof m);
        if (r > 0) {
          const std::string text(m, static_cast<size_t>(r));
          if (text != "message " + std::to_string(received)) fail("out of order: " + text);
          ++received;
          send_line("job " + text + "\n");
        } else if (r == 0) {  // writer closed and drained (EPOLLHUP came first)
          std::printf("loop: channel end of file after %d messages\n", received);
          channel_eof = true;
          uep_epoll_ctl(ep, EPOLL_CTL_DEL, ch[0], nullptr);
          maybe_bye();
        } else if (errno != EAGAIN) {
          fail("channel read");
        }
      } else if (tag == kConnBase) {
        char b[256];
        const ssize_t r = ::recv(conn, b, sizeof b, 0);
        if (r > 0) {
          conn_in.append(b, static_cast<size_t>(r));
          size_t nl;
          while ((nl = conn_in.find('\n')) != std::string::npos) {
            const std::string line = conn_in.substr(0, nl);
            conn_in.erase(0, nl + 1);
            if (line.rfind("ping ", 0) != 0) fail("bad request " + line);
            send_line("pong " + line.substr(5) + "\n");
            ++pongs;
          }
          maybe_bye();
        } else if (r == 0 || (evs[i].events & (EPOLLRDHUP | EPOLLHUP))) {
          std::printf("loop: client closed (events %#x)\n", evs[i].events);
          uep_close(conn);  // a kernel descriptor: closed by the kernel, and dropped from the instance
          conn = -1;
          conn_done = true;
        } else if (errno != EAGAIN) {
          fail("recv");
        }
      }
    }
  }
  if (producer_thread.joinable()) producer_thread.join();
  if (client_thread.joinable()) client_thread.join();
  uep_close(ch[0]);  // the channel's last end: both releases have run
  uep_close(lst);  // through uepoll: it may be watching this kernel descriptor
  uep_close(ep);
  if (received != kMessages) fail("messages lost");
  if (!client_ok) fail("the client missed answers");
  std::printf("user_channel: %d messages through a user-defined file, served beside a TCP listener; OK\n",
              received);
  return 0;
}

}  // namespace

int main() { return run(); }
