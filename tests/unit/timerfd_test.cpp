// timerfd_test.cpp - timerfd: create/settime/gettime argument checks and
// errno order, relative and absolute one-shots, intervals and overrun
// counts, settime resetting the count and returning the old value, the
// wakeup Linux issues per expiry (and none for a periodic timer that is not
// read), blocking reads, and the C API's forwarding of kernel timerfds.
// Every test runs on a kernel timerfd and on a uepoll one with the same
// expectations; timing bounds leave room for a loaded 2-core machine.
#include "unit/unit_common.h"

#include <uepoll/testing.h>  // fail_alloc_after, uep_debug_*; includes tuning.h

#include <cstring>
#include <fcntl.h>
#include <sys/timerfd.h>
#include <unistd.h>

namespace {

using unit::mask;

itimerspec its(long value_ms, long interval_ms = 0) {
  itimerspec t{};
  t.it_value.tv_sec = value_ms / 1000;
  t.it_value.tv_nsec = (value_ms % 1000) * 1000000L;
  t.it_interval.tv_sec = interval_ms / 1000;
  t.it_interval.tv_nsec = (interval_ms % 1000) * 1000000L;
  return t;
}

long ms_of(const timespec& t) { return t.tv_sec * 1000 + t.tv_nsec / 1000000; }

class Timer : public unit::ObjTest {
 protected:
  void SetUp() override {
    fd_ = api().timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
    ASSERT_GE(fd_, 0);
  }
  void TearDown() override {
    if (fd_ >= 0) api().close(fd_);
  }
  int set(long value_ms, long interval_ms = 0, int flags = 0, itimerspec* old = nullptr) {
    itimerspec t = its(value_ms, interval_ms);
    return api().timerfd_settime(fd_, flags, &t, old);
  }
  long rd(uint64_t* v) { return api().read(fd_, v, sizeof *v); }
  int fd_ = -1;
};
UNIT_INSTANTIATE(Timer);

TEST_P(Timer, CreateErrors) {
  EXPECT_EQ(api().timerfd_create(CLOCK_MONOTONIC, 0x1), -1);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(api().timerfd_create(CLOCK_PROCESS_CPUTIME_ID, 0), -1);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(api().timerfd_create(12345, 0), -1);
  EXPECT_EQ(errno, EINVAL);
  for (int clock : {CLOCK_MONOTONIC, CLOCK_REALTIME, CLOCK_BOOTTIME}) {
    int fd = api().timerfd_create(clock, TFD_CLOEXEC);
    ASSERT_GE(fd, 0) << clock;
    api().close(fd);
  }
}

TEST_P(Timer, SettimeGettimeErrors) {
  itimerspec t = its(1000);
  itimerspec bad = its(0);
  bad.it_value.tv_nsec = 1000000000;
  EXPECT_EQ(api().timerfd_settime(fd_, 0, nullptr, nullptr), -1);
  EXPECT_EQ(errno, EFAULT);
  EXPECT_EQ(api().timerfd_settime(fd_, 0, &bad, nullptr), -1);
  EXPECT_EQ(errno, EINVAL);
  bad = its(0);
  bad.it_interval.tv_sec = -1;
  EXPECT_EQ(api().timerfd_settime(fd_, 0, &bad, nullptr), -1);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(api().timerfd_settime(fd_, 0x4, &t, nullptr), -1);
  EXPECT_EQ(errno, EINVAL);
  int e = api().eventfd(0, 0);
  EXPECT_EQ(api().timerfd_settime(e, 0, &t, nullptr), -1);
  EXPECT_EQ(errno, EINVAL);
  itimerspec cur;
  EXPECT_EQ(api().timerfd_gettime(e, &cur), -1);
  EXPECT_EQ(errno, EINVAL);
  api().close(e);
  EXPECT_EQ(api().timerfd_settime(e, 0, &t, nullptr), -1);
  EXPECT_EQ(errno, EBADF);
  EXPECT_EQ(api().timerfd_settime(e, 0x4, &t, nullptr), -1);  // flags before the descriptor
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(api().timerfd_gettime(e, &cur), -1);
  EXPECT_EQ(errno, EBADF);
  EXPECT_EQ(api().timerfd_gettime(fd_, nullptr), -1);
  EXPECT_EQ(errno, EFAULT);
  // TFD_TIMER_CANCEL_ON_SET is accepted (it only acts with ABSTIME on a
  // realtime clock).
  EXPECT_EQ(api().timerfd_settime(fd_, TFD_TIMER_CANCEL_ON_SET, &t, nullptr), 0);
  uint64_t v = 0;
  EXPECT_EQ(api().read(fd_, &v, 7), -1);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(api().write(fd_, &v, 8), -1);
  EXPECT_EQ(errno, EINVAL);
}

TEST_P(Timer, DisarmedGettime) {
  itimerspec cur;
  std::memset(&cur, 0x55, sizeof cur);
  ASSERT_EQ(api().timerfd_gettime(fd_, &cur), 0);
  EXPECT_EQ(cur.it_value.tv_sec, 0);
  EXPECT_EQ(cur.it_value.tv_nsec, 0);
  EXPECT_EQ(cur.it_interval.tv_sec, 0);
  EXPECT_EQ(cur.it_interval.tv_nsec, 0);
  uint64_t v;
  EXPECT_EQ(rd(&v), -1);
  EXPECT_EQ(errno, EAGAIN);
  EXPECT_EQ(mask(api(), fd_), 0u);
}

TEST_P(Timer, RelativeOneShot) {
  ASSERT_EQ(set(60), 0);
  EXPECT_EQ(mask(api(), fd_), 0u);
  itimerspec cur;
  ASSERT_EQ(api().timerfd_gettime(fd_, &cur), 0);
  EXPECT_GT(cur.it_value.tv_sec * 1000000000L + cur.it_value.tv_nsec, 0);  // still armed
  EXPECT_LE(ms_of(cur.it_value), 60);
  unit::sleep_ms(100);
  EXPECT_EQ(mask(api(), fd_), static_cast<uint32_t>(POLLIN));
  ASSERT_EQ(api().timerfd_gettime(fd_, &cur), 0);
  EXPECT_EQ(ms_of(cur.it_value), 0);  // expired one-shot: disarmed
  uint64_t v = 0;
  EXPECT_EQ(rd(&v), 8);
  EXPECT_EQ(v, 1u);
  EXPECT_EQ(rd(&v), -1);
  EXPECT_EQ(errno, EAGAIN);
  EXPECT_EQ(mask(api(), fd_), 0u);
}

TEST_P(Timer, AbsoluteTime) {
  timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  itimerspec t{};
  t.it_value = now;
  t.it_value.tv_nsec += 40 * 1000000L;
  if (t.it_value.tv_nsec >= 1000000000L) {
    t.it_value.tv_sec++;
    t.it_value.tv_nsec -= 1000000000L;
  }
  ASSERT_EQ(api().timerfd_settime(fd_, TFD_TIMER_ABSTIME, &t, nullptr), 0);
  EXPECT_EQ(mask(api(), fd_), 0u);
  unit::sleep_ms(80);
  uint64_t v = 0;
  EXPECT_EQ(rd(&v), 8);
  EXPECT_EQ(v, 1u);
  // An absolute time in the past fires at once.
  t.it_value = now;
  ASSERT_EQ(api().timerfd_settime(fd_, TFD_TIMER_ABSTIME, &t, nullptr), 0);
  unit::sleep_ms(5);
  EXPECT_EQ(rd(&v), 8);
  EXPECT_EQ(v, 1u);
}

TEST_P(Timer, IntervalCountsOverruns) {
  // The count is every period elapsed (1 + overruns): compare with the time
  // actually slept, which a loaded machine stretches.
  const long long t0 = unit::now_ms();
  ASSERT_EQ(set(10, 10), 0);
  unit::sleep_ms(105);
  uint64_t v = 0;
  ASSERT_EQ(rd(&v), 8);
  long long periods = (unit::now_ms() - t0) / 10;
  EXPECT_GE(static_cast<long long>(v), periods - 2);
  EXPECT_LE(static_cast<long long>(v), periods + 1);
  itimerspec cur;
  ASSERT_EQ(api().timerfd_gettime(fd_, &cur), 0);
  EXPECT_EQ(ms_of(cur.it_interval), 10);
  EXPECT_LE(ms_of(cur.it_value), 10);
  const long long t1 = unit::now_ms();
  unit::sleep_ms(35);
  ASSERT_EQ(rd(&v), 8);
  periods = (unit::now_ms() - t1) / 10;
  EXPECT_GE(static_cast<long long>(v), periods - 1);
  EXPECT_LE(static_cast<long long>(v), periods + 2);
}

TEST_P(Timer, SettimeResetsCountAndReturnsOld) {
  ASSERT_EQ(set(5, 0), 0);
  unit::sleep_ms(30);
  EXPECT_EQ(mask(api(), fd_), static_cast<uint32_t>(POLLIN));
  itimerspec old;
  std::memset(&old, 0x55, sizeof old);
  ASSERT_EQ(set(10000, 2000, 0, &old), 0);
  EXPECT_EQ(ms_of(old.it_value), 0);  // the old one-shot had expired
  EXPECT_EQ(ms_of(old.it_interval), 0);
  EXPECT_EQ(mask(api(), fd_), 0u);  // the pending expiration is gone
  uint64_t v;
  EXPECT_EQ(rd(&v), -1);
  EXPECT_EQ(errno, EAGAIN);
  ASSERT_EQ(set(0, 0, 0, &old), 0);  // disarm
  EXPECT_GT(ms_of(old.it_value), 9000);
  EXPECT_EQ(ms_of(old.it_interval), 2000);
}

// Linux wakes once per expiry; a periodic timer that nobody reads does not
// re-arm, so an edge-triggered watcher sees one event until it reads.
TEST_P(Timer, EdgeTriggeredPeriodicWakesOnceUntilRead) {
  unit::Ep ep(api());
  ASSERT_EQ(ep.add(fd_, EPOLLIN | EPOLLET, 7), 0);
  EXPECT_EQ(ep.wait(0).size(), 0u);
  ASSERT_EQ(set(10, 10), 0);
  auto e = ep.wait(1000);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].events, static_cast<uint32_t>(EPOLLIN));
  EXPECT_EQ(e[0].data.u64, 7u);
  EXPECT_EQ(ep.wait(60).size(), 0u);  // no new edge while unread
  uint64_t v = 0;
  ASSERT_EQ(rd(&v), 8);
  EXPECT_GE(v, 5u);
  EXPECT_EQ(ep.wait(1000).size(), 1u);  // re-armed by the read
  ASSERT_EQ(set(0), 0);
}

TEST_P(Timer, LevelTriggeredEpollWait) {
  unit::Ep ep(api());
  ASSERT_EQ(ep.add(fd_, EPOLLIN, 1), 0);
  ASSERT_EQ(set(30), 0);
  const long long t0 = unit::now_ms();
  auto e = ep.wait(2000);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_GE(unit::now_ms() - t0, 20);
  EXPECT_EQ(ep.wait(0).size(), 1u);  // level: still readable
  uint64_t v;
  ASSERT_EQ(rd(&v), 8);
  EXPECT_EQ(ep.wait(0).size(), 0u);
}

TEST_P(Timer, BlockingRead) {
  int fd = api().timerfd_create(CLOCK_MONOTONIC, 0);
  ASSERT_GE(fd, 0);
  itimerspec t = its(40);
  ASSERT_EQ(api().timerfd_settime(fd, 0, &t, nullptr), 0);
  const long long t0 = unit::now_ms();
  uint64_t v = 0;
  EXPECT_EQ(api().read(fd, &v, 8), 8);
  EXPECT_EQ(v, 1u);
  EXPECT_GE(unit::now_ms() - t0, 30);
  // A blocking read of an interval timer wakes per period.
  t = its(15, 15);
  ASSERT_EQ(api().timerfd_settime(fd, 0, &t, nullptr), 0);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(api().read(fd, &v, 8), 8);
    EXPECT_GE(v, 1u);
  }
  api().close(fd);
}

TEST_P(Timer, ManyTimersFireIndependently) {
  constexpr int kN = 8;
  int fds[kN];
  unit::Ep ep(api());
  for (int i = 0; i < kN; ++i) {
    fds[i] = api().timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
    ASSERT_GE(fds[i], 0);
    itimerspec t = its(10 + 5 * i);
    ASSERT_EQ(api().timerfd_settime(fds[i], 0, &t, nullptr), 0);
    ASSERT_EQ(ep.add(fds[i], EPOLLIN | EPOLLONESHOT, static_cast<uint64_t>(i)), 0);
  }
  int seen = 0;
  const long long deadline = unit::now_ms() + 3000;
  while (seen < kN && unit::now_ms() < deadline) seen += static_cast<int>(ep.wait(100).size());
  EXPECT_EQ(seen, kN);
  for (int fd : fds) api().close(fd);
}

// ---- uepoll only -------------------------------------------------------------

TEST(TimerUepoll, KernelTimerfdsAreForwarded) {
  int k = ::timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
  ASSERT_GE(k, 0);
  itimerspec t = its(5000), cur;
  EXPECT_EQ(uep_timerfd_settime(k, 0, &t, nullptr), 0);
  ASSERT_EQ(::timerfd_gettime(k, &cur), 0);
  EXPECT_GT(ms_of(cur.it_value), 4000);
  ASSERT_EQ(uep_timerfd_gettime(k, &cur), 0);
  EXPECT_GT(ms_of(cur.it_value), 4000);
  ::close(k);
  EXPECT_EQ(uep_timerfd_gettime(k, &cur), -1);
  EXPECT_EQ(errno, EBADF);
  EXPECT_EQ(uep_timerfd_settime(UEP_FD_BASE + 123456, 0, &t, nullptr), -1);
  EXPECT_EQ(errno, EBADF);
}

TEST(TimerUepoll, CloseWhileArmedAndReuse) {
  // Closing armed timers must not leave wakeups aimed at freed objects.
  for (int round = 0; round < 50; ++round) {
    int fd = uep_timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
    ASSERT_GE(fd, 0);
    itimerspec t = its(0, 0);
    t.it_value.tv_nsec = 100000;  // 0.1 ms
    t.it_interval.tv_nsec = 100000;
    ASSERT_EQ(uep_timerfd_settime(fd, 0, &t, nullptr), 0);
    if (round % 2) unit::sleep_ms(1);
    ASSERT_EQ(uep_close(fd), 0);
  }
}

TEST(TimerUepoll, AllocationFailure) {
  ASSERT_EQ(uep_tuning_set("fail_alloc_after", 0), 0);
  int fd = uep_timerfd_create(CLOCK_MONOTONIC, 0);
  int e = errno;
  uep_tuning_set("fail_alloc_after", -1);
  EXPECT_EQ(fd, -1);
  EXPECT_EQ(e, ENOMEM);
}

}  // namespace
