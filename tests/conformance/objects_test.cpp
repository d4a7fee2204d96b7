// objects_test.cpp - the objects' own semantics as seen through the C API:
// eventfd (counter, semaphore, nonblocking EAGAIN, overflow, buffer sizes),
// pipes (64 KiB capacity, page packing, EOF/HUP, EPIPE/ERR, wrong direction),
// AF_UNIX stream socket pairs (creation errno, shutdown RD/WR/RDWR events),
// timerfd (relative, absolute, interval, counts, gettime, errors) and
// read/write on an epoll descriptor.  Readiness is observed through epoll
// (all bits) so the exact masks are compared.  SIGPIPE is ignored.
#include "harness.h"

#include <netinet/in.h>

#include <csignal>
#include <thread>

namespace {

using conf::T;

constexpr uint32_t ALL = conf::kAllPollBits;

// Ignore SIGPIPE for the whole binary (EPIPE tests).
const bool sigpipe_ignored = [] {
  signal(SIGPIPE, SIG_IGN);
  return true;
}();

// Logs the current readiness of `fd` (all bits) through a scratch instance.
void state(T& t, int fd, const char* label) {
  T::Quiet q(t);
  int ep = t.epoll_create1();
  t.ctl(ep, EPOLL_CTL_ADD, fd, ALL, 0);
  int n = t.wait(ep, 1, 0);
  std::string m = n == 1 ? conf::mask_str(t.last_events()[0].events) : n == 0 ? "0" : "error";
  t.close(ep);
  t.lines.push_back(std::string("state ") + label + ": " + m);
}

// ---- eventfd ------------------------------------------------------------
TEST(Eventfd, CreateFlags) {
  auto r = conf::differential([](T& t) {
    t.eventfd(0, 0x4);
    t.eventfd(0, O_RDWR);
    t.eventfd(0, EFD_SEMAPHORE | EFD_NONBLOCK | EFD_CLOEXEC);
    t.eventfd(UINT_MAX, 0);
    t.eventfd(0, 1 << 30);
  });
  EXPECT_LINUX_SEQ(r, {"eventfd(0,0x4) = -1 EINVAL", "eventfd(0,0x2) = -1 EINVAL",
                       "eventfd(0,CLOEXEC|NONBLOCK|SEMAPHORE) = fd0", "eventfd(4294967295,0) = fd1",
                       "eventfd(0,0x40000000) = -1 EINVAL"});
}

TEST(Eventfd, CounterAndSemaphore) {
  auto r = conf::differential([](T& t) {
    int e = t.eventfd(0, EFD_NONBLOCK);
    state(t, e, "empty");
    t.read_u64(e);  // EAGAIN
    t.write_u64(e, 3);
    t.write_u64(e, 4);
    state(t, e, "7");
    t.read_u64(e);  // 7
    t.read_u64(e);  // EAGAIN
    int s = t.eventfd(3, EFD_SEMAPHORE | EFD_NONBLOCK);
    t.read_u64(s);
    t.read_u64(s);
    t.write_u64(s, 5);
    t.read_u64(s);
    state(t, s, "semaphore 5");
    for (int i = 0; i < 5; ++i) t.read_u64(s);
    t.read_u64(s);  // EAGAIN
    // Buffer sizes: a read needs >= 8 bytes, a write exactly 8.
    t.write_u64(e, 9);
    t.read(e, 4);
    t.read(e, 7);
    t.read(e, 0);
    t.read(e, 16);
    uint64_t two[2] = {5, 7};
    t.write(e, two, 4, "4 bytes");
    t.write(e, two, 0, "0 bytes");
    t.write(e, two, 16, "{5,7}");
    t.read(e, 8);
  });
  EXPECT_LINUX_SEQ(r, {"state empty: OUT", "read(fd0,8) = -1 EAGAIN", "state 7: IN|OUT", "read(fd0,8) = 8 value=7",
                       "read(fd0,8) = -1 EAGAIN", "read(fd3,8) = 8 value=1", "read(fd3,8) = 8 value=1",
                       "read(fd3,8) = 8 value=1", "state semaphore 5: IN|OUT", "read(fd3,8) = -1 EAGAIN",
                       "read(fd0,4) = -1 EINVAL", "read(fd0,7) = -1 EINVAL", "read(fd0,0) = -1 EINVAL",
                       "read(fd0,16) = 8 value=9", "write(fd0,4 bytes,4) = -1 EINVAL",
                       "write(fd0,0 bytes,0) = -1 EINVAL", "write(fd0,{5,7},16) = -1 EINVAL",
                       "read(fd0,8) = -1 EAGAIN"});
}

TEST(Eventfd, Overflow) {
  auto r = conf::differential([](T& t) {
    int e = t.eventfd(0, EFD_NONBLOCK);
    t.write_u64(e, 0xffffffffffffffffULL);  // EINVAL
    t.write_u64(e, 0xfffffffffffffffeULL);  // the maximum
    state(t, e, "max");
    t.write_u64(e, 1);  // would overflow: EAGAIN
    t.write_u64(e, 0);  // adding 0 never blocks
    t.read_u64(e);
    t.write_u64(e, 0xfffffffffffffff0ULL);
    t.write_u64(e, 0xe);
    t.write_u64(e, 0xf);
    state(t, e, "max again");
    t.read_u64(e);
    state(t, e, "drained");
    int init = t.eventfd(UINT_MAX, EFD_NONBLOCK);
    t.read_u64(init);
  });
  EXPECT_LINUX_SEQ(r, {"write_u64(fd0,0xffffffffffffffff) = -1 EINVAL", "write_u64(fd0,0xfffffffffffffffe) = 8",
                       "state max: IN", "write_u64(fd0,0x1) = -1 EAGAIN", "write_u64(fd0,0) = 8",
                       "read(fd0,8) = 8 value=18446744073709551614", "write_u64(fd0,0xf) = -1 EAGAIN",
                       "state drained: OUT", "read(fd4,8) = 8 value=4294967295"});
}

// A blocking eventfd read sleeps until a write; a blocking write at the
// maximum sleeps until a read.
TEST(Eventfd, BlockingReadAndWrite) {
  auto r = conf::differential([](T& t) {
    int e = t.eventfd(0);
    {
      conf::WhenBlocked later([&] {
        uint64_t v = 6;
        t.api.write(e, &v, 8);
      });
      t.read_u64(e);  // sleeps until the write
    }
    t.write_u64(e, 0xfffffffffffffffeULL);
    {
      conf::WhenBlocked later([&] {
        uint64_t v;
        t.api.read(e, &v, 8);
      });
      t.write_u64(e, 1);  // at the maximum: sleeps until the read
    }
    t.read_u64(e);
  });
  EXPECT_LINUX_SEQ(r, {"read(fd0,8) = 8 value=6", "write_u64(fd0,0x1) = 8", "read(fd0,8) = 8 value=1"});
}

// ---- pipes ----------------------------------------------------------------
TEST(Pipe, CreateFlagsAndDirections) {
  auto r = conf::differential([](T& t) {
    t.pipe2(0x1);
    t.pipe2(O_RDWR);
    auto [rd, wr] = t.pipe2(O_NONBLOCK | O_CLOEXEC);
    state(t, rd, "read end");
    state(t, wr, "write end");
    t.write(rd, "x", 1);  // wrong direction
    t.read(wr, 1);
    t.read(rd, 0);
    t.write(wr, "", 0);
    t.read(rd, 1);
  });
  EXPECT_LINUX_SEQ(r, {"pipe2(0x1) = -1 EINVAL", "pipe2(0x2) = -1 EINVAL", "pipe2(CLOEXEC|NONBLOCK) = 0 [fd0,fd1]",
                       "state read end: 0", "state write end: OUT|WRNORM", "write(fd0,1) = -1 EBADF",
                       "read(fd1,1) = -1 EBADF", "read(fd0,0) = 0", "write(fd1,0) = 0", "read(fd0,1) = -1 EAGAIN"});
}

// Fill a pipe with nonblocking writes of `chunk` bytes; log the total.
long fill(T& t, int wr, size_t chunk) {
  long total = 0;
  std::string last;
  {
    T::Quiet q(t);
    for (int i = 0; i < 100000; ++i) {
      ssize_t n = t.write_bytes(wr, chunk);
      if (n < 0) {
        last = conf::errno_name(errno);
        break;
      }
      total += n;
    }
  }
  t.log("filled with " + std::to_string(chunk) + "-byte writes: " + std::to_string(total) + " bytes, then " + last);
  return total;
}

// 64 KiB = 16 page-sized buffers.  After reading one page the writer is
// woken (ET edge) and writable again.
TEST(Pipe, CapacityAndWriterWakeup) {
  auto r = conf::differential([](T& t) {
    int ep = t.epoll_create1();
    auto [rd, wr] = t.pipe2(O_NONBLOCK);
    t.ctl(ep, EPOLL_CTL_ADD, wr, EPOLLOUT | EPOLLET, 2);
    t.wait(ep, 4, 0);
    fill(t, wr, 4096);
    state(t, wr, "full, write end");
    state(t, rd, "full, read end");
    t.wait(ep, 4, 0);
    t.read(rd, 100);  // the first page is not released yet
    state(t, wr, "after 100 bytes");
    t.wait(ep, 4, 0);
    t.write(wr, "x", 1);
    t.read(rd, 3996);  // the first page is released: writer woken
    state(t, wr, "after 4096 bytes");
    t.wait(ep, 4, 0);
    t.write_bytes(wr, 5000);  // partial: one page free
    t.write_bytes(wr, 1);
    t.read(rd, 65536);
    t.read(rd, 65536);
    t.wait(ep, 4, 0);
    t.write_bytes(wr, 100000);  // nonblocking large write: partial
    t.write_bytes(wr, 1);
  });
  EXPECT_LINUX_SEQ(r, {"wait(fd0,4,0) = 1 [OUT:2]", "filled with 4096-byte writes: 65536 bytes, then EAGAIN",
                       "state full, write end: 0", "state full, read end: IN|RDNORM", "wait(fd0,4,0) = 0",
                       "state after 100 bytes: 0", "wait(fd0,4,0) = 0", "write(fd2,1) = -1 EAGAIN",
                       "state after 4096 bytes: OUT|WRNORM", "wait(fd0,4,0) = 1 [OUT:2]", "write(fd2,5000) = 4096",
                       "write(fd2,1) = -1 EAGAIN", "read(fd1,65536) = 65536", "write(fd2,100000) = 65536"});
}

// Small writes share a page only when they fit whole in its remaining space.
TEST(Pipe, PagePacking) {
  auto r = conf::differential([](T& t) {
    auto [rd, wr] = t.pipe2(O_NONBLOCK);
    fill(t, wr, 1000);
    t.read(rd, 65536);
    t.read(rd, 65536);
    fill(t, wr, 1024);
    t.read(rd, 65536);
    auto [rd2, wr2] = t.pipe2(O_NONBLOCK);
    fill(t, wr2, 3000);
    (void)rd2;
  });
  EXPECT_LINUX_SEQ(r, {"filled with 1000-byte writes: 64000 bytes, then EAGAIN",
                       "filled with 1024-byte writes: 65536 bytes, then EAGAIN"});
}

TEST(Pipe, WriterClosedEofHup) {
  auto r = conf::differential([](T& t) {
    auto [rd, wr] = t.pipe2(O_NONBLOCK);
    t.write(wr, "abc", 3);
    t.close(wr);
    state(t, rd, "data + no writer");
    t.read(rd, 2);
    t.read(rd, 8);
    state(t, rd, "drained");
    t.read(rd, 8);  // EOF, not EAGAIN
    t.read(rd, 8);
  });
  EXPECT_LINUX_SEQ(r, {"state data + no writer: IN|HUP|RDNORM", "read(fd0,2) = 2", "read(fd0,8) = 1",
                       "state drained: HUP", "read(fd0,8) = 0", "read(fd0,8) = 0"});
}

TEST(Pipe, ReaderClosedEpipeErr) {
  auto r = conf::differential([](T& t) {
    int ep = t.epoll_create1();
    auto [rd, wr] = t.pipe();
    t.ctl(ep, EPOLL_CTL_ADD, wr, EPOLLOUT | EPOLLET, 1);
    t.wait(ep, 4, 0);
    t.write(wr, "abc", 3);
    t.close(rd);
    t.wait(ep, 4, 0);
    state(t, wr, "no reader");
    t.write(wr, "x", 1);  // EPIPE (SIGPIPE ignored)
    t.write(wr, "", 0);
  });
  EXPECT_LINUX_SEQ(r, {"wait(fd0,4,0) = 1 [OUT:1]", "wait(fd0,4,0) = 1 [OUT|ERR:1]",
                       "state no reader: OUT|ERR|WRNORM", "write(fd2,1) = -1 EPIPE"});
}

// A blocked reader is woken by a write, a blocked writer (full pipe) by a read.
TEST(Pipe, BlockingReadAndWrite) {
  auto r = conf::differential([](T& t) {
    auto [rd, wr] = t.pipe();
    {
      conf::WhenBlocked later([&, wr = wr] { t.api.write(wr, "hello", 5); });
      t.read(rd, 100);  // sleeps until the write; returns what is there
    }
    {
      T::Quiet q(t);
      for (int i = 0; i < 16; ++i) t.write_bytes(wr, 4096);
    }
    {
      conf::WhenBlocked later([&, rd = rd] {
        std::vector<char> buf(8192);
        t.api.read(rd, buf.data(), buf.size());
      });
      t.write_bytes(wr, 4096);  // full: sleeps until two pages are read
    }
    // A blocked reader sees EOF when the writer closes.
    {
      conf::WhenBlocked later([&, wr = wr] { t.api.close(wr); });
      T::Quiet q(t);
      std::vector<char> buf(65536);
      while (t.api.read(rd, buf.data(), buf.size()) > 0) {
      }
    }
    t.forget(wr);
    t.log("reader saw EOF after the writer closed");
  });
  EXPECT_LINUX_SEQ(r, {"read(fd0,100) = 5", "write(fd1,4096) = 4096"});
}

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

// ---- timerfd --------------------------------------------------------------
TEST(Timerfd, CreateAndSettimeErrors) {
  UEPOLL_SKIP_UNDER_SANITIZERS("kernel-address itimerspec");
  auto r = conf::differential([](T& t) {
    t.timerfd_create(42, 0);
    t.timerfd_create(-1, 0);
    t.timerfd_create(CLOCK_PROCESS_CPUTIME_ID, 0);
    t.timerfd_create(CLOCK_MONOTONIC, 0x1);
    t.timerfd_create(CLOCK_MONOTONIC, TFD_TIMER_ABSTIME);
    int tm = t.timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    t.timerfd_create(CLOCK_REALTIME, 0);
    int e = t.eventfd(0);
    int gone = t.eventfd(0);
    t.close(gone);
    struct itimerspec bad {};
    bad.it_value.tv_nsec = 1000000000;
    t.timerfd_settime_raw(tm, 0, &bad, nullptr, "value nsec 1e9");
    bad = {};
    bad.it_value.tv_sec = -1;
    t.timerfd_settime_raw(tm, 0, &bad, nullptr, "value sec -1");
    bad = {};
    bad.it_interval.tv_nsec = -1;
    t.timerfd_settime_raw(tm, 0, &bad, nullptr, "interval nsec -1");
    t.timerfd_settime(tm, 0x4, 1000000, 0, nullptr, "flags 0x4");
    t.timerfd_settime(tm, TFD_TIMER_ABSTIME | 0x8, 1000000, 0, nullptr, "flags ABSTIME|0x8");
    t.timerfd_settime(e, 0, 1000000, 0, nullptr, "on an eventfd");
    t.timerfd_settime(gone, 0, 1000000, 0, nullptr, "closed");
    t.timerfd_settime_raw(tm, 0, static_cast<struct itimerspec*>(conf::kernel_address()), nullptr, "kernel");
    // TFD_TIMER_CANCEL_ON_SET is accepted (and ignored) on a monotonic timer.
    const long long hour = 3600 * 1000000000LL;
    t.timerfd_settime(tm, TFD_TIMER_CANCEL_ON_SET, hour, 0, nullptr, "mono CANCEL_ON_SET");
    struct timespec mono;
    clock_gettime(CLOCK_MONOTONIC, &mono);
    t.timerfd_settime(tm, TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET, mono.tv_sec * 1000000000LL + hour, 0, nullptr,
                      "mono ABSTIME|CANCEL_ON_SET");
    struct itimerspec cur;
    t.timerfd_gettime(e, &cur);
    t.timerfd_gettime(gone, &cur);
    t.timerfd_gettime(tm, static_cast<struct itimerspec*>(conf::kernel_address()));
    t.write_u64(tm, 1);  // timerfd has no write
    t.read(tm, 4);
    t.read(tm, 8);
  }, /*forked=*/true);
  EXPECT_LINUX_SEQ(r, {"timerfd_create(42,0) = -1 EINVAL", "timerfd_create(-1,0) = -1 EINVAL",
                       "timerfd_create(2,0) = -1 EINVAL", "timerfd_create(1,0x1) = -1 EINVAL",
                       "timerfd_create(1,0x1) = -1 EINVAL", "timerfd_create(1,CLOEXEC|NONBLOCK) = fd0",
                       "timerfd_create(0,0) = fd1", "timerfd_settime(fd0,0,value nsec 1e9) = -1 EINVAL",
                       "timerfd_settime(fd0,0,value sec -1) = -1 EINVAL",
                       "timerfd_settime(fd0,0,interval nsec -1) = -1 EINVAL",
                       "timerfd_settime(fd0,4,flags 0x4) = -1 EINVAL",
                       "timerfd_settime(fd0,9,flags ABSTIME|0x8) = -1 EINVAL",
                       "timerfd_settime(fd2,0,on an eventfd) = -1 EINVAL", "timerfd_settime(fd3,0,closed) = -1 EBADF",
                       "timerfd_settime(fd0,0,kernel) = -1 EFAULT",
                       "timerfd_settime(fd0,2,mono CANCEL_ON_SET) = 0",
                       "timerfd_settime(fd0,3,mono ABSTIME|CANCEL_ON_SET) = 0", "timerfd_gettime(fd2) = -1 EINVAL",
                       "timerfd_gettime(fd3) = -1 EBADF", "timerfd_gettime(fd0) = -1 EFAULT",
                       "write_u64(fd0,0x1) = -1 EINVAL", "read(fd0,4) = -1 EINVAL", "read(fd0,8) = -1 EAGAIN"});
}

// Other clocks Linux accepts (uepoll may document a deviation here), and
// TFD_TIMER_CANCEL_ON_SET on a realtime absolute timer.
TEST(Timerfd, OtherClocks) {
  auto r = conf::differential([](T& t) {
    t.timerfd_create(CLOCK_BOOTTIME, 0);
    t.timerfd_create(CLOCK_REALTIME_ALARM, 0);
    t.timerfd_create(CLOCK_BOOTTIME_ALARM, 0);
    int rt = t.timerfd_create(CLOCK_REALTIME, TFD_NONBLOCK);
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    long long now_ns = now.tv_sec * 1000000000LL + now.tv_nsec;
    t.timerfd_settime(rt, TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET, now_ns + 3600 * 1000000000LL, 0, nullptr,
                      "now+1h ABSTIME|CANCEL_ON_SET");
    t.read(rt, 8);
  });
  EXPECT_LINUX_SEQ(r, {"timerfd_create(7,0) = fd0"});
}

std::string ms_range(double v, double lo, double hi) {
  return v >= lo && v <= hi ? "in range" : "out of range (" + std::to_string(v) + ")";
}
double ts_ms(const struct timespec& ts) { return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6; }
long long monotonic_ns() {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return now.tv_sec * 1000000000LL + now.tv_nsec;
}

TEST(Timerfd, RelativeOneShotAndGettime) {
  auto r = conf::differential([](T& t) {
    int ep = t.epoll_create1();
    int tm = t.timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
    t.ctl(ep, EPOLL_CTL_ADD, tm, ALL, 1);
    struct itimerspec cur;
    t.timerfd_gettime(tm, &cur);
    t.log("unarmed: value " + std::to_string(ts_ms(cur.it_value)) + " interval " + std::to_string(ts_ms(cur.it_interval)));
    t.read(tm, 8);  // EAGAIN
    t.timerfd_settime(tm, 0, 30 * 1000000LL, 0);
    t.timerfd_gettime(tm, &cur);
    t.log("armed 30 ms: remaining " + ms_range(ts_ms(cur.it_value), 0, 30) + ", interval " +
          std::to_string(ts_ms(cur.it_interval)));
    t.wait(ep, 4, 0);
    double t0 = conf::now_ms();
    t.wait(ep, 4, 2000);
    t.log("expired after " + ms_range(conf::now_ms() - t0, 15, 500));
    t.read_u64(tm);
    t.read(tm, 8);  // EAGAIN: one-shot
    t.timerfd_gettime(tm, &cur);
    t.log("after expiry: value " + std::to_string(ts_ms(cur.it_value)));
    // Re-arming returns the old setting; disarming clears a pending count.
    struct itimerspec old;
    t.timerfd_settime(tm, 0, 5000 * 1000000LL, 0);
    t.timerfd_settime(tm, 0, 1000000LL, 0, &old);
    t.log("old value " + ms_range(ts_ms(old.it_value), 4000, 5000));
    usleep(20 * 1000);
    t.wait(ep, 4, 0);
    t.timerfd_settime(tm, 0, 0, 0, &old);  // disarm: the expiry is discarded
    t.wait(ep, 4, 0);
    t.read(tm, 8);
  });
  EXPECT_LINUX_SEQ(r, {"unarmed: value 0.000000 interval 0.000000", "read(fd1,8) = -1 EAGAIN",
                       "armed 30 ms: remaining in range, interval 0.000000", "wait(fd0,4,0) = 0",
                       "wait(fd0,4,2000) = 1 [IN:1]", "expired after in range", "read(fd1,8) = 8 value=1",
                       "read(fd1,8) = -1 EAGAIN", "after expiry: value 0.000000", "old value in range",
                       "wait(fd0,4,0) = 1 [IN:1]", "wait(fd0,4,0) = 0", "read(fd1,8) = -1 EAGAIN"});
}

TEST(Timerfd, AbsoluteAndInterval) {
  auto r = conf::differential([](T& t) {
    int ep = t.epoll_create1();
    int tm = t.timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
    t.ctl(ep, EPOLL_CTL_ADD, tm, EPOLLIN | EPOLLET, 1);
    const long long now_ns = monotonic_ns();
    t.timerfd_settime(tm, TFD_TIMER_ABSTIME, now_ns + 30 * 1000000LL, 0, nullptr, "now+30ms");
    double t0 = conf::now_ms();
    t.wait(ep, 4, 2000);
    t.log("absolute expiry after " + ms_range(conf::now_ms() - t0, 20, 500));
    t.read_u64(tm);
    t.timerfd_settime(tm, TFD_TIMER_ABSTIME, now_ns - 1000000LL, 0, nullptr, "in the past");
    t.wait(ep, 4, 0);  // fires at once
    t.read_u64(tm);
    // Interval: 40 ms period, read after ~130 ms: several expirations in one
    // count.  The period leaves ~30 ms between the read and the next expiry
    // for the gettime below: an expiry between them would let gettime
    // re-arm the timer (Linux's timerfd_gettime restarts it) and give a
    // second edge before the stall check, on Linux as on uepoll (seen with
    // a 10 ms period on a loaded machine).
    double set_start = conf::now_ms();
    t.timerfd_settime(tm, 0, 40 * 1000000LL, 40 * 1000000LL);
    double set_end = conf::now_ms();
    usleep(130 * 1000);
    uint64_t v = 0;
    double read_start = conf::now_ms();
    {
      T::Quiet q(t);
      t.read(tm, 8, &v);
    }
    double read_end = conf::now_ms();
    // Expirations at 40, 80, ... ms after arming: the count must fit the
    // time that really passed (the machine may be loaded).
    long lo = static_cast<long>((read_start - set_end) / 40) - 1;
    long hi = static_cast<long>((read_end - set_start) / 40) + 1;
    bool ok = static_cast<long>(v) >= std::max(lo, 1L) && static_cast<long>(v) <= hi;
    t.log("interval count " + std::string(ok ? "matches the elapsed time" : "off: " + std::to_string(v) + " not in [" +
                                                   std::to_string(lo) + "," + std::to_string(hi) + "]"));
    struct itimerspec cur;
    t.timerfd_gettime(tm, &cur);
    t.log("interval " + std::to_string(ts_ms(cur.it_interval)) + ", remaining " + ms_range(ts_ms(cur.it_value), 0, 40));
    // The next expiry is an edge; after it, an interval timer whose count
    // is not read is not re-armed (Linux restarts the hrtimer in read()), so
    // no further edges come until the count is read.
    t.wait(ep, 4, 2000);
    t.wait(ep, 4, 60);
    {
      T::Quiet q(t);
      t.read(tm, 8, &v);
    }
    t.log("count read after the stall " + std::string(v >= 1 ? ">= 1" : "0"));
    t.wait(ep, 4, 2000);
    t.timerfd_settime(tm, 0, 0, 0);
  });
  EXPECT_LINUX_SEQ(r, {"wait(fd0,4,2000) = 1 [IN:1]", "absolute expiry after in range", "read(fd1,8) = 8 value=1",
                       "wait(fd0,4,0) = 1 [IN:1]", "read(fd1,8) = 8 value=1", "interval count matches the elapsed time",
                       "interval 40.000000, remaining in range", "wait(fd0,4,2000) = 1 [IN:1]",
                       "wait(fd0,4,60) = 0", "count read after the stall >= 1", "wait(fd0,4,2000) = 1 [IN:1]"});
}

// One wakeup per expiry: a timer set in the past is delivered by settime
// itself, and the service thread's later report of the same expiry must not
// become a second edge; an expired interval timer left unread stays quiet
// until gettime re-arms it (Linux's timerfd_gettime restarts the hrtimer).
TEST(Timerfd, OneWakeupPerExpiryAndGettimeRearms) {
  auto r = conf::differential([](T& t) {
    int ep = t.epoll_create1();
    int tm = t.timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
    t.ctl(ep, EPOLL_CTL_ADD, tm, EPOLLIN | EPOLLET, 1);
    const long long now_ns = monotonic_ns();
    t.timerfd_settime(tm, TFD_TIMER_ABSTIME, now_ns - 1000000LL, 0, nullptr, "in the past");
    t.wait(ep, 4, 0);
    usleep(30 * 1000);  // the service thread has seen the expiry by now
    t.wait(ep, 4, 0);
    t.read_u64(tm);
    t.timerfd_settime(tm, 0, 5 * 1000000LL, 5 * 1000000LL);
    t.wait(ep, 4, 2000);
    usleep(30 * 1000);  // unread: not re-armed, no new edge
    t.wait(ep, 4, 0);
    struct itimerspec cur;
    t.timerfd_gettime(tm, &cur);  // re-arms the expired interval timer
    t.wait(ep, 4, 2000);
    t.timerfd_settime(tm, 0, 0, 0);
  });
  EXPECT_LINUX_SEQ(r, {"wait(fd0,4,0) = 1 [IN:1]", "wait(fd0,4,0) = 0", "read(fd1,8) = 8 value=1",
                       "wait(fd0,4,2000) = 1 [IN:1]", "wait(fd0,4,0) = 0", "wait(fd0,4,2000) = 1 [IN:1]"});
}

// A blocking timerfd read sleeps until the expiry.
TEST(Timerfd, BlockingRead) {
  auto r = conf::differential([](T& t) {
    int tm = t.timerfd_create(CLOCK_MONOTONIC, 0);
    t.timerfd_settime(tm, 0, 30 * 1000000LL, 0);
    double t0 = conf::now_ms();
    t.read_u64(tm);
    t.log("blocked " + ms_range(conf::now_ms() - t0, 20, 500));
  });
  EXPECT_LINUX_SEQ(r, {"read(fd0,8) = 8 value=1", "blocked in range"});
}

// ---- epoll descriptors have no read/write -------------------------------
TEST(EpollFile, ReadWriteEinval) {
  auto r = conf::differential([](T& t) {
    int ep = t.epoll_create1();
    int efd = t.eventfd(1);
    t.ctl(ep, EPOLL_CTL_ADD, efd, EPOLLIN, 1);
    t.read(ep, 8);
    t.read(ep, 0);
    t.write(ep, "12345678", 8);
    t.write(ep, "", 0);
    t.wait(ep, 4, 0);
  });
  EXPECT_LINUX_SEQ(r, {"read(fd0,8) = -1 EINVAL", "read(fd0,0) = -1 EINVAL", "write(fd0,8) = -1 EINVAL",
                       "write(fd0,0) = -1 EINVAL", "wait(fd0,4,0) = 1 [IN:1]"});
}

}  // namespace
