// busy_poll.cpp - Instance::busy_wait: the spin a blocking wait does before
// it sleeps when the instance has busy_poll_usecs > 0 (beyond Linux, issue
// 10; Linux 6.9's EPIOCSPARAMS spins on NAPI queues, uepoll on the ready
// list itself).
//
// The spinner is not queued on waiters_, so a wake callback that queues an
// item meanwhile sees no sleeper (waiters_.active_hint() == 0) and makes no
// wakeup system call; the spinner sees the item with its next look and
// harvests it without sleeping.  While spinning on user space: no system
// call (the clock is read through the vDSO, ready_lock_ only with
// try_lock, never the yielding lock()), the CPU pause hint between looks.
// An instance with kernel descriptors adds one poll() of its kernel side
// to every look (KernelWatch::ready, the readiness test uep_poll uses: it
// consumes no event); the spinner is not asleep in the shadow epoll either,
// so a kernel descriptor's event wakes nobody and the spinner's harvest
// takes it.  *kernel then says the look that found the event asked the
// kernel, so that the wait's harvest asks it too.
//
// The window adapts (BusyPoll::shift): a spin helps only when the thread
// that will queue the event runs on another CPU meanwhile.  When it does
// not (more runnable threads than CPUs, or a producer that is itself
// waiting for this thread), every spin burns its whole window and delays
// the producer: each window that ends without an event halves the next one
// (down to usecs >> 12), each that finds an event doubles it again, and
// while it is reduced one wait in 64 probes with the whole usecs (an event
// then restores it at once).  So busy_poll_usecs is the most a wait spins.
//
// Locks: ready_lock_ (12), try_lock only, held for one read; with a kernel
// side, KernelWatch::ready's (kernel_watch.h), no lock held when it is called.
#include "core/cpu_relax.h"
#include "core/tuning.h"
#include "core/vclock.h"
#include "core/waiter.h"
#include "epoll/instance.h"
#include "epoll/kernel_watch.h"

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

bool Instance::busy_wait(const timespec* deadline, SpinWindow* win, bool* kernel) noexcept {
  if (core::vclock::on()) return false;  // no spinning on a clock that stands still
  if (win->started && (win->end.tv_sec != 0 || win->end.tv_nsec != 0) && !before(core::monotonic_now(), win->end)) {
    // A window resumed after a harvest that found nothing (another thread
    // took the event) ends on time even if every look finds something.
    win->end = timespec{};
    return false;
  }
  if (!win->started) {
    win->started = true;
    const uint32_t us = busy_.usecs.load(std::memory_order_relaxed);
    uint64_t ns = static_cast<uint64_t>(us) * 1000u;
    if (const unsigned shift = busy_.shift.load(std::memory_order_relaxed); shift != 0 && ns != 0) {
      if ((busy_.probe.fetch_add(1, std::memory_order_relaxed) & 63) == 63)
        win->probe = true;
      else
        ns >>= shift;
    }
    if (ns == 0) {
      win->end = timespec{};
      return false;
    }
    timespec rel{static_cast<time_t>(ns / 1000000000u), static_cast<long>(ns % 1000000000u)};
    win->end = core::deadline_after(rel);
    if (deadline && before(*deadline, win->end)) win->end = *deadline;
  }
  if (win->end.tv_sec == 0 && win->end.tv_nsec == 0) return false;
  for (unsigned i = 0;; ++i) {
    // try_lock: lock() would sched_yield() under contention, a system call.
    if (!ready_lock_.is_locked() && ready_lock_.try_lock()) {
      const bool ready = events_available_locked();
      ready_lock_.unlock();
      if (ready) {
        busy_.spin_found_event(win->probe);
        return true;
      }
    }
    if (KernelWatch* kw = kernel_watch(); kw && kw->ready(this)) {
      busy_.spin_found_event(win->probe);
      *kernel = true;
      return true;
    }
    for (int k = 0; k < 16; ++k) core::cpu_relax();
    if ((i & 7) == 7) {
      timespec now;
      clock_gettime(CLOCK_MONOTONIC, &now);  // vDSO: no system call
      if (!before(now, win->end)) {
        win->end = timespec{};
        busy_.spin_missed();
        return false;
      }
    }
  }
}

}  // namespace uepoll::epoll
