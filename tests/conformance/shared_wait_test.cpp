// shared_wait_test.cpp - zero-timeout waits on one topology that several
// threads share: the read-mostly harvest (docs/design.md, "Read-mostly
// zero-timeout waits") must keep Linux's results exactly.  Each test runs
// against Linux and against uepoll with the same absolute expectations:
//   * LT rotation: an unchanged ready list harvested whole stays in order,
//     a partial harvest rotates it, and MOD/DEL/ET/ONESHOT/drain change it
//     exactly as Linux does;
//   * concurrent waiters while events arrive and leave: every wait sees the
//     always-ready nested child, each ONESHOT arming is delivered exactly
//     once and each ET edge exactly once, no wait reports an item twice.
#include "support/api.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <sys/epoll.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

namespace {

using uepoll_test::Api;

class SharedWait : public ::testing::TestWithParam<const Api*> {
 protected:
  const Api& api() const { return *GetParam(); }
  int efd(unsigned v) {
    int fd = api().eventfd(v, EFD_NONBLOCK);
    EXPECT_GE(fd, 0);
    fds_.push_back(fd);
    return fd;
  }
  int epoll() {
    int fd = api().epoll_create1(0);
    EXPECT_GE(fd, 0);
    fds_.push_back(fd);
    return fd;
  }
  void ctl(int ep, int op, int fd, uint32_t events, uint64_t data) {
    struct epoll_event ev {};
    ev.events = events;
    ev.data.u64 = data;
    ASSERT_EQ(api().epoll_ctl(ep, op, fd, op == EPOLL_CTL_DEL ? nullptr : &ev), 0)
        << "ctl op " << op << " fd " << fd << " errno " << errno;
  }
  // The data words of one zero-timeout wait, in order.
  std::vector<uint64_t> wait0(int ep, int maxevents) {
    struct epoll_event ev[16];
    int n = api().epoll_wait(ep, ev, maxevents, 0);
    EXPECT_GE(n, 0) << "errno " << errno;
    std::vector<uint64_t> out;
    for (int i = 0; i < n; ++i) out.push_back(ev[i].data.u64);
    return out;
  }
  void TearDown() override {
    for (int fd : fds_) api().close(fd);
  }

 private:
  std::vector<int> fds_;
};

using V = std::vector<uint64_t>;
constexpr uint32_t IN = EPOLLIN;

// Flat: the ready list, all LT and still ready, is harvested whole again and
// again (uepoll's read-mostly path), then every change that must leave it.
TEST_P(SharedWait, LtListStaysInOrderAndChangesAsLinux) {
  int ep = epoll();
  int a = efd(1), b = efd(1), c = efd(1), d = efd(0), e = efd(1);
  ctl(ep, EPOLL_CTL_ADD, a, IN, 1);
  ctl(ep, EPOLL_CTL_ADD, b, IN, 2);
  ctl(ep, EPOLL_CTL_ADD, c, IN, 3);
  EXPECT_EQ(wait0(ep, 4), (V{1, 2, 3}));
  EXPECT_EQ(wait0(ep, 4), (V{1, 2, 3}));
  EXPECT_EQ(wait0(ep, 3), (V{1, 2, 3}));  // exactly maxevents: no rotation
  EXPECT_EQ(wait0(ep, 2), (V{1, 2}));     // partial: 3 stays in front
  EXPECT_EQ(wait0(ep, 4), (V{3, 1, 2}));
  EXPECT_EQ(wait0(ep, 4), (V{3, 1, 2}));
  ctl(ep, EPOLL_CTL_MOD, b, IN, 20);  // new data, same place
  EXPECT_EQ(wait0(ep, 4), (V{3, 1, 20}));
  ctl(ep, EPOLL_CTL_DEL, a, 0, 0);
  EXPECT_EQ(wait0(ep, 4), (V{3, 20}));
  uint64_t one = 1;
  ASSERT_EQ(api().write(d, &one, 8), 8);
  ctl(ep, EPOLL_CTL_ADD, d, IN | EPOLLET, 4);  // ready at ADD: queued at the tail
  EXPECT_EQ(wait0(ep, 4), (V{3, 20, 4}));
  EXPECT_EQ(wait0(ep, 4), (V{3, 20}));  // ET: once
  ctl(ep, EPOLL_CTL_ADD, e, IN | EPOLLONESHOT, 5);
  EXPECT_EQ(wait0(ep, 4), (V{3, 20, 5}));
  EXPECT_EQ(wait0(ep, 4), (V{3, 20}));  // ONESHOT: disarmed
  ctl(ep, EPOLL_CTL_MOD, b, IN | EPOLLET, 21);  // LT -> ET on a listed item
  EXPECT_EQ(wait0(ep, 4), (V{3, 21}));
  EXPECT_EQ(wait0(ep, 4), (V{3}));
  uint64_t v;
  ASSERT_EQ(api().read(c, &v, 8), 8);  // drained: dropped by the next harvest
  EXPECT_EQ(wait0(ep, 4), (V{}));
  ASSERT_EQ(api().write(c, &one, 8), 8);
  ASSERT_EQ(api().write(b, &one, 8), 8);  // an ET edge
  EXPECT_EQ(wait0(ep, 4), (V{3, 21}));
  EXPECT_EQ(wait0(ep, 4), (V{3}));
}

// Nested (2017 seed topology): top -> mid -> {a, b}; the child's readiness
// follows its first still-ready item.
//
//   top -> mid -> a (LT, ready), b (LT)
TEST_P(SharedWait, NestedChildReadinessFollowsItsItems) {
  int top = epoll(), mid = epoll();
  int a = efd(1), b = efd(0);
  ctl(mid, EPOLL_CTL_ADD, a, IN, 1);
  ctl(mid, EPOLL_CTL_ADD, b, IN, 2);
  ctl(top, EPOLL_CTL_ADD, mid, IN, 100);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(wait0(top, 4), (V{100}));
  uint64_t v = 1;
  ASSERT_EQ(api().read(a, &v, 8), 8);
  EXPECT_EQ(wait0(top, 4), (V{}));
  ASSERT_EQ(api().write(b, &v, 8), 8);
  EXPECT_EQ(wait0(top, 4), (V{100}));
  EXPECT_EQ(wait0(mid, 4), (V{2}));
  ASSERT_EQ(api().read(b, &v, 8), 8);
  EXPECT_EQ(wait0(top, 4), (V{}));
}

// A child that only its parents poll is never scanned; its snapshot is
// published by those polls (instance_poll.cpp).  Waits on the child itself
// then start from that snapshot, and every change must leave it:
//
//   top -> mid -> a (LT, ready, 1), b (LT, ready, 2), c (LT, 3)
TEST_P(SharedWait, ChildPublishedByParentPollsChangesAsLinux) {
  int top = epoll(), mid = epoll();
  int a = efd(1), b = efd(1), c = efd(0);
  ctl(mid, EPOLL_CTL_ADD, a, IN, 1);
  ctl(mid, EPOLL_CTL_ADD, b, IN, 2);
  ctl(mid, EPOLL_CTL_ADD, c, IN, 3);
  ctl(top, EPOLL_CTL_ADD, mid, IN, 100);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(wait0(top, 4), (V{100}));
  EXPECT_EQ(wait0(mid, 4), (V{1, 2}));
  EXPECT_EQ(wait0(mid, 1), (V{1}));  // partial: rotates
  EXPECT_EQ(wait0(top, 4), (V{100}));
  EXPECT_EQ(wait0(mid, 4), (V{2, 1}));
  uint64_t v = 1;
  ASSERT_EQ(api().write(c, &v, 8), 8);
  EXPECT_EQ(wait0(top, 4), (V{100}));
  EXPECT_EQ(wait0(mid, 4), (V{2, 1, 3}));
  ctl(mid, EPOLL_CTL_MOD, a, IN | EPOLLET, 10);  // LT -> ET on a listed item
  EXPECT_EQ(wait0(top, 4), (V{100}));
  EXPECT_EQ(wait0(mid, 4), (V{2, 10, 3}));  // stays in place
  EXPECT_EQ(wait0(mid, 4), (V{2, 3}));
  ASSERT_EQ(api().read(b, &v, 8), 8);
  ASSERT_EQ(api().read(c, &v, 8), 8);
  EXPECT_EQ(wait0(top, 4), (V{}));  // the poll prunes both
  EXPECT_EQ(wait0(mid, 4), (V{}));
  ASSERT_EQ(api().write(b, &v, 8), 8);
  EXPECT_EQ(wait0(top, 4), (V{100}));
  ctl(mid, EPOLL_CTL_DEL, b, 0, 0);
  EXPECT_EQ(wait0(top, 4), (V{}));
  EXPECT_EQ(wait0(mid, 4), (V{}));
}

// W threads wait with timeout 0 on one shared topology while a producer
// makes events arrive and leave:
//
//   top -> mid (LT, 100) -> a (LT, always ready, 1), t (LT, toggled, 2)
//   top -> o (ONESHOT, re-armed by MOD with data = round)
//   top -> e (ET, one write per round, 300)
//   top -> x (LT, ready, 400; added, deleted; then a fresh eventfd added
//            and closed while still registered), in a cycle of 4 rounds
//
// Each round waits until its ONESHOT arming and its ET edge were seen, so
// exactly one delivery of each per round is the Linux result.
TEST_P(SharedWait, ConcurrentWaitersLoseAndDuplicateNothing) {
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
  constexpr int kRounds = 300;
#else
  constexpr int kRounds = 1000;
#endif
  constexpr int kWaiters = 3;
  int top = epoll(), mid = epoll();
  int a = efd(1), t = efd(0), o = efd(1), e = efd(0), x = efd(1);
  ctl(mid, EPOLL_CTL_ADD, a, IN, 1);
  ctl(mid, EPOLL_CTL_ADD, t, IN, 2);
  ctl(top, EPOLL_CTL_ADD, mid, IN, 100);
  ctl(top, EPOLL_CTL_ADD, o, IN | EPOLLONESHOT, 1000);  // round 0
  ctl(top, EPOLL_CTL_ADD, e, IN | EPOLLET, 300);

  std::vector<std::atomic<int>> got(kRounds + 1);
  std::atomic<int> oneshot_total{0}, et_total{0}, bad{0}, waits{0};
  std::atomic<bool> stop{false};
  std::string first_bad;
  std::atomic<bool> bad_claimed{false};
  auto report = [&](const std::string& what) {
    if (!bad_claimed.exchange(true)) first_bad = what;
    bad.fetch_add(1);
  };

  std::vector<std::thread> ws;
  for (int w = 0; w < kWaiters; ++w) {
    ws.emplace_back([&] {
      struct epoll_event ev[8];
      unsigned spins = 0;
      while (!stop.load(std::memory_order_acquire)) {
        int n = api().epoll_wait(top, ev, 8, 0);
        waits.fetch_add(1, std::memory_order_relaxed);
        if (n < 1) {
          report("wait returned " + std::to_string(n) + " with mid always ready");
          continue;
        }
        bool seen_mid = false, seen_e = false, seen_o = false, seen_x = false;
        for (int i = 0; i < n; ++i) {
          const uint64_t d = ev[i].data.u64;
          bool* seen = d == 100 ? &seen_mid : d == 300 ? &seen_e : d == 400 ? &seen_x : &seen_o;
          if (*seen) report("item " + std::to_string(d) + " twice in one wait");
          *seen = true;
          if (d == 300) {
            et_total.fetch_add(1);
          } else if (d >= 1000 && d <= 1000u + kRounds) {
            if (got[d - 1000].fetch_add(1) != 0) report("ONESHOT round " + std::to_string(d - 1000) + " twice");
            oneshot_total.fetch_add(1);
          } else if (d != 100 && d != 400) {
            report("unknown data " + std::to_string(d));
          }
        }
        if (!seen_mid) report("the always-ready child missing");
        // uepoll's zero-timeout wait makes no system call: let the producer
        // run on a loaded machine (Linux's waits are preemption points).
        if (++spins % 64 == 0) sched_yield();
      }
    });
  }

  auto await = [&](std::atomic<int>& c, int want, const char* what) {
    const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (c.load() < want) {
      if (std::chrono::steady_clock::now() > limit) {
        report(std::string(what) + " lost: want " + std::to_string(want) + ", have " + std::to_string(c.load()));
        return false;
      }
      sched_yield();
    }
    return true;
  };
  uint64_t one = 1, v;
  int xc = -1;
  bool ok = await(oneshot_total, 1, "ONESHOT");
  for (int r = 1; ok && r <= kRounds; ++r) {
    ctl(top, EPOLL_CTL_MOD, o, IN | EPOLLONESHOT, 1000 + r);
    EXPECT_EQ(api().write(e, &one, 8), 8);
    EXPECT_EQ(api().write(t, &one, 8), 8);
    if (r % 4 == 1) {
      ctl(top, EPOLL_CTL_ADD, x, IN, 400);
    } else if (r % 4 == 2) {
      ctl(top, EPOLL_CTL_DEL, x, 0, 0);
    } else if (r % 4 == 3) {
      xc = api().eventfd(1, EFD_NONBLOCK);  // a file that goes away by close
      EXPECT_GE(xc, 0);
      ctl(top, EPOLL_CTL_ADD, xc, IN, 400);
    } else {
      EXPECT_EQ(api().close(xc), 0);  // the last reference: its release removes the item
      xc = -1;
    }
    EXPECT_EQ(api().read(t, &v, 8), 8);
    ok = await(oneshot_total, r + 1, "ONESHOT") && await(et_total, r, "ET edge");
  }
  // Nothing more may come: a few more rounds of waits see no extra event.
  const int w0 = waits.load();
  while (waits.load() < w0 + 100 * kWaiters) sched_yield();
  stop.store(true, std::memory_order_release);
  for (auto& th : ws) th.join();
  if (xc >= 0) api().close(xc);
  EXPECT_EQ(bad.load(), 0) << first_bad;
  EXPECT_EQ(oneshot_total.load(), kRounds + 1);
  EXPECT_EQ(et_total.load(), kRounds);
  for (int r = 0; r <= kRounds; ++r) ASSERT_EQ(got[r].load(), 1) << "round " << r;
}

INSTANTIATE_TEST_SUITE_P(LinuxAndUepoll, SharedWait,
                         ::testing::Values(&uepoll_test::linux_api(), &uepoll_test::uepoll_api()),
                         [](const ::testing::TestParamInfo<const Api*>& info) { return info.param->name; });

}  // namespace
