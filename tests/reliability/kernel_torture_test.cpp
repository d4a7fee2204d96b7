// kernel_torture_test.cpp - kernel descriptors inside uepoll instances under
// concurrency (owned by the kernel-descriptor work): kernel eventfds closed
// while registered and while threads are blocked in uep_epoll_wait on their
// instance, ADD/DEL/MOD churn, nested instances gaining and losing kernel
// descriptors, an instance's kernel fd polled by the kernel meanwhile.
// Invariants checked as we go:
//   * every call returns success or an errno that race allows (ENOENT,
//     EEXIST after a concurrent DEL/ADD or an auto-removal at close);
//   * every reported event carries data that was registered (slot and
//     generation in range) and a mask within the interest (+ERR|HUP);
//   * conservation on the stable descriptors: every count written to them
//     is read exactly once (no lost wakeup: blocked waiters see them);
//   * after teardown, waits report nothing.
// UEPOLL_TORTURE_SECONDS=N runs each scenario for N seconds (default ~1).
#include <uepoll/uepoll.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <poll.h>
#include <random>
#include <sys/eventfd.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

double seconds() {
  const char* s = std::getenv("UEPOLL_TORTURE_SECONDS");
  const double v = s ? std::atof(s) : 0;
  return v > 0 ? v : 1.0;
}

constexpr int kSlots = 16;       // churned kernel eventfds
constexpr int kStable = 4;       // never-closed kernel eventfds (conservation)
constexpr uint64_t kStableBase = 1ull << 40;

struct Slot {
  std::mutex mu;  // held while the descriptor is used or replaced
  int fd = -1;
  uint32_t gen = 0;
};

uint64_t tag(int slot, uint32_t gen) { return (static_cast<uint64_t>(slot) << 32) | gen; }

TEST(KernelTorture, ClosedWhileRegisteredAndWaitedOn) {
  const int ep = uep_epoll_create1(EPOLL_CLOEXEC);
  ASSERT_GE(ep, 0);
  Slot slots[kSlots];
  for (int i = 0; i < kSlots; ++i) {
    slots[i].fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    struct epoll_event ev{EPOLLIN | EPOLLET, {.u64 = tag(i, 0)}};
    ASSERT_EQ(uep_epoll_ctl(ep, EPOLL_CTL_ADD, slots[i].fd, &ev), 0);
  }
  int stable[kStable];
  for (int i = 0; i < kStable; ++i) {
    stable[i] = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    struct epoll_event ev{EPOLLIN | EPOLLET, {.u64 = kStableBase + i}};
    ASSERT_EQ(uep_epoll_ctl(ep, EPOLL_CTL_ADD, stable[i], &ev), 0);
  }
  // A user-space eventfd beside them.
  const int uefd = uep_eventfd(0, EFD_NONBLOCK);
  struct epoll_event uev{EPOLLIN | EPOLLET, {.u64 = kStableBase + kStable}};
  ASSERT_EQ(uep_epoll_ctl(ep, EPOLL_CTL_ADD, uefd, &uev), 0);

  std::atomic<bool> stop{false};
  std::atomic<uint64_t> written{0}, read_back{0}, bad{0}, events{0};
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds());

  auto drain_stable = [&](uint64_t data) {
    uint64_t v = 0;
    if (data == kStableBase + kStable) {
      while (uep_read(uefd, &v, 8) == 8) read_back += v;
    } else {
      while (::read(stable[data - kStableBase], &v, 8) == 8) read_back += v;
    }
  };
  std::vector<std::thread> th;
  for (int w = 0; w < 3; ++w) {  // blocked waiters
    th.emplace_back([&] {
      struct epoll_event evs[8];
      while (!stop.load()) {
        const int n = uep_epoll_wait(ep, evs, 8, 50);
        if (n < 0 && errno != EINTR) ++bad;
        for (int i = 0; i < n; ++i) {
          ++events;
          const uint64_t d = evs[i].data.u64;
          if (evs[i].events & ~(EPOLLIN | EPOLLERR | EPOLLHUP)) ++bad;
          if (d >= kStableBase) {
            if (d > kStableBase + kStable) ++bad;
            drain_stable(d);
          } else if ((d >> 32) >= static_cast<uint64_t>(kSlots)) {
            ++bad;
          }
        }
      }
    });
  }
  for (int p = 0; p < 2; ++p) {  // producers
    th.emplace_back([&, p] {
      std::mt19937 rng(p);
      while (!stop.load()) {
        const uint64_t one = 1;
        Slot& s = slots[rng() % kSlots];
        {
          std::lock_guard<std::mutex> g(s.mu);
          if (::write(s.fd, &one, 8) != 8) ++bad;
        }
        const int k = static_cast<int>(rng() % (kStable + 1));
        const ssize_t r = k == kStable ? uep_write(uefd, &one, 8) : ::write(stable[k], &one, 8);
        if (r == 8) ++written;
        else ++bad;
      }
    });
  }
  th.emplace_back([&] {  // churn: close while registered, re-create, DEL/ADD/MOD
    std::mt19937 rng(99);
    while (!stop.load()) {
      Slot& s = slots[rng() % kSlots];
      const int i = static_cast<int>(&s - slots);
      std::lock_guard<std::mutex> g(s.mu);
      switch (rng() % 3) {
        case 0: {  // close while registered: the kernel removes it
          ::close(s.fd);
          s.fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
          struct epoll_event ev{EPOLLIN | EPOLLET, {.u64 = tag(i, ++s.gen)}};
          if (uep_epoll_ctl(ep, EPOLL_CTL_ADD, s.fd, &ev) != 0) ++bad;
          break;
        }
        case 1: {
          if (uep_epoll_ctl(ep, EPOLL_CTL_DEL, s.fd, nullptr) != 0) ++bad;
          struct epoll_event ev{EPOLLIN | EPOLLET, {.u64 = tag(i, ++s.gen)}};
          if (uep_epoll_ctl(ep, EPOLL_CTL_ADD, s.fd, &ev) != 0) ++bad;
          break;
        }
        default: {
          struct epoll_event ev{EPOLLIN | EPOLLONESHOT, {.u64 = tag(i, ++s.gen)}};
          if (uep_epoll_ctl(ep, EPOLL_CTL_MOD, s.fd, &ev) != 0) ++bad;
          uint64_t v;
          ssize_t n = ::read(s.fd, &v, 8);  // keep LT items from spinning
          (void)n;
        }
      }
    }
  });
  th.emplace_back([&] {  // the kernel watching the instance meanwhile
    const int kfd = uep_epoll_kernel_fd(ep);
    if (kfd < 0) ++bad;
    while (!stop.load()) {
      struct pollfd p = {kfd, POLLIN, 0};
      if (::poll(&p, 1, 5) < 0) ++bad;
    }
  });
  while (std::chrono::steady_clock::now() < end) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  // Quiesce the writers first, then let the waiters collect what is left.
  stop.store(true);
  for (auto& t : th) t.join();
  struct epoll_event evs[64];
  for (int n; (n = uep_epoll_wait(ep, evs, 64, 0)) > 0;)
    for (int i = 0; i < n; ++i)
      if (evs[i].data.u64 >= kStableBase) drain_stable(evs[i].data.u64);
  for (int i = 0; i < kStable; ++i) drain_stable(kStableBase + i);  // ET edges taken by a stopping waiter
  drain_stable(kStableBase + kStable);
  std::printf("  %llu events, %llu counts written to stable eventfds\n",
              static_cast<unsigned long long>(events.load()), static_cast<unsigned long long>(written.load()));
  EXPECT_EQ(bad.load(), 0u);
  EXPECT_GT(events.load(), 0u);
  EXPECT_EQ(written.load(), read_back.load()) << "counts written to the stable eventfds must all be read";
  for (Slot& s : slots) ::close(s.fd);
  for (int fd : stable) ::close(fd);
  uep_close(uefd);
  EXPECT_EQ(uep_epoll_wait(ep, evs, 64, 0), 0);  // everything auto-removed
  uep_close(ep);
}

// p -> c[i] (uepoll) -> kernel eventfds; children gain their first kernel
// descriptor after being nested, lose it by close, are closed and
// re-created while a thread is blocked on p.
TEST(KernelTorture, NestedChildrenChurn) {
  const int p = uep_epoll_create1(0);
  ASSERT_GE(p, 0);
  constexpr int kKids = 4;
  std::mutex mu[kKids];
  int kid[kKids], kfd[kKids];
  for (int i = 0; i < kKids; ++i) {
    kid[i] = uep_epoll_create1(0);
    kfd[i] = -1;
    struct epoll_event ev{EPOLLIN, {.u64 = static_cast<uint64_t>(i)}};
    ASSERT_EQ(uep_epoll_ctl(p, EPOLL_CTL_ADD, kid[i], &ev), 0);
  }
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> bad{0}, events{0};
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds());
  std::vector<std::thread> th;
  th.emplace_back([&] {
    struct epoll_event evs[8];
    while (!stop.load()) {
      const int n = uep_epoll_wait(p, evs, 8, 20);
      if (n < 0 && errno != EINTR) ++bad;
      for (int i = 0; i < n; ++i) {
        ++events;
        if (evs[i].data.u64 >= static_cast<uint64_t>(kKids) || evs[i].events != EPOLLIN) ++bad;
        const int k = static_cast<int>(evs[i].data.u64);
        std::lock_guard<std::mutex> g(mu[k]);
        struct epoll_event inner[8];
        const int m = uep_epoll_wait(kid[k], inner, 8, 0);  // consume below
        for (int j = 0; j < m; ++j) {
          uint64_t v;
          ssize_t r = ::read(kfd[k], &v, 8);
          (void)r;
        }
      }
    }
  });
  th.emplace_back([&] {
    std::mt19937 rng(7);
    while (!stop.load()) {
      const int k = static_cast<int>(rng() % kKids);
      std::lock_guard<std::mutex> g(mu[k]);
      switch (rng() % 4) {
        case 0:  // a kernel descriptor appears (maybe the child's first)
          if (kfd[k] < 0) {
            kfd[k] = ::eventfd(1, EFD_NONBLOCK | EFD_CLOEXEC);
            struct epoll_event ev{EPOLLIN, {.u64 = 5}};
            if (uep_epoll_ctl(kid[k], EPOLL_CTL_ADD, kfd[k], &ev) != 0) ++bad;
          }
          break;
        case 1:  // closed while registered
          if (kfd[k] >= 0) {
            ::close(kfd[k]);
            kfd[k] = -1;
          }
          break;
        case 2: {  // the child itself replaced
          uep_close(kid[k]);
          kid[k] = uep_epoll_create1(0);
          struct epoll_event ev{EPOLLIN, {.u64 = static_cast<uint64_t>(k)}};
          if (uep_epoll_ctl(p, EPOLL_CTL_ADD, kid[k], &ev) != 0) ++bad;
          if (kfd[k] >= 0) {
            struct epoll_event kev{EPOLLIN, {.u64 = 5}};
            if (uep_epoll_ctl(kid[k], EPOLL_CTL_ADD, kfd[k], &kev) != 0) ++bad;
          }
          break;
        }
        default:
          if (kfd[k] >= 0) {
            const uint64_t one = 1;
            if (::write(kfd[k], &one, 8) != 8) ++bad;
          }
      }
    }
  });
  while (std::chrono::steady_clock::now() < end) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  stop.store(true);
  for (auto& t : th) t.join();
  std::printf("  %llu events on the parent\n", static_cast<unsigned long long>(events.load()));
  EXPECT_EQ(bad.load(), 0u);
  EXPECT_GT(events.load(), 0u);
  for (int i = 0; i < kKids; ++i) {
    if (kfd[i] >= 0) ::close(kfd[i]);
    uep_close(kid[i]);
  }
  struct epoll_event evs[8];
  EXPECT_EQ(uep_epoll_wait(p, evs, 8, 0), 0);
  uep_close(p);
}

}  // namespace
