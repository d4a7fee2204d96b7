// mutex.h - Mutex: uepoll's sleeping lock (a futex word, core/mutex.cpp)
// with its lock class (core/lock_order.h), counted in the thread's lock
// state (core/lock_state.h: signal handlers and the fork gate see it) and
// checked by the lock checker in lockdep builds (core/lockdep.h).  Used for
// every non-spin lock: topology target mutexes, ctl, shard and scan
// mutexes, the nested-poll mutex and the leaf mutexes (fd table, item
// cache, reclaim registry, waiter pool, timer registry).  Never taken under
// a SpinLock.
//
// Why not std::mutex: an uncontended pthread_mutex_lock + unlock is about
// 50 instructions of type and owner checks around the one atomic each way;
// this lock is the atomic alone inline (a compare-exchange to take it, an
// exchange to drop it) and calls out only to sleep or wake.  The word:
// 0 free, 1 held, 2 held with sleepers possible (the classic three-state
// futex mutex).  Not recursive, no owner, like std::mutex.
#pragma once

#include "core/lock_order.h"
#include "core/lock_state.h"
#include "core/lockdep.h"
#include "core/thread_safety.h"

#include <atomic>

namespace uepoll::core {

class UEP_CAPABILITY("mutex") Mutex {
 public:
  explicit constexpr Mutex(const LockClass& cls) noexcept : cls_(&cls) {}
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void lock() noexcept UEP_ACQUIRE() {
    lock_enter();
    lockdep_acquire(cls_, this);
    int c = 0;
    // acquire: pairs with the release exchange in unlock(): the previous
    // holder's section happens before ours.
    if (!word_.compare_exchange_strong(c, 1, std::memory_order_acquire, std::memory_order_relaxed)) lock_slow(c);
  }
  bool try_lock() noexcept UEP_TRY_ACQUIRE(true) {
    lock_enter();
    int c = 0;
    if (!word_.compare_exchange_strong(c, 1, std::memory_order_acquire, std::memory_order_relaxed)) {  // as lock()
      lock_exit();
      return false;
    }
    lockdep_acquire(cls_, this);
    return true;
  }
  void unlock() noexcept UEP_RELEASE() {
    lockdep_release(cls_, this);
    // release: pairs with the acquire of the next lock().
    if (word_.exchange(0, std::memory_order_release) == 2) wake_one();
    lock_exit();
  }
  // lock()/unlock() without the lock checker, for a member of a set of
  // same-class locks that its caller takes in a fixed order after taking
  // the set's first member with lock() (Instance::ctl_run's shards): the
  // checker sees the set as that one lock.
  void lock_unchecked() noexcept UEP_ACQUIRE() {
    lock_enter();
    int c = 0;
    if (!word_.compare_exchange_strong(c, 1, std::memory_order_acquire, std::memory_order_relaxed)) lock_slow(c);
    lockdep_hold_unchecked(this);
  }
  void unlock_unchecked() noexcept UEP_RELEASE() {
    lockdep_drop_unchecked(this);
    if (word_.exchange(0, std::memory_order_release) == 2) wake_one();
    lock_exit();
  }
  // Preconditions of a `_locked` helper (Abseil's Mutex::AssertHeld): in
  // lockdep builds, aborts unless the calling thread holds this mutex (the
  // checker's per-thread record is the owner: the word has none); compiled
  // out otherwise.  Tells the analysis the lock is held from here on.
  void assert_held() const noexcept UEP_ASSERT_CAPABILITY(this) { lockdep_assert_held(cls_, this); }
  const LockClass& lock_class() const noexcept { return *cls_; }

 private:
  void lock_slow(int c) noexcept;  // sleeps until the word was 0 and is now 2
  void wake_one() noexcept;

  std::atomic<int> word_{0};
  const LockClass* cls_;
};

// RAII holder of a Mutex (std::lock_guard with the annotations).
class UEP_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& m) noexcept UEP_ACQUIRE(m) : m_(m) { m_.lock(); }
  ~MutexLock() UEP_RELEASE() { m_.unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex& m_;
};

// Holds m when `take` is true (a knob-dependent lock).  Not annotated: the
// analysis cannot follow a conditional capability; nothing it would guard
// is annotated as guarded by such a lock.
class MaybeMutexLock {
 public:
  MaybeMutexLock(Mutex& m, bool take) noexcept UEP_NO_THREAD_SAFETY_ANALYSIS : m_(take ? &m : nullptr) {
    if (m_) m_->lock();
  }
  ~MaybeMutexLock() UEP_NO_THREAD_SAFETY_ANALYSIS {
    if (m_) m_->unlock();
  }
  MaybeMutexLock(const MaybeMutexLock&) = delete;
  MaybeMutexLock& operator=(const MaybeMutexLock&) = delete;

 private:
  Mutex* m_;
};

}  // namespace uepoll::core
