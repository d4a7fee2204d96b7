// oom_test.cpp - out of memory, call by call, with every allocation of the
// process failable (tests/support/alloc_fail.cpp replaces operator new and
// malloc & co. in this executable).
//
// For each C API call below and k = 0, 1, 2, ...: build a fresh world of
// objects, take a snapshot through the public API, fail the k-th allocation
// the call makes, and check that the call either succeeded or returned
// -1/ENOMEM -- and then left the snapshot unchanged (open descriptors, every
// instance's registrations and ready list via uep_debug_dump, every
// descriptor's poll() readiness).  The loop ends at the first k that the call
// completes without reaching.  Each call must have been failed at least once
// if it allocates at all (the counts are printed).
#include <uepoll/testing.h>
#include <uepoll/tuning.h>
#include <uepoll/uepoll.h>

#include "../support/alloc_fail.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <functional>
#include <map>
#include <poll.h>
#include <string>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace af = uepoll_test::alloc_fail;

namespace {

constexpr int kScan = 512;  // uepoll descriptors scanned by a snapshot

// The objects every scenario starts from.
//   E2 ──> P ──> {E (eventfd, readable), R (pipe read end, 3 bytes),
//                 S0 (socket end, data queued), T (timerfd, disarmed)}
//   Q: flat instance, empty.  L: eventfd, unregistered.  W: pipe write end.
struct World {
  int P = -1, E2 = -1, Q = -1, E = -1, L = -1, R = -1, W = -1, S0 = -1, S1 = -1, T = -1;
  int kpipe[2] = {-1, -1};  // kernel descriptors for poll()
};

World build() {
  World w;
  w.P = uep_epoll_create1(0);
  w.E2 = uep_epoll_create1(0);
  w.Q = uep_epoll_create1(0);
  w.E = uep_eventfd(1, EFD_NONBLOCK);
  w.L = uep_eventfd(0, EFD_NONBLOCK);
  int p[2], s[2];
  uep_pipe2(p, O_NONBLOCK);
  w.R = p[0];
  w.W = p[1];
  uep_write(w.W, "abc", 3);
  uep_socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, s);
  w.S0 = s[0];
  w.S1 = s[1];
  uep_write(w.S1, "xyz", 3);
  w.T = uep_timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
  epoll_event ev{};
  for (int fd : {w.E, w.R, w.S0, w.T}) {
    ev.events = EPOLLIN | EPOLLOUT;
    ev.data.fd = fd;
    uep_epoll_ctl(w.P, EPOLL_CTL_ADD, fd, &ev);
  }
  ev.events = EPOLLIN;
  ev.data.fd = w.P;
  uep_epoll_ctl(w.E2, EPOLL_CTL_ADD, w.P, &ev);
  if (pipe2(w.kpipe, O_NONBLOCK) < 0) std::abort();
  return w;
}

void teardown(const World& w) {
  for (int i = 0; i < kScan; ++i)
    if (uep_is_uepoll_fd(UEP_FD_BASE + i)) uep_close(UEP_FD_BASE + i);
  close(w.kpipe[0]);
  close(w.kpipe[1]);
}

struct Snapshot {
  std::vector<int> open;
  std::map<int, std::string> dumps;
  std::map<int, short> ready;
  bool operator==(const Snapshot& o) const { return open == o.open && dumps == o.dumps && ready == o.ready; }
  std::string str() const {
    std::string s = "open:";
    char b[64];
    for (int fd : open) {
      std::snprintf(b, sizeof b, " %d", fd - UEP_FD_BASE);
      s.append(b);
    }
    for (const auto& [fd, r] : ready) {
      std::snprintf(b, sizeof b, " [%d:%d]", fd - UEP_FD_BASE, r);
      s.append(b);
    }
    for (const auto& [fd, d] : dumps) {
      std::snprintf(b, sizeof b, "\n%d ", fd - UEP_FD_BASE);
      s.append(b).append(d);
    }
    return s;
  }
};

Snapshot snapshot() {
  Snapshot s;
  for (int i = 0; i < kScan; ++i) {
    int fd = UEP_FD_BASE + i;
    if (!uep_is_uepoll_fd(fd)) continue;
    s.open.push_back(fd);
    char buf[4096];
    if (uep_debug_dump(fd, buf, sizeof buf) >= 0) s.dumps[fd] = buf;
    pollfd p{fd, POLLIN | POLLOUT | POLLPRI | POLLRDHUP, 0};
    if (uep_poll(&p, 1, 0) >= 0) s.ready[fd] = p.revents;
  }
  return s;
}

struct Call {
  const char* name;
  std::function<long(World&)> run;  // the call's result (-1 + errno on failure)
};

std::vector<Call> calls() {
  static char buf[64];
  static uint64_t one = 1;
  auto ev_for = [](uint32_t events, int fd) {
    static epoll_event ev;
    ev = epoll_event{};
    ev.events = events;
    ev.data.fd = fd;
    return &ev;
  };
  static epoll_event out[16];
  return {
      {"epoll_create1", [](World&) { return long(uep_epoll_create1(EPOLL_CLOEXEC)); }},
      {"epoll_create", [](World&) { return long(uep_epoll_create(1)); }},
      {"eventfd", [](World&) { return long(uep_eventfd(3, EFD_SEMAPHORE)); }},
      {"pipe2", [](World&) { int p[2]; return long(uep_pipe2(p, O_NONBLOCK)); }},
      {"socketpair", [](World&) { int s[2]; return long(uep_socketpair(AF_UNIX, SOCK_STREAM, 0, s)); }},
      {"socketpair dgram", [](World&) { int s[2]; return long(uep_socketpair(AF_UNIX, SOCK_DGRAM, 0, s)); }},
      {"socketpair seqpacket", [](World&) { int s[2]; return long(uep_socketpair(AF_UNIX, SOCK_SEQPACKET, 0, s)); }},
      {"timerfd_create", [](World&) { return long(uep_timerfd_create(CLOCK_MONOTONIC, 0)); }},
      {"timerfd_settime", [](World& w) {
         itimerspec t{};
         t.it_value.tv_sec = 3600;
         return long(uep_timerfd_settime(w.T, 0, &t, nullptr));
       }},
      {"timerfd_gettime", [](World& w) { itimerspec t; return long(uep_timerfd_gettime(w.T, &t)); }},
      {"ctl ADD flat", [=](World& w) { return long(uep_epoll_ctl(w.Q, EPOLL_CTL_ADD, w.L, ev_for(EPOLLIN, w.L))); }},
      {"ctl ADD EXCLUSIVE", [=](World& w) {
         return long(uep_epoll_ctl(w.Q, EPOLL_CTL_ADD, w.L, ev_for(EPOLLIN | EPOLLEXCLUSIVE, w.L)));
       }},
      {"ctl ADD into a watched instance", [=](World& w) {
         return long(uep_epoll_ctl(w.P, EPOLL_CTL_ADD, w.L, ev_for(EPOLLIN, w.L)));
       }},
      {"ctl ADD instance into instance", [=](World& w) {
         return long(uep_epoll_ctl(w.Q, EPOLL_CTL_ADD, w.E2, ev_for(EPOLLIN, w.E2)));
       }},
      {"ctl ADD nested (instance into a watched instance)", [=](World& w) {
         return long(uep_epoll_ctl(w.P, EPOLL_CTL_ADD, w.Q, ev_for(EPOLLIN, w.Q)));
       }},
      {"ctl MOD", [=](World& w) { return long(uep_epoll_ctl(w.P, EPOLL_CTL_MOD, w.E, ev_for(EPOLLOUT | EPOLLET, w.E))); }},
      {"ctl DEL", [](World& w) { return long(uep_epoll_ctl(w.P, EPOLL_CTL_DEL, w.E, nullptr)); }},
      {"epoll_wait (ready)", [](World& w) { return long(uep_epoll_wait(w.P, out, 16, 0)); }},
      {"epoll_wait (nested)", [](World& w) { return long(uep_epoll_wait(w.E2, out, 16, 0)); }},
      {"epoll_wait (sleeps 1 ms)", [](World& w) { return long(uep_epoll_wait(w.Q, out, 16, 1)); }},
      {"epoll_pwait", [](World& w) {
         sigset_t m;
         sigemptyset(&m);
         return long(uep_epoll_pwait(w.P, out, 16, 1, &m));
       }},
      {"epoll_pwait2", [](World& w) {
         timespec ts{0, 1000000};
         return long(uep_epoll_pwait2(w.Q, out, 16, &ts, nullptr));
       }},
      {"read eventfd", [](World& w) { return long(uep_read(w.E, buf, 8)); }},
      {"write eventfd", [](World& w) { return long(uep_write(w.E, &one, 8)); }},
      {"read pipe", [](World& w) { return long(uep_read(w.R, buf, sizeof buf)); }},
      {"write pipe", [](World& w) { return long(uep_write(w.W, "0123456789", 10)); }},
      {"write pipe (new page)", [](World& w) {
         static char big[5000];
         return long(uep_write(w.W, big, sizeof big));
       }},
      {"read socket", [](World& w) { return long(uep_read(w.S0, buf, sizeof buf)); }},
      {"write socket", [](World& w) { return long(uep_write(w.S0, "hello", 5)); }},
      {"shutdown", [](World& w) { return long(uep_shutdown(w.S0, SHUT_WR)); }},
      {"dup", [](World& w) { return long(uep_dup(w.E)); }},
      {"close (unregistered)", [](World& w) { return long(uep_close(w.L)); }},
      {"close (registered: release)", [](World& w) { return long(uep_close(w.E)); }},
      {"close (instance)", [](World& w) { return long(uep_close(w.P)); }},
      {"poll (many descriptors, timeout 0)", [](World& w) {
         pollfd p[12];
         int fds[12] = {w.P, w.E2, w.Q, w.E, w.L, w.R, w.W, w.S0, w.S1, w.T, w.kpipe[0], w.kpipe[1]};
         for (int i = 0; i < 12; ++i) p[i] = pollfd{fds[i], POLLIN | POLLOUT, 0};
         return long(uep_poll(p, 12, 0));
       }},
      {"poll (sleeps 1 ms, uepoll and kernel descriptors)", [](World& w) {
         pollfd p[12];
         int fds[12] = {w.Q, w.L, w.L, w.L, w.L, w.L, w.L, w.L, w.L, w.kpipe[0], w.kpipe[0], w.Q};
         for (int i = 0; i < 12; ++i) p[i] = pollfd{fds[i], POLLIN, 0};
         return long(uep_poll(p, 12, 1));
       }},
      {"ctl ADD kernel fd (the instance's first)", [=](World& w) {
         return long(uep_epoll_ctl(w.Q, EPOLL_CTL_ADD, w.kpipe[0], ev_for(EPOLLIN, w.kpipe[0])));
       }},
      {"ctl ADD kernel fd into a watched instance", [=](World& w) {
         return long(uep_epoll_ctl(w.P, EPOLL_CTL_ADD, w.kpipe[0], ev_for(EPOLLIN, w.kpipe[0])));
       }},
      {"uep_debug_dump", [](World& w) {
         char d[4096];
         return long(uep_debug_dump(w.P, d, sizeof d));
       }},
  };
}

// Runs one call for k = 0, 1, ...; returns how many of its allocations
// were failed with ENOMEM and state unchanged.
int fail_each_allocation(const Call& c, bool fresh_thread) {
  int enomem = 0;
  for (long k = 0;; ++k) {
    World w = build();
    Snapshot before = snapshot();
    long r = 0;
    int e = 0;
    bool injected = false;
    auto body = [&] {
      af::arm(k);
      errno = 0;
      r = c.run(w);
      e = errno;
      injected = af::disarm();
    };
    if (fresh_thread)
      std::thread(body).join();  // the thread's first uepoll call: per-thread state is made too
    else
      body();
    // A socket write out of memory is ENOBUFS on Linux (sock_alloc_send_pskb).
    if (r < 0 && e == ENOBUFS && std::strncmp(c.name, "write socket", 12) == 0) e = ENOMEM;
    if (r < 0) {
      EXPECT_EQ(e, ENOMEM) << c.name << ": allocation " << k << " failed, the call gave errno " << e;
      EXPECT_TRUE(injected) << c.name << ": failed with no failure injected";
      Snapshot after = snapshot();
      EXPECT_TRUE(before == after) << c.name << ": allocation " << k << " failed and state changed\nbefore: "
                                   << before.str() << "\nafter: " << after.str();
      ++enomem;
    }
    teardown(w);
    if (!injected) break;  // the call made fewer than k + 1 allocations
    if (k > 2000) {
      ADD_FAILURE() << c.name << ": no end to its allocations";
      break;
    }
  }
  return enomem;
}

TEST(OutOfMemory, EveryAllocationOfEveryCall) {
  // Warm up: every lazily made process-wide state exists (timer service,
  // descriptor table, this thread's waiter and records).
  teardown(build());
  for (const Call& c : calls()) {
    World w = build();
    c.run(w);
    teardown(w);
  }
  // Calls that allocate on every run once warm; each must have met ENOMEM.
  const char* allocating[] = {"epoll_create1", "epoll_create", "eventfd", "pipe2", "socketpair", "socketpair dgram",
                              "socketpair seqpacket", "timerfd_create",
                              "ctl ADD flat", "ctl ADD EXCLUSIVE", "ctl ADD instance into instance",
                              "poll (many descriptors, timeout 0)", "uep_debug_dump",
                              "ctl ADD kernel fd (the instance's first)",
                              "ctl ADD kernel fd into a watched instance"};
  int total = 0;
  for (const Call& c : calls()) {
    int n = fail_each_allocation(c, false);
    std::printf("  %-50s %d allocation(s) failed with ENOMEM, state unchanged\n", c.name, n);
    total += n;
    for (const char* a : allocating) {
      if (std::strcmp(a, c.name) == 0) {
        EXPECT_GT(n, 0) << c.name << " was never failed";
      }
    }
  }
  std::printf("  total: %d\n", total);
}

// The same calls as the first uepoll call of a new thread: its waiter,
// reclamation record and caches are made inside the call.
TEST(OutOfMemory, FirstCallOfAThread) {
  teardown(build());
  int total = 0;
  for (const Call& c : calls()) {
    int n = fail_each_allocation(c, true);
    std::printf("  %-50s %d allocation(s) failed with ENOMEM, state unchanged\n", c.name, n);
    total += n;
  }
  std::printf("  total: %d\n", total);
}

// A kernel descriptor's ADD that ran out of memory added nothing (DEL:
// ENOENT), and the next ADD works in full: the descriptor's events reach
// the instance and, through it, the instance watching it (the kernel side's
// link to its parents is made again after a failed attempt).
TEST(OutOfMemory, KernelDescriptorAddLeavesNothingBehind) {
  teardown(build());
  int failed = 0;
  for (long k = 0;; ++k) {
    World w = build();
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = 7;
    af::arm(k);
    errno = 0;
    const int r = uep_epoll_ctl(w.P, EPOLL_CTL_ADD, w.kpipe[0], &ev);
    const int e = errno;
    const bool injected = af::disarm();
    if (r < 0) {
      ++failed;
      EXPECT_EQ(e, ENOMEM) << "allocation " << k;
      EXPECT_EQ(uep_epoll_ctl(w.P, EPOLL_CTL_DEL, w.kpipe[0], nullptr), -1) << "allocation " << k;
      EXPECT_EQ(errno, ENOENT) << "allocation " << k;
      EXPECT_EQ(uep_epoll_ctl(w.P, EPOLL_CTL_ADD, w.kpipe[0], &ev), 0) << "allocation " << k;
    }
    // Drain P's own events (E2 stays ready through them: level-triggered),
    // then check that the kernel descriptor's event reaches E2 through P.
    epoll_event out[16];
    uep_read(w.E, out, 8);
    uep_read(w.R, out, sizeof out);
    uep_read(w.S0, out, sizeof out);
    uep_epoll_ctl(w.P, EPOLL_CTL_DEL, w.E, nullptr);
    uep_epoll_ctl(w.P, EPOLL_CTL_DEL, w.R, nullptr);
    uep_epoll_ctl(w.P, EPOLL_CTL_DEL, w.S0, nullptr);
    uep_epoll_ctl(w.P, EPOLL_CTL_DEL, w.T, nullptr);
    EXPECT_EQ(uep_epoll_wait(w.E2, out, 16, 0), 0) << "allocation " << k;
    EXPECT_EQ(write(w.kpipe[1], "k", 1), 1);
    EXPECT_EQ(uep_epoll_wait(w.E2, out, 16, 1000), 1) << "allocation " << k;
    const int n = uep_epoll_wait(w.P, out, 16, 0);
    EXPECT_EQ(n, 1) << "allocation " << k;
    if (n == 1) {
      EXPECT_EQ(out[0].data.u64, 7u) << "allocation " << k;
    }
    teardown(w);
    if (!injected) break;
    if (k > 2000) {
      ADD_FAILURE() << "no end to its allocations";
      break;
    }
  }
  std::printf("  ADD of a kernel fd into a watched instance: %d allocation(s) failed with ENOMEM\n", failed);
  EXPECT_GT(failed, 0);
}

// The injector itself: standard library allocations are seen and failed.
TEST(OutOfMemory, InterposerFailsTheStandardLibrary) {
  af::arm(0);
  bool threw = false;
  try {
    std::vector<int> v(100);
    // The buffer escapes: clang may otherwise elide the allocation of a
    // vector nothing reads (allowed for replaceable allocation functions).
    asm volatile("" : : "r"(v.data()) : "memory");
  } catch (const std::bad_alloc&) {
    threw = true;
  }
  EXPECT_TRUE(af::disarm());
  EXPECT_TRUE(threw);
  af::arm(0);
  void* p = malloc(10);
  EXPECT_TRUE(af::disarm());
  EXPECT_EQ(p, nullptr);
  af::arm(1);
  void* a = malloc(10);
  void* b = malloc(10);
  EXPECT_TRUE(af::disarm());
  EXPECT_NE(a, nullptr);
  EXPECT_EQ(b, nullptr);
  free(a);
}

}  // namespace
