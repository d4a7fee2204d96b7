// objects_timerfd_test.cpp - timerfd as seen through the C API: relative,
// absolute and interval timers, expiry counts, gettime, other clocks,
// errors and blocking reads.  Readiness is observed through epoll (all
// bits) so the exact masks are compared.
#include "objects_common.h"

#include <thread>

namespace {

using conf::T;
using conf_objects::ALL;
using conf_objects::state;

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

// A read that takes an expiry before the service thread has handled the
// kernel's event for it (here a non-blocking read loop that never waits)
// leaves that event stale: handled late, it must not count as the wakeup
// of the next expiry, which still wakes a blocking epoll_wait.  A 1 ms
// interval timer, 300 rounds of: take an expiry by reading, then wait for
// the next one.
TEST(Timerfd, ReadAheadOfTheWakeupLosesNoLaterWakeup) {
  auto r = conf::differential([](T& t) {
    int ep = t.epoll_create1();
    int tm = t.timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
    t.ctl(ep, EPOLL_CTL_ADD, tm, EPOLLIN, 1);
    t.timerfd_settime(tm, 0, 1000000LL, 1000000LL);
    int missed = 0;
    for (int i = 0; i < 300 && missed == 0; ++i) {
      uint64_t v = 0;
      while (t.api.read(tm, &v, sizeof v) != static_cast<ssize_t>(sizeof v)) {
      }
      epoll_event e{};
      if (t.api.epoll_wait(ep, &e, 1, 1000) != 1) missed = i + 1;
      (void)t.api.read(tm, &v, sizeof v);
    }
    t.log(missed ? "round " + std::to_string(missed - 1) + " missed its wakeup" : "every round woken");
    t.timerfd_settime(tm, 0, 0, 0);
  });
  EXPECT_LINUX_SEQ(r, {"every round woken"});
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

}  // namespace
