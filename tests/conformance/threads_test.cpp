// threads_test.cpp - conformance scenarios that need blocked waiters, the
// wakeups: EPOLLEXCLUSIVE (one exclusive instance with a sleeper is woken,
// the rest are skipped), the order sleepers are woken in, one wakeup per
// event for ET with several waiters on one instance, and waking a sleeper
// by ADD/MOD of a ready item.  Closes and signals under a blocked call are
// in threads_interrupt_test.cpp, concurrent producers and ctl in
// threads_concurrent_test.cpp.  The sequencing is made deterministic with
// generous sleeps (a waiter is given 60 ms to block before the event); only
// outcomes, never timings, go into the compared trace.
#include "harness.h"
#include "threads_waiter.h"

#include <pthread.h>
#include <sys/eventfd.h>

#include <atomic>
#include <csignal>
#include <thread>
#include <vector>

namespace {

using conf::T;
using conf_threads::kSettleUs;
using conf_threads::Waiter;

constexpr uint32_t IN = EPOLLIN;
constexpr uint32_t ET = EPOLLET;

// After an event: waits (at most 3 s) until more than `before` of `ws` have
// returned, then 60 ms more so that a wrongly woken one would show too.
void settle(const std::vector<Waiter*>& ws, int before) {
  auto count = [&] {
    int c = 0;
    for (auto* w : ws) c += w->finished();
    return c;
  };
  double end = conf::now_ms() + 3000;
  while (count() <= before && conf::now_ms() < end) usleep(2000);
  usleep(kSettleUs);
}

// Two instances each hold the same eventfd with EPOLLEXCLUSIVE; a thread
// sleeps in each.  A write wakes only the first exclusive instance that has
// a sleeper (registration order); the next write skips the now sleeper-less
// first instance (it still queues the item) and wakes the second.
//   e0 -(EXCL)-> efd <-(EXCL)- e1      A sleeps in e0, B sleeps in e1
TEST(Threads, ExclusiveWakesOneInstance) {
  auto r = conf::differential([](T& t) {
    int e0 = t.epoll_create1(), e1 = t.epoll_create1();
    int efd = t.eventfd(0);
    t.ctl(e0, EPOLL_CTL_ADD, efd, IN | ET | EPOLLEXCLUSIVE, 10);
    t.ctl(e1, EPOLL_CTL_ADD, efd, IN | ET | EPOLLEXCLUSIVE, 11);
    auto a = std::make_unique<Waiter>(t.api, e0, 3000);
    auto b = std::make_unique<Waiter>(t.api, e1, 3000);
    t.write_u64(efd, 1);
    settle({a.get(), b.get()}, 0);
    t.log(std::string("after write 1: A ") + (a->finished() ? "woke" : "asleep") + ", B " +
          (b->finished() ? "woke" : "asleep"));
    t.log("A returned " + a->result());
    t.write_u64(efd, 1);
    settle({b.get()}, 0);
    t.log(std::string("after write 2: B ") + (b->finished() ? "woke" : "asleep"));
    t.log("B returned " + b->result());
    t.wait(e0, 4, 0);  // queued by write 2 although A was not woken
    t.wait(e1, 4, 0);
  });
  EXPECT_LINUX_SEQ(r, {"after write 1: A woke, B asleep", "A returned 1 [IN:10]", "after write 2: B woke",
                       "B returned 1 [IN:11]", "wait(fd0,4,0) = 1 [IN:10]", "wait(fd1,4,0) = 0"});
}

// Sleepers on one instance are woken newest first: ep_poll() queues a sleeper
// with __add_wait_queue_exclusive(), which inserts at the head of ep->wq
// (the reference notes say tail; Linux 6.18 observably wakes the newest).
TEST(Threads, SleepersWokenNewestFirst) {
  auto r = conf::differential([](T& t) {
    int ep = t.epoll_create1();
    int efd = t.eventfd(0);
    t.ctl(ep, EPOLL_CTL_ADD, efd, IN | ET, 1);
    std::vector<std::unique_ptr<Waiter>> w;
    for (int i = 0; i < 3; ++i) {  // A, B, C go to sleep in this order
      w.push_back(std::make_unique<Waiter>(t.api, ep, 3000));
      usleep(10 * 1000);
    }
    std::string order;
    for (int k = 0; k < 3; ++k) {
      t.write_u64(efd, 1);
      settle({w[0].get(), w[1].get(), w[2].get()}, k);
      std::string now;
      for (int i = 0; i < 3; ++i)
        if (w[i]->finished() && order.find(static_cast<char>('A' + i)) == std::string::npos) now += static_cast<char>('A' + i);
      order += now.empty() ? "-" : now.size() > 1 ? "(" + now + ")" : now;
    }
    t.log("wake order: " + order);
    for (int i = 0; i < 3; ++i) t.log(std::string(1, static_cast<char>('A' + i)) + " " + w[i]->result());
  });
  EXPECT_LINUX_SEQ(r, {"wake order: CBA", "A 1 [IN:1]", "B 1 [IN:1]", "C 1 [IN:1]"});
}

// An exclusive wakeup whose key carries both IN and OUT (a pipe's release
// wakes with IN|OUT|ERR|HUP) is not consumed by any exclusive entry: every
// exclusive instance's sleeper wakes.  A plain write (key IN) wakes one.
//   e0 -(EXCL)-> rd <-(EXCL)- e1      A sleeps in e0, B in e1
TEST(Threads, ExclusiveWakeWithInAndOutKeyWakesAll) {
  auto r = conf::differential([](T& t) {
    int e0 = t.epoll_create1(), e1 = t.epoll_create1();
    auto [rd, wr] = t.pipe2(O_NONBLOCK);
    t.ctl(e0, EPOLL_CTL_ADD, rd, IN | ET | EPOLLEXCLUSIVE, 10);
    t.ctl(e1, EPOLL_CTL_ADD, rd, IN | ET | EPOLLEXCLUSIVE, 11);
    {
      auto a = std::make_unique<Waiter>(t.api, e0, 3000);
      auto b = std::make_unique<Waiter>(t.api, e1, 3000);
      t.write(wr, "x", 1);
      settle({a.get(), b.get()}, 0);
      t.log(std::string("write woke: ") + (a->finished() ? "A" : "") + (b->finished() ? "B" : ""));
      t.log("A " + a->result());
      t.write(wr, "y", 1);  // release B
      t.log("B " + b->result());
    }
    t.read(rd, 8);
    t.wait(e0, 4, 0);
    t.wait(e1, 4, 0);
    {
      auto a = std::make_unique<Waiter>(t.api, e0, 3000);
      auto b = std::make_unique<Waiter>(t.api, e1, 3000);
      t.close(wr);
      settle({a.get(), b.get()}, 0);
      t.log(std::string("close of the writer woke: ") + (a->finished() ? "A" : "") + (b->finished() ? "B" : ""));
      t.log("A " + a->result() + ", B " + b->result());
    }
  });
  EXPECT_LINUX_SEQ(r, {"write woke: A", "A 1 [IN:10]", "B 1 [IN:11]", "close of the writer woke: AB",
                       "A 1 [HUP:10], B 1 [HUP:11]"});
}

// The non-exclusive contrast: one write wakes both instances' sleepers.
TEST(Threads, NonExclusiveWakesAll) {
  auto r = conf::differential([](T& t) {
    int e0 = t.epoll_create1(), e1 = t.epoll_create1();
    int efd = t.eventfd(0);
    t.ctl(e0, EPOLL_CTL_ADD, efd, IN | ET, 10);
    t.ctl(e1, EPOLL_CTL_ADD, efd, IN | ET, 11);
    Waiter a(t.api, e0, 3000), b(t.api, e1, 3000);
    usleep(kSettleUs);
    t.write_u64(efd, 1);
    t.log("A returned " + a.result());
    t.log("B returned " + b.result());
  });
  EXPECT_LINUX_SEQ(r, {"A returned 1 [IN:10]", "B returned 1 [IN:11]"});
}

// Several sleepers on one instance: an ET event wakes one sleeper (the other
// sleeps on until the next edge); an LT event is passed on to the next one.
TEST(Threads, SleepersOnOneInstance) {
  auto r = conf::differential([](T& t) {
    int ep = t.epoll_create1();
    int efd = t.eventfd(0);
    t.ctl(ep, EPOLL_CTL_ADD, efd, IN | ET, 1);
    {
      Waiter a(t.api, ep, 5000), b(t.api, ep, 5000);
      t.write_u64(efd, 1);
      settle({&a, &b}, 0);
      t.log("ET: " + std::to_string(a.finished() + b.finished()) + " of 2 sleepers woke");
      t.write_u64(efd, 1);  // a second edge for the other one
      settle({&a, &b}, 1);
      std::string ra = a.result(), rb = b.result();
      t.log("ET: after a second write both returned: " + ra + ", " + rb);
    }
    t.read_u64(efd);
    t.ctl(ep, EPOLL_CTL_MOD, efd, IN, 2);
    {
      // Both return as soon as the write lands; the timeout only bounds a
      // failure (and must outlast a loaded sanitizer run's stalls between
      // the sleepers' start and the write).
      Waiter a(t.api, ep, 5000), b(t.api, ep, 5000);
      usleep(kSettleUs);
      t.write_u64(efd, 1);
      std::string ra = a.result(), rb = b.result();
      t.log("LT: A " + ra + ", B " + rb);
    }
  });
  EXPECT_LINUX_SEQ(r, {"ET: 1 of 2 sleepers woke", "ET: after a second write both returned: 1 [IN:1], 1 [IN:1]", "LT: A 1 [IN:2], B 1 [IN:2]"});
}

// ADD of an already-ready descriptor wakes a sleeper (gVisor UnblockWithNewFD);
// so does MOD re-arming a ready ONESHOT item.
TEST(Threads, AddAndModWakeSleeper) {
  auto r = conf::differential([](T& t) {
    int ep = t.epoll_create1();
    int efd = t.eventfd(1);
    {
      Waiter a(t.api, ep, 3000);
      usleep(kSettleUs);
      t.ctl(ep, EPOLL_CTL_ADD, efd, IN | EPOLLONESHOT, 1);
      t.log("after ADD: " + a.result());
    }
    {
      Waiter a(t.api, ep, 3000);
      usleep(kSettleUs);
      t.log(std::string("disabled item: ") + (a.finished() ? "woke" : "asleep"));
      t.ctl(ep, EPOLL_CTL_MOD, efd, IN | EPOLLONESHOT, 2);
      t.log("after MOD: " + a.result());
    }
    // A nested instance: ADD into the child wakes a sleeper on the parent.
    int parent = t.epoll_create1();
    int child = t.epoll_create1();
    t.ctl(parent, EPOLL_CTL_ADD, child, IN, 3);
    {
      Waiter a(t.api, parent, 3000);
      usleep(kSettleUs);
      t.ctl(child, EPOLL_CTL_ADD, efd, IN, 4);
      t.log("after ADD into the child: " + a.result());
    }
  });
  EXPECT_LINUX_SEQ(r, {"after ADD: 1 [IN:1]", "disabled item: asleep", "after MOD: 1 [IN:2]",
                       "after ADD into the child: 1 [IN:3]"});
}

}  // namespace
