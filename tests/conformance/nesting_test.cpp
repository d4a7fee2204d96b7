// nesting_test.cpp - epoll instances inside epoll instances: an instance
// reports EPOLLIN|EPOLLRDNORM when an item inside is really ready, without
// consuming it (kselftest epoll17-20 style), poll() on an instance, an ET
// parent over a child, pruning of stale child items, interest masks on the
// parent item, and wakeups through several levels.  Notation in the
// topology comments: "eA -lt-> eB" means eB is registered in eA, level
// triggered ("-et->" edge triggered); s0/s1 is a socket pair, efd an eventfd.
#include "harness.h"

#include <atomic>
#include <thread>

namespace {

using conf::T;

constexpr uint32_t IN = EPOLLIN;
constexpr uint32_t ET = EPOLLET;

//   e0 -[outer]-> e1 -[inner]-> s0        (data written on s1)
// Two epoll_wait(e0, 0) calls: 1,1 when the outer item is LT, 1,0 when ET;
// the inner item is never consumed by the outer harvests.
void kselftest_nested(T& t, uint32_t outer, uint32_t inner) {
  int e0 = t.epoll_create1();
  int e1 = t.epoll_create1();
  auto [s0, s1] = t.unix_stream();
  t.ctl(e1, EPOLL_CTL_ADD, s0, IN | inner, 100);
  t.ctl(e0, EPOLL_CTL_ADD, e1, IN | outer, 200);
  t.write(s1, "w", 1);
  t.wait(e0, 1, 0);
  t.wait(e0, 1, 0);
  t.wait(e1, 1, 0);  // the inner item is still there
  t.wait(e1, 1, 0);
  t.wait(e0, 1, 0);
}

TEST(Nested, LtOverLt_epoll17) {
  auto r = conf::differential([](T& t) { kselftest_nested(t, 0, 0); });
  EXPECT_LINUX_SEQ(r, {"wait(fd0,1,0) = 1 [IN:200]", "wait(fd0,1,0) = 1 [IN:200]", "wait(fd1,1,0) = 1 [IN:100]",
                       "wait(fd1,1,0) = 1 [IN:100]", "wait(fd0,1,0) = 1 [IN:200]"});
}
TEST(Nested, LtOverEt_epoll18) {
  auto r = conf::differential([](T& t) { kselftest_nested(t, 0, ET); });
  EXPECT_LINUX_SEQ(r, {"wait(fd0,1,0) = 1 [IN:200]", "wait(fd0,1,0) = 1 [IN:200]", "wait(fd1,1,0) = 1 [IN:100]",
                       "wait(fd1,1,0) = 0", "wait(fd0,1,0) = 0"});
}
TEST(Nested, EtOverLt_epoll19) {
  auto r = conf::differential([](T& t) { kselftest_nested(t, ET, 0); });
  EXPECT_LINUX_SEQ(r, {"wait(fd0,1,0) = 1 [IN:200]", "wait(fd0,1,0) = 0", "wait(fd1,1,0) = 1 [IN:100]",
                       "wait(fd1,1,0) = 1 [IN:100]", "wait(fd0,1,0) = 0"});
}
TEST(Nested, EtOverEt_epoll20) {
  auto r = conf::differential([](T& t) { kselftest_nested(t, ET, ET); });
  EXPECT_LINUX_SEQ(r, {"wait(fd0,1,0) = 1 [IN:200]", "wait(fd0,1,0) = 0", "wait(fd1,1,0) = 1 [IN:100]",
                       "wait(fd1,1,0) = 0", "wait(fd0,1,0) = 0"});
}

// poll() on an instance: POLLIN|POLLRDNORM only (never OUT/ERR/HUP), without
// consuming ET items (kselftest epoll6 pattern); stale items are pruned.
//   e0 -et-> efd, e0 -lt-> rd (pipe whose writer closes)
TEST(Nested, PollOnInstance) {
  auto r = conf::differential([](T& t) {
    const short all = POLLIN | POLLOUT | POLLPRI | POLLRDNORM | POLLWRNORM | POLLRDHUP;
    int e0 = t.epoll_create1();
    int efd = t.eventfd(0);
    t.poll({{e0, all}}, 0);  // empty
    t.ctl(e0, EPOLL_CTL_ADD, efd, IN | ET, 1);
    t.poll({{e0, all}}, 0);  // not ready
    t.write_u64(efd, 1);
    t.poll({{e0, all}}, 0);
    t.poll({{e0, all}}, 0);  // not consumed
    t.wait(e0, 4, 0);
    t.poll({{e0, all}}, 0);  // consumed by the wait
    t.wait(e0, 4, 0);
    t.write_u64(efd, 1);
    t.read_u64(efd);  // queued but stale
    t.poll({{e0, all}}, 0);
    t.wait(e0, 4, 0);
    auto [rd, wr] = t.pipe();
    t.ctl(e0, EPOLL_CTL_ADD, rd, 0, 2);  // interest 0: only ERR|HUP
    t.poll({{e0, all}}, 0);
    t.close(wr);  // HUP counts as ready
    t.poll({{e0, all}}, 0);
    t.poll({{e0, 0}}, 0);  // nothing asked for: revents 0
    t.poll({{e0, POLLOUT}}, 0);
    t.wait(e0, 4, 0);
  });
  EXPECT_LINUX_SEQ(r, {"poll(fd0,0) = 0 [0]", "poll(fd0,0) = 0 [0]", "poll(fd0,0) = 1 [IN|RDNORM]",
                       "poll(fd0,0) = 1 [IN|RDNORM]", "wait(fd0,4,0) = 1 [IN:1]", "poll(fd0,0) = 0 [0]",
                       "poll(fd0,0) = 0 [0]", "wait(fd0,4,0) = 0", "poll(fd0,0) = 0 [0]",
                       "poll(fd0,0) = 1 [IN|RDNORM]", "poll(fd0,0) = 0 [0]", "poll(fd0,0) = 0 [0]",
                       "wait(fd0,4,0) = 1 [HUP:2]"});
}

// The parent item's mask: the child only ever reports IN|RDNORM, and the
// wakeup key is EPOLLIN, so an OUT-only or empty parent interest never fires.
//   e0 -[IN]-> e1, e2 -[OUT]-> e1, e3 -[0]-> e1, e4 -[all]-> e1;  e1 -> efd
TEST(Nested, ParentInterestMask) {
  auto r = conf::differential([](T& t) {
    int e0 = t.epoll_create1(), e1 = t.epoll_create1(), e2 = t.epoll_create1(), e3 = t.epoll_create1(),
        e4 = t.epoll_create1();
    int efd = t.eventfd(0);
    t.ctl(e1, EPOLL_CTL_ADD, efd, IN | EPOLLOUT, 1);  // OUT-ready at once
    t.ctl(e0, EPOLL_CTL_ADD, e1, IN, 10);
    t.ctl(e2, EPOLL_CTL_ADD, e1, EPOLLOUT, 20);
    t.ctl(e3, EPOLL_CTL_ADD, e1, 0, 30);
    t.ctl(e4, EPOLL_CTL_ADD, e1, conf::kAllPollBits, 40);
    t.wait(e0, 4, 0);
    t.wait(e2, 4, 0);
    t.wait(e3, 4, 0);
    t.wait(e4, 4, 0);
    t.write_u64(efd, 1);
    t.wait(e0, 4, 0);
    t.wait(e2, 4, 0);
    t.wait(e3, 4, 0);
    t.wait(e4, 4, 0);
  });
  EXPECT_LINUX_SEQ(r, {"wait(fd0,4,0) = 1 [IN:10]", "wait(fd2,4,0) = 0", "wait(fd3,4,0) = 0",
                       "wait(fd4,4,0) = 1 [IN|RDNORM:40]", "wait(fd0,4,0) = 1 [IN:10]", "wait(fd2,4,0) = 0",
                       "wait(fd3,4,0) = 0", "wait(fd4,4,0) = 1 [IN|RDNORM:40]"});
}

// An ET parent gets a new edge on every wakeup of the child (each child
// callback wakes the child's poll queue), even if the child was already
// ready; an LT parent drops the child once it stops being ready.
//   e0 -et-> e1 -lt-> efd      e2 -lt-> e1
TEST(Nested, EtParentOnChild) {
  auto r = conf::differential([](T& t) {
    int e0 = t.epoll_create1(), e1 = t.epoll_create1(), e2 = t.epoll_create1();
    int efd = t.eventfd(0);
    t.ctl(e1, EPOLL_CTL_ADD, efd, IN, 1);
    t.ctl(e0, EPOLL_CTL_ADD, e1, IN | ET, 10);
    t.ctl(e2, EPOLL_CTL_ADD, e1, IN, 20);
    t.wait(e0, 4, 0);
    t.write_u64(efd, 1);
    t.wait(e0, 4, 0);
    t.wait(e0, 4, 0);
    t.write_u64(efd, 1);  // child already ready: still an edge for e0
    t.wait(e0, 4, 0);
    t.wait(e0, 4, 0);
    t.wait(e1, 4, 0);  // harvesting the child is no edge for the parent
    t.wait(e0, 4, 0);
    t.wait(e2, 4, 0);
    t.read_u64(efd);
    t.wait(e2, 4, 0);  // child not ready any more: dropped
    t.wait(e0, 4, 0);
    t.ctl(e1, EPOLL_CTL_MOD, efd, IN | EPOLLOUT, 2);  // MOD queues in the child: edge upwards
    t.wait(e0, 4, 0);
    t.wait(e2, 4, 0);
  });
  EXPECT_LINUX_SEQ(r, {"wait(fd0,4,0) = 0", "wait(fd0,4,0) = 1 [IN:10]", "wait(fd0,4,0) = 0",
                       "wait(fd0,4,0) = 1 [IN:10]", "wait(fd0,4,0) = 0", "wait(fd1,4,0) = 1 [IN:1]",
                       "wait(fd0,4,0) = 0", "wait(fd2,4,0) = 1 [IN:20]", "wait(fd2,4,0) = 0",
                       "wait(fd0,4,0) = 0"});
}

// A child whose only item is a fired ONESHOT is not ready, although the
// object is.
//   e0 -lt-> e1 -oneshot-> efd
TEST(Nested, ChildWithDisabledItem) {
  auto r = conf::differential([](T& t) {
    int e0 = t.epoll_create1(), e1 = t.epoll_create1();
    int efd = t.eventfd(1);
    t.ctl(e1, EPOLL_CTL_ADD, efd, IN | EPOLLONESHOT, 1);
    t.ctl(e0, EPOLL_CTL_ADD, e1, IN, 10);
    t.wait(e0, 4, 0);
    t.wait(e1, 4, 0);
    t.wait(e0, 4, 0);
    t.poll({{e1, POLLIN}}, 0);
    t.ctl(e1, EPOLL_CTL_MOD, efd, IN | EPOLLONESHOT, 2);
    t.wait(e0, 4, 0);
  });
  EXPECT_LINUX_SEQ(r, {"wait(fd0,4,0) = 1 [IN:10]", "wait(fd1,4,0) = 1 [IN:1]", "wait(fd0,4,0) = 0",
                       "poll(fd1,0) = 0 [0]", "wait(fd0,4,0) = 1 [IN:10]"});
}

// The order in which one object's wakeup reaches several instances is the
// kernel's wait-queue order: non-exclusive entries are added at the head
// (so the newest registration is called first), EPOLLEXCLUSIVE entries at
// the tail (called in registration order).  A parent watching the children
// sees its items queued in that callback order.  No child has a sleeper, so
// no exclusive entry stops the walk.
//          P
//     /  /   \  \             (P's items added in order c1 c2 c3 c4)
//   c1  c2   c3  c4
//     \  \   /  /
//         efd                 (registered in c2, c4(EXCL), c1, c3(EXCL) order)
TEST(Nested, WaitQueueOrderSeenThroughParent) {
  auto r = conf::differential([](T& t) {
    int p = t.epoll_create1();
    int c[4];
    for (int& x : c) x = t.epoll_create1();
    int efd = t.eventfd(0);
    t.ctl(c[1], EPOLL_CTL_ADD, efd, IN, 2);
    t.ctl(c[3], EPOLL_CTL_ADD, efd, IN | EPOLLEXCLUSIVE, 4);
    t.ctl(c[0], EPOLL_CTL_ADD, efd, IN, 1);
    t.ctl(c[2], EPOLL_CTL_ADD, efd, IN | EPOLLEXCLUSIVE, 3);
    for (int i = 0; i < 4; ++i) t.ctl(p, EPOLL_CTL_ADD, c[i], IN | ET, 10 + i);
    t.wait(p, 8, 0);
    t.write_u64(efd, 1);
    t.wait(p, 8, 0);
    t.write_u64(efd, 1);
    t.wait(p, 8, 0);
    // Re-registering c1 moves it to the head.
    t.ctl(c[0], EPOLL_CTL_DEL, efd, 0, 0);
    t.ctl(c[0], EPOLL_CTL_ADD, efd, IN, 1);
    t.wait(p, 8, 0);  // the ADD itself queued c1's item: an edge for P
    t.write_u64(efd, 1);
    t.wait(p, 8, 0);
  });
  EXPECT_LINUX_SEQ(r, {"wait(fd0,8,0) = 0", "wait(fd0,8,0) = 4 [IN:10 IN:11 IN:13 IN:12]",
                       "wait(fd0,8,0) = 4 [IN:10 IN:11 IN:13 IN:12]", "wait(fd0,8,0) = 1 [IN:10]",
                       "wait(fd0,8,0) = 4 [IN:10 IN:11 IN:13 IN:12]"});
}

// An EPOLLONESHOT parent item over a child fires once, then stays silent
// while the child remains ready, until MOD.
//   e0 -oneshot-> e1 -lt-> efd
TEST(Nested, OneshotParentItem) {
  auto r = conf::differential([](T& t) {
    int e0 = t.epoll_create1(), e1 = t.epoll_create1();
    int efd = t.eventfd(0);
    t.ctl(e1, EPOLL_CTL_ADD, efd, IN, 1);
    t.ctl(e0, EPOLL_CTL_ADD, e1, IN | EPOLLONESHOT, 10);
    t.write_u64(efd, 1);
    t.wait(e0, 4, 0);
    t.write_u64(efd, 1);
    t.wait(e0, 4, 0);
    t.poll({{e0, POLLIN}}, 0);
    t.ctl(e0, EPOLL_CTL_MOD, e1, IN | EPOLLONESHOT, 11);
    t.wait(e0, 4, 0);
    t.wait(e0, 4, 0);
  });
  EXPECT_LINUX_SEQ(r, {"wait(fd0,4,0) = 1 [IN:10]", "wait(fd0,4,0) = 0", "poll(fd0,0) = 0 [0]",
                       "wait(fd0,4,0) = 1 [IN:11]", "wait(fd0,4,0) = 0"});
}

// Readiness seen through 2 and 4 levels, single-threaded.
//   e0 -> e1 -> e2 -> efd       t0 -> t1 -> t2 -> t3 -> t4 -> rd
TEST(Nested, ReadinessThroughLevels) {
  auto r = conf::differential([](T& t) {
    int e0 = t.epoll_create1(), e1 = t.epoll_create1(), e2 = t.epoll_create1();
    int efd = t.eventfd(0);
    t.ctl(e2, EPOLL_CTL_ADD, efd, IN, 2);
    t.ctl(e1, EPOLL_CTL_ADD, e2, IN, 1);
    t.ctl(e0, EPOLL_CTL_ADD, e1, IN | ET, 0);
    t.wait(e0, 4, 0);
    t.write_u64(efd, 1);
    t.wait(e0, 4, 0);
    t.wait(e0, 4, 0);
    int tt[5];
    for (int& x : tt) x = t.epoll_create1();
    auto [rd, wr] = t.pipe();
    t.ctl(tt[4], EPOLL_CTL_ADD, rd, IN, 44);
    for (int i = 3; i >= 0; --i) t.ctl(tt[i], EPOLL_CTL_ADD, tt[i + 1], IN, 40 + i);
    t.wait(tt[0], 4, 0);
    t.write(wr, "x", 1);
    t.poll({{tt[0], POLLIN}, {tt[2], POLLIN}, {tt[4], POLLIN}}, 0);
    t.wait(tt[0], 4, 0);
    t.wait(tt[3], 4, 0);
    t.wait(tt[4], 4, 0);
  });
  EXPECT_LINUX_SEQ(r, {"wait(fd0,4,0) = 0", "wait(fd0,4,0) = 1 [IN:0]", "wait(fd0,4,0) = 0",
                       "wait(fd4,4,0) = 0", "wait(fd4,4,0) = 1 [IN:40]", "wait(fd7,4,0) = 1 [IN:43]",
                       "wait(fd8,4,0) = 1 [IN:44]"});
}

// A thread blocked on the top instance is woken by an event two levels down.
//   e0 -> e1 -> e2 -> efd   (thread blocked in epoll_wait(e0, -1))
TEST(Nested, BlockedWaiterWokenThroughTwoLevels) {
  auto r = conf::differential([](T& t) {
    int e0 = t.epoll_create1(), e1 = t.epoll_create1(), e2 = t.epoll_create1();
    int efd = t.eventfd(0);
    t.ctl(e2, EPOLL_CTL_ADD, efd, IN, 2);
    t.ctl(e1, EPOLL_CTL_ADD, e2, IN, 1);
    t.ctl(e0, EPOLL_CTL_ADD, e1, IN, 0);
    struct epoll_event ev[4];
    int got = -2;
    std::atomic<pid_t> tid{0};
    std::thread th([&] {
      tid = static_cast<pid_t>(gettid());
      got = t.api.epoll_wait(e0, ev, 4, 5000);
    });
    conf::wait_until_sleeping(tid);
    t.write_u64(efd, 1);
    th.join();
    t.log("blocked wait returned " + std::to_string(got) + (got == 1 ? " data " + std::to_string(ev[0].data.u64) : ""));
    // The same with the event arriving on a pipe and the waiter on the middle.
    auto [rd, wr] = t.pipe();
    t.ctl(e2, EPOLL_CTL_ADD, rd, IN, 3);
    t.read_u64(efd);
    t.wait(e0, 4, 0);
    tid = 0;
    std::thread th2([&] {
      tid = static_cast<pid_t>(gettid());
      got = t.api.epoll_wait(e1, ev, 4, 5000);
    });
    conf::wait_until_sleeping(tid);
    t.write(wr, "x", 1);
    th2.join();
    t.log("middle waiter returned " + std::to_string(got) + (got == 1 ? " data " + std::to_string(ev[0].data.u64) : ""));
  });
  EXPECT_LINUX_SEQ(r, {"blocked wait returned 1 data 0", "wait(fd0,4,0) = 0",
                       "middle waiter returned 1 data 1"});
}

}  // namespace
