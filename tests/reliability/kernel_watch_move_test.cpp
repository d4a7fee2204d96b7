// kernel_watch_move_test.cpp - an instance's kernel-side epoll, its
// doorbell and its hub (epoll/kernel_watch.h) moved by own_vacate
// (core/own_slot.h),
// again and again, while threads sleep on the instance (blocking, so a
// lost wakeup would leave an event unconsumed), change its registrations
// and poll it, with both kernel and user-space events arriving: every
// event is consumed, and nothing reaches the file installed at an old
// number.
#include "core/own_fds.h"
#include "core/own_slot.h"

#include <uepoll/uepoll.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fcntl.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

std::vector<int> own_numbers() {
  std::vector<int> v;
  for (int n = uepoll::core::next_own(0); n >= 0; n = uepoll::core::next_own(n + 1)) v.push_back(n);
  return v;
}

std::vector<int> added(const std::vector<int>& before) {
  std::vector<int> v;
  for (int n : own_numbers())
    if (std::find(before.begin(), before.end(), n) == before.end()) v.push_back(n);
  return v;
}

// nested: the instance sits in an outer one, on which the sleepers wait,
// so that both have hubs (moved too).
void moves_under_sleepers(bool nested) {
  const std::vector<int> before = own_numbers();
  const int ep = uep_epoll_create1(0);
  ASSERT_GE(ep, 0);
  const int outer = nested ? uep_epoll_create1(0) : ep;
  ASSERT_GE(outer, 0);
  const int kfd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);  // the kernel's
  const int ufd = uep_eventfd(0, EFD_NONBLOCK);                // uepoll's
  ASSERT_GE(kfd, 0);
  ASSERT_GE(ufd, 0);
  struct epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = kfd;
  ASSERT_EQ(uep_epoll_ctl(ep, EPOLL_CTL_ADD, kfd, &ev), 0);
  ev.data.fd = ufd;
  ASSERT_EQ(uep_epoll_ctl(ep, EPOLL_CTL_ADD, ufd, &ev), 0);
  if (nested) {
    ev.data.fd = ep;
    ASSERT_EQ(uep_epoll_ctl(outer, EPOLL_CTL_ADD, ep, &ev), 0);
  }
  // The instance's kernel side: its shadow epoll, and its doorbell unless
  // that came from the pool of waiters (a repeated run).
  ASSERT_GE(added(before).size(), 1u);

  int marker[2];
  ASSERT_EQ(::pipe2(marker, O_CLOEXEC | O_NONBLOCK), 0);
  std::atomic<bool> stop{false};
  std::atomic<long> kwrites{0}, uwrites{0}, kread{0}, uread{0}, bad{0}, polls{0};
  std::atomic<int> sleepers_left{2};
  std::vector<std::thread> ts;
  for (int i = 0; i < 2; ++i) {
    ts.emplace_back([&] {  // blocking sleepers: a lost wakeup leaves an event behind
      while (!stop.load()) {
        struct epoll_event got[2];
        int n = uep_epoll_wait(outer, got, 2, -1);
        if (n < 0 && errno != EINTR) ++bad;
        if (nested && n > 0) {
          if (got[0].data.fd != ep) ++bad;
          n = uep_epoll_wait(ep, got, 2, 0);  // what woke the outer one
          if (n < 0) ++bad;
        }
        for (int k = 0; k < n; ++k) {
          uint64_t v = 0;
          if (got[k].data.fd == kfd) {
            if (::read(kfd, &v, sizeof v) == sizeof v) kread += static_cast<long>(v);
          } else if (got[k].data.fd == ufd) {
            if (uep_read(ufd, &v, sizeof v) == sizeof v) uread += static_cast<long>(v);
          } else {
            ++bad;
          }
        }
      }
      --sleepers_left;
    });
  }
  ts.emplace_back([&] {  // writers of both kinds
    for (long i = 0; !stop.load(); ++i) {
      const uint64_t one = 1;
      if (i % 2 ? ::write(kfd, &one, sizeof one) == sizeof one : uep_write(ufd, &one, sizeof one) == sizeof one)
        ++(i % 2 ? kwrites : uwrites);
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  });
  ts.emplace_back([&] {  // ctl on the shadow, and polls of the instance
    while (!stop.load()) {
      struct epoll_event m{};
      m.events = EPOLLIN;
      m.data.fd = kfd;
      if (uep_epoll_ctl(ep, EPOLL_CTL_MOD, kfd, &m) != 0) ++bad;
      struct pollfd p{outer, POLLIN, 0};
      if (uep_poll(&p, 1, 1) < 0 || (p.revents & POLLNVAL)) ++bad;
      ++polls;
    }
  });

  int moves = 0;
  for (int round = 0; round < 300; ++round) {
    for (const long p = polls.load(); polls.load() < p + 2;) std::this_thread::yield();
    std::vector<int> taken;
    for (int n : added(before)) {
      if (uepoll::core::own_vacate(n) != 0) continue;
      ++moves;
      ASSERT_FALSE(uepoll::core::is_own(n));
      ASSERT_EQ(::dup2(marker[1], n), n);  // the program's file at the old number
      taken.push_back(n);
    }
    for (int n : taken) ::close(n);
  }
  EXPECT_GE(moves, 600);  // at least the shadow and the doorbell, each round
  std::fprintf(stderr, "moves %d kw %ld uw %ld polls %ld\n", moves, kwrites.load(), uwrites.load(), polls.load());
  // Every event written is consumed.
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  stop = true;
  ts[2].join();
  ts[3].join();
  while ((kread.load() != kwrites.load() || uread.load() != uwrites.load()) &&
         std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(kread.load(), kwrites.load());
  EXPECT_EQ(uread.load(), uwrites.load());
  // Wake the sleepers until both have seen stop (one event wakes one).
  while (sleepers_left.load() > 0) {
    const uint64_t one = 1;
    ASSERT_EQ(::write(kfd, &one, sizeof one), static_cast<ssize_t>(sizeof one));
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ts[0].join();
  ts[1].join();
  EXPECT_EQ(bad.load(), 0);
  char c;
  EXPECT_EQ(::read(marker[0], &c, 1), -1);  // nothing ever wrote to the program's file
  EXPECT_EQ(errno, EAGAIN);
  uep_close(ufd);
  if (nested) uep_close(outer);
  uep_close(ep);
  ::close(kfd);
  ::close(marker[0]);
  ::close(marker[1]);
}

TEST(KernelWatchMove, ShadowAndDoorbellMoveUnderSleepers) { moves_under_sleepers(false); }

TEST(KernelWatchMove, HubsMoveUnderSleepersOfTheOuterInstance) { moves_under_sleepers(true); }

}  // namespace
