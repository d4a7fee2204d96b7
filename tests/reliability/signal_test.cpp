// signal_test.cpp - async-signal-safety of uep_write / uep_read / uep_close
// (issue 7 item 5; design in docs/design.md, "Signal handlers").
//
// A signal storm: a killer thread sends SIGUSR1 to worker threads as fast
// as it can while they run ctl, wait, read and write on the same objects;
// the handler writes an eventfd (E) and a pipe (P), and a second eventfd
// (W) that only a blocked waiter thread reads.  Checked:
//   * no deadlock: the storm ends and every thread joins within a bound (a
//     watchdog aborts the process otherwise);
//   * nothing lost: every successful write to E and P (handlers' and
//     workers') is read back exactly once (counts add up after a drain);
//   * no lost wakeup: the waiter, blocked in uep_epoll_wait on W, never
//     times out while W holds a count (each handler write wakes it).
// The handler interrupts its thread inside uepoll most of the time, which
// is what the test is about (the workers do nothing but uepoll calls).
#include <gtest/gtest.h>

#include <uepoll/uepoll.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fcntl.h>
#include <pthread.h>
#include <thread>
#include <vector>

#include "rel_common.h"

namespace {

int g_efd = -1;       // E: handlers and workers write, workers read
int g_wfd = -1;       // W: handlers write, the waiter reads
int g_pipe[2] = {-1, -1};
std::atomic<uint64_t> g_e_written{0};
std::atomic<uint64_t> g_w_written{0};
std::atomic<uint64_t> g_p_written{0};
std::atomic<uint64_t> g_handler_runs{0};

void on_signal(int) {
  const int saved = errno;
  const uint64_t one = 1;
  if (uep_write(g_efd, &one, sizeof one) == sizeof one) g_e_written.fetch_add(1, std::memory_order_relaxed);
  if (uep_write(g_wfd, &one, sizeof one) == sizeof one) g_w_written.fetch_add(1, std::memory_order_relaxed);
  const char c = 'x';
  if (uep_write(g_pipe[1], &c, 1) == 1) g_p_written.fetch_add(1, std::memory_order_relaxed);
  g_handler_runs.fetch_add(1, std::memory_order_relaxed);
  errno = saved;
}

// Aborts the process if the test body does not finish in time (a deadlock
// would otherwise hang until ctest's timeout, without saying where).
class Watchdog {
 public:
  explicit Watchdog(int seconds) : t_([this, seconds] {
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
    while (!done_.load()) {
      if (std::chrono::steady_clock::now() > end) {
        std::fprintf(stderr, "signal_test: deadlock (watchdog fired)\n");
        std::abort();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }) {}
  ~Watchdog() {
    done_.store(true);
    t_.join();
  }

 private:
  std::atomic<bool> done_{false};
  std::thread t_;
};

uint64_t drain_eventfd(int fd) {
  uint64_t v = 0;
  return uep_read(fd, &v, sizeof v) == sizeof v ? v : 0;
}

uint64_t drain_pipe(int fd) {
  char buf[4096];
  uint64_t n = 0;
  for (;;) {
    const ssize_t r = uep_read(fd, buf, sizeof buf);
    if (r <= 0) return n;
    n += static_cast<uint64_t>(r);
  }
}

TEST(SignalSafety, StormWritingEventfdAndPipeFromHandlers) {
  Watchdog dog(90);
  g_efd = uep_eventfd(0, EFD_NONBLOCK);
  g_wfd = uep_eventfd(0, EFD_NONBLOCK);
  ASSERT_GE(g_efd, 0);
  ASSERT_GE(g_wfd, 0);
  ASSERT_EQ(uep_pipe2(g_pipe, O_NONBLOCK), 0);
  const int ep = uep_epoll_create1(0);
  const int wep = uep_epoll_create1(0);
  ASSERT_GE(ep, 0);
  ASSERT_GE(wep, 0);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ASSERT_EQ(uep_epoll_ctl(wep, EPOLL_CTL_ADD, g_wfd, &ev), 0);
  ASSERT_EQ(uep_epoll_ctl(ep, EPOLL_CTL_ADD, g_pipe[0], &ev), 0);

  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  struct sigaction old {};
  ASSERT_EQ(sigaction(SIGUSR1, &sa, &old), 0);

  std::atomic<bool> stop{false};
  std::atomic<uint64_t> e_read{0}, p_read{0}, lost_wakeups{0}, w_read{0};
  std::atomic<int> ready{0};

  // Every worker makes one call first: a thread's first uepoll call sets up
  // per-thread state (documented as a precondition of handler use).
  constexpr int kWorkers = 4;
  std::vector<pthread_t> ids(kWorkers);
  std::vector<std::thread> workers;
  for (int w = 0; w < kWorkers; ++w) {
    workers.emplace_back([&, w] {
      ids[w] = pthread_self();
      epoll_event out[8];
      (void)uep_epoll_wait(ep, out, 8, 0);
      ready.fetch_add(1);
      const uint64_t one = 1;
      char buf[256];
      for (unsigned i = 0; !stop.load(std::memory_order_relaxed); ++i) {
        epoll_event e{};
        e.events = EPOLLIN | (i & 1 ? static_cast<uint32_t>(EPOLLET) : 0u);
        // ctl on the shared eventfd (ADD/MOD/DEL race between workers).
        switch (i % 3) {
          case 0: (void)uep_epoll_ctl(ep, EPOLL_CTL_ADD, g_efd, &e); break;
          case 1: (void)uep_epoll_ctl(ep, EPOLL_CTL_MOD, g_efd, &e); break;
          case 2: (void)uep_epoll_ctl(ep, EPOLL_CTL_DEL, g_efd, nullptr); break;
        }
        (void)uep_epoll_wait(ep, out, 8, 0);
        if (uep_write(g_efd, &one, sizeof one) == sizeof one) g_e_written.fetch_add(1);
        e_read.fetch_add(drain_eventfd(g_efd));
        if (i % 4 == 0 && uep_write(g_pipe[1], "ab", 2) == 2) g_p_written.fetch_add(2);
        const ssize_t r = uep_read(g_pipe[0], buf, sizeof buf);
        if (r > 0) p_read.fetch_add(static_cast<uint64_t>(r));
      }
    });
  }
  // The waiter: blocked in epoll_wait on W; a timeout while W holds a count
  // is a lost wakeup (handlers write W every few microseconds).
  std::thread waiter([&] {
    epoll_event out[1];
    (void)uep_epoll_wait(wep, out, 1, 0);
    while (!stop.load()) {
      const int n = uep_epoll_wait(wep, out, 1, 3000);
      const uint64_t v = drain_eventfd(g_wfd);
      w_read.fetch_add(v);
      if (n == 0 && v != 0 && !stop.load()) lost_wakeups.fetch_add(1);
    }
  });
  while (ready.load() < kWorkers) std::this_thread::yield();

  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(uepoll_test::rel::scaled(1500, 500));
  uint64_t sent = 0;
  while (std::chrono::steady_clock::now() < end) {
    for (int w = 0; w < kWorkers; ++w) {
      pthread_kill(ids[w], SIGUSR1);
      ++sent;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
  stop.store(true);
  for (auto& t : workers) t.join();
  // Wake the waiter for its last round (its own write, counted as such).
  const uint64_t one = 1;
  ASSERT_EQ(uep_write(g_wfd, &one, sizeof one), 8);
  g_w_written.fetch_add(1);
  waiter.join();
  ASSERT_EQ(sigaction(SIGUSR1, &old, nullptr), 0);

  // Counts add up: everything written was read exactly once.
  e_read.fetch_add(drain_eventfd(g_efd));
  p_read.fetch_add(drain_pipe(g_pipe[0]));
  w_read.fetch_add(drain_eventfd(g_wfd));
  EXPECT_GT(g_handler_runs.load(), 100u) << "the storm did not reach the workers (" << sent << " sent)";
  EXPECT_EQ(g_e_written.load(), e_read.load());
  EXPECT_EQ(g_p_written.load(), p_read.load());
  EXPECT_EQ(g_w_written.load(), w_read.load());
  EXPECT_EQ(lost_wakeups.load(), 0u);

  uep_close(ep);
  uep_close(wep);
  uep_close(g_efd);
  uep_close(g_wfd);
  uep_close(g_pipe[0]);
  uep_close(g_pipe[1]);
}

}  // namespace
