// waitqueue.h - WaitQueue and WaitEntry: Linux's wait_queue_head_t in user
// space.  Every pollable file owns one; an epoll instance owns a second for
// its epoll_wait sleepers.
//
// Locks: WaitQueue::lock_ (level 11 of core/lock_order.h; an instance's
// waiters_ queue is constructed with its own class, 13).  The lock is also
// the owning object's state lock: objects change their state and call
// wake_locked() while holding it, so a poll that takes the lock sees either
// the old state without the wakeup or the new state.
//
// Wake callbacks run with the lock held.  A callback may remove its own
// entry (autoremove) but no other; it may take locks of higher levels and
// the wait-queue lock of a nested instance (one level down the nesting).
#pragma once

#include "core/spinlock.h"
#include "core/thread_safety.h"

#include <atomic>
#include <cstdint>

namespace uepoll::core {

struct WaitEntry;

}  // namespace uepoll::core

namespace uepoll::epoll {
// The wake functions of the entry kinds that live above core (each
// returns nonzero when the entry "took" the wakeup, which counts against
// nr_exclusive for exclusive entries, like Linux's wait_queue_func_t).
int item_wake(core::WaitEntry* e, uint32_t key) noexcept;            // epoll/instance_ready.cpp
int kernel_signal_wake(core::WaitEntry* e, uint32_t key) noexcept;   // epoll/kernel_watch.cpp
}  // namespace uepoll::epoll

namespace uepoll::core {

// One entry on a wait queue.  Linux's wait_queue_entry carries a function
// pointer; uepoll has exactly three kinds of entry, each with one wake
// function, so the kind bit in `flags` chooses the function and the entry
// is 17 bytes, not 32: an epoll item (epoll::Item, by far the most
// numerous) keeps its own small fields in the 7 bytes of tail padding
// (it holds its entry as a [[no_unique_address]] member).
struct WaitEntry {
  enum : uint8_t {
    kExclusive = 1u << 0,  // WQ_FLAG_EXCLUSIVE: queued at the tail, wakes one
    kItem = 1u << 1,       // kind: an epoll item (epoll/item.h), woken by epoll::item_wake
    kRotate = 1u << 2,     // beyond Linux: exclusive, moves to the tail when
                           // it takes the wakeup (UEP_EPOLLROUNDROBIN)
    kWaiter = 1u << 3,     // kind: a core::WaiterEntry, woken by WaiterEntry::wake
    kSignal = 1u << 4,     // kind: a KernelWatch signal, woken by epoll::kernel_signal_wake
    kOwnerBit = 1u << 7,   // never read or written by the queue: the owner's
  };
  WaitEntry* prev = nullptr;  // guarded by the queue's lock; null = not queued
  WaitEntry* next = nullptr;  // guarded by the queue's lock
  uint8_t flags = 0;          // the kind is set before queueing and never
                              // changes; the rest under the queue's lock

  bool queued() const noexcept { return prev != nullptr; }
};

// The queue is itself the capability (its lock_): callers write
// f->wq().lock() and the analysis follows File::wq() (UEP_RETURN_CAPABILITY).
class UEP_CAPABILITY("wait queue") WaitQueue {
 public:
  explicit WaitQueue(const LockClass& cls = lock_class::kWaitQueue) noexcept : lock_(cls) {
    head_.prev = head_.next = &head_;
  }
  WaitQueue(const WaitQueue&) = delete;
  WaitQueue& operator=(const WaitQueue&) = delete;

  // Not analysed: the capability is the queue, the lock taken its member lock_.
  void lock() noexcept UEP_ACQUIRE() UEP_NO_THREAD_SAFETY_ANALYSIS { lock_.lock(); }
  void unlock() noexcept UEP_RELEASE() UEP_NO_THREAD_SAFETY_ANALYSIS { lock_.unlock(); }
  // lock() and unlock() inside `outer`, a SpinLock held around the whole
  // section (an instance's ready_lock_ around its waiters_): the thread's
  // lock state is left to outer (SpinLock::lock_nested).
  void lock_nested(const SpinLock& outer) noexcept UEP_ACQUIRE() UEP_REQUIRES(outer) UEP_NO_THREAD_SAFETY_ANALYSIS {
    lock_.lock_nested(outer);
  }
  void unlock_nested(const SpinLock& outer) noexcept UEP_RELEASE() UEP_REQUIRES(outer) UEP_NO_THREAD_SAFETY_ANALYSIS {
    lock_.unlock_nested(outer);
  }
  bool is_locked() const noexcept { return lock_.is_locked(); }
  bool held_by_me() const noexcept { return lock_.held_by_me(); }
  // Preconditions of a `_locked` helper: lockdep builds abort unless the
  // calling thread holds the lock (SpinLock::assert_held).
  void assert_held() const noexcept UEP_ASSERT_CAPABILITY(this) { lock_.assert_held(); }

  // Preconditions: lock held.  Non-exclusive entries go to the head,
  // exclusive ones to the tail (Linux add_wait_queue / _exclusive).
  void add_locked(WaitEntry* e) noexcept UEP_REQUIRES(this);
  void add_exclusive_locked(WaitEntry* e) noexcept UEP_REQUIRES(this);
  // Linux __add_wait_queue_exclusive(): exclusive, but at the head, so the
  // newest such sleeper is woken first (what ep_poll uses for epoll_wait
  // sleepers; checked against Linux by Threads.SleepersWokenNewestFirst).
  void add_exclusive_head_locked(WaitEntry* e) noexcept UEP_REQUIRES(this) {
    assert_held();
    add_locked(e);
    e->flags |= WaitEntry::kExclusive;
  }
  // Preconditions: lock held; e queued on this queue.
  void remove_locked(WaitEntry* e) noexcept UEP_REQUIRES(this) {
    assert_held();
    unlink_self(e);
    count_.fetch_sub(1, std::memory_order_relaxed);
  }
  // For a wake callback only: unlinks its own entry (autoremove);
  // wake_locked() notices and keeps the count exact.
  static void unlink_self(WaitEntry* e) noexcept;
  // Lock-free hint: entries queued right now (Linux waitqueue_active()).
  // Relaxed: callers read it after releasing a lock that the adder took
  // after queueing (see Instance::wake_callback), which orders the two.
  bool active_hint() const noexcept { return count_.load(std::memory_order_relaxed) != 0; }
  // Entries queued right now; exact for a caller that holds a lock under
  // which every change of this queue is made (an instance's ready_lock_
  // for its waiters_).  Relaxed, as active_hint().
  uint32_t size_hint() const noexcept { return count_.load(std::memory_order_relaxed); }

  // Preconditions: lock held.  Calls every non-exclusive entry and exclusive
  // entries in FIFO order until nr_exclusive of them returned nonzero
  // (Linux __wake_up_common).  key: the EPOLL* bits of the event, 0 = any.
  // The exclusive entry that ends the walk moves to the tail if it has
  // kRotate (round robin; never during a wake-all walk).  Returns that
  // entry (the last exclusive one that took the wakeup), nullptr if the
  // walk ended without using up nr_exclusive.
  WaitEntry* wake_locked(uint32_t key, int nr_exclusive = 1) noexcept UEP_REQUIRES(this);

  // Preconditions: lock held.  The same walk from the tail (oldest head-
  // added entry first), ending at the first exclusive entry that takes the
  // wakeup: round robin over sleepers queued newest-first (beyond Linux,
  // UEP_EPOLLROUNDROBIN on an instance's own sleepers).
  void wake_oldest_locked(uint32_t key) noexcept UEP_REQUIRES(this);

  // lock(), wake_locked(key, nr_exclusive), unlock(): a wakeup that changes
  // no state under the lock (Linux wake_up_poll / wake_up_interruptible_poll
  // with nr_exclusive 1, wake_up_all with key 0 and nr_exclusive 0).
  // Returns what wake_locked() returned.
  WaitEntry* wake(uint32_t key, int nr_exclusive = 1) noexcept UEP_EXCLUDES(this) {
    lock();
    WaitEntry* took = wake_locked(key, nr_exclusive);
    unlock();
    return took;
  }

  // The queue's file is being handed over (the preload makes a pipe or
  // socket pair a kernel one under the same descriptor numbers): a thread
  // that would sleep on it in a call its caller can make again on the new
  // object leaves instead (core/block.h, fd/poll.cpp; core/handover.h).
  // Kept in the sentinel's flags byte (kHandedOver), which no walk reads.
  // Set and cleared under the lock; handed_over() reads it without the
  // lock (relaxed): a sleeper reads it after the wakeup that
  // wake_waiters_locked() gives it under the same lock, which orders it.
  void set_handed_over_locked(bool on) noexcept UEP_REQUIRES(this);
  bool handed_over() const noexcept UEP_NO_THREAD_SAFETY_ANALYSIS {
    return (__atomic_load_n(&head_.flags, __ATOMIC_RELAXED) & kHandedOver) != 0;
  }
  // Preconditions: lock held.  Calls every kWaiter entry (threads asleep in
  // a call on the file, or in poll/select over it) with key 0; epoll items
  // and kernel-side signals are not called.
  void wake_waiters_locked() noexcept UEP_REQUIRES(this);

  // Preconditions: lock held.  Visits every entry with the kItem flag, first
  // to last; stops when fn returns true.
  template <class F>
  WaitEntry* find_locked(F&& pred) noexcept UEP_REQUIRES(this) {
    assert_held();
    for (WaitEntry* e = head_.next; e != &head_; e = e->next)
      if (pred(e)) return e;
    return nullptr;
  }

 private:
  // In head_.flags: the sentinel is the queue's own entry, so its owner's
  // bit is the queue's.
  static constexpr uint8_t kHandedOver = WaitEntry::kOwnerBit;

  SpinLock lock_;
  std::atomic<uint32_t> count_{0};  // entries queued; written under lock_
  WaitEntry head_ UEP_GUARDED_BY(this);  // sentinel of a circular doubly linked list
};

}  // namespace uepoll::core
