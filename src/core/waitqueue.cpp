// waitqueue.cpp - WaitQueue list operations and the wakeup walk.
// Locks: none taken here; every function requires the queue's lock.
#include "core/waitqueue.h"

#include "core/waiter.h"

namespace uepoll::core {

namespace {
// The wake function of e's kind (see WaitEntry).
inline int call(WaitEntry* e, uint32_t key) noexcept {
  if (e->flags & WaitEntry::kItem) return epoll::item_wake(e, key);
  if (e->flags & WaitEntry::kWaiter) return WaiterEntry::wake(e, key);
  return epoll::kernel_signal_wake(e, key);
}
}  // namespace

void WaitQueue::add_locked(WaitEntry* e) noexcept {
  assert_held();
  e->flags &= ~WaitEntry::kExclusive;
  e->prev = &head_;
  e->next = head_.next;
  head_.next->prev = e;
  head_.next = e;
  count_.fetch_add(1, std::memory_order_relaxed);
}

void WaitQueue::add_exclusive_locked(WaitEntry* e) noexcept {
  assert_held();
  e->flags |= WaitEntry::kExclusive;
  e->next = &head_;
  e->prev = head_.prev;
  head_.prev->next = e;
  head_.prev = e;
  count_.fetch_add(1, std::memory_order_relaxed);
}

void WaitQueue::unlink_self(WaitEntry* e) noexcept {
  e->prev->next = e->next;
  e->next->prev = e->prev;
  e->prev = e->next = nullptr;
}

void WaitQueue::wake_oldest_locked(uint32_t key) noexcept {
  assert_held();
  WaitEntry* e = head_.prev;
  while (e != &head_) {
    WaitEntry* prev = e->prev;  // e may remove itself
    const bool exclusive = (e->flags & WaitEntry::kExclusive) != 0;
    const int took = call(e, key);
    if (!e->queued()) count_.fetch_sub(1, std::memory_order_relaxed);  // autoremoved
    if (took && exclusive) break;
    e = prev;
  }
}

WaitEntry* WaitQueue::wake_locked(uint32_t key, int nr_exclusive) noexcept {
  assert_held();
  WaitEntry* e = head_.next;
  while (e != &head_) {
    WaitEntry* next = e->next;  // e may remove itself
    const bool exclusive = (e->flags & WaitEntry::kExclusive) != 0;
    const int took = call(e, key);
    if (!e->queued()) count_.fetch_sub(1, std::memory_order_relaxed);  // autoremoved
    if (took && exclusive && --nr_exclusive == 0) {
      if ((e->flags & WaitEntry::kRotate) && e->queued() && e->next != &head_) {
        unlink_self(e);  // round robin: to the tail (count unchanged)
        e->next = &head_;
        e->prev = head_.prev;
        head_.prev->next = e;
        head_.prev = e;
      }
      return e;
    }
    e = next;
  }
  return nullptr;
}

void WaitQueue::set_handed_over_locked(bool on) noexcept {
  assert_held();
  const uint8_t f = on ? static_cast<uint8_t>(head_.flags | kHandedOver) : static_cast<uint8_t>(head_.flags & ~kHandedOver);
  __atomic_store_n(&head_.flags, f, __ATOMIC_RELAXED);
}

void WaitQueue::wake_waiters_locked() noexcept {
  assert_held();
  WaitEntry* e = head_.next;
  while (e != &head_) {
    WaitEntry* next = e->next;  // e may remove itself
    if (e->flags & WaitEntry::kWaiter) {
      (void)call(e, 0);
      if (!e->queued()) count_.fetch_sub(1, std::memory_order_relaxed);  // autoremoved
    }
    e = next;
  }
}

}  // namespace uepoll::core
