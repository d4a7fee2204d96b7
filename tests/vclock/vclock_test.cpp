// vclock_test.cpp - the virtual clock (include/uepoll/vclock.h) through the
// C API: mode switching and argument errors, manual advance (timer expiry
// counts, overruns, interval re-arming, gettime, the order of expiries,
// absolute timers on each clock, wait timeouts), and automatic mode (an hour
// of timeouts in well under a second of real time, several threads holding
// the clock, nanosleep).  Each test enables the clock and turns it off at
// the end (VClockTest), so the tests also run in one process.
#include <uepoll/uepoll.h>
#include <uepoll/vclock.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cerrno>
#include <cstdint>
#include <thread>
#include <vector>

namespace {

constexpr int64_t kMs = 1000000;
constexpr int64_t kSec = 1000 * kMs;

itimerspec its(int64_t value_ns, int64_t interval_ns = 0) {
  itimerspec t{};
  t.it_value = {static_cast<time_t>(value_ns / kSec), static_cast<long>(value_ns % kSec)};
  t.it_interval = {static_cast<time_t>(interval_ns / kSec), static_cast<long>(interval_ns % kSec)};
  return t;
}
int64_t ns_of(const timespec& t) { return t.tv_sec * kSec + t.tv_nsec; }

double real_ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

class VClockTest : public ::testing::Test {
 protected:
  void enable(int mode) { ASSERT_EQ(uep_vclock_enable(mode), 0); }
  void TearDown() override { uep_vclock_enable(UEP_VCLOCK_OFF); }
  static uint64_t read_count(int fd) {
    uint64_t v = 0;
    return uep_read(fd, &v, sizeof v) == static_cast<ssize_t>(sizeof v) ? v : 0;
  }
};

TEST_F(VClockTest, ModesAndErrors) {
  EXPECT_EQ(uep_vclock_mode(), UEP_VCLOCK_OFF);
  errno = 0;
  EXPECT_EQ(uep_vclock_now(CLOCK_MONOTONIC), -1);  // off
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(uep_vclock_advance(1), -1);
  EXPECT_EQ(uep_vclock_enable(3), -1);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(uep_vclock_set_start(-1, 0), -1);
  enable(UEP_VCLOCK_MANUAL);
  EXPECT_EQ(uep_vclock_mode(), UEP_VCLOCK_MANUAL);
  EXPECT_EQ(uep_vclock_now(CLOCK_MONOTONIC), UEP_VCLOCK_START_MONO);
  EXPECT_EQ(uep_vclock_now(CLOCK_BOOTTIME), UEP_VCLOCK_START_MONO);
  EXPECT_EQ(uep_vclock_now(CLOCK_REALTIME), UEP_VCLOCK_START_REALTIME);
  EXPECT_EQ(uep_vclock_now(CLOCK_PROCESS_CPUTIME_ID), -1);
  EXPECT_EQ(uep_vclock_advance(-1), -1);
  EXPECT_EQ(errno, EINVAL);
  ASSERT_EQ(uep_vclock_advance(1500 * kMs), 0);
  timespec ts;
  ASSERT_EQ(uep_vclock_gettime(CLOCK_REALTIME_COARSE, &ts), 0);
  EXPECT_EQ(ns_of(ts), UEP_VCLOCK_START_REALTIME + 1500 * kMs);
  EXPECT_EQ(uep_vclock_gettime(CLOCK_MONOTONIC, nullptr), -1);
  EXPECT_EQ(errno, EFAULT);
  // MANUAL -> AUTO keeps the time; OFF -> MANUAL starts again.
  enable(UEP_VCLOCK_AUTO);
  EXPECT_EQ(uep_vclock_now(CLOCK_MONOTONIC), UEP_VCLOCK_START_MONO + 1500 * kMs);
  enable(UEP_VCLOCK_OFF);
  ASSERT_EQ(uep_vclock_set_start(5 * kSec, 7 * kSec), 0);
  enable(UEP_VCLOCK_MANUAL);
  EXPECT_EQ(uep_vclock_now(CLOCK_MONOTONIC), 5 * kSec);
  EXPECT_EQ(uep_vclock_now(CLOCK_REALTIME), 7 * kSec);
  enable(UEP_VCLOCK_OFF);
  ASSERT_EQ(uep_vclock_set_start(UEP_VCLOCK_START_MONO, UEP_VCLOCK_START_REALTIME), 0);
  struct timespec req = {0, 1};
  EXPECT_EQ(uep_vclock_nanosleep(CLOCK_MONOTONIC, 0, &req, nullptr), EINVAL);  // off
}

// Linux fs/timerfd.c on the virtual clock, to the nanosecond.
TEST_F(VClockTest, ManualTimerSemantics) {
  enable(UEP_VCLOCK_MANUAL);
  int ep = uep_epoll_create1(0);
  int tm = uep_timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
  ASSERT_GE(tm, 0);
  epoll_event ev{EPOLLIN | EPOLLET, {.u64 = 1}};
  ASSERT_EQ(uep_epoll_ctl(ep, EPOLL_CTL_ADD, tm, &ev), 0);
  itimerspec set = its(10 * kMs, 3 * kMs), cur{};
  ASSERT_EQ(uep_timerfd_settime(tm, 0, &set, nullptr), 0);
  ASSERT_EQ(uep_timerfd_gettime(tm, &cur), 0);
  EXPECT_EQ(ns_of(cur.it_value), 10 * kMs);
  EXPECT_EQ(ns_of(cur.it_interval), 3 * kMs);
  ASSERT_EQ(uep_vclock_advance(10 * kMs - 1), 0);
  EXPECT_EQ(uep_epoll_wait(ep, &ev, 1, 0), 0);
  ASSERT_EQ(uep_timerfd_gettime(tm, &cur), 0);
  EXPECT_EQ(ns_of(cur.it_value), 1);
  ASSERT_EQ(uep_vclock_advance(1), 0);  // expiry at exactly 10 ms
  EXPECT_EQ(uep_epoll_wait(ep, &ev, 1, 0), 1);
  // Unread: not re-armed, so 100 ms more give no new edge ...
  ASSERT_EQ(uep_vclock_advance(100 * kMs), 0);
  EXPECT_EQ(uep_epoll_wait(ep, &ev, 1, 0), 0);
  // ... and the read counts every period: expiries at 10, 13, ..., 109 ms
  // (34 of them) by now = 110 ms; the next is at 112 ms.
  EXPECT_EQ(read_count(tm), 34u);
  ASSERT_EQ(uep_timerfd_gettime(tm, &cur), 0);
  EXPECT_EQ(ns_of(cur.it_value), 2 * kMs);
  // An exact multiple: at 112 + 3k ms the correction of hrtimer_forward.
  ASSERT_EQ(uep_vclock_advance(2 * kMs + 9 * kMs), 0);  // now 121 = 112 + 9
  EXPECT_EQ(uep_epoll_wait(ep, &ev, 1, 0), 1);
  ASSERT_EQ(uep_timerfd_gettime(tm, &cur), 0);  // gettime re-arms: 112..121 = 4, next 124
  EXPECT_EQ(ns_of(cur.it_value), 3 * kMs);
  EXPECT_EQ(read_count(tm), 4u);
  // settime returns the old setting and zeroes the count.
  ASSERT_EQ(uep_vclock_advance(3 * kMs), 0);
  itimerspec old{};
  set = its(50 * kMs);
  ASSERT_EQ(uep_timerfd_settime(tm, 0, &set, &old), 0);
  EXPECT_EQ(ns_of(old.it_value), 3 * kMs);  // forwarded to 127 ms, as Linux's settime does
  EXPECT_EQ(ns_of(old.it_interval), 3 * kMs);
  EXPECT_EQ(read_count(tm), 0u);
  // Disarm: gettime gives zero.
  set = its(0);
  ASSERT_EQ(uep_timerfd_settime(tm, 0, &set, nullptr), 0);
  ASSERT_EQ(uep_timerfd_gettime(tm, &cur), 0);
  EXPECT_EQ(ns_of(cur.it_value), 0);
  uep_close(tm);
  uep_close(ep);
}

TEST_F(VClockTest, AbsoluteTimersOnEachClockAndExpiryOrder) {
  enable(UEP_VCLOCK_MANUAL);
  int ep = uep_epoll_create1(0);
  const clockid_t clocks[] = {CLOCK_REALTIME, CLOCK_MONOTONIC, CLOCK_BOOTTIME, CLOCK_MONOTONIC};
  const int64_t at[] = {30 * kMs, 10 * kMs, 20 * kMs, 10 * kMs};  // after "now"
  int fds[4];
  for (int i = 0; i < 4; ++i) {
    fds[i] = uep_timerfd_create(clocks[i], TFD_NONBLOCK);
    ASSERT_GE(fds[i], 0);
    itimerspec set = its(uep_vclock_now(clocks[i]) + at[i]);
    ASSERT_EQ(uep_timerfd_settime(fds[i], TFD_TIMER_ABSTIME, &set, nullptr), 0);
    epoll_event ev{EPOLLIN, {.u64 = static_cast<uint64_t>(i)}};
    ASSERT_EQ(uep_epoll_ctl(ep, EPOLL_CTL_ADD, fds[i], &ev), 0);
  }
  // One jump past all of them: the ready list has them in expiry order,
  // equal expiries in arming order (fds[1] before fds[3]).
  ASSERT_EQ(uep_vclock_advance(kSec), 0);
  epoll_event out[4];
  ASSERT_EQ(uep_epoll_wait(ep, out, 4, 0), 4);
  EXPECT_EQ(out[0].data.u64, 1u);
  EXPECT_EQ(out[1].data.u64, 3u);
  EXPECT_EQ(out[2].data.u64, 2u);
  EXPECT_EQ(out[3].data.u64, 0u);
  // An absolute time in the past expires at once (in settime).
  itimerspec past = its(uep_vclock_now(CLOCK_MONOTONIC) - kMs, 0);
  ASSERT_EQ(uep_timerfd_settime(fds[1], TFD_TIMER_ABSTIME, &past, nullptr), 0);
  EXPECT_EQ(read_count(fds[1]), 1u);
  // Past with an interval: ticks are the missed periods, as Linux counts them.
  past = its(uep_vclock_now(CLOCK_MONOTONIC) - 10 * kMs, kMs);
  ASSERT_EQ(uep_timerfd_settime(fds[1], TFD_TIMER_ABSTIME, &past, nullptr), 0);
  EXPECT_EQ(read_count(fds[1]), 11u);  // expiries at -10, -9, ..., 0 ms
  for (int fd : fds) uep_close(fd);
  uep_close(ep);
}

TEST_F(VClockTest, ManualWaitTimeoutNeedsAdvance) {
  enable(UEP_VCLOCK_MANUAL);
  int ep = uep_epoll_create1(0);
  std::atomic<int> result{-2};
  std::thread waiter([&] {
    epoll_event ev;
    result = uep_epoll_wait(ep, &ev, 1, 50);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(120));  // real time passes; virtual does not
  EXPECT_EQ(result.load(), -2);
  ASSERT_EQ(uep_vclock_advance(49 * kMs), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  EXPECT_EQ(result.load(), -2);
  ASSERT_EQ(uep_vclock_advance(kMs), 0);
  waiter.join();
  EXPECT_EQ(result.load(), 0);
  uep_close(ep);
}

// An hour of timeouts and timers, in well under a second of real time, with
// exact virtual times.
TEST_F(VClockTest, AutoJumpsToTheNextDeadline) {
  enable(UEP_VCLOCK_AUTO);
  const auto t0 = std::chrono::steady_clock::now();
  const int64_t start = uep_vclock_now(CLOCK_MONOTONIC);
  int ep = uep_epoll_create1(0);
  epoll_event ev;
  EXPECT_EQ(uep_epoll_wait(ep, &ev, 1, 3600 * 1000), 0);
  EXPECT_EQ(uep_vclock_now(CLOCK_MONOTONIC) - start, 3600 * kSec);
  int tm = uep_timerfd_create(CLOCK_MONOTONIC, 0);
  itimerspec set = its(90 * kSec, 60 * kSec);
  ASSERT_EQ(uep_timerfd_settime(tm, 0, &set, nullptr), 0);
  ev = {EPOLLIN, {.u64 = 7}};
  ASSERT_EQ(uep_epoll_ctl(ep, EPOLL_CTL_ADD, tm, &ev), 0);
  // The timer (90 s) comes before the timeout (1000 s).
  EXPECT_EQ(uep_epoll_wait(ep, &ev, 1, 1000 * 1000), 1);
  EXPECT_EQ(uep_vclock_now(CLOCK_MONOTONIC) - start, 3690 * kSec);
  EXPECT_EQ(read_count(tm), 1u);
  // A blocking read sleeps to the next period.
  EXPECT_EQ(read_count(tm), 1u);
  EXPECT_EQ(uep_vclock_now(CLOCK_MONOTONIC) - start, 3750 * kSec);
  // poll's and ppoll's timeouts.
  pollfd p{ep, POLLIN, 0};
  uep_epoll_ctl(ep, EPOLL_CTL_DEL, tm, nullptr);
  EXPECT_EQ(uep_poll(&p, 1, 250), 0);
  timespec rel = {2, 5};
  EXPECT_EQ(uep_ppoll(&p, 1, &rel, nullptr), 0);
  EXPECT_EQ(uep_vclock_now(CLOCK_MONOTONIC) - start, 3750 * kSec + 250 * kMs + 2 * kSec + 5);
  // nanosleep, relative and absolute.
  timespec req = {100, 0};
  EXPECT_EQ(uep_vclock_nanosleep(CLOCK_MONOTONIC, 0, &req, nullptr), 0);
  timespec at;
  uep_vclock_gettime(CLOCK_REALTIME, &at);
  at.tv_sec += 5;
  EXPECT_EQ(uep_vclock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &at, nullptr), 0);
  EXPECT_EQ(uep_vclock_now(CLOCK_REALTIME), ns_of(at));
  req.tv_nsec = 1000000000;
  EXPECT_EQ(uep_vclock_nanosleep(CLOCK_MONOTONIC, 0, &req, nullptr), EINVAL);
  EXPECT_EQ(uep_vclock_nanosleep(CLOCK_MONOTONIC, 0, nullptr, nullptr), EFAULT);
  EXPECT_LT(real_ms_since(t0), 1000.0);
  uep_close(tm);
  uep_close(ep);
}

// Automatic mode with several threads: the clock moves only when every known
// thread sleeps, and a thread that runs (here: sleeps in the kernel, where
// uepoll does not see it) holds it.
TEST_F(VClockTest, AutoWaitsForEveryKnownThread) {
  enable(UEP_VCLOCK_AUTO);
  const int64_t start = uep_vclock_now(CLOCK_MONOTONIC);
  int efd = uep_eventfd(0, 0);
  std::atomic<bool> attached{false};
  std::atomic<int64_t> woke_at{-1};
  std::thread worker([&] {
    uep_vclock_attach_thread();
    attached = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // busy: holds the clock
    uint64_t one = 1;
    uep_write(efd, &one, sizeof one);
    // Then sleeps 10 virtual seconds, during which the main thread's wait
    // (timeout 1 h) must not end.
    timespec req = {10, 0};
    uep_vclock_nanosleep(CLOCK_MONOTONIC, 0, &req, nullptr);
    woke_at = uep_vclock_now(CLOCK_MONOTONIC) - start;
    uep_write(efd, &one, sizeof one);
  });
  while (!attached) std::this_thread::yield();
  pollfd p{efd, POLLIN, 0};
  // The eventfd is written after 100 ms of real time: the hour-long timeout
  // must not have been jumped to meanwhile.
  ASSERT_EQ(uep_poll(&p, 1, 3600 * 1000), 1);
  EXPECT_EQ(uep_vclock_now(CLOCK_MONOTONIC), start);
  uint64_t v;
  ASSERT_EQ(uep_read(efd, &v, sizeof v), 8);
  ASSERT_EQ(uep_poll(&p, 1, 3600 * 1000), 1);
  worker.join();
  EXPECT_EQ(woke_at.load(), 10 * kSec);
  EXPECT_EQ(uep_vclock_now(CLOCK_MONOTONIC) - start, 10 * kSec);
  uep_close(efd);
}

}  // namespace
