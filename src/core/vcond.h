// vcond.h - condition variables on uepoll waits, for the virtual clock's
// automatic mode under the preload (pthread_cond_* in
// src/preload/interpose_time.c): a thread waiting on a condition variable
// sleeps in ThreadWaiter::sleep_with, so it counts as asleep, its timeout
// follows the virtual clock, and a signal sets its woken flag, which the
// quiescence check sees (docs/design.md, section 12).
//
// What it owns.  The waiters of every condition variable, by address, in 64
// hashed buckets; the pthread_cond_t itself is never touched.
//
// Locks.  Each bucket's Mutex (a leaf, 9.7 of core/lock_order.h), taken with
// no uepoll lock held; wakeups (ThreadWaiter::kick) are issued under it.
// The caller's mutex is released and retaken around the sleep by the
// callbacks the caller gives.
#pragma once

#include <ctime>

namespace uepoll::core::vcond {

// Waits on `cond` until signalled or (deadline non-null) the absolute
// CLOCK_MONOTONIC virtual deadline.  unlock/relock release and retake the
// caller's mutex (after the thread is queued, and before returning).
// 0 (signalled, or a spurious wakeup), ETIMEDOUT, EINTR (only when
// `interruptible`: a signal handler ran), or an errno if the thread has no
// waiter (EMFILE, ENOMEM).
int wait(const void* cond, const timespec* deadline, void (*unlock)(void*), void (*relock)(void*),
         void* mutex, bool interruptible = false) noexcept;
// Wakes the oldest waiter of cond (all: every waiter).
void signal(const void* cond, bool all) noexcept;
// After fork(), in the child (core/fork.cpp): the queued waiters are the
// parent's other threads, whose stacks the child does not have; the lists
// are emptied and the bucket mutexes (possibly copied held) made anew.
void fork_child() noexcept;

}  // namespace uepoll::core::vcond
