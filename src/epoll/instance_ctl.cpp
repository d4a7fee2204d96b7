// instance_ctl.cpp - epoll_ctl on an instance (Linux ep_insert, ep_modify,
// ep_remove), beyond Linux UEP_EPOLL_CTL_DISABLE, and the removal of an
// item whose file is being released.
//
// Locks (core/lock_order.h), in order: the topology lock (3) and target
// mutex (4) through topology::Guard (ADD of an instance, ADD into a watched
// instance unless its cached path profile passes, every ctl with rcu_ctl
// off); ctl_mutex_ (5) only with concurrent_ctl off; the key's shard lock
// (6) for the whole operation; under it the target file's wait-queue lock
// (11) to link or unlink the item, ready_lock_ (12) to queue it or take it
// off the ready list, and for a nesting ADD a child's KernelWatch::mu_
// (7).  The target file is
// polled under the shard lock only (a child's poll takes its scan mutex).
// Leaf references gathered by a topology walk are dropped after the
// topology lock is released (a last put may run user code).
#include "epoll/instance.h"

#include "core/tuning.h"
#include "epoll/item_cache.h"
#include "epoll/kernel_watch.h"
#include "epoll/topology.h"
#include "epoll/watches.h"

#include <cerrno>
#include <vector>

namespace uepoll::epoll {

// ---------------------------------------------------------------------------
// ctl

// The locks MOD and DEL take, in order: the topology lock only with rcu_ctl
// off, the ctl mutex only with concurrent_ctl off, then the key's shard.
// The analysis cannot follow the shard lock held by this member object, so
// mod() and del() are not analysed (they touch the shard only through it).
struct Instance::CtlLocks {
  topology::GlobalCtlGuard global;
  core::MaybeMutexLock ctl;
  const uint64_t h;
  Shard& shard;
  core::MutexLock shard_lock;
  CtlLocks(Instance* ep, const core::File* tf, int fd) noexcept
      : global(!core::knob(core::knobs().rcu_ctl)),
        ctl(ep->ctl_mutex_, ctl_taken()),
        h(hash_key(tf, fd)),
        shard(ep->shard_for(h)),
        shard_lock(shard.mutex) {}
  static bool ctl_taken() noexcept { return !core::knob(core::knobs().concurrent_ctl); }
};

namespace {

// The mode of a leaf ADD into a watched instance: kCached (no topology
// lock; the ADD checks the instance's cached path profile under its shard
// lock, topology::cached_add_ok, and falls back to kShared, the lock
// shared, when it is stale or fails), or exclusive with
// parallel_nested_add off.  An instance ADD, or any with rcu_ctl off, is
// exclusive; a leaf into a flat instance takes no lock (first_add_mode).
topology::Mode nested_add_mode() noexcept {
  return core::knob(core::knobs().parallel_nested_add) ? topology::Mode::kCached : topology::Mode::kExclusive;
}

topology::Mode first_add_mode(Instance* ep, bool target_is_ep) noexcept {
  if (target_is_ep || !core::knob(core::knobs().rcu_ctl)) return topology::Mode::kExclusive;
  if (ep->parent_count() > 0 || ep->watch_hold.load(std::memory_order_seq_cst) > 0) return nested_add_mode();
  return topology::Mode::kNone;
}

// Links a new item on its target file's wait queue (Linux ep_ptable_queue_proc).
// With `alone` (kCached), only if no other instance watches the file:
// false, and nothing linked, otherwise.  Locks: the file's wait-queue lock (11).
bool link_to_file(Item* it, core::File* tf, uint32_t events, bool alone) noexcept {
  tf->wq().lock();
  if (alone && tf->watchers.load(std::memory_order_relaxed) != 0) {
    tf->wq().unlock();
    return false;
  }
  if (events & EPOLLEXCLUSIVE)
    tf->wq().add_exclusive_locked(&it->wait);
  else
    tf->wq().add_locked(&it->wait);
  if ((events & EPOLLEXCLUSIVE) && (events & kRoundRobin)) it->wait.flags |= core::WaitEntry::kRotate;  // beyond Linux
  tf->add_watcher_locked();
  if (tf->is_epoll()) topology::edges_changed();
  tf->wq().unlock();
  return true;
}

}  // namespace

// ADD's checks under the shard lock and the new item, hashed and
// registered but not yet on the file's queue; nullptr with *err set.
// Inlined into add(), its one caller, as is finish_add_locked(): out of
// line they cost a prologue and epilogue each on every ADD.
[[gnu::always_inline]] Item* Instance::insert_locked(Shard& s, uint64_t h, core::File* tf, int fd,
                                                     uint32_t events, uint64_t data, int* err) noexcept {
  // relaxed: ordered by the shard mutex, which the teardown takes after
  // setting dead_.
  if (dead_.load(std::memory_order_relaxed)) {
    *err = -EBADF;  // closed under us
    return nullptr;
  }
  if (find_locked(s, h, tf, fd)) {
    *err = -EEXIST;
    return nullptr;
  }
  if (!watches::reserve()) {
    *err = -ENOSPC;
    return nullptr;
  }
  Item* it = reserve_bucket_locked(s) ? item_alloc() : nullptr;
  if (!it) {
    watches::unreserve();
    *err = -ENOMEM;
    return nullptr;
  }
  it->ep = this;
  it->file = tf;
  it->fd = fd;
  it->events.store(events, std::memory_order_relaxed);
  it->data.store(data, std::memory_order_relaxed);
  it->ovf_next = kOvfInactive;
  it->refs.store(1, std::memory_order_relaxed);
  it->registered.store(true, std::memory_order_relaxed);  // published by the shard lock
  s.index.insert(h, it);
  return it;
}

// Takes back an item insert_locked() made, before it was linked on its
// file's queue (nothing saw it).
void Instance::undo_insert_locked(Shard& s, uint64_t h, Item* it) noexcept {
  s.mutex.assert_held();
  unhash_locked(s, h, it);
  it->registered.store(false, std::memory_order_relaxed);
  item_unref(it);
  watches::unreserve();
}

// ADD's last steps, the item linked on its file: the reverse-path checks
// when a topology lock is held, a child's kernel side, the initial poll.
// On failure the item is removed again.
[[gnu::always_inline]] int Instance::finish_add_locked(Shard& s, uint64_t h, Item* it, Instance* child,
                                                     core::File* const* leaves, size_t nleaves,
                                                     bool check_paths) noexcept {
  core::File* tf = it->file;
  const uint32_t events = it->events.load(std::memory_order_relaxed);
  int err = 0;
  if (check_paths) {
    // Linux: reverse_path_check() over the files listed by the check
    // (-EINVAL; -ENOMEM when the check ran out of memory).
    if (child) {
      for (size_t i = 0; i < nleaves; ++i)
        if (int r = topology::reverse_path_check(leaves[i]); r != 0 && err != -EINVAL) err = r;
    } else {
      err = topology::leaf_path_check(this, tf);
    }
  }
  // A child with kernel descriptors: this instance must wake on them too.
  if (!err && child) err = KernelWatch::on_nest(this, child);
  if (err) {
    unhash_locked(s, h, it);
    detach_locked(s, it);
    return err;
  }
  // Linux ep_item_poll() in ep_insert(): queue it if already ready.
  if (tf->poll(1) & events) queue_ready(it);
  return 0;
}

int Instance::add(core::File* tf, int fd, uint32_t events, uint64_t data) noexcept {
  events |= EPOLLERR | EPOLLHUP;  // Linux: always reported
  auto* child = tf->is_epoll() ? static_cast<Instance*>(tf) : nullptr;
  topology::Mode mode = first_add_mode(this, child != nullptr);

  for (;;) {
    // Declared before the topology guard so that the leaf references are
    // dropped after it is released: a last put runs the file's release,
    // which for a user file is user code (lock_order.h: releases).
    std::vector<core::File*> leaves;
    struct LeafRefs {
      std::vector<core::File*>& v;
      ~LeafRefs() {
        for (core::File* f : v) f->put();
      }
    } leaf_refs{leaves};
    topology::Guard tg(mode, tf);
    struct Hold {
      Instance* c;
      ~Hold() {
        if (c) c->watch_hold.fetch_sub(1, std::memory_order_seq_cst);
      }
    } hold{nullptr};

    if (child) {
      // Leaf ADDs into child from now on must take the full path, so that
      // the walk below or their own check sees every new leaf.
      child->watch_hold.fetch_add(1, std::memory_order_seq_cst);
      hold.c = child;
      int r = topology::loop_check(this, child, &leaves);
      if (r) return r;  // ELOOP comes before EEXIST, as in Linux
    }

    core::MaybeMutexLock cg(ctl_mutex_, CtlLocks::ctl_taken());
    const uint64_t h = hash_key(tf, fd);
    Shard& s = shard_for(h);
    core::MutexLock sl(s.mutex);
    int err = 0;
    Item* it = insert_locked(s, h, tf, fd, events, data, &err);
    if (!it) return err;

    // Order matters: watch_hold first.  A topology change raises watch_hold,
    // walks our shards, links its item (parent_count() + 1), then lowers
    // watch_hold (seq_cst RMWs).  If our shard section comes after its walk
    // we read watch_hold >= 1, or the lowered value, which synchronizes with
    // the lowering, so the parent_count() read after it sees the link.  If
    // it comes before, the walk sees our item.
    if (mode == topology::Mode::kNone &&
        (watch_hold.load(std::memory_order_seq_cst) > 0 || parent_count() > 0)) {
      // Lost a race with a topology change that made this instance
      // watched: undo (nothing saw the item yet) and take the full path.
      undo_insert_locked(s, h, it);
      mode = nested_add_mode();
      continue;
    }

    // kCached: no topology lock.  Checked here, with the item in the index
    // and not yet linked (topology.cpp, cached_add_ok, has the argument):
    // no writer active and the profile current and passing.  Then, if
    // another instance watches tf already, its paths need the full check,
    // under tf's target mutex, which is taken before the shard lock.  In
    // both cases: undo (nothing saw the item yet) and retry in kShared.
    const bool cached = mode == topology::Mode::kCached;
    if ((cached && !topology::cached_add_ok(this)) || !link_to_file(it, tf, events, cached)) {
      undo_insert_locked(s, h, it);
      mode = topology::Mode::kShared;
      continue;
    }
    return finish_add_locked(s, h, it, child, leaves.data(), leaves.size(),
                             mode != topology::Mode::kNone && !cached);
  }
}

// MOD, DEL and DISABLE under the key's shard lock; inlined into mod(),
// del(), disable() and ctl_run() (out of line they cost a call each).
[[gnu::always_inline]] inline int Instance::mod_locked(Shard& s, uint64_t h, core::File* tf, int fd, uint32_t events,
                                                       uint64_t data) noexcept {
  Item* it = find_locked(s, h, tf, fd);
  if (!it) return -ENOENT;
  if (it->events.load(std::memory_order_relaxed) & EPOLLEXCLUSIVE) return -EINVAL;
  events |= EPOLLERR | EPOLLHUP;
  it->write_event(events, data);
  // The read-mostly snapshot may hold the old mask or data; a publication
  // that begins after this reads the new ones (instance_snapshot.cpp).
  snap_invalidate();
  // Linux ep_modify(): smp_mb() between the mask write and the re-poll, so
  // that either the callback sees the new mask or the poll sees the event.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (tf->poll(1) & events) queue_ready(it);
  return 0;
}

[[gnu::always_inline]] inline int Instance::del_locked(Shard& s, uint64_t h, core::File* tf, int fd) noexcept {
  Item* it = find_locked(s, h, tf, fd);
  if (!it) return -ENOENT;
  unhash_locked(s, h, it);
  detach_locked(s, it);
  return 0;
}

[[gnu::always_inline]] inline int Instance::disable_locked(Shard& s, uint64_t h, core::File* tf, int fd) noexcept {
  Item* it = find_locked(s, h, tf, fd);
  if (!it) return -ENOENT;
  int r = 0;
  core::SpinGuard g(ready_lock_);
  uint32_t events;
  uint64_t data;
  it->read_event(&events, &data);  // stable: MOD is kept out by the shard lock
  if (!(events & EPOLLONESHOT)) {
    r = -EINVAL;
  } else if (!(events & ~kPrivateBits)) {
    r = -EBUSY;  // delivered since armed: the receiver owns it
  } else {
    it->write_event(events & kPrivateBits, data);
    snap_invalidate_locked();  // (a ONESHOT item is never in it; kept for the rule)
    if (it->linked()) list_del_locked(it);
  }
  return r;
}

int Instance::mod(core::File* tf, int fd, uint32_t events, uint64_t data) noexcept {
  CtlLocks l(this, tf, fd);
  l.shard.mutex.assert_held();  // by l.shard_lock, which the analysis cannot tie to l.shard
  return mod_locked(l.shard, l.h, tf, fd, events, data);
}

int Instance::del(core::File* tf, int fd) noexcept {
  CtlLocks l(this, tf, fd);
  l.shard.mutex.assert_held();  // by l.shard_lock, as in mod()
  return del_locked(l.shard, l.h, tf, fd);
}

// Beyond Linux: UEP_EPOLL_CTL_DISABLE (2012 RFC; uepoll.h has the contract).
// ready_lock_ orders it against a harvest's delivery of the item: a harvest
// copies a ONESHOT event only if the mask it polled with is still the
// item's under ready_lock_ (send_events), and disarms it in the same
// critical section, so either that happened first (EBUSY) or the harvest
// will see the disarmed mask and skip the item.
int Instance::disable(core::File* tf, int fd) noexcept {
  CtlLocks l(this, tf, fd);
  l.shard.mutex.assert_held();  // by l.shard_lock, as in mod()
  return disable_locked(l.shard, l.h, tf, fd);
}

// The batch's run: what CtlLocks takes per command, taken once.  Every
// shard the run's keys hash to is locked before the first command runs,
// in index order (the order any two shard locks of one instance are taken
// in: lock_order.h, level 6), so each command runs under its key's shard
// lock as mod()/del()/disable() would, and in the run's order, which keeps
// duplicate targets and the stop after a failure exact.  The lock checker
// sees the lowest shard (a lock of class kShard); the others are taken
// unchecked (Mutex::lock_unchecked), as members of that set.  Not analysed:
// the set of shard locks held is a run-time mask, taken and released in loops.
int Instance::ctl_run(const CtlCmd* cmds, int n, int* res) noexcept UEP_NO_THREAD_SAFETY_ANALYSIS {
  topology::GlobalCtlGuard global(!core::knob(core::knobs().rcu_ctl));
  core::MaybeMutexLock ctl(ctl_mutex_, CtlLocks::ctl_taken());
  uint64_t h[kMaxRun];
  uint32_t touched = 0;
  for (int k = 0; k < n; ++k) {
    h[k] = hash_key(cmds[k].tf, cmds[k].fd);
    touched |= 1u << (h[k] & (kShards - 1));
  }
  const int first = __builtin_ctz(touched);
  for (int i = first; i < kShards; ++i) {
    if (!(touched & (1u << i))) continue;
    if (i == first)
      shards_[i].mutex.lock();
    else
      shards_[i].mutex.lock_unchecked();
  }
  int k = 0;
  while (k < n) {
    const CtlCmd& c = cmds[k];
    Shard& s = shard_for(h[k]);
    int r;
    switch (c.op) {
      case EPOLL_CTL_MOD:
        r = mod_locked(s, h[k], c.tf, c.fd, c.events, c.data);
        break;
      case EPOLL_CTL_DEL:
        r = del_locked(s, h[k], c.tf, c.fd);
        break;
      default:  // UEP_EPOLL_CTL_DISABLE (the C API sends no other op)
        r = disable_locked(s, h[k], c.tf, c.fd);
        break;
    }
    res[k++] = r;
    if (r < 0) break;
  }
  for (int i = kShards - 1; i >= first; --i) {
    if (!(touched & (1u << i))) continue;
    if (i == first)
      shards_[i].mutex.unlock();
    else
      shards_[i].mutex.unlock_unchecked();
  }
  return k;
}

void Instance::detach_locked(Shard& s, Item* it) noexcept {
  s.mutex.assert_held();
  core::File* f = it->file;
  f->wq().lock();
  if (it->wait.queued()) {  // else a release of the file unlinked it
    f->wq().remove_locked(&it->wait);
    f->remove_watcher_locked();
    if (f->is_epoll()) topology::edges_changed();
  }
  f->wq().unlock();
  // Nothing can put the item on a list any more: its wait entry is gone (no
  // callback), and our shard lock keeps out ADD and MOD (queue_ready).  If
  // it is on no list and in no scan's hands now, nobody else can reach it:
  // skip ready_lock_, the one word that threads doing ctl on different
  // files of one instance would otherwise all write.
  if (it->qstate.load(std::memory_order_acquire) == 0) {
    it->registered.store(false, std::memory_order_relaxed);
    watches::unreserve();
    item_unref(it);  // the registration's reference
    return;
  }
  ready_lock_.lock();
  if (it->linked()) list_del_locked(it);
  it->registered.store(false, std::memory_order_relaxed);
  // A harvester holding the item drops the registration's reference when
  // it is done with it (see take_locked / give_back_locked).
  const bool in_hand = (it->qstate.load(std::memory_order_relaxed) & Item::kInHand) != 0;
  ready_lock_.unlock();
  watches::unreserve();
  if (!in_hand) item_unref(it);  // the registration's reference
}

void Instance::remove_released(Item* it) noexcept {
  const uint64_t h = hash_key(it->file, it->fd);
  Shard& s = shard_for(h);
  core::MutexLock sl(s.mutex);
  bool registered;
  {
    core::SpinGuard g(ready_lock_);
    registered = it->registered.load(std::memory_order_relaxed);
  }
  if (!registered) return;  // DEL or the instance's own teardown got it
  unhash_locked(s, h, it);
  detach_locked(s, it);
}
}  // namespace uepoll::epoll
