// spinlock.h - SpinLock: the short, non-sleeping lock used for wait queues
// and ready lists (levels 6 and 7 of lock_order.h).  Test-and-test-and-set
// with a pause, then sched_yield after a bounded spin so that a preempted
// holder on a small machine gets the CPU back.
#pragma once

#include <atomic>
#include <sched.h>

namespace uepoll::core {

class SpinLock {
 public:
  void lock() noexcept {
    for (;;) {
      // acquire: pairs with the release in unlock(); everything the previous
      // holder wrote is visible to us.
      if (!locked_.exchange(true, std::memory_order_acquire)) return;
      int spins = 0;
      while (locked_.load(std::memory_order_relaxed)) {
        if (++spins < 128) {
          __builtin_ia32_pause();
        } else {
          sched_yield();
          spins = 0;
        }
      }
    }
  }
  bool try_lock() noexcept { return !locked_.exchange(true, std::memory_order_acquire); }
  void unlock() noexcept { locked_.store(false, std::memory_order_release); }
  bool is_locked() const noexcept { return locked_.load(std::memory_order_relaxed); }

 private:
  std::atomic<bool> locked_{false};
};

}  // namespace uepoll::core
