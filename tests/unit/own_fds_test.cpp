// own_fds_test.cpp - uepoll's own kernel descriptors (core/own_fds.h) do
// not take the numbers a program gets next: a kernel descriptor opened
// before and after uepoll makes its internal ones (a thread's waiter at its
// first blocking wait, a timerfd's kernel timer and the timer thread's
// epoll, an instance's kernel side) has the same number, and each internal
// one lies high and is recorded as uepoll's.
#include <uepoll/uepoll.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdint>
#include <fcntl.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/timerfd.h>
#include <unistd.h>

extern "C" int uep__own_fd(int fd);       // src/capi/preload_support.h
extern "C" int uep__next_own_fd(int from);

namespace {

int next_kernel_number() {
  const int fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  ::close(fd);
  return fd;
}

long capped(rlim_t v) { return v == RLIM_INFINITY || v > 65536 ? 65536 : static_cast<long>(v); }

// Where own descriptors are parked (core/own_fds.h): [soft, top) when the
// hard limit leaves room above the soft one, else the top half below soft.
struct Range {
  long lo, hi;
};
Range own_range() {
  rlimit rl{};
  EXPECT_EQ(getrlimit(RLIMIT_NOFILE, &rl), 0);
  const long soft = capped(rl.rlim_cur), top = capped(rl.rlim_max);
  return top > soft ? Range{soft, top} : Range{soft / 2 + 1, soft};
}

void* blocking_reader(void* arg) {
  uint64_t v = 0;
  // The first blocking wait of this thread makes its waiter.
  return reinterpret_cast<void*>(uep_read(*static_cast<int*>(arg), &v, sizeof v));
}

TEST(OwnFds, InternalDescriptorsDoNotTakeTheProgramsNumbers) {
  const int before = next_kernel_number();
  const int t = uep_timerfd_create(CLOCK_MONOTONIC, 0);
  ASSERT_GE(t, 0);
  itimerspec its{};
  its.it_value.tv_nsec = 10 * 1000 * 1000;
  ASSERT_EQ(uep_timerfd_settime(t, 0, &its, nullptr), 0);
  pthread_t th;
  ASSERT_EQ(pthread_create(&th, nullptr, blocking_reader, const_cast<int*>(&t)), 0);
  void* r = nullptr;
  pthread_join(th, &r);
  EXPECT_EQ(reinterpret_cast<intptr_t>(r), 8);
  // A kernel descriptor in a uepoll instance makes its kernel side.
  const int ep = uep_epoll_create1(0);
  ASSERT_GE(ep, 0);
  int p[2];
  ASSERT_EQ(::pipe2(p, O_CLOEXEC), 0);
  EXPECT_EQ(p[0], before);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ASSERT_EQ(uep_epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev), 0);
  ASSERT_EQ(::write(p[1], "x", 1), 1);
  EXPECT_EQ(uep_epoll_wait(ep, &ev, 1, 1000), 1);
  ::close(p[0]);
  ::close(p[1]);
  EXPECT_EQ(next_kernel_number(), before);

  // The internal ones: recorded, close-on-exec, above the soft limit when
  // the hard limit leaves room, else in the top half below it.
  const Range range = own_range();
  int n = 0;
  for (int fd = uep__next_own_fd(0); fd >= 0; fd = uep__next_own_fd(fd + 1), ++n) {
    EXPECT_EQ(uep__own_fd(fd), 1);
    EXPECT_GE(fd, range.lo) << "own descriptor " << fd << " is below " << range.lo;
    EXPECT_GT(fd, before + 16);
    EXPECT_LT(fd, range.hi);
    EXPECT_EQ(::fcntl(fd, F_GETFD), FD_CLOEXEC);
  }
  EXPECT_GE(n, 3);  // a waiter's eventfd and epoll, a kernel timer, ...
  EXPECT_EQ(uep__own_fd(before), 0);
  uep_close(ep);
  uep_close(t);
}

// With the soft limit under the hard one (most systems start programs
// so), a new own descriptor lies at or past the soft limit, where the
// program's dup2 gets EBADF and no allocation of its reaches; the soft
// limit the program set is the one it keeps.
TEST(OwnFds, ParkedPastALoweredSoftLimit) {
  rlimit saved{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &saved), 0);
  if (saved.rlim_max != RLIM_INFINITY && saved.rlim_max < 1024) GTEST_SKIP() << "hard limit under 1024";
  rlimit low = saved;
  low.rlim_cur = 512;
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &low), 0);
  const int t = uep_timerfd_create(CLOCK_MONOTONIC, 0);  // parks its kernel timer
  ASSERT_GE(t, 0);
  int newest = -1;
  for (int fd = uep__next_own_fd(512); fd >= 0; fd = uep__next_own_fd(fd + 1)) newest = fd;
  EXPECT_GE(newest, 512);
  EXPECT_LT(newest, capped(saved.rlim_max));
  rlimit now{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &now), 0);
  EXPECT_EQ(now.rlim_cur, 512u);
  EXPECT_EQ(now.rlim_max, saved.rlim_max);
  if (newest >= 0) {
    errno = 0;
    EXPECT_EQ(::dup2(0, newest), -1);  // the kernel's own answer past the limit
    EXPECT_EQ(errno, EBADF);
    EXPECT_EQ(::fcntl(newest, F_GETFD), FD_CLOEXEC);  // still uepoll's
  }
  itimerspec its{};
  its.it_value.tv_nsec = 5 * 1000 * 1000;
  ASSERT_EQ(uep_timerfd_settime(t, 0, &its, nullptr), 0);
  uint64_t v = 0;
  EXPECT_EQ(uep_read(t, &v, sizeof v), 8);  // the parked timer works
  uep_close(t);
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &saved), 0);
}

}  // namespace
