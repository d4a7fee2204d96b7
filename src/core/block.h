// block.h - block_on(): the one way a blocking read or write sleeps.
//
// op() is called with wq locked and returns a result, or -EAGAIN when the
// caller should wait.  For a non-blocking file the -EAGAIN is returned.
// Otherwise the thread queues a WaiterEntry on wq (non-exclusive, woken by
// any key intersecting wait_mask), sleeps, and retries.  A signal handler
// without SA_RESTART ends the call with -EINTR; after handlers with
// SA_RESTART (or a stop) the call goes on sleeping, as Linux restarts
// it (signal(7)), unless `restart` is false: a call that has already
// transferred data returns its partial count after any handler, so it
// passes false and gets -EINTR (ThreadWaiter::sleep_restartable).
//
// Locks: takes wq (level 6); op runs under it and must not take lower
// levels.  Never holds a lock while sleeping.
#pragma once

#include "core/waiter.h"
#include "core/waitqueue.h"

#include <cerrno>

namespace uepoll::core {

// before_sleep() runs before each sleep, with no lock held (Linux's
// kill_fasync before a pipe read or write waits).
struct NoBeforeSleep {
  void operator()() const noexcept {}
};

template <class Op, class BeforeSleep = NoBeforeSleep>
long block_on(WaitQueue& wq, bool nonblock, uint32_t wait_mask, Op&& op, bool restart = true,
              BeforeSleep&& before_sleep = BeforeSleep{}) noexcept {
  wq.lock();
  long r = op();
  wq.unlock();
  if (r != -EAGAIN || nonblock) return r;

  int err = 0;
  ThreadWaiter* w = ThreadWaiter::self(&err);
  if (!w) return -err;
  ScopedEntry lease(w);  // not on the stack: see ThreadWaiter::take_entry
  WaiterEntry& we = lease.get();
  we.mask = wait_mask;
  SignalBlock blocked;
  for (;;) {
    w->prepare();
    wq.lock();
    r = op();
    if (r != -EAGAIN) {
      wq.unlock();
      return r;
    }
    wq.add_locked(&we.entry);
    wq.unlock();
    before_sleep();
    const int s = w->sleep_restartable(&blocked.saved());
    wq.lock();
    if (we.entry.queued()) wq.remove_locked(&we.entry);
    wq.unlock();
    if (s == -EINTR || (s == -kErestartSys && !restart)) return -EINTR;
  }
}

}  // namespace uepoll::core
