// vcond.cpp - condition variables on uepoll waits (see vcond.h).
// Locks: a bucket's Mutex (9.7), alone; kicks under it.
#include "core/vcond.h"

#include "core/mutex.h"
#include "core/waiter.h"

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <new>

namespace uepoll::core::vcond {

namespace {

struct Waiter {
  Waiter* prev = nullptr;
  Waiter* next = nullptr;
  const void* cond = nullptr;
  ThreadWaiter* w = nullptr;
  // Set by signal() under the bucket lock before its kick (which is seq_cst);
  // the waiter loads it with acquire after a seq_cst fence that follows its
  // prepare() (so a signal between the two is seen either way).
  std::atomic<bool> signalled{false};
  bool queued = false;
};

struct Bucket {
  Mutex mu{lock_class::kCondBucket};
  Waiter* head UEP_GUARDED_BY(mu) = nullptr;
  Waiter* tail UEP_GUARDED_BY(mu) = nullptr;
};
Bucket g_buckets[64];

Bucket& bucket_of(const void* cond) noexcept {
  const auto a = reinterpret_cast<uintptr_t>(cond);
  return g_buckets[(a >> 4 ^ a >> 10) & 63];
}

void unlink_locked(Bucket& b, Waiter* x) noexcept UEP_REQUIRES(b.mu) {
  (x->prev ? x->prev->next : b.head) = x->next;
  (x->next ? x->next->prev : b.tail) = x->prev;
  x->prev = x->next = nullptr;
  x->queued = false;
}

}  // namespace

int wait(const void* cond, const timespec* deadline, void (*unlock)(void*), void (*relock)(void*),
         void* mutex, bool interruptible) noexcept {
  int err = 0;
  ThreadWaiter* w = ThreadWaiter::self(&err);
  if (!w) return err;
  ThreadWaiter::Hold hold(w);
  hold.open(true);  // its sleeps let handlers run
  Waiter me;
  me.cond = cond;
  me.w = w;
  Bucket& b = bucket_of(cond);
  w->prepare();  // before a signaller can see this waiter
  {
    MutexLock l(b.mu);
    me.prev = b.tail;
    (b.tail ? b.tail->next : b.head) = &me;
    b.tail = &me;
    me.queued = true;
  }
  unlock(mutex);
  int result = 0;
  for (;;) {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (me.signalled.load(std::memory_order_acquire)) break;
    const int s = w->sleep(deadline, nullptr);  // signal handlers run; the wait goes on
    if (me.signalled.load(std::memory_order_acquire)) break;
    if (s == 0 || (s == -EINTR && interruptible)) {
      result = s == 0 ? ETIMEDOUT : EINTR;
      break;
    }
    w->prepare();  // a stray kick, or a handler ran: sleep again
  }
  {
    MutexLock l(b.mu);
    if (me.queued) unlink_locked(b, &me);
  }
  // A signal that came with the timeout counts: Linux returns 0 then too.
  if (me.signalled.load(std::memory_order_acquire)) result = 0;
  relock(mutex);
  return result;
}

void signal(const void* cond, bool all) noexcept {
  Bucket& b = bucket_of(cond);
  MutexLock l(b.mu);
  for (Waiter* x = b.head; x;) {
    Waiter* next = x->next;
    if (x->cond == cond) {
      unlink_locked(b, x);
      x->signalled.store(true, std::memory_order_release);
      x->w->kick();
      if (!all) return;
    }
    x = next;
  }
}

// Not analysed: the child's one thread makes each bucket lock anew and
// clears what it guarded (no other thread can hold or wait for it).
void fork_child() noexcept UEP_NO_THREAD_SAFETY_ANALYSIS {
  for (Bucket& b : g_buckets) {
    new (&b.mu) Mutex(lock_class::kCondBucket);
    b.head = b.tail = nullptr;
  }
}

}  // namespace uepoll::core::vcond
