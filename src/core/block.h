// block.h - the one loop a blocking call sleeps in (Linux
// wait_event_interruptible / sk_wait_event): block_on() for built-in
// objects, whose state the wait queue's lock guards, and
// block_on_unlocked() for files whose condition is someone else's code
// (UserFile's callbacks, TableFile's provider operations).
//
// op() returns a result, or -EAGAIN when the caller should wait.  The
// first call is made before anything is queued; a non-blocking call
// returns its -EAGAIN.  Otherwise the thread queues a WaiterEntry on wq
// (non-exclusive, woken by any key intersecting wait_mask; key 0 wakes
// all), calls op again, sleeps and retries, with every signal blocked
// between the check and the sleep.  block_on calls op under wq's lock
// before queueing; block_on_unlocked queues first and calls op with no
// lock held, so a wake issued after op saw "not ready" finds the entry.
//
// What ends the sleep without op's answer:
// - a signal handler without SA_RESTART: -EINTR;
// - handlers that all have SA_RESTART (or a stop): the call goes on
//   sleeping, as Linux restarts it (signal(7)), unless `restart` is false
//   (a call that has already moved data returns its partial count after
//   any handler, so it passes false and gets -EINTR);
// - with a deadline (SO_RCVTIMEO / SO_SNDTIMEO, absolute CLOCK_MONOTONIC):
//   -EAGAIN when it passes, and -EINTR after any handler (Linux
//   sock_intr_errno: a socket call with a timeout is never restarted);
// - the file handed over to the kernel (core/handover.h), in a call whose
//   caller makes it again there: -EINTR with uep__moved set, so that a
//   call that already moved data returns its partial count, and
//   uep__moved_left the time its deadline left (tv_sec -1: none).
//
// before_sleep() runs before each sleep, after the entry is queued and with
// no lock held (Linux's kill_fasync before a pipe read or write waits).
//
// The entry lives in the waiter's memory (ScopedEntry), not on the stack:
// a forked child reuses the stacks of the parent's other threads.
//
// Locks: takes wq (level 11); block_on's op runs under it and must not take
// lower levels; block_on_unlocked's op runs with no uepoll lock.  Never
// holds a lock while sleeping.
#pragma once

#include "core/handover.h"
#include "core/waiter.h"
#include "core/waitqueue.h"

#include <cerrno>
#include <ctime>

namespace uepoll::core {

// A call that its caller can make again on the kernel object leaves a file
// that is handed over (handover.h) even where it would not sleep: true,
// with the time its deadline had left noted (the caller then returns
// -EINTR, or the count it has moved so far).  Called under the lock that
// guards the data the call adds or takes: the converter marks the file
// before it drains the data under that lock, so every byte is either
// drained by it or moved by the call made again.
inline bool leave_if_handed_over(bool handed_over, const timespec* deadline = nullptr) noexcept {
  if (!handed_over || !movable_call()) return false;
  note_moved(deadline ? time_left(*deadline) : timespec{-1, 0});
  return true;
}

struct NoBeforeSleep {
  void operator()() const noexcept {}
};

template <bool kOpLocked, class Op, class BeforeSleep = NoBeforeSleep>
long block_loop(WaitQueue& wq, bool nonblock, uint32_t wait_mask, const timespec* deadline, bool restart, Op&& op,
                BeforeSleep&& before_sleep = BeforeSleep{}) noexcept {
  long r;
  if (kOpLocked) {
    wq.lock();
    r = op();
    wq.unlock();
  } else {
    r = op();
  }
  if (r != -EAGAIN || nonblock) return r;

  int err = 0;
  ThreadWaiter* w = ThreadWaiter::self(&err);
  if (!w) return -err;
  ScopedEntry lease(w);
  WaiterEntry& we = lease.get();
  we.mask = wait_mask;
  we.movable = movable_call();
  SignalBlock blocked;  // no handler between the check and the sleep
  auto dequeue = [&] {
    wq.lock();
    if (we.entry.queued()) wq.remove_locked(&we.entry);
    wq.unlock();
  };
  for (;;) {
    w->prepare();
    wq.lock();
    if (kOpLocked) {
      r = op();
      if (r != -EAGAIN) {
        wq.unlock();
        return r;
      }
    }
    if (we.movable && wq.handed_over()) {
      wq.unlock();
      note_moved(deadline ? time_left(*deadline) : timespec{-1, 0});
      return -EINTR;
    }
    wq.add_locked(&we.entry);
    wq.unlock();
    if (!kOpLocked) {
      r = op();
      if (r != -EAGAIN) {
        dequeue();
        return r;
      }
    }
    before_sleep();
    const int s = deadline ? w->sleep(deadline, &blocked.saved()) : w->sleep_restartable(&blocked.saved());
    dequeue();
    if (s == -EINTR || (s == -kErestartSys && !restart)) return -EINTR;
    if (s == 0) return -EAGAIN;  // the deadline passed
  }
}

template <class Op, class BeforeSleep = NoBeforeSleep>
long block_on(WaitQueue& wq, bool nonblock, uint32_t wait_mask, Op&& op, bool restart = true,
              BeforeSleep&& before_sleep = BeforeSleep{}) noexcept {
  return block_loop<true>(wq, nonblock, wait_mask, nullptr, restart, op, before_sleep);
}

template <class Op>
long block_on_unlocked(WaitQueue& wq, bool nonblock, uint32_t wait_mask, const timespec* deadline, bool restart,
                       Op&& op) noexcept {
  return block_loop<false>(wq, nonblock, wait_mask, deadline, restart, op);
}

}  // namespace uepoll::core
