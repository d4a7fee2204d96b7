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

// Blocks SIGPIPE in this thread for a scenario: a raised one stays pending
// (take_pending() shows it) instead of ending the test.
struct BlockSigpipe {
  sigset_t old;
  BlockSigpipe() {
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &s, &old);
  }
  ~BlockSigpipe() { pthread_sigmask(SIG_SETMASK, &old, nullptr); }
};

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
