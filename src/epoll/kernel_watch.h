// kernel_watch.h - KernelWatch: the kernel side of one epoll instance:
// kernel descriptors watched by a uepoll instance, and the kernel
// descriptor (uep_epoll_kernel_fd) through which kernel event loops watch
// the instance.
//
// What it owns (each created on first use, nothing before: an instance
// that never sees a kernel descriptor has no KernelWatch at all, and its
// hot paths pay one load of Instance::kernel_ and a branch):
//   shadow_  a kernel epoll holding the kernel descriptors added to the
//            instance, with the caller's events and data.  The kernel gives
//            each its exact Linux semantics (LT, ET, ONESHOT, EXCLUSIVE,
//            RDHUP, removal at the last close, errors in Linux's order).
//   hub_     a kernel epoll of edges, created when the instance is nested
//            in another instance or has a child with a kernel side: shadow_
//            (ET, kTagShadow) and the hub of every child instance with a
//            kernel side (ET, tagged with the child's id).  The instance's
//            parents hold its hub (ET) in theirs.  Whoever reads an edge
//            translates it into the wakeups Linux would make: the
//            instance's own poll queue for a shadow edge, the child's hub
//            (recursively) for a child edge.
//   kfd_     uep_epoll_kernel_fd only: a kernel epoll holding shadow_,
//            hub_ (once there is one) and signal_'s eventfd,
//            level-triggered.
//   signal_  uep_epoll_kernel_fd only: a kernel eventfd written when the
//            instance's user-space ready list gains an item, drained by a
//            harvest that leaves that list empty (and no harvest running).
//   kick_    a kernel eventfd inside shadow_ (EPOLLIN | EPOLLET, data
//            kick_tag()): the doorbell of the direct sleep.  Every epoll_wait
//            on shadow_ filters its event out.
// shadow_, hub_ and kick_ are in OwnSlots (core/own_slot.h): a program's
// dup2 onto their numbers moves them (shadow_moving and hub_moving send
// every sleeper round; kick_moved moves kick_'s registration in shadow_).
// kfd_ does not move: the program holds it.
// The direct sleep: while the instance has neither hub_ nor kfd_, a
// blocking uep_epoll_wait sleeps in epoll_pwait2(shadow_) (epoll_pwait with no deadline) with the caller's
// mask, which returns kernel events in the same system call.  All such
// sleepers are one exclusive entry on Instance::waiters_ (ring_), whose
// wakeup writes kick_ (once until a sleeper or harvest consumes it); the
// kernel wakes one of them.  ring_ stays queued between direct sleeps,
// idle (it takes no wakeup while no direct sleeper is counted), until
// direct sleeping ends.  kick_ is readable only while ring_pending_:
// whoever consumes its event reads it, clears ring_pending_ and passes the
// wakeup on, so a doorbell never stays visible to poll() of shadow_ (ready()
// masks it out while a ring is in flight).  The first hub_ or kfd_ ends
// direct sleeping (end_direct): new sleepers take the classic path below,
// and shadow_ joins hub_ / kfd_ (finish_direct, with kick_ taken out) when
// the last direct sleeper has left, so no kernel watcher ever sees kick_.
// Classic sleepers of the instance (and uep_poll) sleep on shadow_ and
// hub_ beside their ThreadWaiter.
//
// Wakeup paths it adds:
//   kernel descriptor -> shadow_ -> sleeper's ppoll / kfd_ -> kernel loop
//                     -> hub_ edge -> parents' hubs -> their sleepers
//   user-space event -> Instance::wq() -> signal entry -> eventfd -> kfd_
//   a hub edge read by a harvest or poll -> Instance::wq().wake(EPOLLIN)
//     of the instance whose shadow it was (Linux ep_poll_safewake); its
//     signal entry is skipped once shadow_ is in kfd_ (self_wake_)
//
// Locks (core/lock_order.h): the topology lock (3, exclusive) around every
// change of the kernel-side topology (first kernel descriptor of a watched
// instance, nesting, uep_epoll_kernel_fd); mu_ (per KernelWatch, level 7)
// around creating hub_ and kfd_; the registry mutex (a leaf) around the
// id -> instance map; wait-queue locks (11) to find parents, to queue the
// signal entry and to wake; the instance's ready_lock_ (12) to look at its
// ready list, to kick its sleepers and for the direct sleep's state; kick_mu_
// (a leaf) around changes of kick_'s registration and kick_key_.  Kernel system calls are
// made with at most core::Mutexes held, never a SpinLock.
#pragma once

#include "core/mutex.h"
#include "core/own_slot.h"

#include "core/waitqueue.h"

#include <atomic>
#include <csignal>
#include <cstddef>
#include <cstdint>
#include <ctime>
#include <poll.h>
#include <string>
#include <sys/epoll.h>

namespace uepoll::core {
class ThreadWaiter;
}

namespace uepoll::epoll {

class Instance;

class KernelWatch {
 public:
  // ---- from the C API (no uepoll lock held) ------------------------------
  // epoll_ctl(ep, op, kfd, ev) for a kernel descriptor kfd >= 0 (ev null for
  // DEL).  Linux's result for that descriptor, as a negative errno.
  static int ctl(Instance* ep, int op, int kfd, struct epoll_event* ev) noexcept;
  // epoll_ctl(f, op, kfd, ev) where f is a uepoll file that is not an
  // instance: Linux checks kfd (EBADF, EPERM) before f (EINVAL).
  static int refuse(int op, int kfd, struct epoll_event* ev) noexcept;
  // True if kernel descriptor kfd is a kernel epoll instance.
  static bool is_kernel_epoll(int kfd) noexcept;
  // uep_epoll_kernel_fd: kfd_, created with the signal on first call.
  static int kernel_fd(Instance* ep) noexcept;

  // ---- hooks of Instance -------------------------------------------------
  // After parent's ADD linked its item on child.  Preconditions: topology
  // lock held exclusively.  0, or the kernel's error (ELOOP, EINVAL, ...)
  // when the kernel side refuses the nesting.
  static int on_nest(Instance* parent, Instance* child) noexcept;
  // uep_epoll_wait's harvest: user-space and kernel events together.
  // will_sleep: a blocking wait that has not slept yet; when user space has
  // no event it returns 0 without asking the kernel (the sleep will).
  int harvest(Instance* ep, struct epoll_event* evs, int maxevents, bool will_sleep = false) noexcept;
  // The direct sleep (see the top of this file): epoll_pwait2 on shadow_
  // with `mask` (nullptr: the thread's own), then the user-space events
  // its doorbell announced.  Returns the events (> 0), 0 when there is
  // nothing and the wait goes round, kTimedOut, -EINTR, -EFAULT, kAgain
  // (user-space events are listed: harvest them) or kNotDirect (use
  // sleep()).  Preconditions: no lock held.
  static constexpr int kTimedOut = -1000001;
  static constexpr int kAgain = -1000002;
  static constexpr int kNotDirect = -1000003;
  int sleep_direct(Instance* ep, struct epoll_event* evs, int maxevents, const timespec* deadline,
                   const sigset_t* mask) noexcept;
  // ring_ is queued with no direct sleeper behind it (Instance::
  // has_sleepers_locked leaves it out).  Preconditions: ep's ready_lock_ held.
  bool ring_idle_locked() const noexcept { return ring_.entry.queued() && shadow_sleepers_ == 0; }
  // A hint for Instance::wait (relaxed): the direct sleep may be used.
  bool direct_hint() const noexcept { return direct_.load(std::memory_order_relaxed); }
  // The classic sleep: the waiter or the kernel side, whichever first
  // (ppoll, then a harvest's epoll_wait(shadow_)).
  int sleep(core::ThreadWaiter* w, const timespec* deadline, const sigset_t* mask) noexcept;
  // Instance::poll: true if a kernel descriptor is ready (after turning
  // children's kernel edges into callbacks).
  bool ready(Instance* ep) noexcept;
  // Instance::on_release: stop signalling, leave the registry.
  void release(Instance* ep) noexcept;
  // ~Instance: closes the kernel descriptors, frees the memory.
  static void destroy(KernelWatch* kw) noexcept;

  // Appends the "tfd:" fdinfo lines of the kernel descriptors watched
  // (shadow_'s registrations, read from the kernel's fdinfo of shadow_;
  // kernel_watch_fdinfo.cpp).  Reads /proc: no SpinLock may be held.
  void show_fdinfo(std::string& out) const noexcept;

  // Writes of the signal's eventfd since kfd_ was made (0 before): the
  // system calls a kernel loop on kfd_ pays for user-space items.  For tests.
  uint64_t signal_writes() const noexcept;

  // The descriptors a sleeper or uep_poll waits on (shadow_, hub_ if any),
  // POLLIN; returns how many (1 or 2).
  int sleep_fds(struct pollfd out[2]) const noexcept;

 private:
  static int ctl_first(Instance* ep, int op, int kfd, struct epoll_event* ev) noexcept;
  KernelWatch(Instance* ep, int shadow) noexcept;

  // The signal's entry on Instance::wq(), or (ring) the direct sleepers'
  // entry on Instance::waiters_ (first member: WaitEntry* cast).
  struct SignalEntry {
    core::WaitEntry entry{nullptr, nullptr, core::WaitEntry::kSignal};
    KernelWatch* kw;
    bool ring;
  };
  static_assert(offsetof(SignalEntry, entry) == 0);

  // ---- the direct sleep (kernel_watch_direct.cpp) ------------------------
  // kick_, registered in shadow; nullptr on failure (no direct sleep).
  static core::ThreadWaiter* make_kick(int shadow, uint64_t tag) noexcept;
  uint64_t kick_tag() const noexcept { return reinterpret_cast<uintptr_t>(&ring_); }
  // Removes kick_'s events from evs[0..n); returns how many remain and
  // whether kick_'s was among them.
  int filter_kick(struct epoll_event* evs, int n, bool* saw) const noexcept;
  // Preconditions: ep's ready_lock_ held.  Writes kick_ unless a ring is
  // already in flight (the write itself waits for the SpinLock's release).
  void ring_locked() noexcept;
  // A doorbell event was taken (or is left with nobody to take it): reads
  // kick_, clears ring_pending_ and passes the wakeup on (to the next
  // direct sleeper while direct sleeping ends, else to a sleeper if events
  // are listed and `harvests` is false).  Preconditions: no lock held.
  void kick_consumed(Instance* ep, bool harvests) noexcept;
  // Preconditions (these two): ep's ready_lock_ held.  ring_ queued at
  // the head of waiters_ as a first direct sleeper arrives; ring_ off
  // waiters_ once direct sleeping has ended with no sleeper left.
  void arm_ring_locked(Instance* ep) noexcept;
  void disarm_ring_locked(Instance* ep) noexcept;
  // ready(): shadow_'s readiness without kick_'s.
  bool shadow_ready(Instance* ep) noexcept;
  // No more direct sleepers from now on; `wake` rings the ones asleep
  // (the instance got a child edge in hub_, which they do not watch).
  // Returns finish_direct's result when none is left, else 0.
  int end_direct(Instance* ep, bool wake) noexcept;
  // Takes kick_ out of shadow_ and puts shadow_ into hub_ and kfd_.
  // Preconditions: direct sleeping ended, no direct sleeper left, mu_ not held.
  int finish_direct(Instance* ep) noexcept;

  static KernelWatch* get_or_create(Instance* ep, bool* created, int* err) noexcept;
  // hub_, created if needed: 0 or a negative errno.
  int ensure_hub(Instance* ep) noexcept;
  // Preconditions (these two): topology lock held exclusively.
  // p's hub, created (with p's KernelWatch) and attached if new: 0 or a
  // negative errno.
  static int parent_hub(Instance* p) noexcept;
  // Puts x's hub into the hub of every instance watching x.
  static int attach(Instance* x) noexcept;
  static int add_child_edge(Instance* p, KernelWatch* child, uint64_t tag) noexcept;
  // kfd_, created if needed (kernel_fd's body, under mu_).
  int make_kernel_fd(Instance* ep) noexcept;
  // hub_ (if made) into kfd k, once.  Preconditions: mu_ held.
  int kfd_add_hub_locked(int k) noexcept UEP_REQUIRES(mu_);
  static void kick_sleepers(Instance* ep) noexcept;
  int kernel_events(Instance* ep, struct epoll_event* evs, int maxevents) noexcept;
  void process_hub(Instance* ep, int depth) noexcept;
  // process_hub's wakeup of ep's poll queue for shadow_'s own events.
  void wake_self(Instance* ep) noexcept;
  void wake_child(Instance* ep, uint64_t tag, int depth) noexcept;
  void maybe_drain(Instance* ep) noexcept;
  // Sets kSignalPending and counts a write if the bit was clear (or
  // `always`): true when the caller must kick the signal (that write),
  // false when one is owed already.
  bool request_signal(bool always = false) noexcept;
  static int signal_wake(core::WaitEntry* e, uint32_t key) noexcept;
  friend int kernel_signal_wake(core::WaitEntry* e, uint32_t key) noexcept;

  // OwnSlot hooks (core/own_slot.h).  shadow_moving: every sleeper on
  // shadow_ goes round (direct ones rung, classic ones and uep_poll
  // callers kicked).  kick_moved: kick_'s registration in shadow_ follows
  // its eventfd to the new number (under kick_mu_).
  static void shadow_moving(void* kw) noexcept;
  static void hub_moving(void* kw) noexcept;
  static void kick_moved(void* kw, int from, int to) noexcept;

  SignalEntry sig_;                           // queued on Instance::wq() under its lock
  Instance* const ep_;                        // the instance whose kernel side this is
  // shadow_'s number moves (a program's dup2 onto it): every system call
  // on it goes through a core::OwnSlot::Use, except polls that only sleep
  // (sleep_fds: a stale number polls something else, and the mover's kick
  // wakes the poller to read it again).  Registered in hub_ and kfd_ by
  // its first number, never changed or removed there.
  mutable core::OwnSlot shadow_;  // mutable: a use from show_fdinfo
  // Opened once under mu_; moves like shadow_ (hub_moving kicks the
  // classic sleepers).  Parents' hubs hold it by the number it was added
  // under (add_child_edge) and drop it lazily by number (wake_child).
  core::OwnSlot hub_;
  std::atomic<int> kfd_{-1};                  // written once under mu_
  // kernel_fd has returned kfd_ (its shadow_ joined, or joins when the
  // direct sleepers leave): later calls return it without the topology
  // lock.  Written under the topology lock; acquire/release pairs the fast
  // path with that call's set-up.
  std::atomic<bool> kfd_given_{false};
  core::Mutex mu_{core::lock_class::kKernelWatch};  // lock level 7
  std::atomic<core::ThreadWaiter*> signal_{nullptr};  // written once under mu_
  // The signal's state: bit 0 (kSignalPending) is set while its eventfd
  // has been, or is about to be, written since the last drain; the bits
  // above count the writes asked for so far (kSignalKick each).  Set and
  // counted in one step (request_signal), so a drain knows how many writes
  // to wait for.  seq_cst: request_signal's CAS pairs with maybe_drain's
  // CAS and re-check (see there).
  static constexpr uint64_t kSignalPending = 1;
  static constexpr uint64_t kSignalKick = 2;
  std::atomic<uint64_t> signal_state_{0};
  uint64_t signal_writes0_ = 0;  // signal_->writes() when it became ours (written before signal_)
  // ctl's ADD has put hub_ (when the instance has parents) into every
  // parent's hub (parent_hub); false after a failure, so the next ADD
  // tries again.  Written under the topology lock (3); acquire/release
  // pairs ctl's unlocked fast-path load with that store.
  std::atomic<bool> linked_{false};
  // Which kind a harvest takes first: flipped each time a harvest fills
  // the buffer, so neither kind can starve the other (relaxed: a hint).
  std::atomic<bool> kernel_first_{false};

  // The direct sleep.  Guarded by the instance's ready_lock_ (12): ring_'s
  // queueing (with waiters_' lock; queued whenever shadow_sleepers_ > 0,
  // and idle between sleeps while direct_), direct_'s writes, shadow_sleepers_,
  // ring_pending_, ring_gen_.  direct_ is also read as a relaxed hint
  // without it; the decisions are made again under the lock.
  SignalEntry ring_{};
  core::ThreadWaiter* kick_ = nullptr;  // immutable after construction
  uint64_t kick_writes0_ = 0;           // kick_->writes() when it became ours
  std::atomic<bool> direct_{false};
  int shadow_sleepers_ = 0;
  bool ring_pending_ = false;  // kick_ written and not yet read back
  uint64_t ring_gen_ = 0;      // rings so far
  core::Mutex kick_mu_{core::lock_class::kKernelKick};  // a leaf
  // The number kick_ is registered under in shadow_ (MOD, DEL use it):
  // under kick_mu_ (kick_moved changes it).
  int kick_key_ UEP_GUARDED_BY(kick_mu_) = -1;
  // kick_ is in shadow_ (written under mu_ and kick_mu_; acquire/release
  // pairs ready()'s unlocked load with finish_direct's store).
  std::atomic<bool> kick_in_shadow_{false};
  bool hub_has_shadow_ = false;  // under mu_
  bool kfd_has_hub_ UEP_GUARDED_BY(mu_) = false;
  // shadow_ is in kfd_: written under mu_; read without it by wake_self,
  // where a stale false only costs a signal write (relaxed: no data rides
  // on it).
  std::atomic<bool> kfd_has_shadow_{false};
  // process_hub's wakeup of the instance for shadow_'s own events is
  // running: the signal entry leaves the signal alone (kfd_ holds shadow_).
  // Under Instance::wq()'s lock, which every wakeup of that queue holds.
  bool self_wake_ = false;
};

}  // namespace uepoll::epoll
