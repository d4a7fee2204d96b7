// busy_poll.cpp - Instance::busy_wait: the spin a blocking wait does before
// it sleeps when the instance has busy_poll_usecs > 0 (beyond Linux, issue
// 10; Linux 6.9's EPIOCSPARAMS spins on NAPI queues, uepoll on the ready
// list itself).
//
// The spinner is not queued on waiters_, so a wake callback that queues an
// item meanwhile sees no sleeper (waiters_.active_hint() == 0) and makes no
// wakeup system call; the spinner sees the item with its next look and
// harvests it without sleeping.  While spinning: no system call (the clock
// is read through the vDSO, ready_lock_ only with try_lock, never the
// yielding lock()), the CPU pause hint between looks.
//
// Locks: ready_lock_ (7), try_lock only, held for one read.
#include "core/cpu_relax.h"
#include "core/tuning.h"
#include "core/waiter.h"
#include "epoll/instance.h"

#include <ctime>

namespace uepoll::epoll {

uint32_t default_busy_poll_usecs() noexcept {
  return static_cast<uint32_t>(core::knobs().busy_poll_usecs.load(std::memory_order_relaxed));
}

namespace {

bool before(const timespec& a, const timespec& b) noexcept {
  return a.tv_sec != b.tv_sec ? a.tv_sec < b.tv_sec : a.tv_nsec < b.tv_nsec;
}

}  // namespace

bool Instance::busy_wait(const timespec* deadline, SpinWindow* win) noexcept {
  if (!win->started) {
    win->started = true;
    const uint32_t us = busy_.usecs.load(std::memory_order_relaxed);
    if (us == 0) {
      win->end = timespec{};
      return false;
    }
    timespec rel{static_cast<time_t>(us / 1000000), static_cast<long>(us % 1000000) * 1000};
    win->end = core::deadline_after(rel);
    if (deadline && before(*deadline, win->end)) win->end = *deadline;
  }
  if (win->end.tv_sec == 0 && win->end.tv_nsec == 0) return false;
  for (unsigned i = 0;; ++i) {
    // try_lock: lock() would sched_yield() under contention, a system call.
    if (!ready_lock_.is_locked() && ready_lock_.try_lock()) {
      const bool ready = events_available_locked();
      ready_lock_.unlock();
      if (ready) return true;
    }
    for (int k = 0; k < 16; ++k) core::cpu_relax();
    if ((i & 7) == 7) {
      timespec now;
      clock_gettime(CLOCK_MONOTONIC, &now);  // vDSO: no system call
      if (!before(now, win->end)) {
        win->end = timespec{};
        return false;
      }
    }
  }
}

}  // namespace uepoll::epoll
