// wait_order_test.cpp - epoll_wait conformance: the order in which ready
// items are reported (ADD order, two items of one object, LT round robin,
// items not reached stay in front, MOD and re-ADD of queued items).  Every
// scenario runs on Linux and on uepoll; traces must match.
#include "harness.h"

#include <sys/mman.h>

#include <functional>
#include <initializer_list>
#include <thread>
#include <utility>

namespace {

using conf::T;

constexpr uint32_t IN = EPOLLIN;
constexpr uint32_t OUT = EPOLLOUT;
constexpr uint32_t ET = EPOLLET;

// One epoll_ctl(ep, op, fd, events) per {fd, data}, in the order given (the
// order the WaitOrder tests look at).
void ctl_items(T& t, int ep, int op, uint32_t events, std::initializer_list<std::pair<int, uint64_t>> items) {
  for (auto [fd, data] : items) t.ctl(ep, op, fd, events, data);
}

// Ready items are queued in ADD order (if ready at ADD) or in the order they
// became ready, independent of descriptor numbers.
TEST(WaitOrder, AddOrderAndReadinessOrder) {
  auto r = conf::differential([](T& t) {
    int ep = t.epoll_create1();
    int a = t.eventfd(0), b = t.eventfd(0), c = t.eventfd(0);
    ctl_items(t, ep, EPOLL_CTL_ADD, OUT, {{c, 3}, {a, 1}, {b, 2}});
    t.wait(ep, 8, 0);
    ctl_items(t, ep, EPOLL_CTL_MOD, IN, {{a, 1}, {b, 2}, {c, 3}});
    t.wait(ep, 8, 0);
    t.write_u64(b, 1);
    t.write_u64(c, 1);
    t.write_u64(a, 1);
    t.write_u64(b, 1);  // already queued: stays in place
    t.wait(ep, 8, 0);
    t.wait(ep, 8, 0);  // LT: same order again
  });
  EXPECT_LINUX_SEQ(r, {"wait(fd0,8,0) = 3 [OUT:3 OUT:1 OUT:2]", "wait(fd0,8,0) = 0",
                       "wait(fd0,8,0) = 3 [IN:2 IN:3 IN:1]", "wait(fd0,8,0) = 3 [IN:2 IN:3 IN:1]"});
}

// Two items for one object (a descriptor and its dup) are called back in
// wait-queue order: the newer registration (at the head) is queued first.
TEST(WaitOrder, OneObjectTwoItems) {
  auto r = conf::differential([](T& t) {
    int ep = t.epoll_create1();
    int efd = t.eventfd(0);
    int d = t.dup(efd);
    t.ctl(ep, EPOLL_CTL_ADD, efd, IN, 1);
    t.ctl(ep, EPOLL_CTL_ADD, d, IN, 2);
    t.write_u64(efd, 1);
    t.wait(ep, 4, 0);
    auto [rd, wr] = t.pipe();
    int rd2 = t.dup(rd);
    t.ctl(ep, EPOLL_CTL_ADD, rd2, IN | EPOLLET, 3);
    t.ctl(ep, EPOLL_CTL_ADD, rd, IN | EPOLLET, 4);
    t.read_u64(efd);
    t.write(wr, "x", 1);
    t.wait(ep, 4, 0);
  });
  EXPECT_LINUX_SEQ(r, {"wait(fd0,4,0) = 2 [IN:2 IN:1]", "wait(fd0,4,0) = 2 [IN:4 IN:3]"});
}

// LT round robin (LTP epoll_wait14): 13 always-ready items, maxevents 3,
// 4 full rotations: each item reported exactly 4 times, in a fixed order.
TEST(WaitOrder, LevelTriggeredRoundRobin) {
  auto r = conf::differential([](T& t) {
    int ep = t.epoll_create1();
    std::vector<int> fds;
    for (int i = 0; i < 13; ++i) {
      auto [rd, wr] = t.pipe();
      t.write(wr, "x", 1);
      fds.push_back(rd);
      t.ctl(ep, EPOLL_CTL_ADD, rd, IN, i);
    }
    std::vector<int> count(13);
    int total = 0;
    while (total < 13 * 4) {
      int n = t.wait(ep, std::min(3, 13 * 4 - total), 0);
      if (n <= 0) break;
      for (auto& ev : t.last_events()) count[ev.data.u64]++;
      total += n;
    }
    std::string s = "counts:";
    for (int c : count) {
      s += ' ';  // not `" " + std::to_string()`: GCC 12 -O3 -Wrestrict false positive (PR 105329)
      s += std::to_string(c);
    }
    t.log(s);
    // Consuming one item's data drops it from the rotation at the next harvest.
    char c;
    t.api.read(fds[5], &c, 1);
    t.wait(ep, 13, 0);
  });
  EXPECT_LINUX_SEQ(r, {"wait(fd0,3,0) = 3 [IN:0 IN:1 IN:2]", "wait(fd0,3,0) = 3 [IN:3 IN:4 IN:5]",
                       "wait(fd0,3,0) = 3 [IN:12 IN:0 IN:1]", "counts: 4 4 4 4 4 4 4 4 4 4 4 4 4"});
  EXPECT_TRUE(r.linux_trace.back().find("= 12 [") != std::string::npos) << r.linux_trace.back();
}

// Items not reached because of maxevents stay in front; items that fire
// later go behind them.
TEST(WaitOrder, UnreachedItemsStayInFront) {
  auto r = conf::differential([](T& t) {
    int ep = t.epoll_create1();
    int a = t.eventfd(1), b = t.eventfd(1), c = t.eventfd(1);
    ctl_items(t, ep, EPOLL_CTL_ADD, IN | ET, {{a, 1}, {b, 2}, {c, 3}});
    t.wait(ep, 1, 0);
    t.write_u64(a, 1);
    t.wait(ep, 8, 0);
    t.wait(ep, 8, 0);
    // LT variant: delivered LT items go to the tail behind unreached ones.
    ctl_items(t, ep, EPOLL_CTL_MOD, IN, {{a, 1}, {b, 2}, {c, 3}});
    t.wait(ep, 2, 0);
    t.wait(ep, 2, 0);
    t.wait(ep, 2, 0);
  });
  EXPECT_LINUX_SEQ(r, {"wait(fd0,1,0) = 1 [IN:1]", "wait(fd0,8,0) = 3 [IN:2 IN:3 IN:1]", "wait(fd0,8,0) = 0",
                       "wait(fd0,2,0) = 2 [IN:1 IN:2]", "wait(fd0,2,0) = 2 [IN:3 IN:1]",
                       "wait(fd0,2,0) = 2 [IN:2 IN:3]"});
}

// MOD and DEL/ADD on queued items: MOD keeps the queue position and switches
// the re-queue policy; DEL + ADD puts the item at the tail.
TEST(WaitOrder, ModAndReAddOfQueuedItems) {
  auto r = conf::differential([](T& t) {
    int ep = t.epoll_create1();
    int a = t.eventfd(1), b = t.eventfd(1), c = t.eventfd(1);
    ctl_items(t, ep, EPOLL_CTL_ADD, IN, {{a, 1}, {b, 2}, {c, 3}});
    t.ctl(ep, EPOLL_CTL_MOD, a, IN | ET, 11);  // still first, now ET
    t.wait(ep, 8, 0);
    t.wait(ep, 8, 0);  // a not re-queued
    t.ctl(ep, EPOLL_CTL_DEL, b, 0, 0);
    t.ctl(ep, EPOLL_CTL_ADD, b, IN, 22);  // to the tail
    t.wait(ep, 8, 0);
    t.ctl(ep, EPOLL_CTL_MOD, c, IN | EPOLLONESHOT, 33);
    t.wait(ep, 1, 0);
    t.wait(ep, 8, 0);
  });
  EXPECT_LINUX_SEQ(r, {"wait(fd0,8,0) = 3 [IN:11 IN:2 IN:3]", "wait(fd0,8,0) = 2 [IN:2 IN:3]",
                       "wait(fd0,8,0) = 2 [IN:3 IN:22]", "wait(fd0,1,0) = 1 [IN:33]", "wait(fd0,8,0) = 1 [IN:22]"});
}

}  // namespace
