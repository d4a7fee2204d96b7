// vclock_realtime_test.cpp - setting the virtual CLOCK_REALTIME
// (uep_vclock_set_realtime), against Linux's fs/timerfd.c and
// timerfd_create(2): TFD_TIMER_CANCEL_ON_SET timers (ECANCELED on read and
// on settime, readable and woken at the set, once per set, only with
// ABSTIME on a REALTIME clock), realtime timers keeping their realtime
// expiry (absolute and relative alike: Linux arms both on the realtime
// base), monotonic timers and waits not moving; uep_vclock_idle; and a
// uep_poll over kernel descriptors only, whose timeout is virtual.
#include <uepoll/uepoll.h>
#include <uepoll/vclock.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

namespace {

constexpr int64_t kSec = 1000000000;

itimerspec at(int64_t value_ns, int64_t interval_ns = 0) {
  itimerspec t{};
  t.it_value = {static_cast<time_t>(value_ns / kSec), static_cast<long>(value_ns % kSec)};
  t.it_interval = {static_cast<time_t>(interval_ns / kSec), static_cast<long>(interval_ns % kSec)};
  return t;
}
int64_t ns_of(const timespec& t) { return t.tv_sec * kSec + t.tv_nsec; }

class VClockRealtime : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(uep_vclock_enable(UEP_VCLOCK_MANUAL), 0); }
  void TearDown() override { uep_vclock_enable(UEP_VCLOCK_OFF); }
  static int64_t rt() { return uep_vclock_now(CLOCK_REALTIME); }
  // read(): the count, or -errno.
  static int64_t rd(int fd) {
    uint64_t v = 0;
    return uep_read(fd, &v, sizeof v) == 8 ? static_cast<int64_t>(v) : -errno;
  }
  static int ready(int ep) {
    epoll_event e{};
    return uep_epoll_wait(ep, &e, 1, 0);
  }
};

TEST_F(VClockRealtime, Errors) {
  EXPECT_EQ(uep_vclock_set_realtime(-1), -1);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(uep_vclock_set_realtime(UEP_VCLOCK_MAX_NS + 1), -1);
  EXPECT_EQ(uep_vclock_advance(UEP_VCLOCK_MAX_NS), -1);  // REALTIME would pass the limit
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(uep_vclock_advance_to(UEP_VCLOCK_START_MONO - 1), -1);  // the past
  EXPECT_EQ(uep_vclock_advance_to(UEP_VCLOCK_START_MONO + 5), 0);
  EXPECT_EQ(uep_vclock_now(CLOCK_MONOTONIC), UEP_VCLOCK_START_MONO + 5);
  uep_vclock_enable(UEP_VCLOCK_OFF);
  EXPECT_EQ(uep_vclock_set_realtime(0), -1);
  EXPECT_EQ(uep_vclock_advance_to(0), -1);
  EXPECT_EQ(uep_vclock_serialize(1), -1);  // serialized mode needs the clock on
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(uep_vclock_idle(), 0);
}

TEST_F(VClockRealtime, SetMovesOnlyRealtime) {
  const int64_t mono = uep_vclock_now(CLOCK_MONOTONIC);
  ASSERT_EQ(uep_vclock_set_realtime(5 * kSec), 0);
  EXPECT_EQ(rt(), 5 * kSec);
  EXPECT_EQ(uep_vclock_now(CLOCK_MONOTONIC), mono);
  EXPECT_EQ(uep_vclock_now(CLOCK_BOOTTIME), mono);
  ASSERT_EQ(uep_vclock_advance(kSec), 0);
  EXPECT_EQ(rt(), 6 * kSec);
  EXPECT_EQ(uep_vclock_now(CLOCK_REALTIME_COARSE), 6 * kSec);
}

// timerfd_create(2): "If this flag is specified along with TFD_TIMER_ABSTIME
// and the clock for this timer is CLOCK_REALTIME or CLOCK_REALTIME_ALARM,
// then mark this timer as cancelable if the real-time clock undergoes a
// discontinuous change ... read(2) fails with ECANCELED."
TEST_F(VClockRealtime, CancelOnSet) {
  int ep = uep_epoll_create1(0);
  int cancel = uep_timerfd_create(CLOCK_REALTIME, TFD_NONBLOCK);
  int plain = uep_timerfd_create(CLOCK_REALTIME, TFD_NONBLOCK);  // ABSTIME only
  int mono = uep_timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);  // CANCEL_ON_SET is ignored
  ASSERT_GE(mono, 0);
  epoll_event e{EPOLLIN | EPOLLET, {.fd = cancel}};
  ASSERT_EQ(uep_epoll_ctl(ep, EPOLL_CTL_ADD, cancel, &e), 0);
  itimerspec t = at(rt() + 3600 * kSec);
  ASSERT_EQ(uep_timerfd_settime(cancel, TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET, &t, nullptr), 0);
  ASSERT_EQ(uep_timerfd_settime(plain, TFD_TIMER_ABSTIME, &t, nullptr), 0);
  itimerspec m = at(uep_vclock_now(CLOCK_MONOTONIC) + 3600 * kSec);
  ASSERT_EQ(uep_timerfd_settime(mono, TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET, &m, nullptr), 0);
  EXPECT_EQ(rd(cancel), -EAGAIN);
  // Set back an hour: the cancel-on-set timer becomes readable (one edge)
  // and reads ECANCELED once; the others keep counting.
  ASSERT_EQ(uep_vclock_set_realtime(rt() - 3600 * kSec), 0);
  EXPECT_EQ(ready(ep), 1);
  EXPECT_EQ(ready(ep), 0);
  EXPECT_EQ(rd(cancel), -ECANCELED);
  EXPECT_EQ(rd(cancel), -EAGAIN);  // cancelled, not re-armed, nothing pending
  EXPECT_EQ(rd(plain), -EAGAIN);
  EXPECT_EQ(rd(mono), -EAGAIN);
  itimerspec cur{};
  ASSERT_EQ(uep_timerfd_gettime(plain, &cur), 0);  // its realtime expiry stayed: two hours left
  EXPECT_EQ(ns_of(cur.it_value), 7200 * kSec);
  ASSERT_EQ(uep_timerfd_gettime(mono, &cur), 0);
  EXPECT_EQ(ns_of(cur.it_value), 3600 * kSec);
  // Two sets before a read: a tick and a wakeup each (ctx->ticks++), one ECANCELED.
  ASSERT_EQ(uep_vclock_set_realtime(rt() + kSec), 0);
  ASSERT_EQ(uep_vclock_set_realtime(rt() + kSec), 0);
  EXPECT_EQ(ready(ep), 1);
  EXPECT_EQ(rd(cancel), -ECANCELED);
  // A set while cancelled makes settime fail with ECANCELED, the timer armed
  // all the same, and the old value not written.
  ASSERT_EQ(uep_vclock_set_realtime(rt() + kSec), 0);
  t = at(rt() + 10 * kSec);
  itimerspec old = at(77);
  EXPECT_EQ(uep_timerfd_settime(cancel, TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET, &t, &old), -1);
  EXPECT_EQ(errno, ECANCELED);
  EXPECT_EQ(ns_of(old.it_value), 77);
  ASSERT_EQ(uep_timerfd_gettime(cancel, &cur), 0);
  EXPECT_EQ(ns_of(cur.it_value), 10 * kSec);
  ASSERT_EQ(uep_vclock_advance(10 * kSec), 0);
  EXPECT_EQ(rd(cancel), 1);
  // Re-armed without CANCEL_ON_SET it is off the list: a set does nothing.
  t = at(rt() + 10 * kSec);
  ASSERT_EQ(uep_timerfd_settime(cancel, TFD_TIMER_ABSTIME, &t, nullptr), 0);
  ASSERT_EQ(uep_vclock_set_realtime(rt() + kSec), 0);
  EXPECT_EQ(rd(cancel), -EAGAIN);
  // The offset a timer last saw (ctx->moffs) is taken at creation and at
  // each ECANCELED, not at settime: re-armed for cancelling after a set it
  // did not hear of, the next set cancels it even to the same time ...
  t = at(rt() + 10 * kSec);
  ASSERT_EQ(uep_timerfd_settime(cancel, TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET, &t, nullptr), 0);
  ASSERT_EQ(uep_vclock_set_realtime(rt()), 0);
  EXPECT_EQ(rd(cancel), -ECANCELED);
  // ... while a set to the same time cancels nothing for a timer that has
  // seen the current offset.
  ASSERT_EQ(uep_timerfd_settime(cancel, TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET, &t, nullptr), 0);
  ASSERT_EQ(uep_vclock_set_realtime(rt()), 0);
  EXPECT_EQ(rd(cancel), -EAGAIN);
  uep_close(cancel);
  uep_close(plain);
  uep_close(mono);
  uep_close(ep);
}

// Setting the clock forward past a realtime expiry fires it at once; a
// relative CLOCK_REALTIME timer moves with the clock too (Linux arms it on
// the realtime base); a monotonic one does not.
TEST_F(VClockRealtime, TimersFollowTheSet) {
  int abs_t = uep_timerfd_create(CLOCK_REALTIME, TFD_NONBLOCK);
  int rel_t = uep_timerfd_create(CLOCK_REALTIME, TFD_NONBLOCK);
  int mono = uep_timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
  itimerspec t = at(rt() + 100 * kSec, 30 * kSec);
  ASSERT_EQ(uep_timerfd_settime(abs_t, TFD_TIMER_ABSTIME, &t, nullptr), 0);
  t = at(50 * kSec);
  ASSERT_EQ(uep_timerfd_settime(rel_t, 0, &t, nullptr), 0);
  ASSERT_EQ(uep_timerfd_settime(mono, 0, &t, nullptr), 0);
  // Forward 160 s: the absolute timer's expiries at 100 and 130 s have come
  // (one expiry, the read counts the overrun), the relative one's at 50 s.
  ASSERT_EQ(uep_vclock_set_realtime(rt() + 160 * kSec), 0);
  EXPECT_EQ(rd(abs_t), 3);  // 100, 130, 160
  EXPECT_EQ(rd(rel_t), 1);
  EXPECT_EQ(rd(mono), -EAGAIN);
  // Backward: the next realtime expiry (190 s) is 60 s away again.
  ASSERT_EQ(uep_vclock_set_realtime(rt() - 30 * kSec), 0);
  itimerspec cur{};
  ASSERT_EQ(uep_timerfd_gettime(abs_t, &cur), 0);
  EXPECT_EQ(ns_of(cur.it_value), 60 * kSec);
  ASSERT_EQ(uep_vclock_advance(50 * kSec), 0);
  EXPECT_EQ(rd(mono), 1);
  EXPECT_EQ(rd(abs_t), -EAGAIN);
  uep_close(abs_t);
  uep_close(rel_t);
  uep_close(mono);
}

// A wait over kernel descriptors only has its timeout on the virtual clock
// (a uepoll wait, not the kernel's poll), and makes its thread idle.  The
// poll runs on this thread (known or not, from earlier tests in the
// process, it is then a registered sleeper); a helper unknown to the clock
// watches for idleness and advances.
TEST_F(VClockRealtime, KernelOnlyPollIsVirtual) {
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);  // kernel descriptors
  const int64_t start = uep_vclock_now(CLOCK_MONOTONIC);
  std::atomic<int> step{0};
  std::thread driver([&] {
    auto wait_idle = [] {
      for (int i = 0; i < 20000 && !uep_vclock_idle(); ++i) usleep(500);
      return uep_vclock_idle() == 1;
    };
    const bool ok = wait_idle() && uep_vclock_advance(3600 * kSec - 1) == 0 && (usleep(20000), wait_idle());
    if (!ok) {  // ends the poll another way, so that the test fails instead of hanging
      (void)!write(sv[1], "x", 1);
      return;
    }
    step = 1;  // still waiting, a nanosecond early
    (void)uep_vclock_advance(1);
  });
  pollfd p{sv[0], POLLIN, 0};
  const int r = uep_poll(&p, 1, 3600 * 1000);
  driver.join();
  EXPECT_EQ(step.load(), 1);
  EXPECT_EQ(r, 0);
  EXPECT_EQ(uep_vclock_now(CLOCK_MONOTONIC) - start, 3600 * kSec);
  EXPECT_EQ(uep_poll(&p, 1, 0), 0);  // timeout 0: the kernel's poll
  ASSERT_EQ(write(sv[1], "x", 1), 1);
  EXPECT_EQ(uep_poll(&p, 1, 1000), 1);
  close(sv[0]);
  close(sv[1]);
}

}  // namespace
