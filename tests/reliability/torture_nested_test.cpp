// torture_nested_test.cpp - torture scenarios D and E (torture.h): nested
// chains built, looped (ELOOP), hooked in and closed in random order while
// waiters wait on them, and an instance closed while threads wait on it and
// it is nested.  Run against Linux and against uepoll.
#include "torture.h"

using namespace uepoll_test;
using namespace uepoll_test::torture;

namespace {

// --- D: nested chains built and torn down while events fire ---------------
//
//   T (shared top) --IN--> c1 --IN--> c2 --IN--> c3 --(LT|ET)--> leaves (shared eventfds)
//   builders create a chain, try a cycle (c3 -> c1: ELOOP), hook c1 into T,
//   then close the chain in random order while waiters wait on T and c1.
TEST_P(Torture, NestedChainChurn) {
  const Api& a = api();
  Failures fl;
  Stats st;
  constexpr int kLeaves = 4, kBuilders = 2;
  int leaves[kLeaves];
  for (int& l : leaves) ASSERT_GE(l = a.eventfd(0, EFD_NONBLOCK), 0);
  int T = a.epoll_create1(0);
  ASSERT_GE(T, 0);
  std::string t_before = uep() ? dump(T) : "";
  std::atomic<uint64_t> min_gen[kBuilders];
  for (auto& g : min_gen) g.store(0);
  std::atomic<long> chains{0};
  const auto end = Clock::now() + std::chrono::duration<double>(scenario_seconds());
  run_threads(kBuilders + 2, [&](int tid, uint64_t seed) {
    rel::Rng r(seed);
    if (tid < kBuilders) {
      uint64_t gen = 1;
      while (Clock::now() < end) {
        int c[3];
        for (int& x : c) {
          x = a.epoll_create1(0);
          CHECK_RET(fl, x >= 0, "epoll_create1");
        }
        struct epoll_event ev {};
        ev.events = EPOLLIN;
        ev.data.u64 = 0xC2;
        CHECK_RET(fl, a.epoll_ctl(c[0], EPOLL_CTL_ADD, c[1], &ev) == 0, "ADD c2->c1");
        ev.data.u64 = 0xC3;
        CHECK_RET(fl, a.epoll_ctl(c[1], EPOLL_CTL_ADD, c[2], &ev) == 0, "ADD c3->c2");
        for (int l = 0; l < kLeaves; ++l) {
          if (r.chance(50)) continue;
          ev.events = EPOLLIN | (r.chance(50) ? uint32_t(EPOLLET) : 0u);
          ev.data.u64 = 0x100 + static_cast<uint64_t>(l);
          CHECK_RET(fl, a.epoll_ctl(c[2], EPOLL_CTL_ADD, leaves[l], &ev) == 0, "ADD leaf->c3");
        }
        ev.events = EPOLLIN;
        CHECK_RET(fl, a.epoll_ctl(c[2], EPOLL_CTL_ADD, c[0], &ev) == -1 && errno == ELOOP,
                  "cycle c1 into c3 must be ELOOP");
        ev.data.u64 = (gen << 8) | static_cast<uint64_t>(tid);
        CHECK_RET(fl, a.epoll_ctl(T, EPOLL_CTL_ADD, c[0], &ev) == 0, "ADD c1->T");
        for (int k = 0; k < 3; ++k) {
          struct epoll_event evs[4];
          int rc = a.epoll_wait(c[0], evs, 4, 0);
          CHECK_RET(fl, rc >= 0, "wait c1");
          for (int i = 0; i < rc; ++i)
            if (evs[i].data.u64 != 0xC2 || evs[i].events != EPOLLIN)
              fl.add("c1 reported " + rel::mask_name(evs[i].events) + " data " + std::to_string(evs[i].data.u64));
        }
        // Teardown in random order; c1's last close ends this generation.
        int order[3] = {0, 1, 2};
        for (int i = 2; i > 0; --i) std::swap(order[i], order[r.below(static_cast<uint32_t>(i + 1))]);
        for (int k : order) {
          CHECK_RET(fl, a.close(c[k]) == 0, "close chain");
          if (k == 0) min_gen[tid].store(gen + 1);  // head gone: T must forget it
        }
        gen++;
        chains++;
      }
    } else if (tid == kBuilders) {
      rel::Rng rr(seed);
      while (Clock::now() < end) {
        uint64_t v = 1;
        int l = static_cast<int>(rr.below(kLeaves));
        CHECK_RET(fl, a.write(leaves[l], &v, 8) == 8, "leaf write");
        if (rr.chance(30)) {
          uint64_t x;
          a.read(leaves[l], &x, 8);
        }
        st.ops++;
      }
    } else {
      while (Clock::now() < end) {
        uint64_t snap[kBuilders];
        for (int b = 0; b < kBuilders; ++b) snap[b] = min_gen[b].load();
        struct epoll_event evs[4];
        int rc = a.epoll_wait(T, evs, 4, 1);
        CHECK_RET(fl, rc >= 0, "wait T");
        for (int i = 0; i < rc; ++i) {
          st.events++;
          uint64_t d = evs[i].data.u64;
          int b = static_cast<int>(d & 0xff);
          if (b >= kBuilders || evs[i].events != EPOLLIN) {
            fl.add("T reported " + rel::mask_name(evs[i].events) + " data " + std::to_string(d));
          } else if ((d >> 8) < snap[b]) {
            fl.add("T reported chain generation " + std::to_string(d >> 8) +
                   " after its head was closed (close had returned before the wait began)");
          }
        }
      }
    }
  });
  struct epoll_event evs[4];
  EXPECT_EQ(a.epoll_wait(T, evs, 4, 0), 0);
  if (uep()) {
    EXPECT_EQ(dump(T), t_before);
  }
  EXPECT_EQ(a.close(T), 0);
  for (int l : leaves) EXPECT_EQ(a.close(l), 0);
  EXPECT_EQ(fl.count.load(), 0) << fl.all();
  std::printf("[torture %s] nested churn: %ld chains built+torn down, %ld leaf writes, %ld top events\n",
              a.name, chains.load(), st.ops.load(), st.events.load());
}

// --- E: closing an instance while threads wait on it and it is nested -----
//   P --IN--> E --> efd ; waiters block on E and P while E is closed.
TEST_P(Torture, CloseInstanceWhileWaiting) {
  const Api& a = api();
  Failures fl;
  const auto end = Clock::now() + std::chrono::duration<double>(scenario_seconds());
  long rounds = 0;
  int efd = a.eventfd(0, EFD_NONBLOCK);
  ASSERT_GE(efd, 0);
  while (Clock::now() < end) {
    int P = a.epoll_create1(0), E = a.epoll_create1(0);
    ASSERT_GE(P, 0);
    ASSERT_GE(E, 0);
    struct epoll_event ev {};
    ev.events = EPOLLIN;
    ev.data.u64 = 1;
    ASSERT_EQ(a.epoll_ctl(E, EPOLL_CTL_ADD, efd, &ev), 0);
    ev.data.u64 = 2;
    ASSERT_EQ(a.epoll_ctl(P, EPOLL_CTL_ADD, E, &ev), 0);
    std::atomic<bool> closed{false};
    std::vector<std::thread> ws;
    for (int w = 0; w < 2; ++w) {
      ws.emplace_back([&, w] {
        struct epoll_event evs[2];
        bool was_closed = closed.load();
        int rc = a.epoll_wait(w == 0 ? E : P, evs, 2, 3);
        // Linux: a wait holds the file; close() neither wakes nor fails it.
        // A wait that starts after the close sees EBADF (or a reused number).
        if (rc < 0 && !(errno == EBADF || (errno == EINVAL && was_closed)))
          fl.add("wait during close: " + rel::errno_name(errno));
        for (int i = 0; i < rc; ++i)
          if (w == 1 && (evs[i].data.u64 != 2 || evs[i].events != EPOLLIN))
            fl.add("P reported " + rel::mask_name(evs[i].events));
      });
    }
    std::this_thread::yield();
    uint64_t v = 1;
    a.write(efd, &v, 8);
    closed = true;
    EXPECT_EQ(a.close(E), 0);
    for (auto& t : ws) t.join();
    // E's last reference is gone: P must have forgotten it.
    struct epoll_event evs[2];
    int rc = a.epoll_wait(P, evs, 2, 0);
    if (rc != 0) fl.add("P still reports the closed E (rc " + std::to_string(rc) + ")");
    a.read(efd, &v, 8);
    EXPECT_EQ(a.close(P), 0);
    rounds++;
  }
  a.close(efd);
  g_thread_ms += static_cast<long>(3 * scenario_seconds() * 1000);
  EXPECT_EQ(fl.count.load(), 0) << fl.all();
  std::printf("[torture %s] close-instance-while-waiting: %ld rounds\n", a.name, rounds);
}

}  // namespace
