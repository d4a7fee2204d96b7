// differential_test.cpp - user-defined files (uep_file_open) against the
// built-in objects and against Linux: each scenario is written once
// (conformance/harness.h) and run three times -- Linux's eventfd / pipe,
// uepoll's built-in eventfd / pipe, and uepoll with the same object written
// by the program as a user file (support/user_objects.h) -- and the three
// traces must be identical.  Absolute expectations on the Linux trace keep
// a scenario from passing because all three are wrong the same way.
#include "conformance/harness.h"
#include "support/user_objects.h"

#include <pthread.h>
#include <signal.h>

namespace {

using conf::T;
using uepoll_test::Api;

namespace detail {
inline int user_pipe(int p[2]) { return uepoll_test::UserChannel::create(p, 0); }
inline int user_pipe2(int p[2], int flags) {
  if (flags & ~(O_NONBLOCK | O_CLOEXEC)) return errno = EINVAL, -1;
  return uepoll_test::UserChannel::create(p, flags);
}
}  // namespace detail

// uepoll with user-defined eventfds and pipes.
const Api& user_api() {
  static Api api = [] {
    Api a = uepoll_test::user_eventfd_api(uepoll_test::uepoll_api());
    a.pipe = &detail::user_pipe;
    a.pipe2 = &detail::user_pipe2;
    return a;
  }();
  return api;
}

struct Three {
  std::vector<std::string> linux_trace, builtin_trace, user_trace;
};

// Linux, uepoll built-in, uepoll user file: all three traces must match.
Three three_way(const conf::Scenario& s) {
  Three r;
  r.linux_trace = conf::run_one(uepoll_test::linux_api(), s);
  r.builtin_trace = conf::run_one(uepoll_test::uepoll_api(), s);
  r.user_trace = conf::run_one(user_api(), s);
  EXPECT_TRUE(r.linux_trace == r.builtin_trace)
      << "built-in differs from Linux (L = Linux, U = built-in):\n"
      << conf::format_traces(r.linux_trace, r.builtin_trace);
  EXPECT_TRUE(r.linux_trace == r.user_trace)
      << "user file differs from Linux (L = Linux, U = user file):\n"
      << conf::format_traces(r.linux_trace, r.user_trace);
  return r;
}

#define EXPECT_TRACE_HAS(tr, needle) \
  EXPECT_TRUE(conf::has((tr), (needle))) << "trace lacks \"" << (needle) << "\":\n" << conf::dump(tr)

TEST(UserFileSwitch, EnvironmentSelectsUserEventfd) {
  const char* v = getenv("UEPOLL_TEST_USER_EVENTFD");
  const bool on = v && *v && *v != '0';
  EXPECT_EQ(uepoll_test::uepoll_api().eventfd == &uepoll_test::detail::user_eventfd, on);
  EXPECT_EQ(user_api().eventfd, &uepoll_test::detail::user_eventfd);
}

TEST(UserFileDiff, LevelTriggered) {
  auto r = three_way([](T& t) {
    int ep = t.epoll_create1(0);
    int efd = t.eventfd(0, EFD_NONBLOCK);
    t.ctl(ep, EPOLL_CTL_ADD, efd, EPOLLIN, 7);
    t.wait(ep, 4, 0);
    t.write_u64(efd, 3);
    t.wait(ep, 4, 0);
    t.wait(ep, 4, 0);  // still ready: level-triggered
    t.read_u64(efd);
    t.wait(ep, 4, 0);
    t.read_u64(efd);  // EAGAIN
    t.ctl(ep, EPOLL_CTL_MOD, efd, EPOLLIN | EPOLLOUT, 8);
    t.wait(ep, 4, 0);
  });
  EXPECT_TRACE_HAS(r.linux_trace, "wait(fd0,4,0) = 1 [IN:7]");
  EXPECT_TRACE_HAS(r.linux_trace, "read(fd1,8) = -1 EAGAIN");
  EXPECT_TRACE_HAS(r.linux_trace, "wait(fd0,4,0) = 1 [OUT:8]");
}

TEST(UserFileDiff, EdgeTriggeredEveryWriteIsAnEdge) {
  auto r = three_way([](T& t) {
    int ep = t.epoll_create1(0);
    int efd = t.eventfd(0, EFD_NONBLOCK);
    t.ctl(ep, EPOLL_CTL_ADD, efd, EPOLLIN | EPOLLOUT | EPOLLET, 1);
    t.wait(ep, 4, 0);  // OUT: the first poll at ADD
    t.wait(ep, 4, 0);  // nothing new
    t.write_u64(efd, 1);
    t.wait(ep, 4, 0);  // IN|OUT
    t.wait(ep, 4, 0);
    t.write_u64(efd, 1);  // counter already nonzero: still an edge
    t.wait(ep, 4, 0);
    t.read_u64(efd);  // a read wakes with EPOLLOUT
    t.wait(ep, 4, 0);
  });
  EXPECT_LINUX_SEQ(r, {"wait(fd0,4,0) = 1 [OUT:1]", "wait(fd0,4,0) = 0", "write_u64(fd1,0x1) = 8",
                              "wait(fd0,4,0) = 1 [IN|OUT:1]", "wait(fd0,4,0) = 0"});
}

TEST(UserFileDiff, OneShotAndRearm) {
  auto r = three_way([](T& t) {
    int ep = t.epoll_create1(0);
    int efd = t.eventfd(0, EFD_NONBLOCK);
    t.ctl(ep, EPOLL_CTL_ADD, efd, EPOLLIN | EPOLLONESHOT, 5);
    t.write_u64(efd, 1);
    t.wait(ep, 4, 0);
    t.write_u64(efd, 1);
    t.wait(ep, 4, 0);  // disabled
    t.ctl(ep, EPOLL_CTL_MOD, efd, EPOLLIN | EPOLLONESHOT, 6);
    t.wait(ep, 4, 0);  // re-armed and ready
    t.wait(ep, 4, 0);
  });
  EXPECT_LINUX_SEQ(r, {"wait(fd0,4,0) = 1 [IN:5]", "wait(fd0,4,0) = 0", "wait(fd0,4,0) = 1 [IN:6]",
                              "wait(fd0,4,0) = 0"});
}

// Three instances hold EPOLLEXCLUSIVE items on one file.  With nobody
// blocked in epoll_wait, every exclusive item takes the wakeup (Linux
// ep_poll_callback counts an exclusive wakeup only when it woke a waiter);
// with blocked waiters only one is woken (contract_test.cpp,
// ExclusiveBlockedWaitersMatchBuiltin).
TEST(UserFileDiff, ExclusiveWithoutWaiters) {
  auto r = three_way([](T& t) {
    int e1 = t.epoll_create1(0), e2 = t.epoll_create1(0), e3 = t.epoll_create1(0);
    int efd = t.eventfd(0, EFD_NONBLOCK);
    for (int ep : {e1, e2, e3}) t.ctl(ep, EPOLL_CTL_ADD, efd, EPOLLIN | EPOLLEXCLUSIVE, 1);
    t.write_u64(efd, 1);
    t.wait(e3, 4, 0);
    t.wait(e2, 4, 0);
    t.wait(e1, 4, 0);
  });
  EXPECT_LINUX_SEQ(r, {"wait(fd2,4,0) = 1 [IN:1]", "wait(fd1,4,0) = 1 [IN:1]", "wait(fd0,4,0) = 1 [IN:1]"});
}

//   e0 --watches--> e1 --watches--> efd
TEST(UserFileDiff, Nested) {
  auto r = three_way([](T& t) {
    int e0 = t.epoll_create1(0), e1 = t.epoll_create1(0);
    int efd = t.eventfd(0, EFD_NONBLOCK);
    t.ctl(e1, EPOLL_CTL_ADD, efd, EPOLLIN | EPOLLET, 11);
    t.ctl(e0, EPOLL_CTL_ADD, e1, EPOLLIN | EPOLLET, 10);
    t.wait(e0, 4, 0);
    t.write_u64(efd, 1);
    t.wait(e0, 4, 0);
    t.wait(e0, 4, 0);
    t.wait(e1, 4, 0);
    t.poll({{e1, POLLIN}}, 0);
  });
  EXPECT_LINUX_SEQ(r, {"wait(fd0,4,0) = 0", "wait(fd0,4,0) = 1 [IN:10]", "wait(fd0,4,0) = 0",
                              "wait(fd1,4,0) = 1 [IN:11]"});
}

// Registration lives as long as the open file: a dup keeps it, the last
// close removes it (the number can be registered anew, no EEXIST).
TEST(UserFileDiff, DupAndCloseAutoRemoval) {
  auto r = three_way([](T& t) {
    int ep = t.epoll_create1(0);
    int efd = t.eventfd(0, EFD_NONBLOCK);
    int d = t.dup(efd);
    t.ctl(ep, EPOLL_CTL_ADD, efd, EPOLLIN, 1);
    t.close(efd);
    t.write_u64(d, 1);
    t.wait(ep, 4, 0);  // still watched through the dup
    t.close(d);
    t.wait(ep, 4, 0);  // gone with the last descriptor
    int again = t.eventfd(1, EFD_NONBLOCK);
    t.ctl(ep, EPOLL_CTL_ADD, again, EPOLLIN, 2);
    t.wait(ep, 4, 0);
  });
  EXPECT_LINUX_SEQ(r, {"wait(fd0,4,0) = 1 [IN:1]", "close(fd2) = 0", "wait(fd0,4,0) = 0",
                              "wait(fd0,4,0) = 1 [IN:2]"});
}

TEST(UserFileDiff, PollAndSemaphore) {
  three_way([](T& t) {
    int efd = t.eventfd(2, EFD_NONBLOCK | EFD_SEMAPHORE);
    t.poll({{efd, POLLIN | POLLOUT}}, 0);
    t.read_u64(efd);
    t.read_u64(efd);
    t.poll({{efd, POLLIN}}, 0);
    t.read_u64(efd);
    t.write_u64(efd, 0xfffffffffffffffeULL);
    t.poll({{efd, POLLIN | POLLOUT}}, 0);
    t.write_u64(efd, 1);  // would overflow: EAGAIN
    t.read(efd, 4);       // too short: EINVAL
    t.write(efd, "x", 1); // EINVAL
  });
}

TEST(UserFileDiff, BlockingReadWokenByAnotherThread) {
  auto r = three_way([](T& t) {
    int efd = t.eventfd(0, 0);
    {
      conf::WhenBlocked w([&] {  // untraced: the main thread logs meanwhile
        uint64_t v = 5;
        t.api.write(efd, &v, 8);
      });
      t.read_u64(efd);
    }
    int ep = t.epoll_create1(0);
    t.ctl(ep, EPOLL_CTL_ADD, efd, EPOLLIN, 3);
    {
      conf::WhenBlocked w([&] {
        uint64_t v = 2;
        t.api.write(efd, &v, 8);
      });
      t.wait(ep, 4, 5000);
    }
    t.read_u64(efd);
  });
  EXPECT_LINUX_SEQ(r, {"read(fd0,8) = 8 value=5", "wait(fd1,4,5000) = 1 [IN:3]", "read(fd0,8) = 8 value=2"});
}

TEST(UserFileDiff, BlockingWriteWokenByReader) {
  three_way([](T& t) {
    int efd = t.eventfd(0, 0);
    t.write_u64(efd, 0xfffffffffffffffeULL);
    {
      conf::WhenBlocked w([&] {
        uint64_t v;
        t.api.read(efd, &v, 8);
      });
      t.write_u64(efd, 1);  // blocks until the counter is read
    }
    t.read_u64(efd);
  });
}

// ---- pipe-like channel vs pipes -------------------------------------------------

// SIGPIPE blocked (and drained) for the scenarios that write to a pipe
// without a reader: the trace records EPIPE, not the signal.
struct NoSigpipe {
  sigset_t old;
  NoSigpipe() {
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &s, &old);
  }
  ~NoSigpipe() {
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGPIPE);
    timespec zero{0, 0};
    while (sigtimedwait(&s, nullptr, &zero) == SIGPIPE) {
    }
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
  }
};

TEST(UserFileDiff, PipeStreamEofAndHangup) {
  auto r = three_way([](T& t) {
    const auto ends = t.pipe2(O_NONBLOCK);
    const int rd = ends.first, wr = ends.second;
    int ep = t.epoll_create1(0);
    t.ctl(ep, EPOLL_CTL_ADD, rd, EPOLLIN | EPOLLET, 1);
    t.ctl(ep, EPOLL_CTL_ADD, wr, EPOLLOUT | EPOLLET, 2);
    t.wait(ep, 4, 0);
    t.write_bytes(wr, 10);
    t.wait(ep, 4, 0);
    t.write_bytes(wr, 10);  // every write is an edge for the reader
    t.wait(ep, 4, 0);
    t.read(rd, 15);
    t.wait(ep, 4, 0);  // a read that frees no slot of a full pipe: no edge
    t.poll({{rd, POLLIN}, {wr, POLLOUT}}, 0);
    t.close(wr);
    t.wait(ep, 4, 0);  // HUP on the read end
    t.read(rd, 100);
    t.read(rd, 100);  // EOF
  });
  EXPECT_LINUX_SEQ(r, {"wait(fd2,4,0) = 1 [OUT:2]", "wait(fd2,4,0) = 1 [IN:1]", "wait(fd2,4,0) = 1 [IN:1]",
                              "read(fd0,15) = 15", "wait(fd2,4,0) = 0", "wait(fd2,4,0) = 1 [IN|HUP:1]",
                              "read(fd0,100) = 5", "read(fd0,100) = 0"});
}

TEST(UserFileDiff, PipeReaderClosedAndFull) {
  NoSigpipe guard;
  auto r = three_way([](T& t) {
    const auto ends = t.pipe2(O_NONBLOCK);
    const int rd = ends.first, wr = ends.second;
    int ep = t.epoll_create1(0);
    t.ctl(ep, EPOLL_CTL_ADD, wr, EPOLLOUT | EPOLLET, 2);
    t.wait(ep, 4, 0);
    t.write_bytes(wr, 65536);
    t.write_bytes(wr, 1);  // full: EAGAIN
    t.poll({{wr, POLLOUT}}, 0);
    t.read(rd, 4096);      // frees a slot of a full pipe: the writer's edge
    t.wait(ep, 4, 0);
    t.close(rd);
    t.wait(ep, 4, 0);      // ERR
    t.write_bytes(wr, 1);  // EPIPE
  });
  EXPECT_LINUX_SEQ(r, {"write(fd1,1) = -1 EAGAIN", "read(fd0,4096) = 4096", "wait(fd2,4,0) = 1 [OUT:2]",
                              "wait(fd2,4,0) = 1 [OUT|ERR:2]", "write(fd1,1) = -1 EPIPE"});
}

TEST(UserFileDiff, PipeBlockingReadWokenByWriterClose) {
  three_way([](T& t) {
    const auto ends = t.pipe2(0);
    const int rd = ends.first, wr = ends.second;
    {
      conf::WhenBlocked w([&] { t.api.write(wr, "abc", 3); });
      t.read(rd, 10);
    }
    {
      conf::WhenBlocked w([&] {
        t.forget(wr);
        t.api.close(wr);
      });
      t.read(rd, 10);  // EOF once the writer is gone
    }
  });
}

}  // namespace
