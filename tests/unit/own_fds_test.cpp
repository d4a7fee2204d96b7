// own_fds_test.cpp - uepoll's own kernel descriptors (core/own_fds.h) do
// not take the numbers a program gets next: a kernel descriptor opened
// before and after uepoll makes its internal ones (a thread's waiter at its
// first blocking wait, a timerfd's kernel timer and the timer thread's
// epoll, an instance's kernel side) has the same number, and each internal
// one lies high and is recorded as uepoll's.
#include <uepoll/uepoll.h>

#include <gtest/gtest.h>

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

  // The internal ones: recorded, close-on-exec, at the top of the range.
  rlimit rl{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &rl), 0);
  const long top = rl.rlim_cur < 65536 ? static_cast<long>(rl.rlim_cur) : 65536;
  int n = 0;
  for (int fd = uep__next_own_fd(0); fd >= 0; fd = uep__next_own_fd(fd + 1), ++n) {
    EXPECT_EQ(uep__own_fd(fd), 1);
    EXPECT_GT(fd, top / 2) << "own descriptor " << fd << " is not in the top half below " << top;
    EXPECT_GT(fd, before + 16);
    EXPECT_LT(fd, top);
    EXPECT_EQ(::fcntl(fd, F_GETFD), FD_CLOEXEC);
  }
  EXPECT_GE(n, 3);  // a waiter's eventfd and epoll, a kernel timer, ...
  EXPECT_EQ(uep__own_fd(before), 0);
  uep_close(ep);
  uep_close(t);
}

}  // namespace
