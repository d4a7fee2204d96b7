// limits_test.cpp - limits and fault injection.
//   * max_user_watches (spec §1.7): a limit of N allows exactly N
//     registrations process-wide, across instances; the N+1th ADD gives
//     ENOSPC; EEXIST and ELOOP are reported before ENOSPC (§3 step 9/11);
//     DEL and the last close of a watched file give the watch back; MOD is
//     not limited.
//   * max_fds: the uepoll analogue of RLIMIT_NOFILE.  The same scenario runs
//     against uepoll (max_fds) and against Linux in a child process with
//     RLIMIT_NOFILE lowered; outcomes are compared (EMFILE, pipe2/socketpair
//     all-or-nothing, no descriptor leaked).
//   * fail_alloc_after: for every call that allocates, k = 0,1,2,... makes
//     the k-th allocation fail; the call must either succeed or fail with
//     ENOMEM leaving every instance's uep_debug_dump and the descriptor
//     table unchanged, until a k where it succeeds without reaching the
//     fault.  Afterwards the watch accounting must not have leaked.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <sys/resource.h>
#include <sys/wait.h>
#include <vector>

#include "rel_common.h"

using namespace uepoll_test;

namespace {

struct KnobGuard {
  const char* name;
  long old = 0;
  bool ok = false;
  explicit KnobGuard(const char* n) : name(n) { ok = uep_tuning_get(n, &old) == 0; }
  ~KnobGuard() {
    if (ok) uep_tuning_set(name, old);
  }
};

std::string dump(int ep) {
  std::string s(1 << 16, '\0');
  long n = uep_debug_dump(ep, s.data(), s.size());
  if (n < 0) return "dump failed: " + rel::errno_name(errno);
  s.resize(static_cast<size_t>(n) < s.size() ? static_cast<size_t>(n) : s.size());
  return s;
}

std::string fd_table() {
  std::string s;
  for (int i = UEP_FD_BASE; i < UEP_FD_BASE + 512; ++i)
    if (uep_is_uepoll_fd(i)) s += std::to_string(i - UEP_FD_BASE) + " ";
  return s;
}

TEST(Limits, MaxUserWatches) {
  KnobGuard g("max_user_watches");
  ASSERT_TRUE(g.ok) << "uep_tuning_get(max_user_watches): " << rel::errno_name(errno);
  const long N = 12;
  int E1 = uep_epoll_create1(0), E2 = uep_epoll_create1(0), E3 = uep_epoll_create1(0);
  ASSERT_GE(E1, 0);
  ASSERT_GE(E2, 0);
  ASSERT_GE(E3, 0);
  std::vector<int> fds;
  for (int i = 0; i < 16; ++i) fds.push_back(uep_eventfd(0, EFD_NONBLOCK));
  ASSERT_EQ(uep_tuning_set("max_user_watches", N), 0);
  struct epoll_event ev {};
  ev.events = EPOLLIN;
  // 1 watch: E1 inside E3.  Then 7 in E1 and 4 in E2: N = 12 in total.
  ASSERT_EQ(uep_epoll_ctl(E3, EPOLL_CTL_ADD, E1, &ev), 0);
  for (int i = 0; i < 7; ++i) ASSERT_EQ(uep_epoll_ctl(E1, EPOLL_CTL_ADD, fds[i], &ev), 0) << i;
  for (int i = 7; i < 11; ++i) ASSERT_EQ(uep_epoll_ctl(E2, EPOLL_CTL_ADD, fds[i], &ev), 0) << i;
  // N+1th: ENOSPC, in either instance.
  EXPECT_EQ(uep_epoll_ctl(E1, EPOLL_CTL_ADD, fds[11], &ev), -1);
  EXPECT_EQ(errno, ENOSPC);
  EXPECT_EQ(uep_epoll_ctl(E2, EPOLL_CTL_ADD, fds[11], &ev), -1);
  EXPECT_EQ(errno, ENOSPC);
  // EEXIST (found in the tree) comes before the limit check.
  EXPECT_EQ(uep_epoll_ctl(E1, EPOLL_CTL_ADD, fds[0], &ev), -1);
  EXPECT_EQ(errno, EEXIST);
  // ELOOP (topology check) comes before the limit check.
  EXPECT_EQ(uep_epoll_ctl(E1, EPOLL_CTL_ADD, E3, &ev), -1);
  EXPECT_EQ(errno, ELOOP);
  // MOD is not limited.
  ev.events = EPOLLIN | EPOLLOUT;
  EXPECT_EQ(uep_epoll_ctl(E1, EPOLL_CTL_MOD, fds[0], &ev), 0);
  ev.events = EPOLLIN;
  // DEL gives one back.
  EXPECT_EQ(uep_epoll_ctl(E1, EPOLL_CTL_DEL, fds[0], nullptr), 0);
  EXPECT_EQ(uep_epoll_ctl(E2, EPOLL_CTL_ADD, fds[11], &ev), 0);
  EXPECT_EQ(uep_epoll_ctl(E2, EPOLL_CTL_ADD, fds[12], &ev), -1);
  EXPECT_EQ(errno, ENOSPC);
  // The last close of a watched file gives its watch back.
  EXPECT_EQ(uep_close(fds[1]), 0);
  fds[1] = -1;
  EXPECT_EQ(uep_epoll_ctl(E2, EPOLL_CTL_ADD, fds[12], &ev), 0);
  EXPECT_EQ(uep_epoll_ctl(E2, EPOLL_CTL_ADD, fds[13], &ev), -1);
  EXPECT_EQ(errno, ENOSPC);
  // Closing an instance gives back every watch it held (E2: 6 items).
  EXPECT_EQ(uep_close(E2), 0);
  for (int i = 13; i < 16; ++i) EXPECT_EQ(uep_epoll_ctl(E1, EPOLL_CTL_ADD, fds[i], &ev), 0) << i;
  // Lowering the limit below the current count: ADD fails, the rest works.
  ASSERT_EQ(uep_tuning_set("max_user_watches", 1), 0);
  EXPECT_EQ(uep_epoll_ctl(E1, EPOLL_CTL_ADD, fds[12], &ev), -1);
  EXPECT_EQ(errno, ENOSPC);
  EXPECT_EQ(uep_epoll_ctl(E1, EPOLL_CTL_DEL, fds[13], nullptr), 0);
  ASSERT_EQ(uep_tuning_set("max_user_watches", 0), 0);
  EXPECT_EQ(uep_epoll_ctl(E1, EPOLL_CTL_ADD, fds[13], &ev), -1);
  EXPECT_EQ(errno, ENOSPC);
  for (int f : fds)
    if (f >= 0) uep_close(f);
  uep_close(E1);
  uep_close(E3);
}

TEST(Limits, MaxUserWatchesRejectsBadValues) {
  KnobGuard g("max_user_watches");
  EXPECT_EQ(uep_tuning_set("max_user_watches", -1), -1);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(uep_tuning_set("no_such_knob", 1), -1);
  EXPECT_EQ(errno, EINVAL);
  long v;
  EXPECT_EQ(uep_tuning_get("no_such_knob", &v), -1);
  EXPECT_EQ(errno, EINVAL);
}

// The descriptor-limit scenario, written once.  `room` descriptors are free
// below the limit when it starts.
std::vector<std::string> fd_limit_scenario(const Api& a) {
  std::vector<std::string> out;
  auto rec = [&](long r, const char* what) {
    out.push_back(std::string(what) + ": " + (r < 0 ? "-1 " + rel::errno_name(errno) : "ok"));
    return r;
  };
  std::vector<int> held;
  int e1 = static_cast<int>(rec(a.eventfd(0, EFD_NONBLOCK), "eventfd #1"));
  int e2 = static_cast<int>(rec(a.epoll_create1(0), "epoll_create1 #2"));
  int e3 = static_cast<int>(rec(a.dup(e1), "dup #3"));
  // Table full (3 of 3).
  rec(a.eventfd(0, 0), "eventfd full");
  rec(a.epoll_create1(0), "epoll_create1 full");
  rec(a.dup(e1), "dup full");
  rec(a.timerfd_create(CLOCK_MONOTONIC, 0), "timerfd full");
  int p[2] = {-1, -1};
  rec(a.pipe2(p, 0), "pipe2 full");
  rec(a.socketpair(AF_UNIX, SOCK_STREAM, 0, p), "socketpair full");
  // One free: pairs still fail, all or nothing, and leak nothing.
  rec(a.close(e3), "close #3");
  rec(a.pipe2(p, 0), "pipe2 one free");
  rec(a.socketpair(AF_UNIX, SOCK_STREAM, 0, p), "socketpair one free");
  int e4 = static_cast<int>(rec(a.eventfd(0, 0), "eventfd into the free slot"));
  rec(a.eventfd(0, 0), "eventfd full again");
  // Two free: a pair fits.
  rec(a.close(e4), "close");
  rec(a.close(e2), "close");
  int r = static_cast<int>(rec(a.pipe2(p, 0), "pipe2 two free"));
  if (r == 0) {
    a.close(p[0]);
    a.close(p[1]);
  }
  if (e1 >= 0) a.close(e1);
  return out;
}

TEST(Limits, MaxFdsMatchesLinuxRlimit) {
  // Linux: a child with RLIMIT_NOFILE = lowest free + 3.
  uepoll_support::ChildResult child = uepoll_support::run_in_child([](int out) {
    int rep = fcntl(out, F_DUPFD, 600);  // report pipe out of the way
    close(out);
    // Inherited descriptors (e.g. 10 from a CI harness) would make holes:
    // close whatever sits just above the lowest free number (child only).
    rel::FreeMap fm0 = rel::probe_free(rel::linux_is_open, 0, 8);
    for (int o : fm0.occupied)
      if (o != rep) close(o);
    rel::FreeMap fm = rel::probe_free(rel::linux_is_open, 0, 8);
    bool dense = fm.occupied.empty();
    int lo = fm.base;
    struct rlimit rl = {static_cast<rlim_t>(lo + 3), static_cast<rlim_t>(lo + 3)};
    std::string s;
    if (!dense) {
      s = "NOT DENSE";
    } else {
      // The report pipe's write end sits above lo: it was moved to 600.
      setrlimit(RLIMIT_NOFILE, &rl);
      for (auto& line : fd_limit_scenario(linux_api())) s += line + "\n";
    }
    if (write(rep, s.data(), s.size()) < 0) _exit(2);
  });
  ASSERT_TRUE(child.started) << "pipe or fork failed: errno " << child.error;
  std::string linux_out = child.output;
  if (linux_out == "NOT DENSE") GTEST_SKIP() << "kernel fd table has holes near the lowest free fd";
  // uepoll: max_fds = open count + 3.
  KnobGuard g("max_fds");
  ASSERT_TRUE(g.ok);
  int open = rel::uepoll_open_count();
  ASSERT_EQ(uep_tuning_set("max_fds", open + 3), 0);
  std::string uep_out;
  for (auto& line : fd_limit_scenario(uepoll_api())) uep_out += line + "\n";
  EXPECT_EQ(uep_out, linux_out);
  EXPECT_EQ(rel::uepoll_open_count(), open) << "descriptors leaked";
}

// --- fault injection -------------------------------------------------------

struct FaultStats {
  long faults = 0;  // calls that failed with ENOMEM
  long calls = 0;
  unsigned long long allocs_on_success = 0;  // allocations the clean call made
};
long g_total_faults = 0;

// Runs `call` with fail_alloc_after = 0,1,2,...  `undo` releases what a
// successful call created.  `instances` are dumped before and after.
void fault_loop(const char* what, const std::vector<int>& instances, const std::function<int()>& call,
                const std::function<void(int)>& undo, FaultStats* st) {
  for (long k = 0; k < 64; ++k) {
    std::vector<std::string> before;
    for (int e : instances) before.push_back(dump(e));
    std::string fds_before = fd_table();
    unsigned long long a0 = uep_debug_alloc_count();
    ASSERT_EQ(uep_tuning_set("fail_alloc_after", k), 0);
    errno = 0;
    int r = call();
    int e = errno;
    ASSERT_EQ(uep_tuning_set("fail_alloc_after", -1), 0);
    unsigned long long used = uep_debug_alloc_count() - a0;
    st->calls++;
    if (r < 0) {
      EXPECT_EQ(e, ENOMEM) << what << " with fail_alloc_after=" << k << " failed with "
                           << rel::errno_name(e);
      st->faults++;
      g_total_faults++;
      for (size_t i = 0; i < instances.size(); ++i)
        EXPECT_EQ(dump(instances[i]), before[i]) << what << " k=" << k << ": instance " << i
                                                 << " changed by a failed call";
      EXPECT_EQ(fd_table(), fds_before) << what << " k=" << k << ": descriptor table changed";
      if (e != ENOMEM) return;
      continue;
    }
    undo(r);
    if (used <= static_cast<unsigned long long>(k)) {  // never reached the fault
      st->allocs_on_success = used;
      return;
    }
  }
  ADD_FAILURE() << what << ": still allocating after 64 faults";
}

class FaultInjection : public ::testing::TestWithParam<int> {};  // param: alloc_reuse

TEST_P(FaultInjection, EveryAllocatingCall) {
  KnobGuard reuse("alloc_reuse"), watches("max_user_watches");
  ASSERT_TRUE(reuse.ok);
  ASSERT_EQ(uep_tuning_set("alloc_reuse", GetParam()), 0);
  const int open_at_start = rel::uepoll_open_count();
  // Topology: P --> E --> leaf ; E2 separate.  ADDs into E take the full
  // check path because E is watched.
  int P = uep_epoll_create1(0), E = uep_epoll_create1(0), E2 = uep_epoll_create1(0);
  int leaf = uep_eventfd(1, EFD_NONBLOCK), efd = uep_eventfd(0, EFD_NONBLOCK);
  ASSERT_GE(P, 0);
  ASSERT_GE(E, 0);
  ASSERT_GE(E2, 0);
  ASSERT_GE(leaf, 0);
  ASSERT_GE(efd, 0);
  struct epoll_event ev {};
  ev.events = EPOLLIN;
  ASSERT_EQ(uep_epoll_ctl(P, EPOLL_CTL_ADD, E, &ev), 0);
  ASSERT_EQ(uep_epoll_ctl(E, EPOLL_CTL_ADD, leaf, &ev), 0);
  const long live_watches = 2;
  std::vector<int> inst = {P, E, E2};
  auto close_fd = [](int fd) { uep_close(fd); };
  struct Case {
    const char* name;
    std::function<int()> call;
    std::function<void(int)> undo;
  };
  int pair[2];
  std::vector<Case> cases = {
      {"epoll_create1", [] { return uep_epoll_create1(0); }, close_fd},
      {"epoll_create", [] { return uep_epoll_create(1); }, close_fd},
      {"eventfd", [] { return uep_eventfd(0, EFD_NONBLOCK); }, close_fd},
      {"pipe2", [&] { return uep_pipe2(pair, O_NONBLOCK); },
       [&](int) {
         uep_close(pair[0]);
         uep_close(pair[1]);
       }},
      {"socketpair", [&] { return uep_socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, pair); },
       [&](int) {
         uep_close(pair[0]);
         uep_close(pair[1]);
       }},
      {"timerfd_create", [] { return uep_timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK); }, close_fd},
      {"dup", [&] { return uep_dup(efd); }, close_fd},
      {"epoll_ctl ADD leaf (flat)",
       [&] {
         struct epoll_event e{EPOLLIN, {}};
         return uep_epoll_ctl(E2, EPOLL_CTL_ADD, efd, &e);
       },
       [&](int) { uep_epoll_ctl(E2, EPOLL_CTL_DEL, efd, nullptr); }},
      {"epoll_ctl ADD leaf (watched instance)",
       [&] {
         struct epoll_event e{EPOLLIN | EPOLLET, {}};
         return uep_epoll_ctl(E, EPOLL_CTL_ADD, efd, &e);
       },
       [&](int) { uep_epoll_ctl(E, EPOLL_CTL_DEL, efd, nullptr); }},
      {"epoll_ctl ADD EXCLUSIVE",
       [&] {
         struct epoll_event e{EPOLLIN | EPOLLEXCLUSIVE, {}};
         return uep_epoll_ctl(E2, EPOLL_CTL_ADD, efd, &e);
       },
       [&](int) { uep_epoll_ctl(E2, EPOLL_CTL_DEL, efd, nullptr); }},
      {"epoll_ctl ADD instance into instance",
       [&] {
         struct epoll_event e{EPOLLIN, {}};
         return uep_epoll_ctl(E2, EPOLL_CTL_ADD, P, &e);
       },
       [&](int) { uep_epoll_ctl(E2, EPOLL_CTL_DEL, P, nullptr); }},
      {"epoll_ctl MOD", [&] {
         struct epoll_event e{EPOLLIN | EPOLLOUT, {}};
         return uep_epoll_ctl(E, EPOLL_CTL_MOD, leaf, &e);
       },
       [](int) {}},
  };
  for (auto& c : cases) {
    FaultStats st;
    fault_loop(c.name, inst, c.call, c.undo, &st);
    std::printf("[faults alloc_reuse=%d] %-40s %ld calls, %ld ENOMEM faults, %llu allocations when clean\n",
                GetParam(), c.name, st.calls, st.faults, st.allocs_on_success);
    // A call that allocates must have been failed at least once (dup and
    // an ADD served from the item cache may legitimately allocate nothing).
    if (st.allocs_on_success > 0) {
      EXPECT_GT(st.faults, 0) << c.name << " allocates but never hit an injected failure";
    }
  }
  // The instances still work after all that.
  uint64_t one = 1;
  ASSERT_EQ(uep_write(efd, &one, 8), 8);
  struct epoll_event out[4];
  EXPECT_EQ(uep_epoll_wait(P, out, 4, 0), 1);
  // No watch leaked: exactly `live_watches` are in use, so a limit of
  // live_watches + 1 allows one more ADD and no second.
  ASSERT_EQ(uep_tuning_set("max_user_watches", live_watches + 1), 0);
  EXPECT_EQ(uep_epoll_ctl(E2, EPOLL_CTL_ADD, efd, &ev), 0) << "watch accounting leaked by failed ADDs";
  EXPECT_EQ(uep_epoll_ctl(E2, EPOLL_CTL_ADD, leaf, &ev), -1);
  EXPECT_EQ(errno, ENOSPC);
  for (int f : {P, E, E2, leaf, efd}) uep_close(f);
  EXPECT_EQ(rel::uepoll_open_count(), open_at_start) << "descriptors leaked";
}

INSTANTIATE_TEST_SUITE_P(AllocReuse, FaultInjection, ::testing::Values(0, 1));

struct Report : ::testing::Environment {
  void TearDown() override { std::printf("[faults] total ENOMEM faults injected: %ld\n", g_total_faults); }
};
const auto* const kReport = ::testing::AddGlobalTestEnvironment(new Report);

}  // namespace
