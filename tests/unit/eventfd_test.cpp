// eventfd_test.cpp - eventfd: creation flags, counter and semaphore modes,
// size and overflow rules, poll masks, the wakeups Linux issues (seen
// through EPOLLET), and blocking read/write woken by another thread.  Every
// test runs on a kernel eventfd and on a uepoll one with the same
// expectations (fs/eventfd.c behaviour, Linux 6.18).
#include "unit/unit_common.h"

#include <uepoll/testing.h>  // fail_alloc_after, uep_debug_*; includes tuning.h

#include <climits>
#include <cstring>
#include <fcntl.h>
#include <sys/eventfd.h>

namespace {

using unit::err_of;
using unit::mask;

class Eventfd : public unit::ObjTest {
 protected:
  long wr(int fd, uint64_t v) { return api().write(fd, &v, sizeof v); }
  long rd(int fd, uint64_t* v) { return api().read(fd, v, sizeof *v); }
};
UNIT_INSTANTIATE(Eventfd);

TEST_P(Eventfd, CreateFlags) {
  EXPECT_EQ(api().eventfd(0, 0x2), -1);  // not an EFD_* flag
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(api().eventfd(0, O_DIRECT), -1);
  EXPECT_EQ(errno, EINVAL);
  for (int flags : {0, int{EFD_SEMAPHORE}, int{EFD_NONBLOCK}, int{EFD_CLOEXEC}, EFD_SEMAPHORE | EFD_NONBLOCK | EFD_CLOEXEC}) {
    int fd = api().eventfd(3, flags);
    ASSERT_GE(fd, 0) << flags;
    EXPECT_EQ(mask(api(), fd), static_cast<uint32_t>(POLLIN | POLLOUT));
    api().close(fd);
  }
}

TEST_P(Eventfd, CounterAndSizes) {
  int fd = api().eventfd(0, EFD_NONBLOCK);
  ASSERT_GE(fd, 0);
  uint64_t v = 0;
  EXPECT_EQ(mask(api(), fd), static_cast<uint32_t>(POLLOUT));
  EXPECT_EQ(rd(fd, &v), -1);
  EXPECT_EQ(errno, EAGAIN);
  EXPECT_EQ(wr(fd, 3), 8);
  EXPECT_EQ(wr(fd, 4), 8);
  EXPECT_EQ(wr(fd, 0), 8);  // a zero write succeeds
  EXPECT_EQ(rd(fd, &v), 8);
  EXPECT_EQ(v, 7u);
  // Reads need at least 8 bytes, writes exactly 8 (Linux 6.18).
  char big[16] = {};
  EXPECT_EQ(api().read(fd, big, 7), -1);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(api().write(fd, big, 7), -1);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(api().write(fd, big, 16), -1);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(api().write(fd, big, 0), -1);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(wr(fd, 9), 8);
  EXPECT_EQ(api().read(fd, big, 16), 8);
  std::memcpy(&v, big, 8);
  EXPECT_EQ(v, 9u);
  EXPECT_EQ(wr(fd, ULLONG_MAX), -1);
  EXPECT_EQ(errno, EINVAL);
  api().close(fd);
}

TEST_P(Eventfd, Semaphore) {
  int fd = api().eventfd(2, EFD_SEMAPHORE | EFD_NONBLOCK);
  ASSERT_GE(fd, 0);
  uint64_t v = 0;
  EXPECT_EQ(rd(fd, &v), 8);
  EXPECT_EQ(v, 1u);
  EXPECT_EQ(rd(fd, &v), 8);
  EXPECT_EQ(v, 1u);
  EXPECT_EQ(rd(fd, &v), -1);
  EXPECT_EQ(errno, EAGAIN);
  EXPECT_EQ(wr(fd, 5), 8);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(rd(fd, &v), 8);
    EXPECT_EQ(v, 1u);
  }
  EXPECT_EQ(rd(fd, &v), -1);
  api().close(fd);
}

TEST_P(Eventfd, OverflowBlocksWriters) {
  int fd = api().eventfd(0, EFD_NONBLOCK);
  ASSERT_GE(fd, 0);
  EXPECT_EQ(wr(fd, ULLONG_MAX - 1), 8);  // the largest count a write can reach
  EXPECT_EQ(mask(api(), fd), static_cast<uint32_t>(POLLIN));  // no POLLOUT at ULLONG_MAX - 1
  EXPECT_EQ(wr(fd, 1), -1);
  EXPECT_EQ(errno, EAGAIN);
  EXPECT_EQ(wr(fd, 0), 8);  // 0 still fits
  uint64_t v = 0;
  EXPECT_EQ(rd(fd, &v), 8);
  EXPECT_EQ(v, ULLONG_MAX - 1);
  EXPECT_EQ(mask(api(), fd), static_cast<uint32_t>(POLLOUT));
  api().close(fd);
}

// Linux wakes on every successful write (EPOLLIN) and read (EPOLLOUT): with
// EPOLLET each one is a new edge even when readiness did not change.
TEST_P(Eventfd, EdgeTriggeredWakeups) {
  int fd = api().eventfd(0, EFD_NONBLOCK);
  ASSERT_GE(fd, 0);
  unit::Ep ep(api());
  ASSERT_EQ(ep.add(fd, EPOLLIN | EPOLLOUT | EPOLLET, 1), 0);
  auto e = ep.wait(0);
  ASSERT_EQ(e.size(), 1u);  // initial readiness (OUT)
  EXPECT_EQ(e[0].events, static_cast<uint32_t>(EPOLLOUT));
  EXPECT_EQ(ep.wait(0).size(), 0u);
  EXPECT_EQ(wr(fd, 1), 8);
  e = ep.wait(0);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].events, static_cast<uint32_t>(EPOLLIN | EPOLLOUT));
  EXPECT_EQ(wr(fd, 1), 8);  // already readable: still an edge
  EXPECT_EQ(ep.wait(0).size(), 1u);
  EXPECT_EQ(wr(fd, 0), 8);  // even a zero write
  EXPECT_EQ(ep.wait(0).size(), 1u);
  uint64_t v;
  EXPECT_EQ(rd(fd, &v), 8);  // the read wakes with EPOLLOUT
  e = ep.wait(0);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].events, static_cast<uint32_t>(EPOLLOUT));
  EXPECT_EQ(rd(fd, &v), -1);  // a failed read wakes nobody
  EXPECT_EQ(ep.wait(0).size(), 0u);
  // An EPOLLIN-only ET watcher ignores the read's EPOLLOUT wakeup.
  unit::Ep ep2(api());
  ASSERT_EQ(ep2.add(fd, EPOLLIN | EPOLLET, 2), 0);
  EXPECT_EQ(ep2.wait(0).size(), 0u);
  EXPECT_EQ(wr(fd, 2), 8);
  EXPECT_EQ(ep2.wait(0).size(), 1u);
  EXPECT_EQ(rd(fd, &v), 8);
  EXPECT_EQ(ep2.wait(0).size(), 0u);
  api().close(fd);
}

TEST_P(Eventfd, BlockingReadWokenByWriter) {
  int fd = api().eventfd(0, 0);
  ASSERT_GE(fd, 0);
  std::thread t([&] {
    unit::sleep_ms(50);
    uint64_t v = 5;
    api().write(fd, &v, 8);
  });
  const long long t0 = unit::now_ms();
  uint64_t v = 0;
  EXPECT_EQ(rd(fd, &v), 8);
  EXPECT_EQ(v, 5u);
  EXPECT_GE(unit::now_ms() - t0, 30);
  t.join();
  api().close(fd);
}

TEST_P(Eventfd, BlockingWriteWokenByReader) {
  int fd = api().eventfd(0, 0);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(wr(fd, ULLONG_MAX - 1), 8);
  std::thread t([&] {
    unit::sleep_ms(50);
    uint64_t v;
    api().read(fd, &v, 8);
  });
  const long long t0 = unit::now_ms();
  EXPECT_EQ(wr(fd, 7), 8);  // sleeps until the read empties the counter
  EXPECT_GE(unit::now_ms() - t0, 30);
  t.join();
  uint64_t v = 0;
  EXPECT_EQ(rd(fd, &v), 8);
  EXPECT_EQ(v, 7u);
  api().close(fd);
}

TEST_P(Eventfd, ManyThreadsCountExactly) {
  int fd = api().eventfd(0, EFD_NONBLOCK);
  ASSERT_GE(fd, 0);
  constexpr int kThreads = 4, kEach = 2000;
  std::vector<std::thread> ts;
  for (int i = 0; i < kThreads; ++i)
    ts.emplace_back([&] {
      for (int k = 0; k < kEach; ++k) wr(fd, 1);
    });
  uint64_t total = 0, v;
  for (auto& t : ts) t.join();
  while (rd(fd, &v) == 8) total += v;
  EXPECT_EQ(total, static_cast<uint64_t>(kThreads * kEach));
  api().close(fd);
}

// uepoll only: allocation failure leaves no descriptor behind.
TEST(EventfdUepoll, AllocationFailureIsEnomem) {
  ASSERT_EQ(uep_tuning_set("fail_alloc_after", 0), 0);
  int fd = uep_eventfd(0, 0);
  int e = errno;
  uep_tuning_set("fail_alloc_after", -1);
  EXPECT_EQ(fd, -1);
  EXPECT_EQ(e, ENOMEM);
  fd = uep_eventfd(0, 0);
  EXPECT_GE(fd, UEP_FD_BASE);
  uep_close(fd);
}

}  // namespace
