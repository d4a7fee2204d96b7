// vclock_conformance_test.cpp - the conformance suite's timerfd and timeout
// scenarios (tests/conformance/objects_timerfd_test.cpp, wait_test.cpp,
// poll_test.cpp) rerun on the virtual clock: each scenario runs once on
// real Linux descriptors in real time (1 unit = 1 ms) and once on uepoll in
// automatic virtual time (1 unit = 1 minute), and the two traces must be
// equal line for line.  Elapsed times are logged as ranges wide enough for a
// loaded machine (so both traces agree); on the virtual clock each is also
// checked to be exactly what Linux's semantics give (Clock::exact_failures),
// and the whole virtual run must take well under a second of real time
// although it simulates days.
#include "conformance/harness.h"

#include <uepoll/vclock.h>

namespace {

using conf::T;

struct Clock {
  bool virt = false;
  int64_t unit = 1000000;  // ns per unit
  std::vector<std::string> exact_failures;

  int64_t now() const {
    if (virt) return uep_vclock_now(CLOCK_MONOTONIC);
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
  }
  timespec span(int64_t units) const {
    const int64_t ns = units * unit;
    return timespec{static_cast<time_t>(ns / 1000000000LL), static_cast<long>(ns % 1000000000LL)};
  }
  void sleep(int64_t units) {
    timespec ts = span(units);
    if (virt)
      uep_vclock_nanosleep(CLOCK_MONOTONIC, 0, &ts, nullptr);
    else
      nanosleep(&ts, nullptr);
  }
  int ms(int units) const { return units <= 0 ? units : static_cast<int>(units * (unit / 1000000)); }
  double units_of(const timespec& ts) const {
    return static_cast<double>(ts.tv_sec * 1000000000LL + ts.tv_nsec) / static_cast<double>(unit);
  }
  // In range on Linux (a loaded machine is slow); exactly `exact_ns` on the
  // virtual clock.
  std::string range(int64_t elapsed_ns, double lo, double hi, int64_t exact_ns, const std::string& what) {
    if (virt && elapsed_ns != exact_ns)
      exact_failures.push_back(what + ": " + std::to_string(elapsed_ns) + " ns, not " + std::to_string(exact_ns));
    const double u = static_cast<double>(elapsed_ns) / static_cast<double>(unit);
    return u >= lo && u <= hi ? "in range" : "out of range (" + std::to_string(u) + ")";
  }
  void expect_exact(long long got, long long want, const std::string& what) {
    if (virt && got != want)
      exact_failures.push_back(what + ": " + std::to_string(got) + ", not " + std::to_string(want));
  }
};

// The harness's calls with timeouts in units (the trace shows units, so it
// is the same on both clocks).
int wait_u(T& t, Clock& c, int ep, int max, int units) {
  static struct epoll_event buf[16];
  errno = 0;
  const int r = t.api.epoll_wait(ep, buf, max, c.ms(units));
  std::string s = "wait(" + t.name(ep) + "," + std::to_string(max) + "," + std::to_string(units) + "u) = " + t.res(r);
  if (r > 0) s += T::events_str(buf, r);
  t.log(s);
  return r;
}
int pwait2_u(T& t, Clock& c, int ep, int units) {
  struct epoll_event buf[4];
  const timespec ts = c.span(units);
  errno = 0;
  const int r = t.api.epoll_pwait2(ep, buf, 4, &ts, nullptr);
  t.log("pwait2(" + t.name(ep) + ",4," + std::to_string(units) + "u) = " + t.res(r));
  return r;
}
int poll_u(T& t, Clock& c, int fd, int units, bool use_ppoll) {
  pollfd p{fd, POLLIN, 0};
  errno = 0;
  int r;
  if (use_ppoll) {
    const timespec ts = c.span(units);
    r = &t.api == &uepoll_test::linux_api() ? ::ppoll(&p, 1, &ts, nullptr) : uep_ppoll(&p, 1, &ts, nullptr);
  } else {
    r = t.api.poll(&p, 1, c.ms(units));
  }
  t.log(std::string(use_ppoll ? "ppoll(" : "poll(") + t.name(fd) + "," + std::to_string(units) + "u) = " + t.res(r));
  return r;
}

using Scenario = std::function<void(T&, Clock&)>;

// Linux in real time, then uepoll on the virtual clock (automatic mode);
// the traces must be equal and the virtual times exact.
void differential_vclock(const Scenario& s) {
  Clock real;
  std::vector<std::string> linux_trace = conf::run_one(uepoll_test::linux_api(), [&](T& t) { s(t, real); });
  Clock virt;
  virt.virt = true;
  virt.unit = 60LL * 1000000000LL;
  ASSERT_EQ(uep_vclock_enable(UEP_VCLOCK_AUTO), 0);
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::string> uepoll_trace = conf::run_one(uepoll_test::uepoll_api(), [&](T& t) { s(t, virt); });
  const double real_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  uep_vclock_enable(UEP_VCLOCK_OFF);
  EXPECT_TRUE(linux_trace == uepoll_trace) << "traces differ (L = Linux, U = uepoll on the virtual clock):\n"
                                           << conf::format_traces(linux_trace, uepoll_trace);
  std::string why;
  for (auto& f : virt.exact_failures) why += "  " + f + "\n";
  EXPECT_TRUE(virt.exact_failures.empty()) << "virtual times not exact:\n" << why;
  EXPECT_LT(real_ms, 1000.0) << "the virtual run took real time";
}

TEST(VClockConformance, TimerfdRelativeOneShotAndGettime) {
  differential_vclock([](T& t, Clock& c) {
    int ep = t.epoll_create1();
    int tm = t.timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
    t.ctl(ep, EPOLL_CTL_ADD, tm, EPOLLIN | EPOLLOUT, 1);
    struct itimerspec cur;
    t.timerfd_gettime(tm, &cur);
    t.log("unarmed: value " + std::to_string(c.units_of(cur.it_value)) + " interval " +
          std::to_string(c.units_of(cur.it_interval)));
    t.read(tm, 8);  // EAGAIN
    t.timerfd_settime(tm, 0, 30 * c.unit, 0);
    t.timerfd_gettime(tm, &cur);
    t.log("armed 30: remaining " +
          c.range(cur.it_value.tv_sec * 1000000000LL + cur.it_value.tv_nsec, 0, 30, 30 * c.unit, "remaining"));
    wait_u(t, c, ep, 4, 0);
    int64_t t0 = c.now();
    wait_u(t, c, ep, 4, 2000);
    t.log("expired after " + c.range(c.now() - t0, 15, 500, 30 * c.unit, "expiry"));
    t.read_u64(tm);
    t.read(tm, 8);  // EAGAIN: one-shot
    t.timerfd_gettime(tm, &cur);
    t.log("after expiry: value " + std::to_string(c.units_of(cur.it_value)));
    struct itimerspec old;
    t.timerfd_settime(tm, 0, 5000 * c.unit, 0);
    t.timerfd_settime(tm, 0, c.unit, 0, &old);
    t.log("old value " + c.range(old.it_value.tv_sec * 1000000000LL + old.it_value.tv_nsec, 4000, 5000,
                                 5000 * c.unit, "old value"));
    c.sleep(20);
    wait_u(t, c, ep, 4, 0);
    t.timerfd_settime(tm, 0, 0, 0, &old);  // disarm: the expiry is discarded
    wait_u(t, c, ep, 4, 0);
    t.read(tm, 8);
  });
}

TEST(VClockConformance, TimerfdAbsoluteAndInterval) {
  differential_vclock([](T& t, Clock& c) {
    int ep = t.epoll_create1();
    int tm = t.timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
    t.ctl(ep, EPOLL_CTL_ADD, tm, EPOLLIN | EPOLLET, 1);
    const int64_t now_ns = c.now();
    t.timerfd_settime(tm, TFD_TIMER_ABSTIME, now_ns + 30 * c.unit, 0, nullptr, "now+30");
    int64_t t0 = c.now();
    wait_u(t, c, ep, 4, 2000);
    t.log("absolute expiry after " + c.range(c.now() - t0, 20, 500, 30 * c.unit, "absolute expiry"));
    t.read_u64(tm);
    t.timerfd_settime(tm, TFD_TIMER_ABSTIME, now_ns - c.unit, 0, nullptr, "in the past");
    wait_u(t, c, ep, 4, 0);  // fires at once
    t.read_u64(tm);
    // Interval of 40, read after 130: expiries at 40, 80, 120.
    const int64_t set_start = c.now();
    t.timerfd_settime(tm, 0, 40 * c.unit, 40 * c.unit);
    const int64_t set_end = c.now();
    c.sleep(130);
    uint64_t v = 0;
    const int64_t read_start = c.now();
    {
      T::Quiet q(t);
      t.read(tm, 8, &v);
    }
    const int64_t read_end = c.now();
    const long lo = static_cast<long>((read_start - set_end) / (40 * c.unit)) - 1;
    const long hi = static_cast<long>((read_end - set_start) / (40 * c.unit)) + 1;
    const bool ok = static_cast<long>(v) >= std::max(lo, 1L) && static_cast<long>(v) <= hi;
    c.expect_exact(static_cast<long long>(v), 3, "interval count");
    t.log(std::string("interval count ") + (ok ? "matches the elapsed time" : "off"));
    struct itimerspec cur;
    t.timerfd_gettime(tm, &cur);
    t.log("interval " + std::to_string(c.units_of(cur.it_interval)) + ", remaining " +
          c.range(cur.it_value.tv_sec * 1000000000LL + cur.it_value.tv_nsec, 0, 40, 30 * c.unit, "remaining"));
    wait_u(t, c, ep, 4, 2000);  // the expiry at 160
    wait_u(t, c, ep, 4, 60);    // unread: not re-armed, no edge (to 220)
    {
      T::Quiet q(t);
      t.read(tm, 8, &v);
    }
    c.expect_exact(static_cast<long long>(v), 2, "count after the stall");  // 160 and 200
    t.log("count read after the stall " + std::string(v >= 1 ? ">= 1" : "0"));
    wait_u(t, c, ep, 4, 2000);
    t.timerfd_settime(tm, 0, 0, 0);
  });
}

TEST(VClockConformance, TimerfdOneWakeupPerExpiryAndGettimeRearms) {
  differential_vclock([](T& t, Clock& c) {
    int ep = t.epoll_create1();
    int tm = t.timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
    t.ctl(ep, EPOLL_CTL_ADD, tm, EPOLLIN | EPOLLET, 1);
    t.timerfd_settime(tm, TFD_TIMER_ABSTIME, c.now() - c.unit, 0, nullptr, "in the past");
    wait_u(t, c, ep, 4, 0);
    c.sleep(30);
    wait_u(t, c, ep, 4, 0);
    t.read_u64(tm);
    t.timerfd_settime(tm, 0, 5 * c.unit, 5 * c.unit);
    wait_u(t, c, ep, 4, 2000);
    c.sleep(30);  // unread: not re-armed, no new edge
    wait_u(t, c, ep, 4, 0);
    struct itimerspec cur;
    t.timerfd_gettime(tm, &cur);  // re-arms the expired interval timer
    const int64_t t0 = c.now();
    wait_u(t, c, ep, 4, 2000);
    // Expiry at 5, read at 35 by gettime: re-armed for 40, 5 after it.
    t.log("next edge " + c.range(c.now() - t0, 0, 500, 5 * c.unit, "edge after gettime"));
    t.timerfd_settime(tm, 0, 0, 0);
  });
}

TEST(VClockConformance, TimerfdBlockingRead) {
  differential_vclock([](T& t, Clock& c) {
    int tm = t.timerfd_create(CLOCK_MONOTONIC, 0);
    t.timerfd_settime(tm, 0, 30 * c.unit, 0);
    const int64_t t0 = c.now();
    t.read_u64(tm);
    t.log("blocked " + c.range(c.now() - t0, 20, 500, 30 * c.unit, "blocking read"));
  });
}

TEST(VClockConformance, WaitAndPollTimeouts) {
  differential_vclock([](T& t, Clock& c) {
    int ep = t.epoll_create1();
    int efd = t.eventfd(0);
    t.ctl(ep, EPOLL_CTL_ADD, efd, EPOLLIN, 1);
    int64_t t0 = c.now();
    wait_u(t, c, ep, 4, 0);
    t.log("timeout 0: " + c.range(c.now() - t0, 0, 20, 0, "timeout 0"));
    t0 = c.now();
    wait_u(t, c, ep, 4, 60);
    t.log("timeout 60: " + c.range(c.now() - t0, 59, 260, 60 * c.unit, "timeout 60"));
    t0 = c.now();
    pwait2_u(t, c, ep, 40);
    t.log("pwait2 40: " + c.range(c.now() - t0, 39, 240, 40 * c.unit, "pwait2 40"));
    t0 = c.now();
    {
      struct epoll_event ev;
      const timespec one = {0, 1};
      errno = 0;
      const int r = t.api.epoll_pwait2(ep, &ev, 1, &one, nullptr);
      t.log("pwait2(" + t.name(ep) + ",1,1ns) = " + t.res(r));
    }
    t.log("pwait2 1 ns: " + c.range(c.now() - t0, 0, 50, 1, "pwait2 1 ns"));
    t0 = c.now();
    poll_u(t, c, efd, 50, false);
    t.log("poll 50: " + c.range(c.now() - t0, 49, 500, 50 * c.unit, "poll 50"));
    t0 = c.now();
    poll_u(t, c, ep, 25, true);
    t.log("ppoll 25: " + c.range(c.now() - t0, 24, 500, 25 * c.unit, "ppoll 25"));
    // An infinite wait ends at a timer's expiry.
    int tm = t.timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
    t.ctl(ep, EPOLL_CTL_ADD, tm, EPOLLIN, 2);
    t.timerfd_settime(tm, 0, 70 * c.unit, 0);
    t0 = c.now();
    wait_u(t, c, ep, 4, -1);
    t.log("infinite wait ended by the timer: " + c.range(c.now() - t0, 60, 600, 70 * c.unit, "timer wakes wait"));
    t.read_u64(tm);
    // An event already queued: no wait at all.
    uint64_t one = 1;
    t.api.write(efd, &one, 8);
    t0 = c.now();
    wait_u(t, c, ep, 4, 5000);
    t.log("ready at entry: " + c.range(c.now() - t0, 0, 50, 0, "ready at entry"));
  });
}

}  // namespace
