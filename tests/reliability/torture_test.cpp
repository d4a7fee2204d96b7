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
// The shared parts are in torture.h; scenarios C, D and E in
// torture_conservation_test.cpp and torture_nested_test.cpp.
#include "torture.h"

using namespace uepoll_test;
using namespace uepoll_test::torture;

namespace {

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
