// contract_test.cpp - the contract of uep_file_open / uep_file_wake /
// uep_file_unref as uepoll.h states it: argument errors, the read/write
// error convention, release exactly once (descriptors, dups, handles and
// calls in progress), wakes from inside callbacks and after the close,
// callbacks free to call uepoll (no uepoll lock held), EXCLUSIVE with
// blocked waiters counted against a built-in eventfd, and wake racing
// close under threads.
#include "support/user_objects.h"

#include <gtest/gtest.h>
#include <uepoll/uepoll.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <fcntl.h>
#include <functional>
#include <thread>
#include <vector>

namespace {

// A user file whose readiness is an atomic mask, counting every callback.
struct Probe {
  std::atomic<uint32_t> ready{0};
  std::atomic<int> polls{0}, releases{0};
  std::atomic<bool> released{false};
  std::atomic<bool> poll_after_release{false};
  std::function<void()> in_poll;     // called inside poll (optional)
  std::function<void()> in_release;  // called inside release (optional)
  std::atomic<ssize_t> read_result{0};
  std::atomic<int> read_errno{0};
  uep_file* handle = nullptr;

  static uint32_t poll(void* c) {
    auto* p = static_cast<Probe*>(c);
    if (p->released.load()) p->poll_after_release = true;
    p->polls++;
    if (p->in_poll) p->in_poll();
    return p->ready.load();
  }
  static ssize_t read(void* c, void*, size_t) {
    auto* p = static_cast<Probe*>(c);
    errno = p->read_errno;
    return p->read_result;
  }
  static void release(void* c) {
    auto* p = static_cast<Probe*>(c);
    p->released = true;
    p->releases++;
    if (p->in_release) p->in_release();
  }
  static constexpr uep_file_ops kOps = {&poll, &read, nullptr, &release};

  int open(int flags = O_NONBLOCK) { return uep_file_open(&kOps, this, flags, &handle); }
};

epoll_event ev_of(uint32_t events, uint64_t data) {
  epoll_event e{};
  e.events = events;
  e.data.u64 = data;
  return e;
}

int wait0(int ep, epoll_event* out = nullptr) {
  epoll_event tmp[8];
  return uep_epoll_wait(ep, out ? out : tmp, 8, 0);
}

// Opens p (non-blocking) and watches it from a new instance: {fd, ep}.
std::pair<int, int> open_watched(Probe& p, uint32_t events, uint64_t data) {
  const int fd = p.open();
  const int ep = uep_epoll_create1(0);
  epoll_event ev = ev_of(events, data);
  EXPECT_EQ(uep_epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev), 0);
  return {fd, ep};
}

TEST(UserFileApi, BadArguments) {
  Probe p;
  uep_file* h = reinterpret_cast<uep_file*>(0x1);
  const int before = uep_is_uepoll_fd(UEP_FD_BASE);
  errno = 0;
  EXPECT_EQ(uep_file_open(&Probe::kOps, &p, O_RDWR, &h), -1);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(uep_file_open(&Probe::kOps, &p, O_DIRECT, &h), -1);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(uep_file_open(nullptr, &p, 0, &h), -1);
  EXPECT_EQ(errno, EFAULT);
  EXPECT_EQ(uep_file_open(&Probe::kOps, &p, 0, nullptr), -1);
  EXPECT_EQ(errno, EFAULT);
  // Flags are checked first.
  EXPECT_EQ(uep_file_open(nullptr, &p, 0x4000000, nullptr), -1);
  EXPECT_EQ(errno, EINVAL);
  uep_file_ops no_poll = Probe::kOps;
  no_poll.poll = nullptr;
  EXPECT_EQ(uep_file_open(&no_poll, &p, 0, &h), -1);
  EXPECT_EQ(errno, EINVAL);
  // Nothing was called, nothing was created, the handle is untouched.
  EXPECT_EQ(p.polls.load(), 0);
  EXPECT_EQ(p.releases.load(), 0);
  EXPECT_EQ(h, reinterpret_cast<uep_file*>(0x1));
  EXPECT_EQ(uep_is_uepoll_fd(UEP_FD_BASE), before);
  uep_file_wake(nullptr, EPOLLIN);  // ignored
  uep_file_unref(nullptr);          // ignored
}

TEST(UserFileApi, MissingCallbacksAndErrorConvention) {
  Probe p;
  int fd = p.open();
  ASSERT_GE(fd, UEP_FD_BASE);
  EXPECT_EQ(uep_is_uepoll_fd(fd), 1);
  EXPECT_EQ(p.polls.load(), 1);  // once at open
  char buf[16];
  errno = 0;
  EXPECT_EQ(uep_write(fd, buf, 1), -1);  // no write callback
  EXPECT_EQ(errno, EINVAL);
  p.read_result = -1;
  p.read_errno = ECONNRESET;
  EXPECT_EQ(uep_read(fd, buf, sizeof buf), -1);
  EXPECT_EQ(errno, ECONNRESET);
  p.read_errno = 0;  // -1 without errno: EIO
  EXPECT_EQ(uep_read(fd, buf, sizeof buf), -1);
  EXPECT_EQ(errno, EIO);
  p.read_result = 17;  // more than asked for: EIO
  EXPECT_EQ(uep_read(fd, buf, 16), -1);
  EXPECT_EQ(errno, EIO);
  p.read_result = 5;
  EXPECT_EQ(uep_read(fd, buf, 16), 5);
  EXPECT_EQ(uep_read(fd, reinterpret_cast<void*>(0xffff888000000000ULL), 16), -1);  // not user memory
  EXPECT_EQ(errno, EFAULT);
  EXPECT_GE(p.polls.load(), 5);  // a refresh after every call that reached the callback
  EXPECT_EQ(uep_close(fd), 0);
  EXPECT_EQ(p.releases.load(), 1);
  uep_file_unref(p.handle);
}

// release runs once, when the last descriptor is gone, whatever the order
// of closes and the handle's unref.
TEST(UserFileApi, ReleaseExactlyOnce) {
  {  // unref first, then the descriptors
    Probe p;
    int fd = p.open();
    int d = uep_dup(fd);
    uep_file_unref(p.handle);
    EXPECT_EQ(p.releases.load(), 0);
    uep_close(fd);
    EXPECT_EQ(p.releases.load(), 0);
    uep_close(d);
    EXPECT_EQ(p.releases.load(), 1);
  }
  {  // descriptors first; the handle outlives the file, its wakes do nothing
    Probe p;
    int fd = p.open();
    uep_close(fd);
    EXPECT_EQ(p.releases.load(), 1);
    const int polls = p.polls.load();
    uep_file_wake(p.handle, EPOLLIN);
    uep_file_wake(p.handle, 0);
    EXPECT_EQ(p.polls.load(), polls);
    EXPECT_FALSE(p.poll_after_release.load());
    uep_file_unref(p.handle);
    EXPECT_EQ(p.releases.load(), 1);
  }
  {  // unref from inside release
    Probe p;
    p.in_release = [&] { uep_file_unref(p.handle); };
    int fd = p.open();
    uep_close(fd);
    EXPECT_EQ(p.releases.load(), 1);
  }
}

// Closing a watched user file removes it from every instance before
// release runs (Linux: eventpoll_release() in __fput, then ->release).
TEST(UserFileApi, CloseRemovesRegistrationsBeforeRelease) {
  Probe p;
  int fd = p.open();
  int e1 = uep_epoll_create1(0), e2 = uep_epoll_create1(0);
  epoll_event ev = ev_of(EPOLLIN, 1);
  ASSERT_EQ(uep_epoll_ctl(e1, EPOLL_CTL_ADD, fd, &ev), 0);
  ASSERT_EQ(uep_epoll_ctl(e2, EPOLL_CTL_ADD, fd, &ev), 0);
  p.ready = EPOLLIN;
  uep_file_wake(p.handle, EPOLLIN);
  EXPECT_EQ(wait0(e1), 1);
  int seen_in_release = -1;
  p.in_release = [&] { seen_in_release = wait0(e1) + wait0(e2); };
  uep_close(fd);
  EXPECT_EQ(seen_in_release, 0);
  EXPECT_EQ(wait0(e1), 0);
  uep_file_unref(p.handle);
  uep_close(e1);
  uep_close(e2);
}

// Callbacks run with no uepoll lock held: poll may wait on the very
// instance that watches the file, release may use it too.  (Were poll
// called under the instance's scan mutex, this would deadlock.)
TEST(UserFileApi, CallbacksMayCallUepoll) {
  Probe p;
  const auto fe = open_watched(p, EPOLLIN | EPOLLET, 9);
  const int fd = fe.first, ep = fe.second;
  std::atomic<int> inner{-2};
  p.in_poll = [&] { inner = wait0(ep); };
  p.ready = EPOLLIN;
  uep_file_wake(p.handle, EPOLLIN);
  EXPECT_EQ(inner.load(), 0);  // polled before the wakeup
  p.in_poll = nullptr;
  epoll_event out[8];
  ASSERT_EQ(wait0(ep, out), 1);
  EXPECT_EQ(out[0].data.u64, 9u);
  int ctl_in_release = -2;
  p.in_release = [&] {
    epoll_event e2 = ev_of(EPOLLIN, 0);
    int efd = uep_eventfd(0, 0);
    ctl_in_release = uep_epoll_ctl(ep, EPOLL_CTL_ADD, efd, &e2);
    uep_close(efd);
  };
  uep_close(fd);
  EXPECT_EQ(ctl_in_release, 0);
  uep_file_unref(p.handle);
  uep_close(ep);
}

// A wake of the file from inside its own poll does not recurse; it is
// delivered once that poll has returned (an edge for an ET item).
TEST(UserFileApi, WakeFromInsideOwnPoll) {
  Probe p;
  const auto fe = open_watched(p, EPOLLIN | EPOLLET, 4);
  const int fd = fe.first, ep = fe.second;
  EXPECT_EQ(wait0(ep), 0);
  std::atomic<int> depth{0}, max_depth{0};
  p.in_poll = [&] {
    int d = ++depth;
    if (d > max_depth) max_depth = d;
    p.ready = EPOLLIN;
    if (d == 1) uep_file_wake(p.handle, EPOLLIN);
    --depth;
  };
  char b[1];
  p.read_result = 0;
  EXPECT_EQ(uep_read(fd, b, 1), 0);  // the refresh after read runs poll
  EXPECT_EQ(max_depth.load(), 1);
  EXPECT_EQ(wait0(ep), 1);
  p.in_poll = nullptr;
  uep_close(fd);
  uep_close(ep);
  uep_file_unref(p.handle);
}

// Readiness that goes away is announced by a wake too: level-triggered
// items then stop reporting it.
TEST(UserFileApi, ReadinessLossThroughWake) {
  Probe p;
  const auto fe = open_watched(p, EPOLLIN, 1);
  const int fd = fe.first, ep = fe.second;
  p.ready = EPOLLIN;
  uep_file_wake(p.handle, EPOLLIN);
  EXPECT_EQ(wait0(ep), 1);
  EXPECT_EQ(wait0(ep), 1);
  p.ready = 0;
  uep_file_wake(p.handle, EPOLLIN);
  EXPECT_EQ(wait0(ep), 0);
  pollfd pf{fd, POLLIN, 0};
  EXPECT_EQ(uep_poll(&pf, 1, 0), 0);
  uep_close(fd);
  uep_close(ep);
  uep_file_unref(p.handle);
}

// K threads blocked in epoll_wait on K instances with EPOLLEXCLUSIVE items
// on one file: one write wakes exactly as many of them for a user eventfd
// as for the built-in one.
int exclusive_wakeups(int (*make)(unsigned, int)) {
  constexpr int kWaiters = 3;
  const int efd = make(0, EFD_NONBLOCK);
  std::vector<int> eps;
  for (int i = 0; i < kWaiters; ++i) {
    eps.push_back(uep_epoll_create1(0));
    epoll_event ev = ev_of(EPOLLIN | EPOLLEXCLUSIVE, 1);
    uep_epoll_ctl(eps.back(), EPOLL_CTL_ADD, efd, &ev);
  }
  std::atomic<int> woke{0};
  std::vector<std::thread> ts;
  for (int ep : eps)
    ts.emplace_back([&, ep] {
      epoll_event out[4];
      if (uep_epoll_wait(ep, out, 4, 400) > 0) woke++;
    });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  uint64_t one = 1;
  uep_write(efd, &one, 8);
  for (auto& t : ts) t.join();
  for (int ep : eps) uep_close(ep);
  uep_close(efd);
  return woke.load();
}

TEST(UserFileApi, ExclusiveBlockedWaitersMatchBuiltin) {
  const int builtin = exclusive_wakeups(&uep_eventfd);
  const int user = exclusive_wakeups(&uepoll_test::UserEventFd::create);
  EXPECT_EQ(builtin, 1);
  EXPECT_EQ(user, builtin);
}

// A blocking read sleeps through EAGAIN until a wake and ends with EINTR
// when a signal handler runs.
TEST(UserFileApi, BlockingReadInterruptedBySignal) {
  struct sigaction sa {}, old {};
  sa.sa_handler = [](int) {};
  sigaction(SIGUSR1, &sa, &old);
  Probe p;
  p.read_result = -1;
  p.read_errno = EAGAIN;
  int fd = p.open(0);
  std::atomic<long> r{0};
  std::atomic<int> err{0};
  pthread_t self_id{};
  std::atomic<bool> started{false};
  std::thread reader([&] {
    self_id = pthread_self();
    started = true;
    char b[4];
    r = uep_read(fd, b, 4);
    err = errno;
  });
  while (!started) std::this_thread::yield();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  uep_file_wake(p.handle, EPOLLOUT);  // not a read key: keeps sleeping
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(r.load(), 0);
  pthread_kill(self_id, SIGUSR1);
  reader.join();
  EXPECT_EQ(r.load(), -1);
  EXPECT_EQ(err.load(), EINTR);
  sigaction(SIGUSR1, &old, nullptr);
  uep_close(fd);
  uep_file_unref(p.handle);
}

// A read blocked on the file keeps it open after its last descriptor is
// closed (as Linux's file reference does); release runs when it returns.
TEST(UserFileApi, ReleaseWaitsForBlockedReader) {
  Probe p;
  std::atomic<ssize_t> result{-1};
  p.read_result = -1;
  p.read_errno = EAGAIN;
  int fd = p.open(0);
  std::atomic<bool> started{false};
  std::thread reader([&] {
    started = true;
    char b[8];
    ssize_t r = uep_read(fd, b, sizeof b);
    result = r;
  });
  while (!started) std::this_thread::yield();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(uep_close(fd), 0);
  EXPECT_EQ(p.releases.load(), 0);  // the blocked read still holds the file
  p.read_result = 3;  // (the reader only reads it after the wake below)
  uep_file_wake(p.handle, EPOLLIN);
  reader.join();
  EXPECT_EQ(result.load(), 3);
  EXPECT_EQ(p.releases.load(), 1);
  uep_file_unref(p.handle);
}

// Wakers, a waiter and a closer race: release runs exactly once per file,
// never while (or before) a poll runs, and no callback follows it.
TEST(UserFileApi, WakeRacesCloseTorture) {
  constexpr int kRounds = 200;
  for (int round = 0; round < kRounds; ++round) {
    Probe p;
    int fd = p.open();
    int d = uep_dup(fd);
    int ep = uep_epoll_create1(0);
    epoll_event ev = ev_of(EPOLLIN | EPOLLET, 1);
    uep_epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
    std::atomic<bool> stop{false};
    std::vector<std::thread> ts;
    for (int w = 0; w < 2; ++w)
      ts.emplace_back([&] {
        uint32_t m = 0;
        while (!stop.load(std::memory_order_relaxed)) {
          p.ready = (m ^= EPOLLIN);
          uep_file_wake(p.handle, EPOLLIN);
        }
      });
    ts.emplace_back([&] {
      epoll_event out[4];
      for (int i = 0; i < 20; ++i) uep_epoll_wait(ep, out, 4, 1);
    });
    ts.emplace_back([&] {
      std::this_thread::sleep_for(std::chrono::microseconds(50 * (round % 7)));
      uep_close(fd);
      uep_close(d);
    });
    ts[3].join();
    ts[2].join();
    stop = true;
    ts[0].join();
    ts[1].join();
    EXPECT_EQ(p.releases.load(), 1);
    EXPECT_FALSE(p.poll_after_release.load());
    uep_file_unref(p.handle);
    uep_close(ep);
  }
}

// Many writers and readers on one user eventfd: nothing is lost.
TEST(UserFileApi, ConcurrentCounterConserved) {
  const int efd = uepoll_test::UserEventFd::create(0, EFD_NONBLOCK);
  ASSERT_GE(efd, 0);
  constexpr int kWriters = 3, kPerWriter = 2000;
  std::atomic<uint64_t> got{0};
  std::atomic<int> writers_done{0};
  std::vector<std::thread> ts;
  for (int i = 0; i < kWriters; ++i)
    ts.emplace_back([&] {
      uint64_t one = 1;
      for (int k = 0; k < kPerWriter; ++k) uep_write(efd, &one, 8);
      writers_done++;
    });
  for (int i = 0; i < 2; ++i)
    ts.emplace_back([&] {
      const int ep = uep_epoll_create1(0);
      epoll_event ev = ev_of(EPOLLIN | EPOLLET, 0);
      uep_epoll_ctl(ep, EPOLL_CTL_ADD, efd, &ev);
      for (;;) {
        uint64_t v = 0;
        if (uep_read(efd, &v, 8) == 8) {
          got += v;
          continue;
        }
        if (writers_done == kWriters && got == uint64_t{kWriters} * kPerWriter) break;
        epoll_event out[2];
        uep_epoll_wait(ep, out, 2, 5);
      }
      uep_close(ep);
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(got.load(), uint64_t{kWriters} * kPerWriter);
  uep_close(efd);
}

}  // namespace
