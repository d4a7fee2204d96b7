// spinlock.h - SpinLock: the short, non-sleeping lock used for wait queues
// and ready lists (levels 6 and 7 of lock_order.h).  Test-and-test-and-set
// with a pause, then sched_yield after a bounded spin so that a preempted
// holder on a small machine gets the CPU back.
#pragma once

#include "core/cpu_relax.h"

#include <atomic>
#include <sched.h>

namespace uepoll::core {

// Number of SpinLocks the calling thread holds.  While it is nonzero a
// wakeup that needs a system call (ThreadWaiter::kick) is deferred; the
// release of the thread's last SpinLock performs it (flush_deferred_kicks,
// core/waiter.cpp), so no spin lock is ever held across a system call.
extern thread_local int spin_depth;
void flush_deferred_kicks() noexcept;

class SpinLock {
 public:
  void lock() noexcept {
    for (;;) {
      // acquire: pairs with the release in unlock(); everything the previous
      // holder wrote is visible to us.
      if (!locked_.exchange(true, std::memory_order_acquire)) {
        ++spin_depth;
        return;
      }
      int spins = 0;
      while (locked_.load(std::memory_order_relaxed)) {
        if (++spins < 128) {
          cpu_relax();
        } else {
          sched_yield();
          spins = 0;
        }
      }
    }
  }
  bool try_lock() noexcept {
    if (locked_.exchange(true, std::memory_order_acquire)) return false;
    ++spin_depth;
    return true;
  }
  void unlock() noexcept {
    locked_.store(false, std::memory_order_release);
    if (--spin_depth == 0) flush_deferred_kicks();
  }
  bool is_locked() const noexcept { return locked_.load(std::memory_order_relaxed); }

 private:
  std::atomic<bool> locked_{false};
};

}  // namespace uepoll::core
