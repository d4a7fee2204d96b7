// instance_wait.cpp - epoll_wait on an instance (Linux ep_poll) and the
// harvest that copies events out (ep_send_events): each taken item is
// re-polled, reported, and a level-triggered one requeued at the tail.
//
// Locks (core/lock_order.h): the nested-poll mutex (8) only with the
// lockless_nested_poll knob off; scan_mutex_ (9) for the whole harvest;
// ready_lock_ (12) around list steps only, never while polling a file or
// copying to the caller; waiters_' lock (13) inside ready_lock_ to queue
// and dequeue a sleeper.  No lock is held while sleeping or spinning.
#include "epoll/instance.h"

#include "core/reclaim.h"
#include "core/tuning.h"
#include "core/user_memory.h"
#include "core/vclock.h"
#include "core/waiter.h"
#include "epoll/deferred_puts.h"
#include "epoll/kernel_watch.h"
#include "epoll/topology.h"

#include <cerrno>
#include <new>
#include <optional>

namespace uepoll::epoll {

// ---------------------------------------------------------------------------
// Harvest and readiness

int Instance::send_events(struct epoll_event* evs, int maxevents) noexcept {
  DeferredPuts puts;
  core::reclaim::ReadGuard guard;  // for files polled unpinned (pin_for_poll)
  // With lockless_nested_poll off, the global nested-poll mutex is taken
  // before the scan mutex here too, so that it is always the outer one.
  topology::NestedPollGuard nested(!core::knob(core::knobs().lockless_nested_poll));
  core::MutexLock scan(scan_mutex_);
  ListLink tx;
  int res = 0;
  int writable = -1;  // events the buffer can take; probed at the first copy
  // ready_lock_ is held at the top of each iteration: taking the next item
  // shares a critical section with finishing the previous one, so a harvest
  // of n items takes the lock n + 1 times.
  ready_lock_.lock();
  start_scan_locked(&tx);
  while (res < maxevents && tx.next != &tx) {
    Item* it = Item::from_rdlink(tx.next);
    bool pinned;
    core::File* f = take_locked(it, &pinned);
    ready_lock_.unlock();

    uint32_t events;
    uint64_t data;
    it->read_event(&events, &data);
    // Linux ep_item_poll(): re-poll now; a file being released polls as 0.
    const uint32_t revents = f ? (f->poll(1) & events) : 0;
    if (pinned) puts.put(f);
    if (revents && writable < 0)
      writable = static_cast<int>(core::writable_prefix(evs, sizeof(struct epoll_event) * maxevents) /
                                  sizeof(struct epoll_event));

    ready_lock_.lock();
    bool fault = false;
    // A DEL may have run while we polled; a ONESHOT item may have been
    // disabled (UEP_EPOLL_CTL_DISABLE writes its mask under ready_lock_).
    if (revents && it->registered.load(std::memory_order_relaxed) &&
        (!(events & EPOLLONESHOT) || it->events.load(std::memory_order_relaxed) == events)) {
      if (res >= writable) {
        // Linux: the copy faulted; put it back, EFAULT if nothing was copied.
        list_add_head_locked(&tx, it);
        fault = true;
      } else {
        struct epoll_event* out = &evs[res];
        out->events = revents;
        out->data.u64 = data;
        ++res;
        if (events & EPOLLONESHOT) {
          uint32_t expected = events;
          it->events.compare_exchange_strong(expected, events & kPrivateBits, std::memory_order_relaxed);
        } else if (!(events & EPOLLET) && !it->linked()) {
          list_add_tail_locked(&rdllist_, it);  // LT: back at the tail
        }
      }
    }
    // Dropping the registration's reference here only recycles memory
    // (item_cache's free-list mutex is a leaf).
    if (give_back_locked(it)) item_unref(it);
    if (fault) {
      if (res == 0) res = -EFAULT;
      break;
    }
  }
  done_scan_locked(&tx);
  ready_lock_.unlock();
  return res;
}

// ---------------------------------------------------------------------------
// wait (Linux ep_poll)

namespace {

// A core::SignalBlock begun on demand, with the part of std::optional's
// interface that wait() uses.  Constructing it writes one flag, where
// GCC's std::optional zero-fills its whole payload (the 128-byte saved
// mask) on every call.
class MaybeSignalBlock {
 public:
  MaybeSignalBlock() noexcept {}
  ~MaybeSignalBlock() {
    if (on_) block_.~SignalBlock();
  }
  MaybeSignalBlock(const MaybeSignalBlock&) = delete;
  MaybeSignalBlock& operator=(const MaybeSignalBlock&) = delete;
  // Every signal blocked.
  explicit operator bool() const noexcept { return on_ && block_.all(); }
  // Blocks every signal (from a partial block too).
  void emplace() noexcept {
    if (on_) return block_.block_all();
    ::new (&block_) core::SignalBlock();
    on_ = true;
  }
  // Blocks the signals of an epoll_pwait mask.  Preconditions: not begun.
  void emplace_partial(const sigset_t* set) noexcept {
    ::new (&block_) core::SignalBlock(set);
    on_ = true;
  }
  const core::SignalBlock* operator->() const noexcept { return &block_; }

 private:
  union {
    core::SignalBlock block_;
  };
  bool on_ = false;
};

// The direct sleep (kernel_watch.h): epoll_pwait2 on the shadow epoll with
// the caller's mask, again while it ends with nothing.  Signals are blocked
// around it as around the classic sleep (Instance::sleep_blocks and the
// comment in wait()): a first sleep runs with the caller's mask, a re-sleep
// (`again`, or one in this loop after a doorbell whose event was taken)
// with every signal blocked.  Returns KernelWatch::sleep_direct's result,
// never 0.  Inlined into wait(): its first round makes the call with no
// frame of its own.
[[gnu::always_inline]] inline int sleep_direct(Instance* ep, KernelWatch* kw, struct epoll_event* evs, int maxevents, const timespec* deadline,
                 const sigset_t* sigmask, MaybeSignalBlock* blocked, bool again) noexcept {
  if (!*blocked && ep->sleep_blocks(again)) blocked->emplace();
  const sigset_t* mask = *blocked ? (sigmask ? sigmask : &(*blocked)->saved()) : sigmask;
  for (;;) {
    const int n = kw->sleep_direct(ep, evs, maxevents, deadline, mask);
    if (n != 0) return n;
    if (!*blocked) {
      (void)ep->sleep_blocks(true);
      blocked->emplace();
      mask = sigmask ? sigmask : &(*blocked)->saved();
    }
  }
}

// Whether a direct sleep may be tried now (virtual time: the classic sleep
// registers with the clock; a deadline needs epoll_pwait2, Linux 5.11).
[[gnu::always_inline]] inline bool direct_ok(KernelWatch* kw, const timespec* deadline) noexcept {
  return kw->direct_hint() && !core::vclock::on() && (!deadline || core::have_epoll_pwait2());
}

// What wait() does with sleep_direct()'s result n: false when n is the
// call's result (events, -EINTR, -EFAULT); true when it goes round, with
// kTimedOut (a last harvest) and kNotDirect (the classic sleep from now on
// in this call) noted.
bool direct_goes_round(int n, bool* timed_out, bool* classic) noexcept {
  if (n == KernelWatch::kTimedOut)
    *timed_out = true;
  else if (n == KernelWatch::kNotDirect)
    *classic = true;
  else if (n != KernelWatch::kAgain)
    return false;
  return true;
}

// Whether a direct sleep that goes round with `n` slept: kAgain (events
// listed: a level-triggered item the harvest may find no longer ready) and
// kNotDirect come before the sleep.
bool direct_slept(int n) noexcept { return n != KernelWatch::kAgain && n != KernelWatch::kNotDirect; }

}  // namespace

int Instance::wait(struct epoll_event* evs, int maxevents, const timespec* deadline, bool nonblocking,
                   const sigset_t* sigmask) noexcept {
  // Beyond Linux, same results: timeout 0 on an unchanged ready list reads
  // its snapshot and writes no shared line (instance_snapshot.cpp).
  if (int n = 0; nonblocking && !sigmask && send_events_unchanged(evs, maxevents, &n)) return n;
  KernelWatch* const kw0 = kernel_watch();
  // A blocking wait that sleeps directly at once: with a kernel side it
  // harvests nothing before the first sleep (the sleep itself looks at the
  // ready list), and with no busy window it goes straight there.
  const bool direct = kw0 && !nonblocking && direct_ok(kw0, deadline);
  const bool direct_first = direct && busy_.usecs.load(std::memory_order_relaxed) == 0;
  // epoll_pwait: the caller's mask is in force for the whole call; we block
  // everything while awake and let the sleep install `sigmask` atomically.
  // Before a first direct sleep (and during a busy poll's spin before it)
  // only what the mask blocks: blocking more would keep a signal that Linux
  // discards (SIGCHLD at SIG_DFL) pending, to end that sleep with EINTR
  // (the classic sleep watches for those).  A handler that runs meanwhile
  // is one that ran before the call (during a spin: uepoll.h).
  MaybeSignalBlock blocked;
  if (sigmask && direct) blocked.emplace_partial(sigmask);
  else if (sigmask) blocked.emplace();

  bool timed_out = nonblocking;
  bool eintr = false;
  // With a kernel side the first look at the ready list is made by the
  // harvest (timeout 0) or under ready_lock_ by the sleep itself, which
  // goes round to harvest when events are listed.
  bool eavail = false;
  bool classic = false;  // the direct sleep said no: sleep the classic way
  bool slept = false;    // a sleep of this call (direct or classic) has ended
  if (!kw0) {
    ready_lock_.lock();
    eavail = events_available_locked();
    ready_lock_.unlock();
  } else if (direct_first) {
    const int n = sleep_direct(this, kw0, evs, maxevents, deadline, sigmask, &blocked, false);
    if (!direct_goes_round(n, &timed_out, &classic)) return n;
    eavail = true;
    slept = direct_slept(n);
  }

  SpinWindow spin;
  core::ThreadWaiter* w = nullptr;
  std::optional<core::ScopedEntry> lease;  // not on the stack: see ThreadWaiter::take_entry
  bool pass_on = false;  // this thread was kicked_ (instance.h) and owes the harvest
  bool spun_kernel = false;  // the spin saw the kernel side ready: the harvest asks it
  for (;;) {
    // With a kernel side, its events are only known by asking the kernel.
    KernelWatch* kw = kernel_watch();
    // Before a blocking wait's first sleep with nothing known to be listed,
    // a harvest with a kernel side would only look at the ready list
    // (KernelWatch::harvest, will_sleep), which the sleep does anyway.
    const bool will_sleep = !timed_out && !w && !spun_kernel;
    spun_kernel = false;
    if (eavail || (kw && !will_sleep)) {
      int n = kw ? kw->harvest(this, evs, maxevents, will_sleep) : send_events(evs, maxevents);
      if (pass_on && kw) {
        // A kernel-first harvest may not have scanned the ready list, so
        // its done_scan_locked() did not pass the wakeup on: do it here.
        ready_lock_.lock();
        if (events_available_locked()) wake_one_waiter_locked();
        ready_lock_.unlock();
      }
      pass_on = false;
      if (n != 0) return n;
    }
    if (timed_out) return 0;
    if (eintr) return -EINTR;
    // Beyond Linux: EPIOCSPARAMS (epoll/busy_poll.cpp); a window of 0 never spins.
    if (busy_.usecs.load(std::memory_order_relaxed) != 0 && busy_wait(deadline, &spin, &spun_kernel)) {
      eavail = true;
      continue;
    }
    if (kw && !classic && direct_ok(kw, deadline)) {
      const int n = sleep_direct(this, kw, evs, maxevents, deadline, sigmask, &blocked, slept);
      if (!direct_goes_round(n, &timed_out, &classic)) return n;
      eavail = true;  // kTimedOut (a last harvest), kAgain, kNotDirect: go round
      slept = slept || direct_slept(n);
      continue;
    }
    if (!w) {
      int err = 0;
      w = core::ThreadWaiter::self(&err);
      if (!w) return -err;
      lease.emplace(w);
    }
    core::WaiterEntry& we = lease->get();
    // The first sleep of a call with no mask of its own runs with the
    // thread's mask: a handler that runs before it is one that ran before
    // the call (on Linux a signal may come just before epoll_wait enters
    // the kernel, and the call then sleeps), one that runs inside it ends it
    // with EINTR, and a handler's own uepoll call gives back the wakeup it
    // may take (ThreadWaiter::Hold).  A re-sleep after a wakeup that found
    // nothing must not let a handler run unseen in between (ep_poll checks
    // signal_pending() before it sleeps again), so it blocks every signal,
    // and so does every sleep of the instance after its first re-sleep
    // (sleep_blocks: the one window is that first re-sleep's,
    // docs/linux-deviations.md).  With an epoll_pwait mask every sleep
    // blocks (it watches the signals the mask lets through:
    // ThreadWaiter::sleep); on virtual time too (the sleep's registration
    // with the clock may fire an interval timer, whose SIGALRM must end this
    // very sleep: core/vclock.h).
    if (!blocked && (sleep_blocks(slept) || sigmask || core::vclock::on())) blocked.emplace();
    lease->hold().open(!blocked);
    const bool autoremove = core::knob(core::knobs().exclusive_autoremove);
    we.autoremove = autoremove;
    w->prepare();
    ready_lock_.lock();
    // A call nested in a signal handler that ran as this thread's earlier
    // sleep ended: the outer call has not harvested yet, and must not keep
    // this one's wakeups back.
    if (kicked_ == w) kicked_ = nullptr;
    eavail = events_available_locked();
    if (!eavail) {
      waiters_.lock();
      waiters_.add_exclusive_head_locked(&we.entry);  // Linux: newest sleeper first
      waiters_.unlock();
    }
    ready_lock_.unlock();
    if (eavail) continue;

    // Read after queueing: a kernel side created from now on kicks us
    // (KernelWatch::kick_sleepers takes ready_lock_ after publishing).
    kw = kernel_watch();
    const sigset_t* mask = sigmask ? sigmask : blocked ? &blocked->saved() : nullptr;
    const int s = kw ? kw->sleep(w, deadline, mask) : w->sleep(deadline, mask);

    eavail = true;
    slept = true;
    ready_lock_.lock();
    if (kicked_ == w) {  // from here other wakeups kick again; our harvest follows
      kicked_ = nullptr;
      pass_on = true;
    }
    waiters_.lock();
    if (we.entry.queued()) {
      // Not dequeued by a wakeup (or the 2020 autoremove is off).  A waiter
      // woken just as it timed out still harvests (Linux; kselftest epoll61).
      if (s == 0 && !w->woken()) eavail = false;
      waiters_.remove_locked(&we.entry);
    }
    waiters_.unlock();
    ready_lock_.unlock();
    if (s == 0) timed_out = true;
    if (s == -EINTR) eintr = true;
  }
}
}  // namespace uepoll::epoll
