// tests/cxx/differential_test.cpp - edge cases whose exact Linux answer is
// not restated here: each scenario runs once on Linux descriptors and once
// on uepoll's through the same C++ calls, records a trace (results, error
// names, event masks), and the two traces must be equal.  Covers zero-length
// I/O, short/long eventfd buffers, hang-up and error masks of pipes and
// socket pairs, timerfd flag corner cases, and epoll_pwait2's sigmask with
// a pending signal.  UEPOLL_CXX_TRACE=1 prints Linux's traces.
#include "support.h"

#include <pthread.h>
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using cxxtest::Backend;
using cxxtest::bytes;
using cxxtest::Factory;

namespace {

struct Trace {
  std::vector<std::string> lines;
  template <class T>
  void rec(const std::string& what, const uepoll::Result<T>& r) {
    std::ostringstream o;
    o << what << ": ";
    if (!r) {
      o << "error " << r.error().value() << " (" << r.error().message() << ")";
    } else if constexpr (std::is_same_v<T, std::size_t> || std::is_same_v<T, std::uint64_t>) {
      o << *r;
    } else if constexpr (std::is_same_v<T, std::span<epoll_event>>) {
      o << r->size() << " events";
      for (const epoll_event& e : *r) o << " [" << std::hex << cxxtest::events(e) << std::dec << "]";
    } else {
      o << "ok";
    }
    lines.push_back(o.str());
  }
  void rec(const std::string& what, const uepoll::Result<void>& r) {
    lines.push_back(what + ": " + (r ? std::string("ok") : "error " + std::to_string(r.error().value()) + " (" +
                                                               r.error().message() + ")"));
  }
  void note(const std::string& s) { lines.push_back(s); }
};

using Scenario = std::function<void(const Factory&, Trace&)>;

void expect_same(const Scenario& s) {
  Trace linux_trace, uepoll_trace;
  s(Factory{Backend::Linux}, linux_trace);
  s(Factory{Backend::Uepoll}, uepoll_trace);
  ASSERT_FALSE(linux_trace.lines.empty());
  if (std::getenv("UEPOLL_CXX_TRACE")) {  // print Linux's trace, to read it
    for (const std::string& l : linux_trace.lines) std::printf("  linux| %s\n", l.c_str());
  }
  const std::size_t n = std::max(linux_trace.lines.size(), uepoll_trace.lines.size());
  for (std::size_t i = 0; i < n; ++i) {
    const std::string l = i < linux_trace.lines.size() ? linux_trace.lines[i] : "<missing>";
    const std::string u = i < uepoll_trace.lines.size() ? uepoll_trace.lines[i] : "<missing>";
    EXPECT_EQ(l, u) << "step " << i << " (Linux left, uepoll right)";
  }
}

TEST(CxxDifferential, ZeroLengthIo) {
  expect_same([](const Factory& make, Trace& t) {
    auto p = std::move(make.pipe(O_NONBLOCK)).value();
    std::array<std::byte, 8> buf{};
    t.rec("read 0 from empty pipe", uepoll::try_read(p.read_end, std::span<std::byte>()));
    t.rec("write 0 to pipe", uepoll::try_write(p.write_end, std::span<const std::byte>()));
    t.rec("read after write 0", uepoll::try_read(p.read_end, buf));
    p.read_end.reset();
    t.rec("write 0 to pipe without reader", uepoll::try_write(p.write_end, std::span<const std::byte>()));
    auto sp = std::move(make.socketpair(SOCK_STREAM | SOCK_NONBLOCK)).value();
    t.rec("socket read 0 when empty", uepoll::try_read(sp.first, std::span<std::byte>()));
    t.rec("socket write 0", uepoll::try_write(sp.first, std::span<const std::byte>()));
    t.rec("socket read after write 0", uepoll::try_read(sp.second, buf));
  });
}

TEST(CxxDifferential, EventFdBufferSizes) {
  expect_same([](const Factory& make, Trace& t) {
    auto ev = std::move(make.eventfd(3, EFD_NONBLOCK)).value();
    std::array<std::byte, 16> big{};
    std::uint64_t two = 2;
    std::memcpy(big.data(), &two, 8);
    t.rec("write 16-byte buffer", uepoll::try_write(ev, std::span<const std::byte>(big)));
    t.rec("read 16-byte buffer", uepoll::try_read(ev, big));
    t.rec("read 7-byte buffer", uepoll::try_read(ev, std::span(big).first(7)));
    t.rec("read 0-byte buffer", uepoll::try_read(ev, std::span(big).first(0)));
    t.rec("write 0-byte buffer", uepoll::try_write(ev, std::span<const std::byte>()));
  });
}

TEST(CxxDifferential, PipeHangupMasks) {
  expect_same([](const Factory& make, Trace& t) {
    auto ep = std::move(make.epoll()).value();
    auto p = std::move(make.pipe(O_NONBLOCK)).value();
    std::array<epoll_event, 4> out;
    t.rec("add read end", ep.try_add(p.read_end, EPOLLIN | EPOLLRDHUP, 1));
    t.rec("add write end", ep.try_add(p.write_end, EPOLLOUT, 2));
    t.rec("write end writable", ep.try_wait(out, 0ms));
    t.rec("write", uepoll::try_write(p.write_end, bytes("abc")));
    t.rec("both ready", ep.try_wait(out, 0ms));
    p.write_end.reset();
    t.rec("reader after writer closed (data left)", ep.try_wait(out, 0ms));
    std::array<std::byte, 8> buf{};
    t.rec("drain", uepoll::try_read(p.read_end, buf));
    t.rec("reader after drain", ep.try_wait(out, 0ms));
    auto q = std::move(make.pipe(O_NONBLOCK)).value();
    t.rec("add q write end", ep.try_add(q.write_end, EPOLLOUT, 3));
    t.rec("del p read end", ep.try_del(p.read_end));
    q.read_end.reset();
    t.rec("writer after reader closed", ep.try_wait(out, 0ms));
  });
}

TEST(CxxDifferential, SocketPairHangupMasks) {
  expect_same([](const Factory& make, Trace& t) {
    auto ep = std::move(make.epoll()).value();
    auto sp = std::move(make.socketpair(SOCK_STREAM | SOCK_NONBLOCK)).value();
    std::array<epoll_event, 4> out;
    t.rec("add first", ep.try_add(sp.first, EPOLLIN | EPOLLOUT | EPOLLRDHUP, 1));
    t.rec("idle", ep.try_wait(out, 0ms));
    t.rec("shutdown second RD", sp.second.try_shutdown(SHUT_RD));
    t.rec("after peer SHUT_RD", ep.try_wait(out, 0ms));
    t.rec("write to peer that shut RD", uepoll::try_write(sp.first, bytes("x")));
    t.rec("shutdown first RD", sp.first.try_shutdown(SHUT_RD));
    t.rec("after own SHUT_RD", ep.try_wait(out, 0ms));
    sp.second.reset();
    t.rec("after peer closed", ep.try_wait(out, 0ms));
    std::array<std::byte, 4> buf{};
    t.rec("read after peer closed", uepoll::try_read(sp.first, buf));
    t.rec("write after peer closed", uepoll::try_write(sp.first, bytes("x")));
    t.rec("shutdown after peer closed", sp.first.try_shutdown(SHUT_WR));
  });
}

TEST(CxxDifferential, TimerFdFlagCorners) {
  expect_same([](const Factory& make, Trace& t) {
    auto tm = std::move(make.timerfd(CLOCK_MONOTONIC, TFD_NONBLOCK)).value();
    t.rec("cancel-on-set without abstime", tm.try_settime(1h, 0ns, TFD_TIMER_CANCEL_ON_SET));
    t.rec("cancel-on-set on monotonic", tm.try_settime(1h, 0ns, TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET));
    t.rec("1.999999999s (normalised timespec)", tm.try_settime(std::chrono::seconds(1) + 999'999'999ns, 0ns));
    t.rec("interval only (disarmed)", tm.try_settime(0ns, 5ms));
    auto g = tm.try_gettime();
    t.note(std::string("gettime after interval only: ") +
           (g ? std::to_string(g->initial.count()) + "/" + std::to_string(g->interval.count()) : "error"));
    t.rec("read disarmed", tm.try_read());
    auto rt = make.timerfd(CLOCK_REALTIME, TFD_NONBLOCK);
    t.rec("realtime create", rt);
    if (rt) t.rec("realtime cancel-on-set abstime", rt->try_settime(1h, 0ns, TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET));
    t.rec("boottime create", make.timerfd(CLOCK_BOOTTIME));
    t.rec("process cputime create", make.timerfd(CLOCK_PROCESS_CPUTIME_ID));
  });
}

std::atomic<int> g_hits{0};
void on_sigusr2(int) { g_hits.fetch_add(1); }

// epoll_pwait2 with a sigmask that unblocks a pending signal: with timeout
// 0 the call returns 0 and the signal stays pending (the old mask is back
// before it can be delivered); with a timeout it returns EINTR and the
// handler runs.  Runs in a fresh thread so the mask games stay local.
TEST(CxxDifferential, SigmaskWithPendingSignal) {
  struct sigaction sa {}, old {};
  sa.sa_handler = on_sigusr2;
  sigemptyset(&sa.sa_mask);
  ASSERT_EQ(sigaction(SIGUSR2, &sa, &old), 0);
  expect_same([](const Factory& make, Trace& t) {
    std::thread th([&] {
      sigset_t block, empty, pending;
      sigemptyset(&block);
      sigaddset(&block, SIGUSR2);
      sigemptyset(&empty);
      pthread_sigmask(SIG_BLOCK, &block, nullptr);
      auto ep = std::move(make.epoll()).value();
      std::array<epoll_event, 1> out;
      g_hits = 0;
      pthread_kill(pthread_self(), SIGUSR2);
      t.rec("timeout 0, mask unblocks pending", ep.try_wait(out, 0ms, &empty));
      sigpending(&pending);
      t.note("still pending: " + std::to_string(sigismember(&pending, SIGUSR2)) +
             " handler ran: " + std::to_string(g_hits.load()));
      t.rec("timeout 1s, mask unblocks pending", ep.try_wait(out, 1s, &empty));
      sigpending(&pending);
      t.note("still pending: " + std::to_string(sigismember(&pending, SIGUSR2)) +
             " handler ran: " + std::to_string(g_hits.load()));
      // A ready item beats the pending signal: events, not EINTR.
      auto ev = std::move(make.eventfd(1)).value();
      (void)ep.try_add(ev, EPOLLIN, 1);
      pthread_kill(pthread_self(), SIGUSR2);
      t.rec("ready item and pending signal", ep.try_wait(out, 1s, &empty));
      sigpending(&pending);
      t.note("still pending: " + std::to_string(sigismember(&pending, SIGUSR2)) +
             " handler ran: " + std::to_string(g_hits.load()));
      // Leave nothing pending behind.
      pthread_sigmask(SIG_UNBLOCK, &block, nullptr);
    });
    th.join();
  });
  sigaction(SIGUSR2, &old, nullptr);
}

TEST(CxxDifferential, DupAndCloseKeepsData) {
  expect_same([](const Factory& make, Trace& t) {
    auto p = std::move(make.pipe(O_NONBLOCK)).value();
    t.rec("write", uepoll::try_write(p.write_end, bytes("hello")));
    uepoll::Fd r2 = p.read_end.dup();
    uepoll::Fd w2 = p.write_end.dup();
    p.read_end.reset();
    p.write_end.reset();
    std::array<std::byte, 3> buf{};
    t.rec("read via dup", uepoll::try_read(r2, buf));
    t.rec("write via dup", uepoll::try_write(w2, bytes("!")));
    w2.reset();
    std::array<std::byte, 16> rest{};
    t.rec("read rest", uepoll::try_read(r2, rest));
    t.note(cxxtest::str(std::span(rest).first(3)));
    t.rec("eof", uepoll::try_read(r2, rest));
  });
}

TEST(CxxDifferential, PollCornerCases) {
  expect_same([](const Factory& make, Trace& t) {
    auto ev = std::move(make.eventfd(1)).value();
    std::array<struct pollfd, 2> fds{};
    fds[0] = {ev.get(), 0, 0};  // no events requested
    fds[1] = {ev.get(), POLLIN | POLLOUT, 0};
    auto n = uepoll::try_poll(fds, 0ms);
    t.rec("poll", n);
    t.note("revents " + std::to_string(fds[0].revents) + " " + std::to_string(fds[1].revents));
    const auto t0 = std::chrono::steady_clock::now();
    t.rec("poll nothing 20ms", uepoll::try_poll(std::span<struct pollfd>(), 20ms));
    t.note(std::string("slept: ") + (std::chrono::steady_clock::now() - t0 >= 19ms ? "yes" : "no"));
  });
}


// Many items: harvest order through a small span, rotation of
// level-triggered items, and removal on close, all traced by data.
TEST(CxxDifferential, ManyItemsOrderAndClose) {
  expect_same([](const Factory& make, Trace& t) {
    auto ep = std::move(make.epoll()).value();
    std::vector<uepoll::EventFd> evs;
    for (std::uint64_t i = 0; i < 300; ++i) {
      evs.push_back(std::move(make.eventfd(i % 3 == 0 ? 1 : 0)).value());
      (void)ep.try_add(evs.back(), i % 2 ? EPOLLIN : EPOLLIN | EPOLLET, i);
    }
    std::array<epoll_event, 64> out;
    auto dump = [&](const std::string& what) {
      auto r = ep.try_wait(out, 0ms);
      std::string line = what + ":";
      if (!r) line += " error";
      else
        for (const epoll_event& e : *r) {
          // Two appends, not `" " + std::to_string(...)`: GCC 12 at -O3
          // misreads that operator+ (const char*, string&&) as an
          // overlapping memcpy (-Wrestrict false positive, GCC PR 105329).
          line += ' ';
          line += std::to_string(cxxtest::u64(e));
        }
      t.note(line);
    };
    dump("first");
    dump("second");
    for (std::size_t i = 1; i < evs.size(); i += 7) (void)evs[i].try_write(1);
    dump("after writes");
    dump("again");
    for (std::size_t i = 0; i < evs.size(); i += 2) evs[i].reset();
    dump("after closing evens");
    dump("again");
  });
}

}  // namespace
