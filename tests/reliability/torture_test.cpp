// torture_test.cpp - many threads at once doing ctl, wait, close, dup, write
// and read on shared and nested topologies, run against Linux (to prove the
// invariants are right) and against uepoll.  Invariants checked as we go:
//   * every call returns success or one of the errnos Linux can give in that
//     race (EBADF after a concurrent close, EEXIST/ENOENT after a concurrent
//     ADD/DEL, ...); anything else is a failure;
//   * reported masks are within the interest set (+ERR|HUP), and a nested
//     instance reports exactly EPOLLIN;
//   * generation rule: an event carrying registration generation g is never
//     harvested by a wait that began after the DEL / MOD / close that ended
//     generation g had returned (data carries slot and generation);
//   * conservation: in ET and ONESHOT mode every byte / count written is read
//     exactly once, nothing is left unread (no lost edge), and a ONESHOT item
//     is never delivered twice before it is re-armed;
//   * after teardown the instances are back to their initial state
//     (uep_debug_dump identical for uepoll; no events for either).
// Tiers: the default run takes a few seconds in total; UEPOLL_TORTURE_SECONDS=N
// runs each scenario for N seconds per implementation.
#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "rel_common.h"

using namespace uepoll_test;
using Clock = std::chrono::steady_clock;

namespace {

// Collects the first few invariant violations from any thread.
struct Failures {
  std::mutex mu;
  std::vector<std::string> msgs;
  std::atomic<long> count{0};
  void add(const std::string& m) {
    if (count.fetch_add(1) < 8) {
      std::lock_guard<std::mutex> g(mu);
      msgs.push_back(m);
    }
  }
  std::string all() {
    std::lock_guard<std::mutex> g(mu);
    std::string s;
    for (auto& m : msgs) s += "  " + m + "\n";
    return s;
  }
};

double scenario_seconds() {
  double s = rel::env_seconds("UEPOLL_TORTURE_SECONDS");
  if (s > 0) return s;
  return 0.3;  // default tier: per scenario and implementation
}

// Thread-seconds accumulated (for docs/reliability.md).
std::atomic<long> g_thread_ms{0};

struct Stats {
  std::atomic<long> ops{0};
  std::atomic<long> events{0};
};

bool errno_in(int e, std::initializer_list<int> allowed) {
  for (int a : allowed)
    if (a == e) return true;
  return false;
}

#define CHECK_RET(fl, cond, what)                                                          \
  do {                                                                                   \
    if (!(cond)) (fl).add(std::string(what) + " -> errno " + rel::errno_name(errno));    \
  } while (0)

std::string dump(int ep) {
  char buf[8192];
  long n = uep_debug_dump(ep, buf, sizeof buf);
  if (n < 0) return "dump failed " + rel::errno_name(errno);
  return std::string(buf, static_cast<size_t>(n) < sizeof buf ? static_cast<size_t>(n) : sizeof buf);
}

// uepoll with alloc_reuse=0: items go back to malloc on free, so ASan sees
// a use after free that the per-thread item cache would otherwise hide.
const Api& uepoll_noreuse_api() {
  static const Api api = [] {
    Api a = uepoll_api();
    a.name = "uepoll_noreuse";
    return a;
  }();
  return api;
}

class Torture : public ::testing::TestWithParam<const Api*> {
 protected:
  long saved_reuse_ = 1;
  void SetUp() override {
    if (std::strcmp(GetParam()->name, "uepoll_noreuse") == 0) {
      uep_tuning_get("alloc_reuse", &saved_reuse_);
      uep_tuning_set("alloc_reuse", 0);
    }
  }
  void TearDown() override {
    if (std::strcmp(GetParam()->name, "uepoll_noreuse") == 0) uep_tuning_set("alloc_reuse", saved_reuse_);
  }
  const Api& api() { return *GetParam(); }
  bool uep() { return rel::is_uepoll_api(api()); }
  void run_threads(int n, const std::function<void(int, uint64_t)>& body) {
    std::vector<std::thread> ts;
    auto t0 = Clock::now();
    for (int i = 0; i < n; ++i) ts.emplace_back([&, i] { body(i, 0x1234567ULL * (i + 1)); });
    for (auto& t : ts) t.join();
    g_thread_ms += n * std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
  }
};

// --- A: closing files while other threads add, delete and wait ------------
//
//   E0 --IN--> E2 --> slots (eventfds, closed and replaced at random)
//   E0 -------------> slots
//   E1 -------------> slots
TEST_P(Torture, CloseWhileAddDelWait) {
  const Api& a = api();
  Failures fl;
  Stats st;
  constexpr int kSlots = 8;
  constexpr uint64_t kTagE2 = 0xE2E2;
  int E[3];
  for (int& e : E) ASSERT_GE(e = a.epoll_create1(0), 0);
  std::string dump_e1_before = uep() ? dump(E[1]) : "", dump_e2_before = uep() ? dump(E[2]) : "";
  struct epoll_event ev {};
  ev.events = EPOLLIN;
  ev.data.u64 = kTagE2;
  ASSERT_EQ(a.epoll_ctl(E[0], EPOLL_CTL_ADD, E[2], &ev), 0);
  std::string dump_e0_before = uep() ? dump(E[0]) : "";
  std::atomic<int> slot[kSlots];
  for (auto& s : slot) s.store(a.eventfd(0, EFD_NONBLOCK));
  const auto end = Clock::now() + std::chrono::duration<double>(scenario_seconds());
  const int nthreads = 4;
  run_threads(nthreads, [&](int tid, uint64_t seed) {
    rel::Rng r(seed);
    while (Clock::now() < end) {
      for (int rep = 0; rep < 32; ++rep) {
        st.ops++;
        int s = static_cast<int>(r.below(kSlots));
        int e = E[r.below(3)];
        int fd = slot[s].load();
        uint32_t x = r.below(100);
        if (x < 22) {
          struct epoll_event ev {};
          ev.events = EPOLLIN | (r.chance(50) ? uint32_t(EPOLLOUT) : 0u) | (r.chance(30) ? uint32_t(EPOLLET) : 0u) |
                      (r.chance(10) ? uint32_t(EPOLLONESHOT) : 0u);
          ev.data.u64 = static_cast<uint64_t>(s);
          int rc = a.epoll_ctl(e, EPOLL_CTL_ADD, fd, &ev);
          CHECK_RET(fl, rc == 0 || errno_in(errno, {EEXIST, EBADF}), "ADD");
        } else if (x < 36) {
          int rc = a.epoll_ctl(e, EPOLL_CTL_DEL, fd, nullptr);
          CHECK_RET(fl, rc == 0 || errno_in(errno, {ENOENT, EBADF}), "DEL");
        } else if (x < 44) {
          struct epoll_event ev {};
          ev.events = EPOLLIN | (r.chance(50) ? uint32_t(EPOLLET) : 0u);
          ev.data.u64 = static_cast<uint64_t>(s);
          int rc = a.epoll_ctl(e, EPOLL_CTL_MOD, fd, &ev);
          CHECK_RET(fl, rc == 0 || errno_in(errno, {ENOENT, EBADF}), "MOD");
        } else if (x < 50) {
          // Close and replace; the number may be reused by the new eventfd.
          int old = slot[s].exchange(-1);
          if (old >= 0) {
            CHECK_RET(fl, a.close(old) == 0, "close(slot)");
            int nfd = a.eventfd(0, EFD_NONBLOCK);
            CHECK_RET(fl, nfd >= 0, "eventfd");
            slot[s].store(nfd);
          }
        } else if (x < 64) {
          uint64_t one = 1;
          ssize_t rc = a.write(fd, &one, 8);
          CHECK_RET(fl, rc == 8 || errno_in(errno, {EBADF}), "write");
        } else if (x < 70) {
          uint64_t v;
          ssize_t rc = a.read(fd, &v, 8);
          CHECK_RET(fl, rc == 8 || errno_in(errno, {EAGAIN, EBADF}), "read");
        } else if (x < 74) {
          int d = a.dup(fd);
          CHECK_RET(fl, d >= 0 || errno_in(errno, {EBADF}), "dup");
          if (d >= 0) CHECK_RET(fl, a.close(d) == 0, "close(dup)");
        } else {
          struct epoll_event evs[4];
          int which = static_cast<int>(r.below(3));
          int rc = a.epoll_wait(E[which], evs, 4, r.chance(20) ? 1 : 0);
          CHECK_RET(fl, rc >= 0 && rc <= 4, "wait");
          for (int i = 0; i < rc; ++i) {
            st.events++;
            uint64_t d = evs[i].data.u64;
            uint32_t m = evs[i].events;
            if (d == kTagE2) {
              if (which != 0 || m != EPOLLIN) fl.add("nested E2 event with mask " + rel::mask_name(m));
            } else if (d >= kSlots) {
              fl.add("event with unknown data " + std::to_string(d));
            } else if (m & ~(EPOLLIN | EPOLLOUT | EPOLLERR | EPOLLHUP)) {
              fl.add("slot event with mask " + rel::mask_name(m));
            }
          }
        }
      }
    }
    (void)tid;
  });
  for (auto& s : slot) ASSERT_EQ(a.close(s.load()), 0);
  // Every watched file is gone: nothing may be reported, and (uepoll) the
  // interest lists are back to what they were.
  for (int i = 0; i < 3; ++i) {
    struct epoll_event evs[4];
    EXPECT_EQ(a.epoll_wait(E[i], evs, 4, 0), 0) << "E" << i;
  }
  if (uep()) {
    EXPECT_EQ(dump(E[0]), dump_e0_before);
    EXPECT_EQ(dump(E[1]), dump_e1_before);
    EXPECT_EQ(dump(E[2]), dump_e2_before);
  }
  for (int e : E) EXPECT_EQ(a.close(e), 0);
  EXPECT_EQ(fl.count.load(), 0) << fl.all();
  std::printf("[torture %s] close/add/del/wait: %ld ops, %ld events\n", a.name, st.ops.load(),
              st.events.load());
}

// --- B: no event for a registration after its DEL/MOD returned ------------
TEST_P(Torture, GenerationAfterDelOrMod) {
  const Api& a = api();
  Failures fl;
  Stats st;
  constexpr int kOwners = 3, kPer = 2, kSlots = kOwners * kPer;
  int E = a.epoll_create1(0);
  ASSERT_GE(E, 0);
  int fds[kSlots];
  for (int& f : fds) ASSERT_GE(f = a.eventfd(1, EFD_NONBLOCK), 0);  // always readable
  std::atomic<uint64_t> min_gen[kSlots];
  for (auto& g : min_gen) g.store(0);
  std::atomic<bool> stop{false};
  const auto end = Clock::now() + std::chrono::duration<double>(scenario_seconds());
  std::atomic<long> checked{0};
  run_threads(kOwners + 2, [&](int tid, uint64_t seed) {
    rel::Rng r(seed);
    if (tid < kOwners) {
      uint64_t gen[kPer] = {1, 1};
      bool added[kPer] = {false, false};
      while (Clock::now() < end) {
        int k = static_cast<int>(r.below(kPer));
        int s = tid * kPer + k;
        struct epoll_event ev {};
        ev.events = EPOLLIN | (r.chance(30) ? uint32_t(EPOLLET) : 0u);
        st.ops++;
        if (!added[k]) {
          ev.data.u64 = (gen[k] << 8) | static_cast<uint64_t>(s);
          CHECK_RET(fl, a.epoll_ctl(E, EPOLL_CTL_ADD, fds[s], &ev) == 0, "ADD");
          added[k] = true;
        } else if (r.chance(40)) {
          uint64_t ng = gen[k] + 1;
          ev.data.u64 = (ng << 8) | static_cast<uint64_t>(s);
          CHECK_RET(fl, a.epoll_ctl(E, EPOLL_CTL_MOD, fds[s], &ev) == 0, "MOD");
          gen[k] = ng;
          min_gen[s].store(ng);  // generation ng-1 is over
        } else {
          CHECK_RET(fl, a.epoll_ctl(E, EPOLL_CTL_DEL, fds[s], nullptr) == 0, "DEL");
          min_gen[s].store(gen[k] + 1);  // generation gen is over
          gen[k]++;
          added[k] = false;
        }
        if (r.chance(20)) std::this_thread::yield();
      }
    } else {
      while (Clock::now() < end) {
        uint64_t snap[kSlots];
        for (int s = 0; s < kSlots; ++s) snap[s] = min_gen[s].load();
        struct epoll_event evs[8];
        int rc = a.epoll_wait(E, evs, 8, r.chance(50) ? 1 : 0);
        CHECK_RET(fl, rc >= 0, "wait");
        for (int i = 0; i < rc; ++i) {
          st.events++;
          uint64_t d = evs[i].data.u64;
          int s = static_cast<int>(d & 0xff);
          uint64_t g = d >> 8;
          checked++;
          if (s >= kSlots) {
            fl.add("bad data");
          } else if (g < snap[s]) {
            fl.add("slot " + std::to_string(s) + ": event of generation " + std::to_string(g) +
                   " harvested by a wait that began after generation " + std::to_string(snap[s] - 1) +
                   " ended (DEL/MOD had returned)");
          }
        }
      }
    }
  });
  stop = true;
  for (int f : fds) EXPECT_EQ(a.close(f), 0);
  struct epoll_event evs[8];
  EXPECT_EQ(a.epoll_wait(E, evs, 8, 0), 0);
  EXPECT_EQ(a.close(E), 0);
  EXPECT_EQ(fl.count.load(), 0) << fl.all();
  EXPECT_GT(checked.load(), 0);
  std::printf("[torture %s] generation rule: %ld ctl, %ld events checked\n", a.name, st.ops.load(),
              checked.load());
}

// --- C: ET / ONESHOT conservation: every write read exactly once ----------
void conservation(const Api& a, bool oneshot, Failures& fl, long* moved) {
  constexpr int kPipes = 4, kEfds = 2, kItems = kPipes + kEfds;
  int E = a.epoll_create1(0);
  ASSERT_GE(E, 0);
  int rd[kItems], wr[kItems];
  for (int i = 0; i < kPipes; ++i) {
    int p[2];
    ASSERT_EQ(a.pipe2(p, O_NONBLOCK), 0);
    rd[i] = p[0];
    wr[i] = p[1];
  }
  for (int i = kPipes; i < kItems; ++i) ASSERT_GE(rd[i] = wr[i] = a.eventfd(0, EFD_NONBLOCK), 0);
  for (int i = 0; i < kItems; ++i) {
    struct epoll_event ev {};
    ev.events = EPOLLIN | (oneshot ? EPOLLONESHOT : EPOLLET);
    ev.data.u64 = static_cast<uint64_t>(i);
    ASSERT_EQ(a.epoll_ctl(E, EPOLL_CTL_ADD, rd[i], &ev), 0);
  }
  std::atomic<long> produced{0}, consumed{0};
  std::atomic<int> producers_left{2};
  std::atomic<int> in_service[kItems];
  for (auto& x : in_service) x.store(0);
  const auto end = Clock::now() + std::chrono::duration<double>(scenario_seconds());
  std::atomic<bool> drained{false};
  Clock::time_point give_up{};
  std::mutex give_up_mu;
  std::vector<std::thread> ts;
  auto t0 = Clock::now();
  for (int p = 0; p < 2; ++p) {
    ts.emplace_back([&, p] {
      rel::Rng r(77 + p);
      while (Clock::now() < end) {
        int i = static_cast<int>(r.below(kItems));
        if (i < kPipes) {
          char b[4] = {1, 1, 1, 1};
          int n = 1 + static_cast<int>(r.below(4));
          ssize_t w = a.write(wr[i], b, static_cast<size_t>(n));
          if (w > 0) produced += w;
          else if (errno != EAGAIN) fl.add("pipe write " + rel::errno_name(errno));
        } else {
          uint64_t v = 1 + r.below(3);
          if (a.write(wr[i], &v, 8) == 8) produced += static_cast<long>(v);
          else fl.add("eventfd write " + rel::errno_name(errno));
        }
        if (r.chance(10)) std::this_thread::yield();
      }
      producers_left--;
    });
  }
  for (int c = 0; c < 3; ++c) {
    ts.emplace_back([&] {
      while (!drained.load()) {
        struct epoll_event evs[3];
        int rc = a.epoll_wait(E, evs, 3, 5);
        if (rc < 0) {
          fl.add("wait " + rel::errno_name(errno));
          return;
        }
        for (int k = 0; k < rc; ++k) {
          int i = static_cast<int>(evs[k].data.u64);
          if (oneshot && in_service[i].exchange(1) != 0)
            fl.add("ONESHOT item " + std::to_string(i) + " delivered twice before re-arm");
          // Drain to EAGAIN (the ET contract).
          for (;;) {
            if (i < kPipes) {
              char b[64];
              ssize_t n = a.read(rd[i], b, sizeof b);
              if (n > 0) {
                consumed += n;
                continue;
              }
              if (n < 0 && errno != EAGAIN) fl.add("pipe read " + rel::errno_name(errno));
            } else {
              uint64_t v;
              ssize_t n = a.read(rd[i], &v, 8);
              if (n == 8) {
                consumed += static_cast<long>(v);
                continue;
              }
              if (n < 0 && errno != EAGAIN) fl.add("efd read " + rel::errno_name(errno));
            }
            break;
          }
          if (oneshot) {
            in_service[i].store(0);
            struct epoll_event ev {};
            ev.events = EPOLLIN | EPOLLONESHOT;
            ev.data.u64 = static_cast<uint64_t>(i);
            if (a.epoll_ctl(E, EPOLL_CTL_MOD, rd[i], &ev) != 0) fl.add("MOD re-arm " + rel::errno_name(errno));
          }
        }
        if (producers_left.load() == 0 && consumed.load() == produced.load()) drained = true;
        if (producers_left.load() == 0) {
          std::lock_guard<std::mutex> g(give_up_mu);
          if (give_up == Clock::time_point{}) give_up = Clock::now() + std::chrono::seconds(3);
          if (Clock::now() > give_up) return;  // lost wakeup: data left, nobody woken
        }
      }
    });
  }
  for (auto& t : ts) t.join();
  g_thread_ms += 5 * std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
  if (consumed.load() != produced.load())
    fl.add("conservation broken: produced " + std::to_string(produced.load()) + ", consumed " +
           std::to_string(consumed.load()) + " (an edge was lost: data left unread with no event)");
  *moved = produced.load();
  for (int i = 0; i < kPipes; ++i) {
    a.close(rd[i]);
    a.close(wr[i]);
  }
  for (int i = kPipes; i < kItems; ++i) a.close(rd[i]);
  a.close(E);
}

TEST_P(Torture, EdgeTriggeredConservation) {
  Failures fl;
  long moved = 0;
  conservation(api(), false, fl, &moved);
  EXPECT_EQ(fl.count.load(), 0) << fl.all();
  std::printf("[torture %s] ET conservation: %ld units moved\n", api().name, moved);
}

TEST_P(Torture, OneshotConservation) {
  Failures fl;
  long moved = 0;
  conservation(api(), true, fl, &moved);
  EXPECT_EQ(fl.count.load(), 0) << fl.all();
  std::printf("[torture %s] ONESHOT conservation: %ld units moved\n", api().name, moved);
}

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

// Under TSan the Linux side is left out: the scenarios deliberately use
// descriptors that other threads close and reuse, which TSan's descriptor
// model reports as races on the kernel side (the invariants themselves are
// validated against Linux in the normal and ASan builds).
#if defined(UEP_REL_TSAN)
INSTANTIATE_TEST_SUITE_P(Impl, Torture, ::testing::Values(&uepoll_api(), &uepoll_noreuse_api()),
#else
INSTANTIATE_TEST_SUITE_P(Impl, Torture, ::testing::Values(&linux_api(), &uepoll_api(), &uepoll_noreuse_api()),
#endif
                         [](const ::testing::TestParamInfo<const Api*>& i) {
                           return std::string(i.param->name);
                         });

struct Report : ::testing::Environment {
  void TearDown() override {
    std::printf("[torture] thread-seconds survived: %.1f\n", static_cast<double>(g_thread_ms.load()) / 1000.0);
  }
};
const auto* const kReport = ::testing::AddGlobalTestEnvironment(new Report);

}  // namespace
