// restart_test.cpp - SA_RESTART as signal(7) says: a blocking read or write
// on a pipe, a socket pair, an eventfd or a timerfd that a handler
// interrupts is restarted when the handler was installed with SA_RESTART
// and fails with EINTR when it was not; a write that had already moved
// bytes returns that partial count either way; poll and epoll_wait are
// never restarted.  A helper thread signals the blocked thread once it is
// asleep (its /proc state is S), then makes the call able to finish.
// Runs on Linux and uepoll; the traces must match.
#include "harness.h"
#include "interrupted.h"
#include "splice_calls.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/syscall.h>

#include <atomic>
#include <cstdio>

namespace {

using conf::T;
using conf_interrupted::interrupted;

TEST(Restart, BlockingCallsAndSaRestart) {
  UEPOLL_SKIP_UNDER_TSAN("signals a thread blocked on a kernel descriptor");
  auto r = conf::differential([](T& t) {
    const uepoll_test::Api& api = t.api;
    for (bool restart : {true, false}) {
      const auto pipe_ends = t.pipe();
      const int rd = pipe_ends.first, wr = pipe_ends.second;
      char c;
      interrupted(
          t, restart, "pipe read", [&] { return api.read(rd, &c, 1); }, [&] { (void)api.write(wr, "x", 1); });
      if (!restart) t.read(rd, 1);
      // A full pipe: a one-byte write waits for room.
      std::vector<char> big(65536, 'y');
      t.write(wr, big.data(), big.size());
      interrupted(
          t, restart, "pipe write (full)", [&] { return api.write(wr, "z", 1); },
          [&] { (void)api.read(rd, big.data(), 4096); });
      // A write that moved bytes before it slept returns them.
      std::vector<char> rest(70000);  // its sub-page tail (368 bytes) merges into the last page
      interrupted(
          t, restart, "pipe write (partial)", [&] { return api.write(wr, rest.data(), rest.size()); }, [] {});
      t.close(rd);
      t.close(wr);

      const auto socks = t.unix_stream();
      const int s0 = socks.first, s1 = socks.second;
      interrupted(
          t, restart, "socket read", [&] { return api.read(s0, &c, 1); }, [&] { (void)api.write(s1, "s", 1); });
      if (!restart) t.read(s0, 1);
      t.close(s0);
      t.close(s1);

      int efd = t.eventfd(0);
      uint64_t v = 0;
      interrupted(
          t, restart, "eventfd read", [&] { return api.read(efd, &v, 8); },
          [&] {
            uint64_t one = 1;
            (void)api.write(efd, &one, 8);
          });
      if (!restart) t.read(efd, 8);
      t.close(efd);

      int tfd = t.timerfd_create(CLOCK_MONOTONIC, 0);
      uint64_t ticks = 0;
      interrupted(
          t, restart, "timerfd read", [&] { return api.read(tfd, &ticks, 8); },
          [&] {
            struct itimerspec its{};
            its.it_value.tv_nsec = 1000000;
            (void)api.timerfd_settime(tfd, 0, &its, nullptr);
          });
      if (!restart) t.read(tfd, 8);
      t.close(tfd);

      // Never restarted (signal(7)'s second list).
      const auto pp = t.pipe();
      const int prd = pp.first, pwr = pp.second;
      struct pollfd pfd = {prd, POLLIN, 0};
      interrupted(
          t, restart, "poll", [&] { return api.poll(&pfd, 1, 5000); }, [&] { (void)api.write(pwr, "p", 1); });
      int ep = t.epoll_create1();
      t.read(prd, 1);
      t.ctl(ep, EPOLL_CTL_ADD, prd, EPOLLIN, 3);
      struct epoll_event ev;
      interrupted(
          t, restart, "epoll_wait", [&] { return api.epoll_wait(ep, &ev, 1, 5000); },
          [&] { (void)api.write(pwr, "q", 1); });
      t.close(ep);
      t.close(prd);
      t.close(pwr);
    }
  });
  EXPECT_LINUX_SEQ(r, {"pipe read [SA_RESTART] = 1 handler ran", "pipe write (full) [SA_RESTART] = 1 handler ran",
                       "pipe write (partial) [SA_RESTART] = 368 handler ran",
                       "socket read [SA_RESTART] = 1 handler ran", "eventfd read [SA_RESTART] = 8 handler ran",
                       "timerfd read [SA_RESTART] = 8 handler ran", "poll [SA_RESTART] = -1 EINTR handler ran",
                       "epoll_wait [SA_RESTART] = -1 EINTR handler ran",
                       "pipe read [no SA_RESTART] = -1 EINTR handler ran",
                       "pipe write (full) [no SA_RESTART] = -1 EINTR handler ran",
                       "eventfd read [no SA_RESTART] = -1 EINTR handler ran"});
}

// Datagram and seqpacket pairs: a blocking receive and a blocking send (a
// full send buffer: a message is all or nothing) restart after an
// SA_RESTART handler and fail with EINTR without one.
TEST(Restart, DatagramPairs) {
  UEPOLL_SKIP_UNDER_TSAN("signals a thread blocked on a kernel descriptor");
  auto r = conf::differential([](T& t) {
    const uepoll_test::Api& api = t.api;
    for (int type : {SOCK_DGRAM, SOCK_SEQPACKET}) {
      const std::string name = type == SOCK_DGRAM ? "dgram" : "seqpacket";
      for (bool restart : {true, false}) {
        const auto socks = t.socketpair(AF_UNIX, type, 0, type == SOCK_DGRAM ? "dgram" : "seqpacket");
        const int s0 = socks.first, s1 = socks.second;
        char c[4];
        interrupted(
            t, restart, name + " recv", [&] { return api.read(s0, c, sizeof c); },
            [&] { (void)api.write(s1, "msg", 3); });
        if (!restart) t.read(s0, 4);
        // Four messages of 60000 bytes fill the send buffer (61696 charged
        // each); the fifth waits until the reader drains all four.
        std::vector<char> m(60000, 'm');
        for (int i = 0; i < 4; ++i) t.write(s1, m.data(), m.size());
        interrupted(
            t, restart, name + " send (full)", [&] { return api.write(s1, m.data(), m.size()); },
            [&] {
              std::vector<char> b(60000);
              for (int i = 0; i < 4; ++i) (void)api.read(s0, b.data(), b.size());
            });
        t.close(s0);
        t.close(s1);
      }
    }
  });
  EXPECT_LINUX_SEQ(r, {"dgram recv [SA_RESTART] = 3 handler ran", "dgram send (full) [SA_RESTART] = 60000 handler ran",
                       "dgram recv [no SA_RESTART] = -1 EINTR handler ran",
                       "dgram send (full) [no SA_RESTART] = -1 EINTR handler ran",
                       "seqpacket recv [SA_RESTART] = 3 handler ran"});
}

// Blocking splice, tee and vmsplice sleep as reads and writes do: after a
// handler with SA_RESTART they go on, without it they return EINTR; so
// does a splice waiting for room in a kernel pipe (a kernel descriptor in
// uepoll's run too).
TEST(Restart, BlockingSplice) {
  UEPOLL_SKIP_UNDER_TSAN("signals a thread blocked on a kernel descriptor");
  auto r = conf::differential([](T& t) {
    const splice_conf::Calls c{t.is_linux()};
    const uepoll_test::Api& api = t.api;
    const int f = splice_conf::temp_file(100);
    if (f < 0) return;
    for (bool restart : {true, false}) {
      const auto p1 = t.pipe(), p2 = t.pipe();  // no structured bindings: the lambdas capture them
      const int rd = p1.first, wr = p1.second, rd2 = p2.first, wr2 = p2.second;
      char buf[4096];
      interrupted(
          t, restart, "splice pipe->file", [&] { return c.splice(rd, nullptr, f, nullptr, 10, 0); },
          [&] { (void)api.write(wr, "x", 1); });
      if (!restart) t.read(rd, 1);
      interrupted(
          t, restart, "tee", [&] { return c.tee(rd, wr2, 10, 0); }, [&] { (void)api.write(wr, "y", 1); });
      t.read(rd, 16);
      if (restart) t.read(rd2, 16);
      struct iovec v = {buf, sizeof buf};
      interrupted(
          t, restart, "vmsplice out", [&] { return c.vmsplice(rd, &v, 1, 0); }, [&] { (void)api.write(wr, "z", 1); });
      if (!restart) t.read(rd, 1);
      std::vector<char> big(65536, 'b');
      t.write(wr, big.data(), big.size());
      int64_t off = 0;
      interrupted(
          t, restart, "splice file->full pipe", [&] { return c.splice(f, &off, wr, nullptr, 10, 0); },
          [&] { (void)api.read(rd, buf, sizeof buf); });
      const auto socks = t.unix_stream();
      const int s0 = socks.first, s1 = socks.second;
      t.read(rd, 65536);
      interrupted(
          t, restart, "splice socket->pipe", [&] { return c.splice(s0, nullptr, wr, nullptr, 10, 0); },
          [&] { (void)api.write(s1, "s", 1); });
      int kp[2];
      if (::pipe2(kp, O_CLOEXEC | O_NONBLOCK) == 0) {
        while (::write(kp[1], big.data(), 4096) > 0) {
        }
        ::fcntl(kp[1], F_SETFL, 0);
        t.write(wr, "k", 1);
        interrupted(
            t, restart, "splice pipe->full kernel pipe", [&] { return c.splice(rd, nullptr, kp[1], nullptr, 10, 0); },
            [&] { (void)::read(kp[0], big.data(), big.size()); });
        ::close(kp[0]);
        ::close(kp[1]);
      }
      for (int fd : {rd, wr, rd2, wr2, s0, s1}) t.close(fd);
    }
    ::close(f);
  });
  EXPECT_LINUX_SEQ(r, {"splice pipe->file [SA_RESTART] = 1 handler ran", "tee [SA_RESTART] = 1 handler ran",
                       "vmsplice out [SA_RESTART] = 1 handler ran",
                       "splice file->full pipe [SA_RESTART] = 10 handler ran",
                       "splice socket->pipe [SA_RESTART] = 1 handler ran",
                       "splice pipe->full kernel pipe [SA_RESTART] = 2 handler ran",
                       "splice pipe->file [no SA_RESTART] = -1 EINTR handler ran",
                       "tee [no SA_RESTART] = -1 EINTR handler ran",
                       "splice pipe->full kernel pipe [no SA_RESTART] = -1 EINTR handler ran"});
}

}  // namespace
