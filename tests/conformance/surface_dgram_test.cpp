// surface_dgram_test.cpp - AF_UNIX SOCK_DGRAM and SOCK_SEQPACKET pairs,
// Linux vs uepoll (surface_harness.h): message boundaries, MSG_TRUNC and
// msg_flags, MSG_PEEK, zero-length messages, EMSGSIZE, the send buffer's
// accounting and readiness, shutdown, the peer's close, the socket calls and
// options, epoll readiness (LT and ET), blocking calls.  Every scenario runs
// once per type.
#include "conformance/surface_harness.h"

#include <pthread.h>
#include <sys/un.h>

namespace {

using conf::ST;

constexpr int kTypes[] = {SOCK_DGRAM, SOCK_SEQPACKET};

using conf::BlockSigpipe;

std::pair<int, int> pair_of(ST& t, int type, int flags = SOCK_NONBLOCK) {
  return t.socketpair(AF_UNIX, type | flags, 0,
                      type == SOCK_DGRAM ? (flags ? "AF_UNIX,SOCK_DGRAM|flags,0" : "AF_UNIX,SOCK_DGRAM,0")
                                         : (flags ? "AF_UNIX,SOCK_SEQPACKET|flags,0" : "AF_UNIX,SOCK_SEQPACKET,0"));
}

// getpeername (the surface has no entry for it: the call of each side).
void peername(ST& t, int fd) {
  struct sockaddr_un sa{};
  socklen_t sl = sizeof sa;
  errno = 0;
  const int r = t.is_linux() ? ::getpeername(fd, reinterpret_cast<struct sockaddr*>(&sa), &sl)
                             : ::uep_getpeername(fd, reinterpret_cast<struct sockaddr*>(&sa), &sl);
  t.rec("getpeername(" + t.n(fd) + ") len=" + std::to_string(r == 0 ? sl : 0) + " family=" +
            std::to_string(r == 0 ? sa.sun_family : 0),
        r);
}

// recvmsg into segments of the given sizes; logs the count, the bytes and
// msg_flags.
long recvmsg_segs(ST& t, int fd, const std::vector<size_t>& segs, int flags, const char* fdesc) {
  std::vector<std::vector<char>> bufs;
  std::vector<struct iovec> iov;
  for (size_t s : segs) bufs.emplace_back(s ? s : 1, '.');
  for (size_t i = 0; i < segs.size(); ++i) iov.push_back({bufs[i].data(), segs[i]});
  struct msghdr m{};
  m.msg_iov = iov.data();
  m.msg_iovlen = iov.size();
  m.msg_flags = 0x7777;
  errno = 0;
  const ssize_t r = t.sa.recvmsg(fd, &m, flags);
  const int e = errno;
  std::string s = "recvmsg(" + t.n(fd) + "," + ST::segs_str(segs) + "," + fdesc + ") = " + (errno = e, t.res(r));
  if (r >= 0) {
    s += " [";
    size_t left = static_cast<size_t>(r);
    for (size_t i = 0; i < segs.size() && left; ++i) {
      const size_t k = segs[i] < left ? segs[i] : left;
      s.append(bufs[i].data(), k);
      left -= k;
    }
    s += "] msg_flags=" + std::to_string(m.msg_flags);
  }
  t.log(s);
  errno = e;
  return r;
}

TEST(SurfaceDgram, BoundariesTruncPeek) {
  auto tr = conf::surface_differential([](ST& t) {
    for (int type : kTypes) {
      auto [a, b] = pair_of(t, type);
      t.send(a, 5, 0, "0", 'h');
      t.send(a, 0, 0, "0");
      t.send(a, 2, MSG_EOR, "EOR", 'e');
      t.send(a, 7, 0, "0", 'w');
      t.ioctl_int(b, FIONREAD, "FIONREAD");
      t.ioctl_int(a, TIOCOUTQ, "TIOCOUTQ");
      t.ioctl_int(b, SIOCATMARK, "SIOCATMARK");  // out-of-band data is the stream pair's: EOPNOTSUPP
      recvmsg_segs(t, b, {3}, MSG_PEEK, "PEEK");
      recvmsg_segs(t, b, {3}, MSG_PEEK | MSG_TRUNC, "PEEK|TRUNC");
      recvmsg_segs(t, b, {1, 2}, 0, "0");
      t.ioctl_int(b, FIONREAD, "FIONREAD");
      recvmsg_segs(t, b, {4}, 0, "0");  // the zero-length message
      recvmsg_segs(t, b, {8}, MSG_WAITALL, "WAITALL");
      recvmsg_segs(t, b, {1}, MSG_TRUNC, "TRUNC");
      t.recv(b, 1, 0, "0");
      t.recv(b, 0, 0, "0");
      t.send(a, 2, 0, "0", 'z');
      t.send(a, 3, 0, "0", 'y');
      t.recv(b, 0, 0, "0");  // takes the message
      t.read(b, 0);          // takes nothing
      t.read(b, 1);
      t.ioctl_int(b, FIONREAD, "FIONREAD");
      t.writev(a, {2, 0, 3}, 'v');  // one message
      t.readv(b, {1, 10});
      t.ioctl_int(a, TIOCOUTQ, "TIOCOUTQ");
      t.close(a);
      t.close(b);
    }
  });
  EXPECT_LINUX_HAS(tr, "msg_flags=32");
}

TEST(SurfaceDgram, SendBufferAccounting) {
  auto tr = conf::surface_differential([](ST& t) {
    for (int type : kTypes) {
      auto [a, b] = pair_of(t, type);
      long n = 0;
      {
        conf::T::Quiet q(t);
        while (t.send(a, 1, 0, "0") == 1) ++n;
      }
      t.log("1-byte sends before EAGAIN: " + std::to_string(n));
      t.send(a, 1, 0, "0");
      t.ioctl_int(a, TIOCOUTQ, "TIOCOUTQ");
      t.ioctl_int(b, FIONREAD, "FIONREAD");
      t.poll({{a, POLLIN | POLLOUT}, {b, POLLIN | POLLOUT}}, 0);
      long reads = 0;
      {
        conf::T::Quiet q(t);
        while (t.recv(b, 4, 0, "0") == 1) {
          ++reads;
          t.poll({{a, POLLOUT}}, 0);
          if (t.last_revents()[0] & POLLOUT) break;
        }
      }
      t.log("reads until writable: " + std::to_string(reads));
      t.close(a);
      t.close(b);
      std::tie(a, b) = pair_of(t, type);
      for (size_t len : {0, 1, 3776, 3777, 16064, 16065, 16384, 65536, 100000, 212960, 212961, 300000}) {
        t.send(a, len, 0, "0");
        t.ioctl_int(a, TIOCOUTQ, "TIOCOUTQ");
        t.ioctl_int(b, FIONREAD, "FIONREAD");
        conf::T::Quiet q(t);
        t.recv(b, 400000, MSG_TRUNC, "TRUNC");
      }
      n = 0;
      {
        conf::T::Quiet q(t);
        while (t.send(a, 4096, 0, "0") == 4096) ++n;
      }
      t.log("4096-byte sends before EAGAIN: " + std::to_string(n));
      t.ioctl_int(a, TIOCOUTQ, "TIOCOUTQ");
      t.close(a);
      t.close(b);
    }
  });
  EXPECT_LINUX_HAS(tr, "1-byte sends before EAGAIN: 278");
}

TEST(SurfaceDgram, Shutdown) {
  BlockSigpipe nosig;
  auto tr = conf::surface_differential([](ST& t) {
    for (int type : kTypes) {
      auto [a, b] = pair_of(t, type);
      t.send(a, 1, 0, "0", 'q');
      t.shutdown(a, SHUT_WR);
      t.poll({{a, POLLIN | POLLOUT | POLLRDHUP}, {b, POLLIN | POLLOUT | POLLRDHUP}}, 0);
      t.send(a, 1, 0, "0");
      t.log("SIGPIPE " + t.take_pending(SIGPIPE));
      t.send(b, 1, 0, "0", 'r');
      t.recv(b, 2, 0, "0");
      t.recv(b, 2, 0, "0");
      t.recv(a, 2, 0, "0");
      t.recv(a, 2, 0, "0");
      t.close(a);
      t.close(b);
      std::tie(a, b) = pair_of(t, type);
      t.send(a, 1, 0, "0", 'q');
      t.shutdown(b, SHUT_RD);
      t.poll({{a, POLLIN | POLLOUT | POLLRDHUP}, {b, POLLIN | POLLOUT | POLLRDHUP}}, 0);
      t.send(a, 1, 0, "0");
      t.recv(b, 2, 0, "0");
      t.recv(b, 2, 0, "0");
      t.send(b, 1, 0, "0", 'r');
      t.recv(a, 2, 0, "0");
      t.shutdown(b, 7);
      t.shutdown(b, SHUT_RDWR);
      t.poll({{a, POLLIN | POLLOUT | POLLRDHUP}, {b, POLLIN | POLLOUT | POLLRDHUP}}, 0);
      t.send(b, 1, 0, "0");
      t.close(a);
      t.close(b);
      // A blocking receive after SHUT_RD: 0 at once for both types.
      std::tie(a, b) = pair_of(t, type, 0);
      t.shutdown(b, SHUT_RD);
      t.recv(b, 2, 0, "0");
      t.recv(b, 2, MSG_DONTWAIT, "DONTWAIT");
      t.close(a);
      t.close(b);
    }
  });
  EXPECT_LINUX_HAS(tr, "EPIPE");
}

TEST(SurfaceDgram, PeerClose) {
  BlockSigpipe nosig;
  auto tr = conf::surface_differential([](ST& t) {
    for (int type : kTypes) {
      for (bool unread : {true, false}) {
        for (bool send_first : {true, false}) {
          // a's message is left unread at b, or read; b's two stay at a.
          auto [a, b] = pair_of(t, type);
          t.send(a, 1, 0, "0", 'q');
          t.send(b, 1, 0, "0", 'r');
          t.send(b, 1, 0, "0", 's');
          if (!unread) t.recv(b, 1, 0, "0");
          t.close(b);
          t.poll({{a, POLLIN | POLLOUT | POLLRDHUP}}, 0);
          peername(t, a);
          if (send_first) t.send(a, 1, 0, "0");  // a datagram socket drops its queue here
          t.recv(a, 2, 0, "0");
          t.recv(a, 2, 0, "0");
          t.recv(a, 2, 0, "0");
          t.send(a, 1, 0, "0");
          t.log("SIGPIPE " + t.take_pending(SIGPIPE));
          peername(t, a);
          t.getsockopt_int(a, SOL_SOCKET, SO_ERROR, "SO_ERROR");
          t.send(a, 1, MSG_NOSIGNAL, "NOSIGNAL");
          t.poll({{a, POLLIN | POLLOUT | POLLRDHUP}}, 0);
          t.recv(a, 2, 0, "0");
          t.close(a);
        }
      }
      // An error pending with messages queued: the error comes first.
      auto [a, b] = pair_of(t, type);
      t.send(b, 1, 0, "0", 'm');
      t.send(a, 1, 0, "0", 'n');
      t.close(b);
      t.poll({{a, POLLIN | POLLOUT | POLLRDHUP}}, 0);
      t.recv(a, 2, 0, "0");
      t.recv(a, 2, 0, "0");
      t.recv(a, 2, 0, "0");
      t.close(a);
    }
  });
  EXPECT_LINUX_HAS(tr, "ECONNREFUSED");
}

}  // namespace

namespace {

// sendmsg with a name of `len` bytes (family AF_UNIX, a path of "x...").
void sendto_len(ST& t, int fd, socklen_t len, const char* desc) {
  // Room past the sockaddr_un for a name length one above it (the bytes
  // the call may read are ours, zeroed).
  union {
    struct sockaddr_un sa;
    char bytes[sizeof(struct sockaddr_un) + 16];
  } name{};
  struct sockaddr_un& sa = name.sa;
  sa.sun_family = AF_UNIX;
  strcpy(sa.sun_path, "/nonexistent/uepoll-dgram");
  char c = 'n';
  struct iovec io = {&c, 1};
  struct msghdr m{};
  m.msg_name = &name;
  m.msg_namelen = len;
  m.msg_iov = &io;
  m.msg_iovlen = 1;
  errno = 0;
  t.rec(std::string("sendmsg(") + t.n(fd) + ",name " + desc + ")", t.sa.sendmsg(fd, &m, 0));
}

void connect_to(ST& t, int fd, sa_family_t family, socklen_t len, const char* desc) {
  struct sockaddr_un sa{};
  sa.sun_family = family;
  strcpy(sa.sun_path, "/nonexistent/uepoll-dgram");
  errno = 0;
  const int r = t.is_linux() ? ::connect(fd, reinterpret_cast<struct sockaddr*>(&sa), len)
                             : ::uep_connect(fd, reinterpret_cast<struct sockaddr*>(&sa), len);
  t.rec(std::string("connect(") + t.n(fd) + "," + desc + ")", r);
}

TEST(SurfaceDgram, SocketCallsAndOptions) {
  auto tr = conf::surface_differential([](ST& t) {
    for (int type : kTypes) {
      auto [a, b] = pair_of(t, type);
      t.getsockopt_int(a, SOL_SOCKET, SO_TYPE, "SO_TYPE");
      t.getsockopt_int(a, SOL_SOCKET, SO_DOMAIN, "SO_DOMAIN");
      t.getsockopt_int(a, SOL_SOCKET, SO_PROTOCOL, "SO_PROTOCOL");
      t.getsockopt_int(a, SOL_SOCKET, SO_SNDBUF, "SO_SNDBUF");
      t.getsockopt_int(a, SOL_SOCKET, SO_RCVBUF, "SO_RCVBUF");
      t.getsockopt_int(a, SOL_SOCKET, SO_ACCEPTCONN, "SO_ACCEPTCONN");
      t.getsockopt_int(a, SOL_SOCKET, SO_ERROR, "SO_ERROR");
      t.send(a, 1, MSG_OOB, "OOB");
      t.recv(b, 1, MSG_OOB, "OOB");
      t.recv(b, 1, MSG_ERRQUEUE, "ERRQUEUE");
      sendto_len(t, a, sizeof(sa_family_t), "len 2");
      sendto_len(t, a, sizeof(struct sockaddr_un) + 1, "len 111");
      sendto_len(t, a, sizeof(struct sockaddr_un), "path");
      t.recv(b, 4, 0, "0");
      connect_to(t, a, AF_UNIX, sizeof(sa_family_t), "AF_UNIX len 2");
      connect_to(t, a, AF_UNIX, sizeof(struct sockaddr_un), "AF_UNIX path");
      connect_to(t, a, AF_INET, sizeof(struct sockaddr_un), "AF_INET");
      errno = 0;
      t.rec("listen(" + t.n(a) + ")", t.is_linux() ? ::listen(a, 1) : ::uep_listen(a, 1));
      errno = 0;
      t.rec("accept(" + t.n(a) + ")", t.is_linux() ? ::accept(a, nullptr, nullptr) : ::uep_accept(a, nullptr, nullptr));
      struct sockaddr_un sa{};
      socklen_t sl = sizeof sa;
      errno = 0;
      t.rec("getsockname(" + t.n(a) + ") len", t.sa.getsockname(a, reinterpret_cast<struct sockaddr*>(&sa), &sl) == 0
                                                     ? static_cast<long>(sl)
                                                     : -1);
      t.fstat(a);
      // SO_SNDBUF: doubled, at least SOCK_MIN_SNDBUF; the message limit and
      // the accounting follow it.
      for (int v : {1, 10000, 300000}) {
        errno = 0;
        t.rec("setsockopt(" + t.n(a) + ",SO_SNDBUF," + std::to_string(v) + ")",
              t.sa.setsockopt(a, SOL_SOCKET, SO_SNDBUF, &v, sizeof v));
        t.getsockopt_int(a, SOL_SOCKET, SO_SNDBUF, "SO_SNDBUF");
      }
      int v = 4000;
      t.sa.setsockopt(a, SOL_SOCKET, SO_SNDBUF, &v, sizeof v);
      t.getsockopt_int(a, SOL_SOCKET, SO_SNDBUF, "SO_SNDBUF");
      t.send(a, 7969, 0, "0");
      t.send(a, 7968, 0, "0");
      t.send(a, 10, 0, "0");
      t.poll({{a, POLLOUT}}, 0);
      t.read(b, 8000);
      t.poll({{a, POLLOUT}}, 0);
      v = 5000;
      errno = 0;
      t.rec("setsockopt(" + t.n(b) + ",SO_RCVBUF,5000)", t.sa.setsockopt(b, SOL_SOCKET, SO_RCVBUF, &v, sizeof v));
      t.getsockopt_int(b, SOL_SOCKET, SO_RCVBUF, "SO_RCVBUF");
      t.close(a);
      t.close(b);
    }
    // SOCK_RAW is a datagram pair.
    auto [a, b] = t.socketpair(AF_UNIX, SOCK_RAW, 0, "AF_UNIX,SOCK_RAW,0");
    t.getsockopt_int(a, SOL_SOCKET, SO_TYPE, "SO_TYPE");
    t.close(a);
    t.close(b);
  });
  EXPECT_LINUX_HAS(tr, "SO_TYPE) = 0 value=5");
}

// connect(AF_UNSPEC) disconnects a datagram socket: its queue is dropped
// and the peer, still connected to it, gets ECONNRESET; the peer may still
// send to it.
TEST(SurfaceDgram, DisconnectWithUnspec) {
  auto tr = conf::surface_differential([](ST& t) {
    auto [a, b] = pair_of(t, SOCK_DGRAM);
    t.send(b, 1, 0, "0", 'm');
    connect_to(t, a, AF_UNSPEC, sizeof(sa_family_t), "AF_UNSPEC");
    t.poll({{a, POLLIN | POLLOUT}, {b, POLLIN | POLLOUT}}, 0);
    t.recv(a, 2, 0, "0");
    t.send(a, 1, 0, "0");
    peername(t, a);
    t.getsockopt_int(b, SOL_SOCKET, SO_ERROR, "SO_ERROR");
    t.send(b, 1, 0, "0", 'p');
    t.recv(a, 2, 0, "0");
    connect_to(t, a, AF_UNSPEC, 1, "AF_UNSPEC len 1");
    connect_to(t, a, AF_UNSPEC, sizeof(sa_family_t), "AF_UNSPEC again");
    t.close(a);
    t.send(b, 1, 0, "0");
    t.close(b);
  });
  EXPECT_LINUX_HAS(tr, "value=104");
}

// Readiness in epoll, level- and edge-triggered: each message queued wakes
// the reader, the writer is woken as the reader frees room, shutdown and the
// peer's close wake as Linux's do.
TEST(SurfaceDgram, EpollReadiness) {
  auto tr = conf::surface_differential([](ST& t) {
    for (int type : kTypes) {
      for (uint32_t et : {0u, static_cast<uint32_t>(EPOLLET)}) {
        auto [a, b] = pair_of(t, type);
        const int ep = t.epoll_create1(0);
        t.ctl(ep, EPOLL_CTL_ADD, a, EPOLLIN | EPOLLOUT | EPOLLRDHUP | et, 1);
        t.ctl(ep, EPOLL_CTL_ADD, b, EPOLLIN | EPOLLOUT | EPOLLRDHUP | et, 2);
        t.wait(ep, 8, 0);
        t.wait(ep, 8, 0);
        t.send(a, 1, 0, "0");
        t.wait(ep, 8, 0);
        t.send(a, 1, 0, "0");
        t.wait(ep, 8, 0);
        t.recv(b, 1, 0, "0");
        t.wait(ep, 8, 0);
        t.recv(b, 1, 0, "0");
        t.wait(ep, 8, 0);
        long n = 0;
        {
          conf::T::Quiet q(t);
          while (t.send(a, 1000, 0, "0") == 1000) ++n;
        }
        t.log("sends: " + std::to_string(n));
        t.wait(ep, 8, 0);
        t.wait(ep, 8, 0);
        long reads = 0;
        int got = 0;
        {
          conf::T::Quiet q(t);
          do {
            t.recv(b, 1000, 0, "0");
            ++reads;
            got = t.wait(ep, 8, 0);
          } while (reads < n && !(got > 0 && et && t.last_revents().empty()));
        }
        t.log("reads: " + std::to_string(reads));
        t.wait(ep, 8, 0);
        t.shutdown(b, SHUT_WR);
        t.wait(ep, 8, 0);
        t.close(b);
        t.wait(ep, 8, 0);
        t.close(a);
        t.close(ep);
      }
    }
  });
  EXPECT_LINUX_HAS(tr, "sends: ");
}

}  // namespace
