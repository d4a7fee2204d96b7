// instance.h - Instance: an epoll instance (Linux's struct eventpoll) and the
// file that represents it.
//
// What it owns: its items (an index sharded 16 ways, each shard with its own
// lock, so that ctl on different files of one instance runs in parallel),
// the ready list and overflow list, the queue of epoll_wait sleepers
// (`waiters_`, Linux's ep->wq), and through File::wq() the queue that
// parents and poll() callers watch (Linux's ep->poll_wait).
//
// Locks it takes (numbers from core/lock_order.h): its shard locks (6), its
// scan_mutex_ (9), its ready_lock_ (12), waiters_' lock (13, inside 12), target
// files' wait-queue locks (11, never with 12 held), and for nested children
// the same classes one level down.  It never sleeps with a lock held.
//
// Lifetime: File::refs() counts descriptors and pins; struct_refs_ counts
// the file itself plus every thread that pinned the instance through one of
// its items without holding a file reference (a release of a watched file
// removing the item, a topology walk).  Such pins are taken under a lock
// that the instance's teardown must also take for that item, so the count
// is still live when they are taken.  The memory goes to core/reclaim.h
// when it drops to zero.
#pragma once

#include "core/file.h"
#include "core/mutex.h"
#include "core/spinlock.h"
#include "core/thread_safety.h"
#include "core/waitqueue.h"
#include "epoll/busy_poll.h"
#include "epoll/item.h"
#include "epoll/item_index.h"

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstddef>
#include <cstdint>
#include <ctime>
#include <string>
#include <sys/epoll.h>

namespace uepoll::core {
class ThreadWaiter;  // core/waiter.h
}  // namespace uepoll::core

namespace uepoll::epoll {

class KernelWatch;  // epoll/kernel_watch.h: kernel descriptors of an instance

// Linux constants (fs/eventpoll.c).
inline constexpr uint32_t kPrivateBits = EPOLLWAKEUP | EPOLLONESHOT | EPOLLET | EPOLLEXCLUSIVE;  // EP_PRIVATE_BITS
inline constexpr uint32_t kInOutBits = EPOLLIN | EPOLLOUT;                                       // EPOLLINOUT_BITS
inline constexpr uint32_t kExclusiveOkBits =
    kInOutBits | EPOLLERR | EPOLLHUP | EPOLLWAKEUP | EPOLLET | EPOLLEXCLUSIVE;  // EPOLLEXCLUSIVE_OK_BITS
inline constexpr int kMaxNests = 4;                                              // EP_MAX_NESTS
inline constexpr int kMaxEvents = static_cast<int>(INT32_MAX / sizeof(struct epoll_event));  // EP_MAX_EVENTS
// Beyond Linux (uepoll.h UEP_EPOLLROUNDROBIN): rotate an exclusive item that took a wakeup.
inline constexpr uint32_t kRoundRobin = 1u << 26;

class Instance final : public core::File {
 public:
  // A new instance with one file reference, or nullptr (ENOMEM).
  static Instance* create(int status_flags) noexcept;

  // ---- epoll_ctl (after the C API's argument checks) -----------------
  // ev: the caller's events, EPOLLERR|EPOLLHUP not yet added.
  int add(core::File* tf, int fd, uint32_t events, uint64_t data) noexcept;
  int mod(core::File* tf, int fd, uint32_t events, uint64_t data) noexcept;
  int del(core::File* tf, int fd) noexcept;
  // Beyond Linux: UEP_EPOLL_CTL_DISABLE (2012 RFC), contract in uepoll.h.
  int disable(core::File* tf, int fd) noexcept;
  // Beyond Linux: a run of uep_epoll_ctl_batch's commands, each a MOD, DEL
  // or DISABLE of a uepoll target that passed the C API's checks.  Runs
  // them in order as mod() / del() / disable() would, storing each one's
  // result in res[], and stops after the first failure; returns how many
  // ran.  Shares their locking: the global and ctl locks once, each shard
  // touched once (instance_ctl.cpp).  n <= kMaxRun.
  struct CtlCmd {
    int op;
    int fd;
    core::File* tf;
    uint32_t events;
    uint64_t data;
  };
  static constexpr int kMaxRun = 64;
  int ctl_run(const CtlCmd* cmds, int n, int* res) noexcept;
  // Beyond Linux: EPIOCSPARAMS values (epoll/busy_poll.h).
  BusyPoll& busy_poll() noexcept { return busy_; }

  // ---- epoll_wait ----------------------------------------------------
  // deadline: absolute CLOCK_MONOTONIC, nullptr = forever; nonblocking:
  // timeout 0.  sigmask: epoll_pwait's mask, nullptr = none.  Returns the
  // number of events, 0 on timeout, or -EINTR / -EFAULT / -ENOMEM.
  // Preconditions: 0 < maxevents <= kMaxEvents and evs passes
  // core::user_range_ok for maxevents events (the C API checks both, as
  // Linux ep_check_params); a copy that faults is still -EFAULT.
  int wait(struct epoll_event* evs, int maxevents, const timespec* deadline, bool nonblocking,
           const sigset_t* sigmask) noexcept;
  // wait()'s sleeps (instance_wait.cpp): whether one with no epoll_pwait
  // mask blocks every signal around its check.  `again`: the call has slept
  // before, so this is a re-sleep, which blocks, and from then on every
  // sleep of the instance does (resleeps_).
  bool sleep_blocks(bool again) noexcept {
    if (!again) return resleeps_.load(std::memory_order_relaxed);
    resleeps_.store(true, std::memory_order_relaxed);
    return true;
  }

  // Readiness of the instance as a file (Linux ep_eventpoll_poll): EPOLLIN |
  // EPOLLRDNORM if any item is truly ready, without consuming anything.
  uint32_t poll(int depth) noexcept override;
  // The instance as a file (instance_file.cpp): no read/write (EINVAL),
  // EPIOCSPARAMS / EPIOCGPARAMS (Linux ep_eventpoll_ioctl; any other
  // request EINVAL), the "tfd:" fdinfo lines (ep_show_fdinfo).
  long rw_check(bool) const noexcept override { return -EINVAL; }
  long ioctl(unsigned long request, void* arg) noexcept override;
  void show_fdinfo(std::string& out) noexcept override;
  // The kernel side's descriptors (KernelWatch::sleep_fds), read under
  // wq(): kick_sleepers publishes a new side, then takes wq() to kick, so
  // a poll() sleeper either sees it or is kicked after its prepare().
  int sleep_fds(struct pollfd* out) noexcept override;

  // ---- used by release, topology and the test hooks ------------------
  // Removes `it` if still registered.  Precondition: caller holds an item
  // reference and has already unlinked it from its file's wait queue.
  void remove_released(Item* it) noexcept;
  // Calls fn(item) for every registered item, one shard lock at a time.
  template <class Fn>
  void for_each_item(Fn&& fn) noexcept;
  // Parents: items of other instances registered on this file's wq.
  int parent_count() const noexcept { return watchers.load(std::memory_order_acquire); }
  void struct_get() noexcept { struct_refs_.fetch_add(1, std::memory_order_relaxed); }
  void struct_put() noexcept;
  // The test hook behind uep_debug_dump: 0 and *out filled, or -ENOMEM.
  int debug_dump(std::string* out) noexcept;

  // Topology bookkeeping (guarded by the topology lock held exclusively).
  uint64_t topo_gen = 0;
  int topo_depth = 0;
  // The path profile (topology::leaf_path_check): (edge generation << 1) |
  // 1 if a leaf watched only by this instance passes Linux's path limits.
  // Written and read by any ADD into this instance (relaxed: the word is
  // self-contained; topology.cpp says what orders the generation).
  std::atomic<uint64_t> path_ok_cache{0};
  // A topology check that will make this instance watched is in flight:
  // leaf ADDs must take the full path (Linux: ep->gen == loop_check_gen).
  std::atomic<int> watch_hold{0};

  static void item_unref(Item* it) noexcept;

  // The instance's kernel side (kernel descriptors it watches, its
  // uep_epoll_kernel_fd), or nullptr: created on first use, then immutable
  // until the memory is freed.  acquire: pairs with the release publication
  // in KernelWatch::get_or_create.
  KernelWatch* kernel_watch() const noexcept { return kernel_.load(std::memory_order_acquire); }

 protected:
  void on_release() noexcept override;
  void dispose() noexcept override { struct_put(); }

 private:
  explicit Instance(int status_flags) noexcept;
  ~Instance() override;
  friend void core_destroy_instance(Instance*);
  friend class KernelWatch;  // harvest, sleepers and ready list of the kernel side

  // Most items a read-mostly snapshot holds (instance_snapshot.cpp).
  static constexpr uint32_t kSnapMax = 4;

  struct alignas(64) Shard {
    core::Mutex mutex{core::lock_class::kShard};  // lock level 6
    ItemIndex index UEP_GUARDED_BY(mutex);         // its items by (file, fd)
  };
  static constexpr int kShards = 16;
  struct CtlLocks;

  static uint64_t hash_key(const core::File* f, int fd) noexcept { return item_key_hash(f, fd); }
  Shard& shard_for(uint64_t h) noexcept { return shards_[h & (kShards - 1)]; }
  // Preconditions: s.mutex held.
  static Item* find_locked(Shard& s, uint64_t h, const core::File* f, int fd) noexcept UEP_REQUIRES(s.mutex) {
    return s.index.find(h, f, fd);
  }
  static bool reserve_bucket_locked(Shard& s) noexcept UEP_REQUIRES(s.mutex) { return s.index.reserve(); }
  static void unhash_locked(Shard& s, uint64_t h, Item* it) noexcept UEP_REQUIRES(s.mutex) { s.index.erase(h, it); }
  // ADD's steps (instance_ctl.cpp, inline: add() is their one caller).
  // Preconditions: s.mutex held.
  inline Item* insert_locked(Shard& s, uint64_t h, core::File* tf, int fd, uint32_t events, uint64_t data,
                             int* err) noexcept UEP_REQUIRES(s.mutex);
  void undo_insert_locked(Shard& s, uint64_t h, Item* it) noexcept UEP_REQUIRES(s.mutex);
  inline int finish_add_locked(Shard& s, uint64_t h, Item* it, Instance* child, core::File* const* leaves,
                               size_t nleaves, bool check_paths) noexcept UEP_REQUIRES(s.mutex);
  // Preconditions: s.mutex held, s the shard of it's key.  Unlinks it from
  // its file's queue (unless release did), from the ready list, marks it
  // unregistered and drops the registration reference.
  void detach_locked(Shard& s, Item* it) noexcept UEP_REQUIRES(s.mutex);
  // MOD, DEL and DISABLE once the key's shard is locked (mod(), del(),
  // disable() and ctl_run()).  Preconditions: s.mutex held, h the key's hash.
  inline int mod_locked(Shard& s, uint64_t h, core::File* tf, int fd, uint32_t events, uint64_t data) noexcept
      UEP_REQUIRES(s.mutex);
  inline int del_locked(Shard& s, uint64_t h, core::File* tf, int fd) noexcept UEP_REQUIRES(s.mutex);
  inline int disable_locked(Shard& s, uint64_t h, core::File* tf, int fd) noexcept UEP_REQUIRES(s.mutex);

  // Wake callback of items on target files (Linux ep_poll_callback),
  // called by the queue through epoll::item_wake (core/waitqueue.h).
  static int wake_callback(core::WaitEntry* e, uint32_t key) noexcept;
  friend int item_wake(core::WaitEntry* e, uint32_t key) noexcept;
  // Queues it as the callback does and wakes; used by ADD and MOD after a
  // poll found it ready.  Preconditions: no ready_lock_ held.
  void queue_ready(Item* it) noexcept;
  void ovf_push_locked(Item* it) noexcept UEP_REQUIRES(ready_lock_);
  void wake_one_waiter_locked() noexcept UEP_REQUIRES(ready_lock_);
  // Linux waitqueue_active(&ep->wq): an epoll_wait sleeper is queued on
  // waiters_ (an idle ring_ of the kernel side is none, KernelWatch::
  // ring_idle_locked).  Exact: every change of waiters_ is made under
  // ready_lock_.
  bool has_sleepers_locked() const noexcept UEP_REQUIRES(ready_lock_);
  // Beyond Linux: the longest-sleeping waiter instead (UEP_EPOLLROUNDROBIN).
  void wake_oldest_waiter_locked() noexcept UEP_REQUIRES(ready_lock_);

  // Spins up to busy_poll_usecs for events (epoll/busy_poll.cpp); true if
  // some are available, with *kernel set when the kernel side has them.
  // Preconditions: no lock held.
  bool busy_wait(const timespec* deadline, SpinWindow* win, bool* kernel) noexcept;

  // Harvest (Linux ep_send_events) and readiness scan (__ep_eventpoll_poll).
  int send_events(struct epoll_event* evs, int maxevents) noexcept;
  bool scan_has_ready(int depth) noexcept;
  // Preconditions: ready_lock_ held.
  bool events_available_locked() const noexcept UEP_REQUIRES(ready_lock_) {
    return rdllist_.next != &rdllist_ || ovflist_ != kOvfInactive;
  }
  core::File* take_locked(Item* it, bool* pinned) noexcept UEP_REQUIRES(ready_lock_);
  static core::File* pin_for_poll(core::File* f, bool* pinned) noexcept;
  static bool give_back_locked(Item* it) noexcept;
  void start_scan_locked(ListLink* tx) noexcept UEP_REQUIRES(ready_lock_);
  // Wakes a waiter if rdllist is left non-empty.
  void done_scan_locked(ListLink* tx) noexcept UEP_REQUIRES(ready_lock_);
  void list_link_locked(ListLink* prev, ListLink* next, Item* it) noexcept UEP_REQUIRES(ready_lock_);
  void list_add_tail_locked(ListLink* head, Item* it) noexcept UEP_REQUIRES(ready_lock_);
  void list_add_head_locked(ListLink* head, Item* it) noexcept UEP_REQUIRES(ready_lock_);
  void list_del_locked(Item* it) noexcept UEP_REQUIRES(ready_lock_);

  // ---- the read-mostly zero-timeout path (instance_snapshot.cpp) -------
  // Preconditions: ready_lock_ held.  Every change of the ready list, of a
  // listed item's mask or data (MOD, DISABLE) and every scan's start marks
  // the snapshot stale; the end of a scan publishes it again.
  void snap_invalidate_locked() noexcept UEP_REQUIRES(ready_lock_) {
    // relaxed: only a valid snapshot needs the RMW below; under ready_lock_
    // no publication can be in progress.
    if (snap_.seq.load(std::memory_order_relaxed) & 1) snap_invalidate();
  }
  // Any thread, with or without ready_lock_ (MOD calls it after its write,
  // under its shard lock only): also fails a publication in progress.
  void snap_invalidate() noexcept;
  void snap_publish_locked() noexcept UEP_REQUIRES(ready_lock_);
  struct SnapRead;
  bool snap_enabled() const noexcept;
  bool snap_read(SnapRead* r, uint32_t limit) const noexcept;
  bool snap_unchanged(uint64_t seq) const noexcept;
  // A zero-timeout harvest from the snapshot: true and *res set when the
  // result is Linux's (and the list is left as Linux would leave it, i.e.
  // unchanged); false: take the locked path.  Preconditions: no lock held.
  bool send_events_unchanged(struct epoll_event* evs, int maxevents, int* res) noexcept;
  // poll()'s answer from the snapshot: 1 ready, 0 not, -1 unknown.
  // Preconditions: inside a reclaim::ReadGuard, no lock held.
  int poll_unchanged(int depth) noexcept;

  Shard shards_[kShards];
  alignas(64) core::Mutex scan_mutex_{core::lock_class::kScan};  // lock level 9 (Linux ep->mtx for harvests)
  core::Mutex ctl_mutex_{core::lock_class::kCtl};  // lock level 5, only with concurrent_ctl off
  alignas(64) core::SpinLock ready_lock_{core::lock_class::kReady};  // lock level 12 (Linux ep->lock)
  ListLink rdllist_ UEP_GUARDED_BY(ready_lock_);
  Item* ovflist_ UEP_GUARDED_BY(ready_lock_) = kOvfInactive;
  // epoll_wait sleepers (Linux ep->wq), lock level 13; every change of it
  // (queueing, dequeueing, a wakeup's autoremove) is made under ready_lock_.
  core::WaitQueue waiters_{core::lock_class::kWaiters};
  // The sleeper that wake_one_waiter_locked() kicked last, until it is
  // running again and has taken ready_lock_ after its sleep (Instance::wait
  // clears it there, before its harvest).  While it is set, and its thread
  // alive, wake_one_waiter_locked() kicks nobody else: that thread's
  // harvest wakes the next sleeper if events remain (done_scan_locked, as
  // Linux's ep_done_scan does), so a burst does not wake one thread per
  // event on a machine that cannot run them (bench/RESULTS.md, "The herd
  // question").  A ThreadWaiter is never freed, so the pointer
  // stays valid; after fork() the parent's threads' waiters read dead().
  core::ThreadWaiter* kicked_ UEP_GUARDED_BY(ready_lock_) = nullptr;
  // The read-mostly snapshot of the ready list, on lines of its own: read
  // by every zero-timeout waiter, written only when the list changes.
  // seq odd: valid, i.e. no scan is running and the ready list is exactly
  // file[0..n) in order, every item level-triggered and of a kind polled
  // unpinned (File::poll_unpinned_ok), with these masks and data.  Written
  // under ready_lock_, read without it (a seqlock; instance_snapshot.cpp).
  struct alignas(64) ReadySnapshot {
    std::atomic<uint64_t> seq{0};
    std::atomic<uint32_t> n{0};
    std::atomic<core::File*> file[kSnapMax] = {};
    std::atomic<uint32_t> events[kSnapMax] = {};
    std::atomic<uint64_t> data[kSnapMax] = {};
  };
  ReadySnapshot snap_;
  std::atomic<long> struct_refs_{1};
  // Set when the teardown starts; ADD checks it under its shard lock, so an
  // item is never added behind the teardown's back (ctl runs without a
  // reference on the instance, see fd::peek).
  std::atomic<bool> dead_{false};
  // See kernel_watch(); every hot path branches on it once, nothing more.
  std::atomic<KernelWatch*> kernel_{nullptr};
  // A sleeper of this instance has gone to sleep a second time in one call
  // (a wakeup that found nothing): from then on every sleep blocks signals
  // around its check, the first one too (sleep_blocks).  Set once, relaxed:
  // a sleep that reads it late is one of the calls the window allows
  // (docs/linux-deviations.md).
  std::atomic<bool> resleeps_{false};
  BusyPoll busy_;  // beyond Linux: EPIOCSPARAMS
};

template <class Fn>
void Instance::for_each_item(Fn&& fn) noexcept {
  for (Shard& s : shards_) {
    core::MutexLock g(s.mutex);
    s.index.for_each(fn);
  }
}

}  // namespace uepoll::epoll
