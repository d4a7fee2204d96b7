// objects_socketpair_test.cpp - AF_UNIX socket pairs as seen through the C
// API: creation errno, other unix types, reset on close with unread data,
// shutdown RD/WR/RDWR events, stream backpressure and buffer accounting.
// Readiness is observed through epoll (all bits) so the exact masks are
// compared.  SIGPIPE is ignored (objects_common.h).
#include "objects_common.h"

#include <netinet/in.h>

#include <thread>

namespace {

using conf::T;
using conf_objects::ALL;
using conf_objects::state;

// ---- socket pairs ---------------------------------------------------------
TEST(Socketpair, CreateErrno) {
  auto r = conf::differential([](T& t) {
    t.socketpair(AF_INET, SOCK_STREAM, 0, "AF_INET,SOCK_STREAM,0");
    t.socketpair(AF_UNIX, SOCK_STREAM, 1, "AF_UNIX,SOCK_STREAM,1");  // PF_UNIX: accepted
    t.socketpair(AF_UNIX, SOCK_STREAM, 2, "AF_UNIX,SOCK_STREAM,2");
    t.socketpair(AF_UNIX, SOCK_STREAM, IPPROTO_TCP, "AF_UNIX,SOCK_STREAM,IPPROTO_TCP");
    t.socketpair(12345, SOCK_STREAM, 0, "12345,SOCK_STREAM,0");
    t.socketpair(AF_UNIX, 12345, 0, "AF_UNIX,12345,0");
    t.socketpair(AF_UNIX, SOCK_STREAM | 0x100000, 0, "AF_UNIX,SOCK_STREAM|0x100000,0");
    t.socketpair(AF_INET6, SOCK_DGRAM, 0, "AF_INET6,SOCK_DGRAM,0");
    t.socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, "AF_UNIX,SOCK_STREAM|NONBLOCK|CLOEXEC,0");
    t.socketpair(AF_LOCAL, SOCK_STREAM, 0, "AF_LOCAL,SOCK_STREAM,0");
  });
  EXPECT_LINUX_SEQ(r, {"socketpair(AF_INET,SOCK_STREAM,0) = -1 EOPNOTSUPP",
                       "socketpair(AF_UNIX,SOCK_STREAM,1) = 0 [fd0,fd1]",
                       "socketpair(AF_UNIX,SOCK_STREAM,2) = -1 EPROTONOSUPPORT",
                       "socketpair(AF_UNIX,SOCK_STREAM,IPPROTO_TCP) = -1 EPROTONOSUPPORT",
                       "socketpair(12345,SOCK_STREAM,0) = -1 EAFNOSUPPORT", "socketpair(AF_UNIX,12345,0) = -1 EINVAL",
                       "socketpair(AF_UNIX,SOCK_STREAM|0x100000,0) = -1 EINVAL",
                       "socketpair(AF_INET6,SOCK_DGRAM,0) = -1 EOPNOTSUPP",
                       "socketpair(AF_UNIX,SOCK_STREAM|NONBLOCK|CLOEXEC,0) = 0 [fd2,fd3]",
                       "socketpair(AF_LOCAL,SOCK_STREAM,0) = 0 [fd4,fd5]"});
}

// AF_UNIX datagram and seqpacket pairs (SOCK_RAW is a datagram pair) are
// uepoll objects like stream pairs; their behaviour is in
// surface_dgram_test.cpp.
TEST(Socketpair, OtherUnixTypes) {
  auto r = conf::differential([](T& t) {
    t.socketpair(AF_UNIX, SOCK_DGRAM, 0, "AF_UNIX,SOCK_DGRAM,0");
    t.socketpair(AF_UNIX, SOCK_SEQPACKET, 0, "AF_UNIX,SOCK_SEQPACKET,0");
    t.socketpair(AF_UNIX, SOCK_RAW, 0, "AF_UNIX,SOCK_RAW,0");
  });
  EXPECT_EQ(r.linux_trace, (std::vector<std::string>{"socketpair(AF_UNIX,SOCK_DGRAM,0) = 0 [fd0,fd1]",
                                                     "socketpair(AF_UNIX,SOCK_SEQPACKET,0) = 0 [fd2,fd3]",
                                                     "socketpair(AF_UNIX,SOCK_RAW,0) = 0 [fd4,fd5]"}));
}

// Closing a socket with unread data resets the connection: the peer sees
// EPOLLERR and one ECONNRESET, then EOF.
TEST(Socketpair, CloseWithUnreadDataResets) {
  auto r = conf::differential([](T& t) {
    int ep = t.epoll_create1();
    auto [s0, s1] = t.unix_stream(SOCK_NONBLOCK);
    t.ctl(ep, EPOLL_CTL_ADD, s0, EPOLLIN | EPOLLRDHUP | EPOLLET, 1);
    t.write(s0, "unread", 6);
    t.close(s1);
    t.wait(ep, 4, 0);
    state(t, s0, "after reset");
    t.read(s0, 8);
    t.read(s0, 8);
    state(t, s0, "after the error was read");
    t.write(s0, "x", 1);
    // Without unread data: a plain EOF.
    auto [s2, s3] = t.unix_stream(SOCK_NONBLOCK);
    t.write(s2, "read", 4);
    t.read(s3, 8);
    t.close(s3);
    t.read(s2, 8);
    state(t, s2, "after a clean close");
  });
  EXPECT_LINUX_HAS(r, "read(fd1,8) = -1 ECONNRESET");
}

// shutdown(): the events each side observes.
void shutdown_case(T& t, int how) {
  auto [s0, s1] = t.unix_stream(SOCK_NONBLOCK);
  state(t, s0, "s0 before");
  t.shutdown(s0, how);
  state(t, s0, "s0 after");
  state(t, s1, "s1 after");
  t.write(s0, "a", 1);
  t.write(s1, "b", 1);
  t.read(s0, 8);
  t.read(s1, 8);
  t.shutdown(s1, how);
  state(t, s0, "s0 after both");
  state(t, s1, "s1 after both");
  t.close(s1);
  state(t, s0, "s0 after peer close");
  t.write(s0, "c", 1);
  t.read(s0, 8);
}

TEST(Socketpair, ShutdownRd) {
  auto r = conf::differential([](T& t) { shutdown_case(t, SHUT_RD); });
  EXPECT_LINUX_SEQ(r, {"state s0 before: OUT|WRNORM|WRBAND", "shutdown(fd0,RD) = 0"});
}
TEST(Socketpair, ShutdownWr) {
  auto r = conf::differential([](T& t) { shutdown_case(t, SHUT_WR); });
  EXPECT_LINUX_SEQ(r, {"shutdown(fd0,WR) = 0", "state s1 after: IN|OUT|RDNORM|WRNORM|WRBAND|RDHUP",
                       "write(fd0,1) = -1 EPIPE", "read(fd1,8) = 0"});
}
TEST(Socketpair, ShutdownRdwr) {
  auto r = conf::differential([](T& t) { shutdown_case(t, SHUT_RDWR); });
  EXPECT_LINUX_SEQ(r, {"shutdown(fd0,RDWR) = 0", "write(fd0,1) = -1 EPIPE"});
}

TEST(Socketpair, ShutdownErrors) {
  auto r = conf::differential([](T& t) {
    auto [s0, s1] = t.unix_stream();
    int e = t.eventfd(0);
    int gone = t.eventfd(0);
    t.close(gone);
    t.shutdown(s0, 3);
    t.shutdown(s0, -1);
    t.shutdown(e, SHUT_WR);
    t.shutdown(gone, SHUT_WR);
    t.shutdown(gone, 3);
    t.shutdown(s0, SHUT_WR);
    t.shutdown(s0, SHUT_WR);  // again: fine
    (void)s1;
  });
  EXPECT_LINUX_SEQ(r, {"shutdown(fd0,3) = -1 EINVAL", "shutdown(fd0,-1) = -1 EINVAL",
                       "shutdown(fd2,WR) = -1 ENOTSOCK", "shutdown(fd3,WR) = -1 EBADF", "shutdown(fd3,3) = -1 EBADF",
                       "shutdown(fd0,WR) = 0", "shutdown(fd0,WR) = 0"});
}

// Stream semantics: bytes arrive in order and reads may merge writes; a
// full socket stops being writable and becomes writable once drained.
TEST(Socketpair, StreamAndBackpressure) {
  auto r = conf::differential([](T& t) {
    int ep = t.epoll_create1();
    auto [s0, s1] = t.unix_stream(SOCK_NONBLOCK);
    t.ctl(ep, EPOLL_CTL_ADD, s0, EPOLLOUT | EPOLLET, 1);
    t.wait(ep, 4, 0);
    t.write(s0, "abc", 3);
    t.write(s0, "de", 2);
    char buf[8] = {};
    ssize_t n = t.read(s1, sizeof buf, buf);
    t.log("got \"" + std::string(buf, n > 0 ? static_cast<size_t>(n) : 0) + "\"");
    t.read(s1, 8);  // EAGAIN
    long total = 0;
    std::string last;
    {
      T::Quiet q(t);
      for (int i = 0; i < 100000; ++i) {
        ssize_t w = t.write_bytes(s0, 4096);
        if (w < 0) {
          last = conf::errno_name(errno);
          break;
        }
        total += w;
      }
    }
    t.log("fill ended with " + last + (total > 4096 ? " after more than a page" : " too early"));
    state(t, s0, "full");
    t.wait(ep, 4, 0);
    {
      T::Quiet q(t);
      std::vector<char> big(1 << 20);
      while (t.api.read(s1, big.data(), big.size()) > 0) {
      }
    }
    state(t, s0, "drained");
    t.wait(ep, 4, 0);
  });
  EXPECT_LINUX_SEQ(r, {"wait(fd0,4,0) = 1 [OUT:1]", "got \"abcde\"", "read(fd2,8) = -1 EAGAIN",
                       "fill ended with EAGAIN after more than a page", "state full: 0", "wait(fd0,4,0) = 0",
                       "state drained: OUT|WRNORM|WRBAND", "wait(fd0,4,0) = 1 [OUT:1]"});
}

// How much a socket accepts before EAGAIN (Linux: the sender's sk_sndbuf,
// 212992 by default, charged by skb truesize) and how much one large
// nonblocking write takes: observable, so compared exactly.
TEST(Socketpair, BufferAccounting) {
  auto r = conf::differential([](T& t) {
    auto fill_socket = [&](int fd, size_t chunk) {
      long total = 0;
      {
        T::Quiet q(t);
        for (int i = 0; i < 1000000; ++i) {
          ssize_t w = t.write_bytes(fd, chunk);
          if (w < 0) break;
          total += w;
        }
      }
      t.log("accepted with " + std::to_string(chunk) + "-byte writes: " + std::to_string(total));
    };
    auto [s0, s1] = t.unix_stream(SOCK_NONBLOCK);
    fill_socket(s0, 4096);
    auto [s2, s3] = t.unix_stream(SOCK_NONBLOCK);
    fill_socket(s2, 100000);
    auto [s4, s5] = t.unix_stream(SOCK_NONBLOCK);
    t.write_bytes(s4, 1 << 20);
    auto [s6, s7] = t.unix_stream(SOCK_NONBLOCK);
    fill_socket(s6, 1);
    (void)s1, (void)s3, (void)s5, (void)s7;
  });
  EXPECT_LINUX_HAS(r, "accepted with 4096-byte writes: ");
}

}  // namespace
