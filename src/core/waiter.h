// waiter.h - how a thread sleeps and how it is woken.
//
// Each thread has one ThreadWaiter with a kernel eventfd, watched
// edge-triggered by a kernel epoll of its own (a second one also holds a
// signalfd, for the sleeps made with every signal blocked).  Sleeping is
// epoll_pwait2() on that epoll (or ppoll() on the eventfd plus kernel
// descriptors, for poll()), which (a) really sleeps in the kernel, (b)
// returns EINTR when a signal handler runs, whatever SA_RESTART says, and
// (c) swaps in a signal mask atomically for the duration of the sleep:
// exactly what epoll_wait / epoll_pwait need (spec section 8.5).  A wakeup
// writes the eventfd only when the sleeper has announced it is (about to
// be) asleep.
//
// Locks: none.  kick() may be called with any lock held (it makes at most
// one eventfd write).  A thread's ThreadWaiter is only touched by other
// threads while one of its entries is queued on a wait queue, under that
// queue's lock; the owner dequeues under the same lock before it returns.
#pragma once

#include "core/own_slot.h"
#include "core/waitqueue.h"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <csignal>
#include <ctime>

struct pollfd;

namespace uepoll::core {

class ThreadWaiter;

// A wait entry that kicks a ThreadWaiter.  Used by epoll_wait (exclusive,
// autoremove), poll() and blocking read/write (non-exclusive, stays queued).
struct WaiterEntry {
  WaitEntry entry{nullptr, nullptr, WaitEntry::kWaiter};  // first member: WaitEntry* <-> WaiterEntry*
  ThreadWaiter* waiter = nullptr;
  uint32_t mask = 0;         // poll(): the events this entry waits for; 0 = any
  bool autoremove = false;   // dequeue itself when it takes a wakeup
  bool movable = false;      // its call leaves a handed-over file (core/handover.h)

  // Wake function for all WaiterEntry entries.
  static int wake(WaitEntry* e, uint32_t key) noexcept;
};
static_assert(offsetof(WaiterEntry, entry) == 0);

class ThreadWaiter {
 public:
  // This thread's waiter; its eventfd is created on first use.  nullptr if
  // the eventfd could not be created (EMFILE/ENFILE/ENOMEM in errno_out).
  static ThreadWaiter* self(int* errno_out) noexcept;

  // One blocking call's use of the waiter, from before its first
  // prepare() to after its last sleep (ScopedEntry holds one).  Every call
  // that prepares or sleeps on the waiter holds one.  A use is open while
  // it prepares and sleeps with signals deliverable outside the sleep's
  // system call (Instance::wait's first sleep, the virtual clock's
  // condition wait): a signal handler may then interrupt it between its
  // prepare() and its sleep.  A call made by such a handler (nested) clears
  // woken_ and may consume the eventfd edge of a kick meant for the
  // interrupted use; as it ends it gives that use a wakeup back: woken_,
  // and an eventfd write when the interrupted use had announced its sleep
  // (it may be about to enter the sleep's system call with the kick
  // already consumed).  The interrupted use sees a spurious wakeup, which
  // every user goes round on, or, where the handler ended its sleep, that
  // sleep's EINTR (given_back_).  A use that is not open blocks signals until
  // its sleep's system call, so a handler only runs inside that call, which
  // ends with EINTR: a nested call there gives nothing back, and the
  // interrupted sleep keeps its EINTR.  Owner thread and its signal
  // handlers only.
  class Hold {
   public:
    // A hold begun later (begin()), or never.
    Hold() noexcept = default;
    explicit Hold(ThreadWaiter* w) noexcept { begin(w); }
    // Preconditions: not begun.
    void begin(ThreadWaiter* w) noexcept {
      w_ = w;
      // Relaxed loads and stores, no read-modify-write: only this thread
      // and its handlers (which restore them before they return) change
      // depth_ and open_.
      outer_open_ = w->depth_.load(std::memory_order_relaxed) > 0 && w->open_.load(std::memory_order_relaxed);
      outer_sleeping_ = outer_open_ && w->sleeping_.load(std::memory_order_relaxed);
      w->open_.store(false, std::memory_order_relaxed);
      w->depth_.store(w->depth_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
      std::atomic_signal_fence(std::memory_order_seq_cst);  // counted before the use begins
    }
    ~Hold() {
      if (!w_) return;
      std::atomic_signal_fence(std::memory_order_seq_cst);  // the use has ended
      w_->depth_.store(w_->depth_.load(std::memory_order_relaxed) - 1, std::memory_order_relaxed);
      w_->open_.store(outer_open_, std::memory_order_relaxed);
      if (outer_open_) w_->give_back(outer_sleeping_);
    }
    // Whether the use's next prepare() and sleep are open (see above).
    // Set before prepare().
    void open(bool on) noexcept {
      w_->open_.store(on, std::memory_order_relaxed);
      std::atomic_signal_fence(std::memory_order_seq_cst);
    }
    Hold(const Hold&) = delete;
    Hold& operator=(const Hold&) = delete;

   private:
    ThreadWaiter* w_ = nullptr;
    bool outer_open_ = false;      // nested in an open use: give it a wakeup back
    bool outer_sleeping_ = false;  // ... which had announced its sleep
  };

  // Clears the woken flag (and given_back_) before the waiter is queued
  // anywhere.
  void prepare() noexcept {
    woken_.store(false, std::memory_order_relaxed);
    given_back_.store(false, std::memory_order_relaxed);
  }
  bool woken() const noexcept { return woken_.load(std::memory_order_seq_cst); }

  // Sleeps until kick(), the absolute CLOCK_MONOTONIC deadline (nullptr =
  // forever), or a signal handler.  The sleep runs with `mask` (nullptr =
  // the thread's current mask).  Returns 1 when kicked, 0 at the deadline,
  // -EINTR after a signal handler ran (or a stop).  With a mask, the caller
  // blocks every signal (SignalBlock) and the sleep watches the signals
  // `mask` lets through with a signalfd: one that Linux would have
  // discarded as it was sent (SIG_IGN, SIGCHLD at SIG_DFL, ...), kept
  // pending because it came while everything was blocked, is discarded and
  // the sleep goes on (without a signalfd, out of descriptors or on a
  // kernel without epoll_pwait2, it ends the sleep with -EINTR).
  int sleep(const timespec* deadline, const sigset_t* mask) noexcept { return sleep_with(nullptr, 0, deadline, mask); }
  // The same, also returning 1 when one of the kernel descriptors in
  // `extra` becomes ready (poll() over uepoll and kernel descriptors).
  int sleep_with(struct pollfd* extra, unsigned long n_extra, const timespec* deadline,
                 const sigset_t* mask) noexcept;

  // The sleep of a blocking read, write, recv or send (core/block.h),
  // which Linux restarts after a handler installed with SA_RESTART
  // (signal(7)).  Preconditions: every signal blocked (SignalBlock);
  // `mask` is the caller's own mask.  Sleeps with `mask` (epoll_pwait2) on
  // a kernel epoll that holds the waiter's eventfd and a signalfd for the
  // signals `mask` lets through: a signal that arrives ends the sleep
  // still pending (docs/design.md, "SA_RESTART").  The dispositions of the
  // pending signals are read, then their handlers are run (ppoll with a
  // mask that lets through exactly those).  Returns 1 when kicked, -EINTR when a
  // handler without SA_RESTART ran, -kErestartSys when only SA_RESTART
  // handlers ran, or none (a stop, an ignored signal).  Without a signalfd
  // (out of descriptors) it is sleep(nullptr, mask): -EINTR after any handler.
  int sleep_restartable(const sigset_t* mask) noexcept;

  // Wakes the owner.  Safe from any thread holding any lock; while the
  // caller holds a SpinLock the system call is deferred to its release.
  void kick() noexcept;

  static void push_pool(ThreadWaiter* w, ThreadWaiter** head) noexcept;
  void write_kick() noexcept;

  // A waiter owned by no thread, used as a signal on a kernel eventfd that
  // other code polls (uep_epoll_kernel_fd, epoll/kernel_watch.h): kick()
  // always writes its eventfd (deferred past a SpinLock as usual).
  // nullptr on failure (errno in errno_out).  Give it back with
  // release_signal(); a deferred kick that reaches it afterwards is as
  // harmless as one reaching a pooled thread waiter.
  // Its eventfd is pinned (core/own_slot.h) until follow_moves: the
  // borrower registers it in kernel epolls by number.
  static ThreadWaiter* acquire_signal(int* errno_out) noexcept;
  // The borrower's registrations follow a move of the eventfd (`moved`
  // moves them: OwnSlot::Moved); the eventfd is no longer pinned.
  // Preconditions: acquired, once.
  void follow_moves(OwnSlot::Moved moved, void* ctx) noexcept;
  void release_signal() noexcept;
  // The eventfd's number: stable while pinned (acquired, before
  // follow_moves), else only a hint.
  int event_fd() const noexcept { return efd_.peek(); }
  // Reads (resets) the eventfd's count through a use of its slot.
  void drain_event_fd() noexcept;
  // Eventfd writes made so far (kick() defers them past a SpinLock); an
  // acquire load pairs with the release increment after each write.
  uint64_t writes() const noexcept { return writes_.load(std::memory_order_acquire); }
  // Yields until writes() reaches `target` (or the waiter is dead: a
  // forked child's kicks write nothing).  For a signal whose kicks were
  // counted when asked for: their writes wait at most for the kickers'
  // SpinLock releases.
  void await_writes(uint64_t target) const noexcept;

  // After fork(), in the child (core/fork.cpp): every waiter made so far
  // belongs to the parent (its kernel eventfd and epoll are open file
  // descriptions shared with it), so each is marked dead and its
  // descriptors closed in the child; the pool is emptied and the forking
  // thread gets a new waiter on its next sleep.  A dead waiter's wait
  // entries (left queued by threads that do not exist in the child) take no
  // wakeup: they unlink themselves and let the next sleeper have it.
  static void fork_child() noexcept;
  bool dead() const noexcept { return dead_; }

  // An entry for one blocking call of the owner (see ScopedEntry below):
  // in the waiter's memory, which is never freed, rather than on the
  // stack, because a forked child reuses the stacks of the parent's other
  // threads while their entries are still queued.  nullptr when both are
  // in use (a signal handler's call nested in a call): the caller then
  // uses its own.  LIFO; owner thread only.
  WaiterEntry* take_entry() noexcept { return entries_used_ < kEntries ? &entries_[entries_used_++] : nullptr; }
  void give_entry() noexcept { --entries_used_; }

 private:
  ThreadWaiter() = default;
  ~ThreadWaiter() = delete;
  static ThreadWaiter* take_pooled() noexcept;
  static ThreadWaiter* make(int* errno_out) noexcept;  // never freed: see the pool in waiter.cpp
  // seq_cst pair (Dekker): the sleeper stores sleeping_ then loads woken_;
  // the waker stores woken_ then loads sleeping_.  At least one of them sees
  // the other's store, so a wakeup is never lost between check and ppoll.
  std::atomic<bool> woken_{false};
  std::atomic<bool> sleeping_{false};
  std::atomic<uint64_t> writes_{0};
  // Uses in progress on this thread (Hold): above 1 only while a signal
  // handler's call runs inside another.  open_: the innermost one is open.
  std::atomic<int> depth_{0};
  std::atomic<bool> open_{false};
  // A nested use's end (Hold): the interrupted use's wakeup back.
  // given_back_: one was given since the last prepare(); a sleep that a
  // handler ended (EINTR) then returns -EINTR rather than the woken flag
  // the handler's call set, so that the signal still ends the wait.
  void give_back(bool was_sleeping) noexcept;
  std::atomic<bool> given_back_{false};
  // The kernel descriptors, each in an OwnSlot (a program's dup2 may take
  // the number: core/own_slot.h; the mover's kick writes efd_, not counted
  // in writes_).
  OwnSlot efd_;
  OwnSlot kep_;  // kernel epoll with efd_ edge-triggered (see self())
  // The kernel epoll (efd_ edge-triggered, sfd_) and signalfd of the
  // sleeps with a mask, made at the first one; sfd_mask_ is sfd_'s mask.
  // Owner thread only (fork_child closes them in the child).
  OwnSlot rkep_;
  OwnSlot sfd_;
  sigset_t sfd_mask_{};
  // The caller's mask sfd_mask_ was last computed for (watched_: once set).
  sigset_t watched_for_{};
  bool watched_ = false;
  bool restart_setup() noexcept;
  // Makes rkep_ and sfd_ if needed and sets sfd_ to the signals `mask`
  // lets through (*let); false without them.
  bool watch_signals(const sigset_t* mask, sigset_t* let) noexcept;
  // After a sleep that found sfd_ readable (every signal blocked): delivers
  // the pending signals of `let`.  -EINTR unless all of them were ones
  // Linux discards at sending (then 0: the sleep goes on).
  int take_signals(const sigset_t& let) noexcept;
  bool follows_moves_ = false;  // the borrower's (acquire_signal .. release_signal)
  ThreadWaiter* pool_next_ = nullptr;
  ThreadWaiter* all_next_ = nullptr;  // every waiter of this process; under g_pool_mutex
  static constexpr int kEntries = 2;
  WaiterEntry entries_[kEntries];     // owner only (take_entry)
  int entries_used_ = 0;
  // Set only by fork_child(), in the child before any other thread exists
  // (thread creation orders it before every later read).
  bool dead_ = false;
};



// The wait entry of one blocking call: the waiter's own (take_entry) when
// free, else one in this object.  The caller dequeues it before the scope
// ends.
class ScopedEntry {
 public:
  explicit ScopedEntry(ThreadWaiter* w) noexcept : hold_(w), w_(w), e_(w->take_entry()) {
    if (!e_) e_ = &local_;
    *e_ = WaiterEntry{};
    e_->waiter = w;
  }
  ~ScopedEntry() {
    if (e_ != &local_) w_->give_entry();
  }
  ScopedEntry(const ScopedEntry&) = delete;
  ScopedEntry& operator=(const ScopedEntry&) = delete;
  WaiterEntry& get() noexcept { return *e_; }
  ThreadWaiter::Hold& hold() noexcept { return hold_; }

 private:
  ThreadWaiter::Hold hold_;
  ThreadWaiter* w_;
  WaiterEntry* e_;
  WaiterEntry local_;
};

// Linux's ERESTARTSYS (include/linux/errno.h): a sleep ended by handlers
// that all asked for SA_RESTART; never returned to a caller of uepoll.
inline constexpr int kErestartSys = 512;

// Absolute CLOCK_MONOTONIC deadline helpers.
timespec monotonic_now() noexcept;
timespec deadline_after_ms(long ms) noexcept;
timespec deadline_after(const timespec& rel) noexcept;
bool deadline_passed(const timespec& d) noexcept;
// From now to d, zero once d passed.
timespec time_left(const timespec& d) noexcept;

// Runs the handlers of the pending signals that `mask` unblocks, as a kernel
// call made with that mask does on its way out (Linux do_poll and
// do_select check signal_pending() even with a zero timeout): -EINTR when a
// handler ran, else 0.  One system call (ppoll of no descriptors, timeout
// 0, with `mask`); takes no lock and must be called with none held.
int deliver_unblocked(const sigset_t* mask) noexcept;

// Counts the calling thread's waits that reached a sleeping system call
// (ThreadWaiter's and the direct kernel sleep's, epoll/kernel_watch_direct.cpp):
// tests tell a wait that slept from one that spun.  Thread-local, no lock;
// inline (initial-exec: one %fs-relative add per sleep).
extern constinit thread_local uint64_t tls_sleeps UEP_TLS_INITIAL_EXEC;
inline void note_sleep() noexcept { ++tls_sleeps; }
inline uint64_t thread_sleeps() noexcept { return tls_sleeps; }
// True when the kernel has epoll_pwait2 (Linux 5.11; qemu-user and older
// kernels answer ENOSYS).  Probed once; the sleeps that use it fall back to
// ppoll without it.
bool have_epoll_pwait2() noexcept;

// Blocks every signal in the calling thread for its lifetime and restores
// the previous mask on destruction (used around the check-then-sleep
// sequence so that a handler cannot run between the check and ppoll).  A
// caller whose mask already blocked everything pays one system call, not
// two: the restore would set the mask it has.
class SignalBlock {
 public:
  SignalBlock() noexcept;
  // Blocks only the signals of `set` (a caller's epoll_pwait mask, of which
  // the kernel's 8 bytes are read) until block_all().  One system call when
  // the mask already blocked them.
  explicit SignalBlock(const sigset_t* set) noexcept;
  ~SignalBlock();
  SignalBlock(const SignalBlock&) = delete;
  SignalBlock& operator=(const SignalBlock&) = delete;
  const sigset_t& saved() const noexcept { return saved_; }
  // Blocks every signal from now on (the saved mask stays the caller's).
  void block_all() noexcept;
  bool all() const noexcept { return all_; }

 private:
  sigset_t saved_;
  bool restore_ = true;
  bool all_ = true;
};

}  // namespace uepoll::core
