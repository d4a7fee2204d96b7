// spinlock.h - SpinLock: the short, non-sleeping lock used for wait queues,
// ready lists and object leaf state (levels 11, 12, 13 and 14 of
// core/lock_order.h).  Test-and-test-and-set; a waiter backs off with the
// bounded policy of core/backoff.h (pause, sched_yield, short sleeps).
//
// The lock word holds its owner: 0 when free, else the address of the
// owning thread's ThreadLockState (unique among live threads), set by the
// same compare-and-swap that takes the lock.  So a signal handler can tell
// "held by my own thread" (held_by_me(): it must not wait) from "held by
// another thread" (it may spin: a holder never waits for anything while
// holding a leaf).
//
// Every SpinLock counts in the thread's lock state (core/lock_state.h):
// while one is held a wakeup that needs a system call (ThreadWaiter::kick)
// is deferred, and the release of the last one performs it, so no spin lock
// is ever held across a system call.  In lockdep builds every acquisition
// is checked against the lock order (core/lockdep.h).
#pragma once

#include "core/backoff.h"
#include "core/lock_order.h"
#include "core/lock_state.h"
#include "core/lockdep.h"
#include "core/thread_safety.h"

#include <atomic>
#include <cstdint>

namespace uepoll::core {

class UEP_CAPABILITY("spinlock") SpinLock {
 public:
  explicit constexpr SpinLock(const LockClass& cls) noexcept : cls_(&cls) {}
  SpinLock(const SpinLock&) = delete;
  SpinLock& operator=(const SpinLock&) = delete;

  void lock() noexcept UEP_ACQUIRE() {
    lock_enter();
    lockdep_acquire(cls_, this);
    const uintptr_t me = self();
    uintptr_t expected = 0;
    // acquire: pairs with the release in unlock(); everything the previous
    // holder wrote is visible to us.
    if (!word_.compare_exchange_strong(expected, me, std::memory_order_acquire, std::memory_order_relaxed))
      [[unlikely]] lock_slow(me);
    ++tls_lock_state.spin;
  }
  bool try_lock() noexcept UEP_TRY_ACQUIRE(true) {
    lock_enter();
    uintptr_t expected = 0;
    if (!word_.compare_exchange_strong(expected, self(), std::memory_order_acquire, std::memory_order_relaxed)) {
      lock_exit();
      return false;
    }
    lockdep_acquire(cls_, this);
    ++tls_lock_state.spin;
    return true;
  }
  void unlock() noexcept UEP_RELEASE() {
    lockdep_release(cls_, this);
    word_.store(0, std::memory_order_release);
    ThreadLockState& t = tls_lock_state;
    if (--t.spin == 0 && t.kicks) [[unlikely]]
      flush_deferred_kicks();
    lock_exit();
  }
  // lock() and unlock() of a SpinLock nested inside `outer`, a SpinLock
  // the caller holds for the whole inner section.  The thread's lock state
  // already reads "inside uepoll, under a SpinLock" (held > 0, spin > 0)
  // and the inner release can be neither the last lock nor the last
  // SpinLock (no deferred work or kicks to run), so both leave that state
  // as it is; the lock word and lockdep's checks are those of lock().
  void lock_nested(const SpinLock& outer) noexcept UEP_ACQUIRE() UEP_REQUIRES(outer) {
    outer.assert_held();
    lockdep_acquire(cls_, this);
    const uintptr_t me = self();
    uintptr_t expected = 0;
    // acquire: pairs with the release in unlock() and unlock_nested().
    if (!word_.compare_exchange_strong(expected, me, std::memory_order_acquire, std::memory_order_relaxed))
      [[unlikely]] lock_slow(me);
  }
  void unlock_nested(const SpinLock& outer) noexcept UEP_RELEASE() UEP_REQUIRES(outer) {
    outer.assert_held();
    lockdep_release(cls_, this);
    // release: pairs with the acquire in lock(), try_lock() and lock_nested().
    word_.store(0, std::memory_order_release);
  }
  bool is_locked() const noexcept { return word_.load(std::memory_order_relaxed) != 0; }
  // True if the calling thread holds it (exact for the caller's own
  // thread: only this thread can store its own token).
  bool held_by_me() const noexcept { return word_.load(std::memory_order_relaxed) == self(); }
  // Preconditions of a `_locked` helper (Abseil's Mutex::AssertHeld): in
  // lockdep builds, aborts unless the calling thread holds this lock (the
  // word holds the owner, so the check is one load); compiled out
  // otherwise.  Tells the analysis the lock is held from here on.
  void assert_held() const noexcept UEP_ASSERT_CAPABILITY(this) {
#if UEPOLL_LOCKDEP
    if (!held_by_me()) [[unlikely]]
      lockdep_not_held(cls_);
#endif
  }
  const LockClass& lock_class() const noexcept { return *cls_; }

 private:
  static uintptr_t self() noexcept { return reinterpret_cast<uintptr_t>(&tls_lock_state); }
  void lock_slow(uintptr_t me) noexcept {
    Backoff b;
    for (;;) {
      while (word_.load(std::memory_order_relaxed) != 0) b.pause();
      uintptr_t expected = 0;
      if (word_.compare_exchange_weak(expected, me, std::memory_order_acquire, std::memory_order_relaxed)) return;
    }
  }

  std::atomic<uintptr_t> word_{0};
  const LockClass* cls_;
};

// RAII holder of a SpinLock.
class UEP_SCOPED_CAPABILITY SpinGuard {
 public:
  explicit SpinGuard(SpinLock& l) noexcept UEP_ACQUIRE(l) : l_(l) { l_.lock(); }
  ~SpinGuard() UEP_RELEASE() { l_.unlock(); }
  SpinGuard(const SpinGuard&) = delete;
  SpinGuard& operator=(const SpinGuard&) = delete;

 private:
  SpinLock& l_;
};

}  // namespace uepoll::core
