// threads_concurrent_test.cpp - liveness under concurrency: a producer
// racing a consumer (events arriving during a harvest are kept; ET, oneshot
// rearmed, nested), and nested ADDs across many thread lifetimes or racing
// edge changes (uepoll only).
#include "harness.h"

#include <pthread.h>
#include <sys/eventfd.h>

#include <atomic>
#include <csignal>
#include <thread>
#include <vector>

namespace {

using conf::T;

constexpr uint32_t IN = EPOLLIN;
constexpr uint32_t ET = EPOLLET;

// Liveness: a producer thread writes while the consumer harvests; every
// write is eventually seen (no wakeup lost while a harvest is in progress).
// Outcomes only: timings and interleavings are not compared.
void producer_consumer(T& t, bool nested, uint32_t mode) {
  const int kWrites = 20000;
  int ep = t.epoll_create1();
  int efd = t.eventfd(0, EFD_NONBLOCK);
  int top = ep;
  if (nested) {
    top = t.epoll_create1();
    t.ctl(top, EPOLL_CTL_ADD, ep, IN | ET, 2);
  }
  t.ctl(ep, EPOLL_CTL_ADD, efd, IN | mode, 1);
  std::thread producer([&] {
    uint64_t one = 1;
    for (int i = 0; i < kWrites; ++i) t.api.write(efd, &one, 8);
  });
  uint64_t sum = 0;
  int timeouts = 0;
  while (sum < static_cast<uint64_t>(kWrites) && timeouts == 0) {
    struct epoll_event ev[4];
    int n = t.api.epoll_wait(top, ev, 4, 3000);
    if (n == 0) {
      ++timeouts;
      break;
    }
    if (nested) t.api.epoll_wait(ep, ev, 4, 0);
    uint64_t v;
    if (t.api.read(efd, &v, 8) == 8) sum += v;
  }
  producer.join();
  t.log("consumed " + std::to_string(sum) + " of " + std::to_string(kWrites) + ", lost wakeups: " +
        std::to_string(timeouts));
}

// Three instances, the second watched by the first (top -> ep), the third
// (`other`) for the test's own use; closed at the end.
struct WatchedInstance {
  int top = uep_epoll_create1(0);
  int ep = uep_epoll_create1(0);
  int other = uep_epoll_create1(0);
  WatchedInstance() {
    struct epoll_event ev {};
    ev.events = EPOLLIN;
    if (top < 0 || ep < 0 || other < 0 || uep_epoll_ctl(top, EPOLL_CTL_ADD, ep, &ev) != 0) ep = -1;
  }
  ~WatchedInstance() {
    uep_close(other);
    uep_close(ep);
    uep_close(top);
  }
};

// n ADD + DEL pairs of a new eventfd into ep (fewer once *stop is set),
// first registered in `side` when side >= 0.  Returns how many calls failed.
int leaf_ctl_pairs(int ep, int side, int n, const std::atomic<bool>* stop = nullptr) {
  const int efd = uep_eventfd(0, EFD_NONBLOCK);
  if (efd < 0) return 1;
  struct epoll_event e {};
  e.events = EPOLLIN;
  int failed = side >= 0 && uep_epoll_ctl(side, EPOLL_CTL_ADD, efd, &e) != 0;
  for (int i = 0; i < n && !(stop && stop->load()); ++i)
    failed += uep_epoll_ctl(ep, EPOLL_CTL_ADD, efd, &e) != 0 || uep_epoll_ctl(ep, EPOLL_CTL_DEL, efd, nullptr) != 0;
  uep_close(efd);
  return failed;
}

// An instance edge child -> parent added and removed: 0, or 1 if a call failed.
int edge_add_del(int parent, int child) {
  struct epoll_event ev {};
  ev.events = EPOLLIN;
  return uep_epoll_ctl(parent, EPOLL_CTL_ADD, child, &ev) != 0 ||
         uep_epoll_ctl(parent, EPOLL_CTL_DEL, child, nullptr) != 0;
}

TEST(Threads, ProducerConsumerEdgeTriggered) {
  auto r = conf::differential([](T& t) { producer_consumer(t, false, ET); });
  EXPECT_LINUX_SEQ(r, {"consumed 20000 of 20000, lost wakeups: 0"});
}
TEST(Threads, ProducerConsumerOneshotRearmed) {
  auto r = conf::differential([](T& t) {
    const int kWrites = 5000;
    int ep = t.epoll_create1();
    int efd = t.eventfd(0, EFD_NONBLOCK);
    t.ctl(ep, EPOLL_CTL_ADD, efd, IN | EPOLLONESHOT, 1);
    std::thread producer([&] {
      uint64_t one = 1;
      for (int i = 0; i < kWrites; ++i) t.api.write(efd, &one, 8);
    });
    uint64_t sum = 0;
    int timeouts = 0;
    while (sum < static_cast<uint64_t>(kWrites)) {
      struct epoll_event ev;
      if (t.api.epoll_wait(ep, &ev, 1, 3000) == 0) {
        ++timeouts;
        break;
      }
      uint64_t v;
      if (t.api.read(efd, &v, 8) == 8) sum += v;
      struct epoll_event mod = {IN | EPOLLONESHOT, {.u64 = 1}};
      t.api.epoll_ctl(ep, EPOLL_CTL_MOD, efd, &mod);
    }
    producer.join();
    t.log("consumed " + std::to_string(sum) + ", lost wakeups: " + std::to_string(timeouts));
  });
  EXPECT_LINUX_SEQ(r, {"consumed 5000, lost wakeups: 0"});
}
//   top -et-> ep -et-> efd      (producer writes efd, consumer waits on top)
TEST(Threads, ProducerConsumerNested) {
  auto r = conf::differential([](T& t) { producer_consumer(t, true, ET); });
  EXPECT_LINUX_SEQ(r, {"consumed 20000 of 20000, lost wakeups: 0"});
}


// The topology lock's reader slots (epoll/topology.cpp): a thread owns one
// while it lives and gives it back at exit; threads beyond the 64 owned
// slots alive at once share RMW slots.  Leaf ADDs into a watched instance
// take the lock shared; an instance-into-instance ADD takes it exclusively
// and waits for every slot to drain, so a count left raised by a thread
// (a slot given back or shared wrongly) would hang the last ADD below.
// Each eventfd is also watched by `side`, so that the ADDs into ep cannot
// use the cached path profile (kCached, which takes no topology lock) and
// all take the lock shared.
// Topology: top -> ep -> efd <- side (per thread: its own eventfd, ADD +
// DEL into ep); top -> mid, added and removed meanwhile.
TEST(Threads, NestedLeafAddsAcrossManyThreadLifetimes) {
  WatchedInstance w;
  ASSERT_GE(w.ep, 0);
  const int side = w.other;
  std::atomic<int> failures{0};
  // Two waves of 80 concurrent threads (more than the owned slots), each
  // wave's slots given back at exit and claimed again by the next.
  for (int wave = 0; wave < 2; ++wave) {
    std::vector<std::thread> ts;
    for (int t = 0; t < 80; ++t) ts.emplace_back([&] { failures.fetch_add(leaf_ctl_pairs(w.ep, side, 20)); });
    const int mid = uep_epoll_create1(0);  // a writer meanwhile
    ASSERT_GE(mid, 0);
    EXPECT_EQ(edge_add_del(w.top, mid), 0);
    for (auto& t : ts) t.join();
    uep_close(mid);
  }
  EXPECT_EQ(failures.load(), 0);
  // Every slot drained: the writer gets the lock, and a reader after it, on
  // this (long-lived) thread.
  const int last = uep_epoll_create1(0);
  ASSERT_GE(last, 0);
  EXPECT_EQ(edge_add_del(w.top, last), 0);
  EXPECT_EQ(leaf_ctl_pairs(w.ep, side, 3), 0);
  uep_close(last);
}

// kCached (epoll/topology.cpp, cached_add_ok): nested leaf ADDs that take
// no topology lock, racing a writer that links and unlinks an instance
// edge above their instance (each ADD of mid -> ep walks ep's shards and
// bumps the edge generation: ADDs in flight then fall back to kShared, and
// the next one recomputes the profile).  Nothing is near a path limit, so
// every ADD and DEL succeeds, with or without the cache.
// Topology: top -> ep -> efd (one per thread); mid -> ep, added and removed.
TEST(Threads, CachedNestedAddsRaceEdgeChanges) {
  WatchedInstance w;
  ASSERT_GE(w.ep, 0);
  const int mid = w.other;
  std::atomic<int> failures{0};
  std::atomic<bool> stop{false};
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t) ts.emplace_back([&] { failures.fetch_add(leaf_ctl_pairs(w.ep, -1, 2000, &stop)); });
  for (int i = 0; i < 200; ++i) failures.fetch_add(edge_add_del(mid, w.ep));
  stop.store(true);
  for (auto& t : ts) t.join();
  EXPECT_EQ(failures.load(), 0);
}

}  // namespace
