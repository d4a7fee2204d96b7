// tests/cxx/epoll_test.cpp - uepoll::Epoll: create/add/mod/del/wait with
// every data overload, the errors Linux gives (EINVAL, EEXIST, ENOENT, EBADF,
// ELOOP through nesting, EPOLLEXCLUSIVE rules), wait filling a span prefix,
// chrono timeouts, forever waits woken from another thread, EINTR and the
// sigmask.  The BothBackends tests run the same body against real Linux
// descriptors adopted into the owners (the engine forwards them to the
// kernel) and against uepoll's; the Uepoll-only tests check the throwing
// variants and that the C++ errors equal the C API's errno.
#include "support.h"

#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <optional>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
class EpollBoth : public cxxtest::BothBackends {};
using uepoll::Epoll;
using uepoll::EventFd;
using Clock = std::chrono::steady_clock;

namespace {

epoll_event sentinel() {
  epoll_event e{};
  e.events = 0xdeadbeef;
  e.data.u64 = 0xfeedface;
  return e;
}

TEST_P(EpollBoth, CreateFlags) {
  EXPECT_OK(make.epoll(0));
  EXPECT_OK(make.epoll(EPOLL_CLOEXEC));
  EXPECT_ERRC(make.epoll(1), EINVAL);
  EXPECT_ERRC(make.epoll(EPOLL_CLOEXEC | 1), EINVAL);
}

TEST_P(EpollBoth, AddModDelAndTheirErrors) {
  Epoll ep = std::move(make.epoll()).value();
  EventFd ev = std::move(make.eventfd()).value();
  EXPECT_ERRC(ep.try_mod(ev, EPOLLIN), ENOENT);
  EXPECT_ERRC(ep.try_del(ev), ENOENT);
  EXPECT_OK(ep.try_add(ev, EPOLLIN, std::uint64_t{1}));
  EXPECT_ERRC(ep.try_add(ev, EPOLLIN, std::uint64_t{1}), EEXIST);
  EXPECT_ERRC(ep.try_add(ev, EPOLLOUT), EEXIST);
  EXPECT_OK(ep.try_mod(ev, EPOLLOUT, std::uint64_t{2}));
  EXPECT_OK(ep.try_del(ev));
  EXPECT_ERRC(ep.try_del(ev), ENOENT);
  EXPECT_ERRC(ep.try_mod(ev, EPOLLIN), ENOENT);
  // An instance cannot watch itself (EINVAL, before ELOOP).
  EXPECT_ERRC(ep.try_add(ep, EPOLLIN), EINVAL);
  EXPECT_ERRC(ep.try_del(ep), EINVAL);
  // Target not open.
  uepoll::Fd gone = std::move(make.eventfd()).value().take();
  const int gone_raw = gone.get();
  gone.reset();
  EXPECT_ERRC(ep.try_add(gone_raw, EPOLLIN), EBADF);
  EXPECT_ERRC(ep.try_del(gone_raw), EBADF);
  // The instance is not an epoll.
  Epoll bogus(std::move(make.eventfd()).value().take());
  EXPECT_ERRC(bogus.try_add(ev, EPOLLIN), EINVAL);
  EXPECT_ERRC(bogus.try_del(ev), EINVAL);
}

TEST_P(EpollBoth, ExclusiveRules) {
  Epoll ep = std::move(make.epoll()).value();
  Epoll inner = std::move(make.epoll()).value();
  EventFd ev = std::move(make.eventfd()).value();
  EXPECT_ERRC(ep.try_mod(ev, EPOLLIN | EPOLLEXCLUSIVE), EINVAL);  // EINVAL, not ENOENT
  EXPECT_ERRC(ep.try_add(ev, EPOLLIN | EPOLLEXCLUSIVE | EPOLLONESHOT), EINVAL);
  EXPECT_ERRC(ep.try_add(inner, EPOLLIN | EPOLLEXCLUSIVE), EINVAL);
  EXPECT_OK(ep.try_add(ev, EPOLLIN | EPOLLEXCLUSIVE));
  EXPECT_ERRC(ep.try_mod(ev, EPOLLIN), EINVAL);  // the item is exclusive
}

TEST_P(EpollBoth, LoopsAndDepthGiveEloop) {
  // a -> b (a watches b); then b -> a would close a cycle.
  Epoll a = std::move(make.epoll()).value();
  Epoll b = std::move(make.epoll()).value();
  a.add(b, EPOLLIN);
  EXPECT_ERRC(b.try_add(a, EPOLLIN), ELOOP);
  EXPECT_ERRC(a.try_add(b, EPOLLIN), EEXIST);  // the same edge again is no loop
  // Longer cycle: c -> a -> b, then b -> c.
  Epoll c = std::move(make.epoll()).value();
  c.add(a, EPOLLIN);
  EXPECT_ERRC(b.try_add(c, EPOLLIN), ELOOP);
  // Depth: e0 -> e1 -> e2 -> e3 -> e4 (4 edges, 5 instances) is allowed;
  // e4 -> e5 would make a 6-instance chain: ELOOP (EP_MAX_NESTS = 4).
  std::vector<Epoll> e;
  for (int i = 0; i < 6; ++i) e.push_back(std::move(make.epoll()).value());
  for (int i = 0; i < 4; ++i) EXPECT_OK(e[i].try_add(e[i + 1], EPOLLIN)) << "edge " << i;
  EXPECT_ERRC(e[4].try_add(e[5], EPOLLIN), ELOOP);
  // Adding on top of the chain is refused as well (upward depth).
  Epoll top = std::move(make.epoll()).value();
  EXPECT_ERRC(top.try_add(e[0], EPOLLIN), ELOOP);
}

TEST_P(EpollBoth, DataOverloadsRoundTrip) {
  Epoll ep = std::move(make.epoll()).value();
  EventFd a = std::move(make.eventfd(1)).value();
  EventFd b = std::move(make.eventfd(1)).value();
  EventFd c = std::move(make.eventfd(1)).value();
  int marker = 0;
  ep.add(a, EPOLLIN, std::uint64_t{0x1122334455667788});
  ep.add(b, EPOLLIN, static_cast<void*>(&marker));
  ep.add(c, EPOLLIN, 0);  // a literal int is not ambiguous
  std::array<epoll_event, 4> out;
  auto got = ep.wait(out, 0ms);
  ASSERT_EQ(got.size(), 3u);
  bool seen_u64 = false, seen_ptr = false, seen_zero = false;
  for (const epoll_event& e : got) {
    EXPECT_EQ(cxxtest::events(e), static_cast<std::uint32_t>(EPOLLIN));
    if (e.data.u64 == 0x1122334455667788) seen_u64 = true;
    if (e.data.ptr == &marker) seen_ptr = true;
    if (e.data.u64 == 0) seen_zero = true;
  }
  EXPECT_TRUE(seen_u64 && seen_ptr && seen_zero);
  // mod changes the data and the mask.
  ep.mod(a, EPOLLOUT, 77);
  ep.del(b);
  ep.del(c);
  got = ep.wait(out, 0ms);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(cxxtest::u64(got[0]), 77u);
  EXPECT_EQ(cxxtest::events(got[0]), static_cast<std::uint32_t>(EPOLLOUT));
}

TEST_P(EpollBoth, WaitFillsAPrefixAndRotatesLevelTriggered) {
  Epoll ep = std::move(make.epoll()).value();
  std::vector<EventFd> evs;
  for (std::uint64_t i = 0; i < 3; ++i) {
    evs.push_back(std::move(make.eventfd(1)).value());
    ep.add(evs.back(), EPOLLIN, i);
  }
  std::array<epoll_event, 4> out;
  out.fill(sentinel());
  auto got = ep.wait(std::span(out).first(2), 0ms);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got.data(), out.data());  // the prefix of the span passed in
  EXPECT_EQ(cxxtest::events(out[2]), cxxtest::events(sentinel()));
  EXPECT_EQ(cxxtest::u64(out[2]), cxxtest::u64(sentinel()));
  EXPECT_EQ(cxxtest::u64(got[0]), 0u);
  EXPECT_EQ(cxxtest::u64(got[1]), 1u);
  // Level-triggered items go back to the tail: 2 first, then 0.
  got = ep.wait(std::span(out).first(2), 0ms);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(cxxtest::u64(got[0]), 2u);
  EXPECT_EQ(cxxtest::u64(got[1]), 0u);
  got = ep.wait(out, 0ms);
  EXPECT_EQ(got.size(), 3u);
}

TEST_P(EpollBoth, WaitArgumentErrors) {
  Epoll ep = std::move(make.epoll()).value();
  EXPECT_ERRC(ep.try_wait(std::span<epoll_event>(), 0ms), EINVAL);
  std::array<epoll_event, 1> out;
  Epoll bogus(std::move(make.eventfd()).value().take());
  EXPECT_ERRC(bogus.try_wait(out, 0ms), EINVAL);
  Epoll empty;
  EXPECT_ERRC(empty.try_wait(out, 0ms), EBADF);
}

TEST_P(EpollBoth, EdgeTriggeredAndOneShot) {
  Epoll ep = std::move(make.epoll()).value();
  EventFd et = std::move(make.eventfd(1)).value();
  EventFd os = std::move(make.eventfd(1)).value();
  ep.add(et, EPOLLIN | EPOLLET, 1);
  ep.add(os, EPOLLIN | EPOLLONESHOT, 2);
  std::array<epoll_event, 4> out;
  EXPECT_EQ(ep.wait(out, 0ms).size(), 2u);
  EXPECT_EQ(ep.wait(out, 0ms).size(), 0u);  // ET: no new edge; ONESHOT: disarmed
  et.write(1);                              // a new edge
  auto got = ep.wait(out, 0ms);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(cxxtest::u64(got[0]), 1u);
  ep.mod(os, EPOLLIN | EPOLLONESHOT, 3);  // re-arm
  got = ep.wait(out, 0ms);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(cxxtest::u64(got[0]), 3u);
}

TEST_P(EpollBoth, ChronoTimeouts) {
  Epoll ep = std::move(make.epoll()).value();
  std::array<epoll_event, 1> out;
  auto t0 = Clock::now();
  EXPECT_TRUE(ep.wait(out, 0ms).empty());
  EXPECT_TRUE(ep.wait(out, -3s).empty());  // negative: do not block
  EXPECT_LT(Clock::now() - t0, 500ms);
  t0 = Clock::now();
  EXPECT_TRUE(ep.wait(out, 50ms).empty());
  auto dt = Clock::now() - t0;
  EXPECT_GE(dt, 49ms);  // never early (CLOCK_MONOTONIC; 1 ms for clock skew)
  EXPECT_LT(dt, 2s);
  t0 = Clock::now();
  EXPECT_TRUE(ep.wait(out, 30'000'000ns).empty());
  EXPECT_GE(Clock::now() - t0, 29ms);
  t0 = Clock::now();
  EXPECT_TRUE(ep.wait(out, std::optional<std::chrono::milliseconds>(20ms)).empty());
  EXPECT_GE(Clock::now() - t0, 19ms);
  EXPECT_TRUE(ep.wait(out, 1ns).empty());
  EXPECT_TRUE(ep.wait(out, std::chrono::duration<double>(0.001)).empty());
}

// A thread blocked in wait() with no timeout is woken by EventFd::write from
// another thread: for each way of saying "forever".
TEST_P(EpollBoth, ForeverWaitWokenByEventFdWrite) {
  Epoll ep = std::move(make.epoll()).value();
  EventFd ev = std::move(make.eventfd()).value();
  ep.add(ev, EPOLLIN, 99);
  for (int variant = 0; variant < 3; ++variant) {
    std::atomic<bool> returned{false};
    uepoll::Result<std::size_t> count = std::error_code(EINVAL, std::system_category());
    std::array<epoll_event, 2> out{};
    std::thread waiter([&] {
      uepoll::Result<std::span<epoll_event>> r = std::error_code(EINVAL, std::system_category());
      if (variant == 0) r = ep.try_wait(out);
      if (variant == 1) r = ep.try_wait(out, uepoll::forever);
      if (variant == 2) r = ep.try_wait(out, std::optional<std::chrono::seconds>());
      count = r ? uepoll::Result<std::size_t>(r->size()) : uepoll::Result<std::size_t>(r.error());
      returned = true;
    });
    std::this_thread::sleep_for(50ms);
    EXPECT_FALSE(returned.load()) << "variant " << variant << " did not block";
    ev.write(1);
    waiter.join();
    ASSERT_OK(count);
    ASSERT_EQ(*count, 1u);
    EXPECT_EQ(cxxtest::u64(out[0]), 99u);
    EXPECT_EQ(cxxtest::events(out[0]), static_cast<std::uint32_t>(EPOLLIN));
    EXPECT_EQ(ev.read(), 1u);
  }
}

TEST_P(EpollBoth, NestedInstanceReportsEpollin) {
  Epoll outer = std::move(make.epoll()).value();
  Epoll inner = std::move(make.epoll()).value();
  EventFd ev = std::move(make.eventfd()).value();
  inner.add(ev, EPOLLIN, 1);
  outer.add(inner, EPOLLIN, 2);
  std::array<epoll_event, 2> out;
  EXPECT_TRUE(outer.wait(out, 0ms).empty());
  std::thread writer([&] {
    std::this_thread::sleep_for(20ms);
    ev.write(3);
  });
  auto got = outer.wait(out, 5s);
  writer.join();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(cxxtest::u64(got[0]), 2u);
  EXPECT_EQ(cxxtest::events(got[0]), static_cast<std::uint32_t>(EPOLLIN));
  got = inner.wait(out, 0ms);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(cxxtest::u64(got[0]), 1u);
}

std::atomic<int> g_signals{0};
void on_sigusr1(int) { g_signals.fetch_add(1); }

// Signals: a handler (installed with SA_RESTART) ends a forever wait with
// EINTR, which is never restarted; with the signal blocked by the wait's
// sigmask the wait runs to its timeout instead.
TEST_P(EpollBoth, SignalInterruptsWaitUnlessMasked) {
  struct sigaction sa {}, old {};
  sa.sa_handler = on_sigusr1;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  ASSERT_EQ(sigaction(SIGUSR1, &sa, &old), 0);
  Epoll ep = std::move(make.epoll()).value();
  std::array<epoll_event, 1> out;

  std::atomic<bool> done{false};
  std::error_code err;
  bool threw_eintr = false;
  pthread_t self_id{};
  std::atomic<bool> started{false};
  std::thread waiter([&] {
    self_id = pthread_self();
    started = true;
    auto r = ep.try_wait(out);
    err = r.error();
    done = true;
  });
  while (!started) std::this_thread::yield();
  const auto deadline = Clock::now() + 5s;
  while (!done && Clock::now() < deadline) {
    std::this_thread::sleep_for(20ms);
    if (!done) pthread_kill(self_id, SIGUSR1);
  }
  if (!done) {  // unblock it so the test ends
    EventFd ev = std::move(make.eventfd(1)).value();
    ep.add(ev, EPOLLIN);
    waiter.join();
    FAIL() << "a signal did not interrupt the wait";
  }
  waiter.join();
  EXPECT_TRUE(err == std::errc::interrupted) << err.message();

  // The throwing variant throws EINTR.
  done = false;
  started = false;
  std::thread thrower([&] {
    self_id = pthread_self();
    started = true;
    try {
      (void)ep.wait(out, 10s);
    } catch (const std::system_error& e) {
      threw_eintr = e.code() == std::errc::interrupted;
    }
    done = true;
  });
  while (!started) std::this_thread::yield();
  const auto deadline2 = Clock::now() + 5s;
  while (!done && Clock::now() < deadline2) {
    std::this_thread::sleep_for(20ms);
    if (!done) pthread_kill(self_id, SIGUSR1);
  }
  thrower.join();
  EXPECT_TRUE(threw_eintr);

  // Masked during the wait: runs to its 100 ms timeout.
  sigset_t block;
  sigemptyset(&block);
  sigaddset(&block, SIGUSR1);
  std::optional<uepoll::Result<std::span<epoll_event>>> masked;
  started = false;
  Clock::duration waited{};
  std::thread masked_waiter([&] {
    self_id = pthread_self();
    started = true;
    const auto t0 = Clock::now();
    masked.emplace(ep.try_wait(out, 100ms, &block));
    waited = Clock::now() - t0;
  });
  while (!started) std::this_thread::yield();
  std::this_thread::sleep_for(30ms);
  const int before = g_signals.load();
  pthread_kill(self_id, SIGUSR1);
  masked_waiter.join();
  ASSERT_TRUE(masked.has_value());
  EXPECT_OK(*masked);
  if (*masked) {
    EXPECT_TRUE((*masked)->empty());
  }
  EXPECT_GE(waited, 99ms);
  // The original mask is restored after the wait, so the pending signal
  // was delivered then.
  EXPECT_GT(g_signals.load(), before);
  sigaction(SIGUSR1, &old, nullptr);
}

// Closing a watched descriptor: the item goes away with the last
// reference to the open object (not with the number), as in Linux.
TEST_P(EpollBoth, CloseRemovesItemOnlyWithTheLastReference) {
  Epoll ep = std::move(make.epoll()).value();
  std::array<epoll_event, 2> out;
  {
    EventFd ev = std::move(make.eventfd(1)).value();
    const int number = ev.get();
    ep.add(ev, EPOLLIN, 1);
    ev.reset();  // last reference
    EXPECT_TRUE(ep.wait(out, 0ms).empty());
    EventFd again = std::move(make.eventfd(1)).value();
    ASSERT_EQ(again.get(), number);    // lowest free number, reused
    EXPECT_OK(ep.try_add(again, EPOLLIN, 2));  // not EEXIST: the old item is gone
    auto got = ep.wait(out, 0ms);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(cxxtest::u64(got[0]), 2u);
    ep.del(again);
  }
  {
    EventFd ev = std::move(make.eventfd()).value();
    const int number = ev.get();
    ep.add(ev, EPOLLIN, 7);
    EventFd alias(ev.fd().dup());
    ev.reset();  // the dup keeps the object, and so the item, alive
    alias.write(1);
    auto got = ep.wait(out, 0ms);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(cxxtest::u64(got[0]), 7u);
    EXPECT_ERRC(ep.try_del(number), EBADF);   // the number is closed
    EXPECT_ERRC(ep.try_del(alias), ENOENT);   // the key is (object, old number)
    EXPECT_ERRC(ep.try_mod(alias, EPOLLIN), ENOENT);
    alias.reset();
    EXPECT_TRUE(ep.wait(out, 0ms).empty());
  }
}

// Edge-triggered readiness wakes exactly one of several blocked waiters
// (exclusive FIFO wakeup); the others time out.
TEST_P(EpollBoth, OneEdgeWakesOneWaiter) {
  Epoll ep = std::move(make.epoll()).value();
  EventFd ev = std::move(make.eventfd()).value();
  ep.add(ev, EPOLLIN | EPOLLET, 1);
  std::atomic<int> got_event{0}, timed_out{0}, failed{0};
  std::vector<std::thread> waiters;
  for (int i = 0; i < 4; ++i) {
    waiters.emplace_back([&] {
      std::array<epoll_event, 1> out;
      auto r = ep.try_wait(out, 400ms);
      if (!r)
        failed++;
      else if (r->empty())
        timed_out++;
      else
        got_event++;
    });
  }
  std::this_thread::sleep_for(50ms);
  ev.write(1);
  for (auto& t : waiters) t.join();
  EXPECT_EQ(got_event.load(), 1);
  EXPECT_EQ(timed_out.load(), 3);
  EXPECT_EQ(failed.load(), 0);
}

// Level-triggered readiness reaches every blocked waiter (each harvest
// re-queues the item and passes the wakeup on).
TEST_P(EpollBoth, LevelTriggeredReachesEveryWaiter) {
  Epoll ep = std::move(make.epoll()).value();
  EventFd ev = std::move(make.eventfd()).value();
  ep.add(ev, EPOLLIN, 1);
  std::atomic<int> got_event{0};
  std::vector<std::thread> waiters;
  for (int i = 0; i < 4; ++i) {
    waiters.emplace_back([&] {
      std::array<epoll_event, 1> out;
      auto r = ep.try_wait(out, 2s);
      if (r && r->size() == 1) got_event++;
    });
  }
  std::this_thread::sleep_for(50ms);
  ev.write(1);
  for (auto& t : waiters) t.join();
  EXPECT_EQ(got_event.load(), 4);
}

// add/mod/del on one thread while another waits: every wait result is a
// valid prefix and nothing fails.
TEST_P(EpollBoth, CtlConcurrentWithWait) {
  Epoll ep = std::move(make.epoll()).value();
  EventFd ev = std::move(make.eventfd(1)).value();
  std::atomic<bool> stop{false};
  std::atomic<int> bad{0};
  std::thread waiter([&] {
    std::array<epoll_event, 4> out;
    while (!stop) {
      auto r = ep.try_wait(out, 1ms);
      if (!r || r->size() > 1 || (r->size() == 1 && r->front().data.u64 != 42)) bad++;
    }
  });
  const auto end = Clock::now() + 200ms;
  int rounds = 0;
  while (Clock::now() < end) {
    if (!ep.try_add(ev, EPOLLIN, 42)) bad++;
    if (!ep.try_mod(ev, EPOLLIN | EPOLLET, 42)) bad++;
    if (!ep.try_del(ev)) bad++;
    ++rounds;
  }
  stop = true;
  waiter.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_GT(rounds, 10);
}

INSTANTIATE_TEST_SUITE_P(Cxx, EpollBoth, ::testing::Values(cxxtest::Backend::Linux, cxxtest::Backend::Uepoll),
                         cxxtest::backend_name);

// ---- uepoll only ------------------------------------------------------

template <class F>
std::error_code thrown_code(F&& f) {
  try {
    f();
  } catch (const std::system_error& e) {
    return e.code();
  }
  return {};
}

std::error_code sys(int e) { return std::error_code(e, std::system_category()); }

TEST(EpollThrowing, ThrowsSystemErrorWithTheCode) {
  EXPECT_EQ(thrown_code([] { (void)Epoll::create(1); }), sys(EINVAL));
  Epoll ep = Epoll::create(EPOLL_CLOEXEC);
  EXPECT_GE(ep.get(), UEP_FD_BASE);
  EventFd ev = EventFd::create();
  EXPECT_EQ(thrown_code([&] { ep.mod(ev, EPOLLIN); }), sys(ENOENT));
  EXPECT_EQ(thrown_code([&] { ep.del(ev); }), sys(ENOENT));
  EXPECT_EQ(thrown_code([&] { ep.add(ev, EPOLLIN); }), std::error_code());
  EXPECT_EQ(thrown_code([&] { ep.add(ev, EPOLLIN); }), sys(EEXIST));
  EXPECT_EQ(thrown_code([&] { ep.add(ev, EPOLLIN, nullptr); }), sys(EEXIST));
  EXPECT_EQ(thrown_code([&] { ep.mod(ev, EPOLLIN | EPOLLEXCLUSIVE, nullptr); }), sys(EINVAL));
  EXPECT_EQ(thrown_code([&] { ep.add(ep, EPOLLIN); }), sys(EINVAL));
  EXPECT_EQ(thrown_code([&] { (void)ep.wait(std::span<epoll_event>(), 0ms); }), sys(EINVAL));
  Epoll other = Epoll::create();
  other.add(ep, EPOLLIN);
  EXPECT_EQ(thrown_code([&] { ep.add(other, EPOLLIN); }), sys(ELOOP));
  EXPECT_EQ(thrown_code([&] { ep.del(ev); }), std::error_code());
}

// The C++ API and the C API are two edges of one engine: the same scenario
// gives the same error through both.
TEST(EpollVsCApi, SameErrors) {
  Epoll ep = Epoll::create();
  Epoll child = Epoll::create();
  EventFd ev = EventFd::create();
  child.add(ep, EPOLLIN);
  ep.add(ev, EPOLLIN);
  struct Case {
    const char* name;
    int op;
    int fd;
    std::uint32_t events;
  };
  const Case cases[] = {
      {"add existing", EPOLL_CTL_ADD, ev.get(), EPOLLIN},
      {"add self", EPOLL_CTL_ADD, ep.get(), EPOLLIN},
      {"add loop", EPOLL_CTL_ADD, child.get(), EPOLLIN},
      {"add bad fd", EPOLL_CTL_ADD, UEP_FD_MAX, EPOLLIN},
      {"mod exclusive", EPOLL_CTL_MOD, ev.get(), EPOLLIN | EPOLLEXCLUSIVE},
      {"del self", EPOLL_CTL_DEL, ep.get(), 0},
      {"mod missing", EPOLL_CTL_MOD, child.get(), EPOLLIN},
  };
  for (const Case& c : cases) {
    epoll_event e{};
    e.events = c.events;
    errno = 0;
    const int rc = uep_epoll_ctl(ep.get(), c.op, c.fd, &e);
    const int c_errno = rc < 0 ? errno : 0;
    uepoll::Result<void> r = c.op == EPOLL_CTL_ADD   ? ep.try_add(c.fd, c.events)
                             : c.op == EPOLL_CTL_MOD ? ep.try_mod(c.fd, c.events)
                                                     : ep.try_del(c.fd);
    EXPECT_EQ(r.error().value(), c_errno) << c.name;
    EXPECT_NE(c_errno, 0) << c.name;
  }
  std::array<epoll_event, 1> out;
  errno = 0;
  EXPECT_EQ(uep_epoll_wait(ep.get(), out.data(), 0, 0), -1);
  EXPECT_EQ(ep.try_wait(std::span(out).first(0), 0ms).error().value(), errno);
}

}  // namespace
