// kernel_sleep_stress_test.cpp - the sleep of an instance with kernel
// descriptors under stress (owned by the kernel-descriptor tests): several
// long sleepers and several leavers (waits of 0-3 ms that time out and
// leave, some through epoll_pwait with a mask, some polling the instance's
// kernel descriptor once it has one) on one instance holding three kernel
// eventfds (ET), three uepoll eventfds (ET) and a kernel pipe (LT), while a
// producer writes the eventfds.  Half-way through the churn the round
// ends the direct sleep of some of its instances (docs/design.md section 8,
// "The hand-over"): the instance's kernel descriptor is made, it is nested
// into a parent, or it gets a child with a kernel descriptor.
//
// After about every other event of the churn the leavers pause (none is
// inside a wait), and after the churn they stop; then what a lost wakeup
// would leave behind shows: an event written and never taken by the long sleepers
// (each is given 3 s; a correct wakeup takes it in microseconds), a count
// read twice or never (the values read must sum to the values written), an
// LT event some sleeper never sees, a kernel descriptor or parent that does
// not show the LT readiness.  Round count: UEPOLL_SLEEP_STRESS_ROUNDS
// (default 120, scaled down under sanitizers).
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "rel_common.h"

using namespace uepoll_test;
using Clock = std::chrono::steady_clock;

namespace {

// Tags: kernel eventfd i is kKern + i, uepoll eventfd i kUser + i.
constexpr int kFds = 3;  // of each kind: more than a 1- or 2-event buffer holds
constexpr uint64_t kKern = 10, kUser = 20, kLevel = 3, kChildTag = 7;
constexpr int kLong = 3, kLeavers = 2, kChurn = 40;
constexpr auto kGiveUp = std::chrono::seconds(3);

enum class Hand { kNone, kKernelFd, kNested, kChild };
const char* hand_name(Hand h) {
  switch (h) {
    case Hand::kNone: return "none";
    case Hand::kKernelFd: return "kernel fd";
    case Hand::kNested: return "nested in a parent";
    case Hand::kChild: return "child with a kernel fd";
  }
  return "?";
}

bool add(int ep, int fd, uint32_t events, uint64_t tag) {
  struct epoll_event ev{};
  ev.events = events;
  ev.data.u64 = tag;
  return uep_epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) == 0;
}

// Waits (bounded) until pred() holds.
template <class P>
bool eventually(P pred) {
  const auto end = Clock::now() + kGiveUp;
  while (!pred()) {
    if (Clock::now() > end) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return true;
}

struct Round {
  int ep = -1, kev[kFds] = {-1, -1, -1}, uev[kFds] = {-1, -1, -1}, pipe_rd = -1, pipe_wr = -1;
  std::atomic<uint64_t> written{0}, taken{0};
  std::atomic<bool> leave{false}, stop{false}, level_phase{false}, paused{false};
  std::atomic<int> active{0};  // leavers inside a wait
  std::atomic<int> saw_level{0};  // bit per long sleeper
  std::atomic<int> exited{0};
  std::atomic<int> kfd{-1};  // the instance's kernel descriptor, once made
  std::atomic<int> child_efd{-1};  // the child's kernel eventfd, once it has one

  // One event taken: ET eventfds are read (the count goes to `taken`), the
  // LT pipe is only noted.
  void take(const struct epoll_event& e, int who) {
    uint64_t v = 0;
    if (e.data.u64 >= kKern && e.data.u64 < kKern + kFds) {
      if (::read(kev[e.data.u64 - kKern], &v, 8) == 8) taken.fetch_add(v);
    } else if (e.data.u64 >= kUser && e.data.u64 < kUser + kFds) {
      if (uep_read(uev[e.data.u64 - kUser], &v, 8) == 8) taken.fetch_add(v);
    } else if (e.data.u64 == kChildTag) {
      if (::read(child_efd.load(), &v, 8) == 8) taken.fetch_add(v);
    } else if (e.data.u64 == kLevel && who >= 0 && level_phase.load()) {
      saw_level.fetch_or(1 << who);
    }
  }

  void long_sleeper(int who) {
    struct epoll_event out[4];
    const int maxevents = who == 0 ? 1 : 4;  // one that can take a single event
    while (!stop.load()) {
      const int n = uep_epoll_wait(ep, out, maxevents, 10000);
      for (int k = 0; k < n; ++k) take(out[k], who);
      if (n > 0 && (saw_level.load() & (1 << who))) std::this_thread::yield();
    }
    exited.fetch_add(1);
  }

  void leaver(int who, uint64_t seed) {
    rel::Rng rng(seed);
    sigset_t none;
    sigemptyset(&none);
    struct epoll_event out[2];
    while (!leave.load()) {
      if (paused.load()) {
        std::this_thread::yield();
        continue;
      }
      active.fetch_add(1);  // seq_cst, with paused: a Dekker pair with pause()
      if (paused.load()) {
        active.fetch_sub(1);
        continue;
      }
      const int timeout = static_cast<int>(rng.next() % 4);
      const int k = kfd.load();
      int n;
      if (who == 0) {
        n = uep_epoll_wait(ep, out, 1, timeout);
      } else if (k >= 0 && rng.next() % 2) {  // a kernel event loop: poll the kernel fd, then harvest
        struct pollfd p{k, POLLIN, 0};
        ::poll(&p, 1, timeout);
        n = uep_epoll_wait(ep, out, 2, 0);
      } else {
        n = uep_epoll_pwait(ep, out, 2, timeout, &none);
      }
      for (int k = 0; k < n; ++k) take(out[k], -1);
      active.fetch_sub(1);
    }
  }

  // No leaver is inside a wait (or taking an event) until resume().
  void pause() {
    paused.store(true);
    while (active.load() > 0) std::this_thread::yield();
  }
  void resume() { paused.store(false); }
};

// Ends the direct sleep of r.ep (while its sleepers sleep); returns the
// descriptor that must show r.ep's LT readiness (-1: none), and in *extra
// what to close at the end.
int hand_over(Round& r, Hand h, std::vector<int>* extra) {
  switch (h) {
    case Hand::kNone: return -1;
    case Hand::kKernelFd: {
      const int k = uep_epoll_kernel_fd(r.ep);
      r.kfd.store(k);
      return k < 0 ? -2 : k;
    }
    case Hand::kNested: {
      const int p = uep_epoll_create1(0);
      extra->push_back(p);
      return add(p, r.ep, EPOLLIN, 9) ? p : -2;
    }
    case Hand::kChild: {
      const int c = uep_epoll_create1(0);
      const int k = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
      extra->push_back(c);
      extra->push_back(-k - 1);  // a kernel descriptor (encoded)
      if (!add(c, k, EPOLLIN, 8) || !add(r.ep, c, EPOLLIN | EPOLLET, kChildTag)) return -2;
      r.child_efd.store(k);
      return -1;
    }
  }
  return -2;
}

bool readable(int fd) {
  struct pollfd p{fd, POLLIN, 0};
  const bool kernel = !uep_is_uepoll_fd(fd);
  const int n = kernel ? ::poll(&p, 1, 3000) : uep_poll(&p, 1, 3000);
  return n == 1 && (p.revents & POLLIN);
}

// One round; returns "" or what went wrong.
std::string run_round(Hand h, uint64_t seed) {
  Round r;
  int pfd[2];
  r.ep = uep_epoll_create1(0);
  if (r.ep < 0 || ::pipe2(pfd, O_NONBLOCK | O_CLOEXEC) != 0) return "setup failed";
  r.pipe_rd = pfd[0];
  r.pipe_wr = pfd[1];
  for (int i = 0; i < kFds; ++i) {
    r.kev[i] = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    r.uev[i] = uep_eventfd(0, EFD_NONBLOCK);
    if (r.kev[i] < 0 || r.uev[i] < 0) return "setup failed";
    if (!add(r.ep, r.kev[i], EPOLLIN | EPOLLET, kKern + i) || !add(r.ep, r.uev[i], EPOLLIN | EPOLLET, kUser + i))
      return "ctl failed";
  }
  if (!add(r.ep, r.pipe_rd, EPOLLIN, kLevel)) return "ctl failed";

  std::vector<std::thread> sleepers, leavers;
  for (int i = 0; i < kLong; ++i) sleepers.emplace_back([&r, i] { r.long_sleeper(i); });
  for (int i = 0; i < kLeavers; ++i) leavers.emplace_back([&r, i, seed] { r.leaver(i, seed * 7 + i); });

  std::string err;
  std::vector<int> extra;
  int shows = -1;
  rel::Rng rng(seed);
  for (int i = 0; i < kChurn && err.empty(); ++i) {
    const uint64_t one = 1;
    const bool kernel = rng.next() % 2;
    const int which = static_cast<int>(rng.next() % kFds);
    const int child = r.child_efd.load();
    if (child >= 0 && rng.next() % 3 == 0) {  // through the child's hub
      if (::write(child, &one, 8) != 8) err = "write failed";
    } else if ((kernel ? ::write(r.kev[which], &one, 8) : uep_write(r.uev[which], &one, 8)) != 8) {
      err = "write failed";
    }
    r.written.fetch_add(1);
    if (i == kChurn / 2 && (shows = hand_over(r, h, &extra)) == -2) err = "hand-over failed";
    if (rng.next() % 3 == 0) std::this_thread::sleep_for(std::chrono::microseconds(rng.next() % 300));
    if (rng.next() % 2 && err.empty()) {
      // Only the long sleepers now: everything written so far must be
      // taken by their wakeups (a lost one leaves an event behind).
      r.pause();
      if (!eventually([&] { return r.taken.load() >= r.written.load(); }))
        err = "churn, event " + std::to_string(i) + ": an event was never taken (" +
              std::to_string(r.written.load() - r.taken.load()) + " left)";
      r.resume();
    }
  }
  // The leavers go; only the long sleepers' wakeups can take what is left.
  r.leave.store(true);
  for (auto& t : leavers) t.join();
  if (err.empty() && !eventually([&] { return r.taken.load() >= r.written.load(); }))
    err = "churn: an event was never taken (" + std::to_string(r.written.load() - r.taken.load()) + " left)";
  for (int kind = 0; kind < 2 && err.empty(); ++kind) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // (most) sleepers back asleep
    const uint64_t one = 1;
    r.written.fetch_add(1);
    if ((kind ? ::write(r.kev[0], &one, 8) : uep_write(r.uev[0], &one, 8)) != 8) err = "write failed";
    if (err.empty() && !eventually([&] { return r.taken.load() >= r.written.load(); }))
      err = std::string("quiet: a ") + (kind ? "kernel" : "user-space") + " event was never taken";
  }
  // Level-triggered: every sleeper sees it; so do the instance's kernel
  // descriptor and its parent.
  r.level_phase.store(true);
  if (err.empty() && ::write(r.pipe_wr, "x", 1) != 1) err = "pipe write failed";
  if (err.empty() && !eventually([&] { return r.saw_level.load() == (1 << kLong) - 1; }))
    err = "LT: only sleepers " + std::to_string(r.saw_level.load()) + " (bits) saw it";
  if (err.empty() && shows >= 0 && !readable(shows)) err = "LT: the kernel fd or parent does not show it";
  char c;
  while (::read(r.pipe_rd, &c, 1) == 1) {
  }

  r.stop.store(true);
  const auto end = Clock::now() + std::chrono::seconds(20);
  while (r.exited.load() < kLong && Clock::now() < end) {  // each edge wakes one
    const uint64_t one = 1;
    r.written.fetch_add(1);
    uep_write(r.uev[0], &one, 8);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  for (auto& t : sleepers) t.join();
  uint64_t v;
  for (int i = 0; i < kFds; ++i) {
    if (uep_read(r.uev[i], &v, 8) == 8) r.taken.fetch_add(v);
    if (::read(r.kev[i], &v, 8) == 8) r.taken.fetch_add(v);
  }
  if (r.child_efd.load() >= 0 && ::read(r.child_efd.load(), &v, 8) == 8) r.taken.fetch_add(v);
  if (err.empty() && r.taken.load() != r.written.load())
    err = "counts: written " + std::to_string(r.written.load()) + ", read " + std::to_string(r.taken.load());
  for (int fd : extra) fd < 0 ? ::close(-fd - 1) : uep_close(fd);
  uep_close(r.ep);
  for (int i = 0; i < kFds; ++i) {
    uep_close(r.uev[i]);
    ::close(r.kev[i]);
  }
  for (int fd : {r.pipe_rd, r.pipe_wr}) ::close(fd);
  return err;
}

TEST(KernelSleepStress, SleepersLeaversAndHandOvers) {
  const long rounds = rel::env_long("UEPOLL_SLEEP_STRESS_ROUNDS", rel::scaled(120, 12));
  const Hand hands[] = {Hand::kNone, Hand::kKernelFd, Hand::kNested, Hand::kChild};
  const auto t0 = Clock::now();
  long done = 0;
  for (long i = 0; i < rounds; ++i, ++done) {
    const Hand h = hands[i % 4];
    const std::string err = run_round(h, 0x5eed0000u + static_cast<uint64_t>(i));
    ASSERT_EQ(err, "") << "round " << i << ", hand-over: " << hand_name(h);
  }
  const double s = std::chrono::duration<double>(Clock::now() - t0).count();
  std::printf("kernel sleep stress: %ld rounds (%d long sleepers, %d leavers, %d events each) in %.2f s\n", done,
              kLong, kLeavers, kChurn, s);
}

}  // namespace
