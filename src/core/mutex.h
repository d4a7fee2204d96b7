// mutex.h - Mutex: uepoll's sleeping lock (a std::mutex) with its lock class
// (core/lock_order.h), counted in the thread's lock state
// (core/lock_state.h: signal handlers and the fork gate see it) and checked
// by the lock checker in lockdep builds (core/lockdep.h).  Used for every
// non-spin lock: topology target mutexes, ctl, shard and scan mutexes, the
// nested-poll mutex and the leaf mutexes (fd table, item cache, reclaim
// registry, waiter pool, timer registry).  Never taken under a SpinLock.
#pragma once

#include "core/lock_order.h"
#include "core/lock_state.h"
#include "core/lockdep.h"
#include "core/thread_safety.h"

#include <mutex>

namespace uepoll::core {

class UEP_CAPABILITY("mutex") Mutex {
 public:
  explicit constexpr Mutex(const LockClass& cls) noexcept : cls_(&cls) {}
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void lock() noexcept UEP_ACQUIRE() {
    lock_enter();
    lockdep_acquire(cls_, this);
    m_.lock();
  }
  bool try_lock() noexcept UEP_TRY_ACQUIRE(true) {
    lock_enter();
    if (!m_.try_lock()) {
      lock_exit();
      return false;
    }
    lockdep_acquire(cls_, this);
    return true;
  }
  void unlock() noexcept UEP_RELEASE() {
    lockdep_release(cls_, this);
    m_.unlock();
    lock_exit();
  }
  const LockClass& lock_class() const noexcept { return *cls_; }

 private:
  std::mutex m_;
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
