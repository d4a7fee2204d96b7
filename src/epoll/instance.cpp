// instance.cpp - epoll instance: ctl, wake callback, harvest, wait, poll.
//
// Locks (core/lock_order.h): topology (1, 2) through topology::Guard; the
// ctl mutex (3) only with concurrent_ctl off; a shard lock (4) around each
// ctl; scan_mutex_ (5) around harvests and readiness scans; target files'
// wait-queue locks (6) to link/unlink items; ready_lock_ (7) for the lists,
// with waiters_' lock inside it.  No lock is held while sleeping.
#include "epoll/instance.h"

#include "core/alloc.h"
#include "core/tuning.h"
#include "core/user_memory.h"
#include "core/waiter.h"
#include "epoll/item_cache.h"
#include "epoll/kernel_watch.h"
#include "epoll/topology.h"
#include "epoll/watches.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <new>
#include <optional>
#include <vector>

namespace uepoll::epoll {

namespace {

// Files pinned during a scan whose reference turned out to be the last one;
// released after the scan mutex is dropped (a release takes shard locks).
class DeferredPuts {
 public:
  void put(core::File* f) noexcept {
    if (!f || f->put_unless_last()) return;
    if (n_ < kMax)
      files_[n_++] = f;
    else
      f->put();  // safe, only unusual: see lock_order.h on releases
  }
  ~DeferredPuts() {
    for (int i = 0; i < n_; ++i) files_[i]->put();
  }

 private:
  static constexpr int kMax = 16;
  core::File* files_[kMax];
  int n_ = 0;
};



}  // namespace

// ---------------------------------------------------------------------------
// Construction and lifetime

// Not analysed: constructors initialise guarded fields before publication.
Instance::Instance(int status_flags) noexcept UEP_NO_THREAD_SAFETY_ANALYSIS
    : core::File(core::FileKind::kEpoll, status_flags) {
  rdllist_.prev = rdllist_.next = &rdllist_;
}

Instance::~Instance() UEP_NO_THREAD_SAFETY_ANALYSIS {  // the last holder: no lock needed
  KernelWatch::destroy(kernel_.load(std::memory_order_acquire));
}

Instance* Instance::create(int status_flags) noexcept {
  void* p = core::raw_alloc(sizeof(Instance), alignof(Instance));
  if (!p) return nullptr;
  return new (p) Instance(status_flags);
}

void Instance::struct_put() noexcept {
  if (struct_refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) retire_memory();
}

void Instance::item_unref(Item* it) noexcept {
  // acq_rel: the last unref sees every write made by other holders.
  if (it->refs.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  item_free(it);
}

// Linux ep_clear_and_put(): remove every item.  Runs after release_file()
// removed this instance from its parents.
void Instance::on_release() noexcept {
  dead_.store(true, std::memory_order_seq_cst);
  if (KernelWatch* kw = kernel_watch()) kw->release(this);
  for (Shard& s : shards_) {
    core::MutexLock g(s.mutex);
    s.index.drain([this](Item* it) { detach_locked(it); });
  }
}

// ---------------------------------------------------------------------------
// Ready-list primitives (ready_lock_ held)

void Instance::list_add_tail_locked(ListLink* head, Item* it) noexcept {
  ListLink* l = &it->rdlink;
  l->next = head;
  l->prev = head->prev;
  head->prev->next = l;
  head->prev = l;
  it->set_state_locked(Item::kLinked, true);
}

void Instance::list_add_head_locked(ListLink* head, Item* it) noexcept {
  ListLink* l = &it->rdlink;
  l->prev = head;
  l->next = head->next;
  head->next->prev = l;
  head->next = l;
  it->set_state_locked(Item::kLinked, true);
}

void Instance::list_del_locked(Item* it) noexcept {
  ListLink* l = &it->rdlink;
  l->prev->next = l->next;
  l->next->prev = l->prev;
  l->prev = l->next = nullptr;
  it->set_state_locked(Item::kLinked, false);
}

// Takes the first item of a scan list into the scanner's hands: unlinks it,
// marks it in hand (a DEL meanwhile leaves the registration's reference to
// us instead of freeing it) and makes its file safe to poll.
core::File* Instance::take_locked(Item* it, bool* pinned) noexcept {
  // In hand before unlinked: qstate, which DEL reads without this lock,
  // must never pass through 0 while the item is still ours.
  it->set_state_locked(Item::kInHand, true);
  list_del_locked(it);
  return pin_for_poll(it->file, pinned);
}

// The file to poll for an item, or nullptr when it is being released
// (Linux epi_fget(): "file doesn't exist, poll didn't happen").  The item is
// registered (removal unlinks under ready_lock_, which the caller holds), so
// the file's release has not finished and its memory is valid.  Kinds that
// allow it are polled unpinned under the caller's ReadGuard (no reference
// count traffic on the hot path, File::poll_unpinned_ok); others are pinned
// with a reference that the caller drops (*pinned = true).
core::File* Instance::pin_for_poll(core::File* f, bool* pinned) noexcept {
  *pinned = false;
  if (f->poll_unpinned_ok()) return f->refcount() > 0 ? f : nullptr;
  if (!f->tryget()) return nullptr;
  *pinned = true;
  return f;
}

// Ends take_locked(); true if the caller must drop the registration's
// reference (a DEL ran while we held the item).
bool Instance::give_back_locked(Item* it) noexcept {
  // Read before letting go: once kInHand is clear a DEL may take the
  // lock-free path in detach_locked and free the item at once.
  const bool drop = !it->registered.load(std::memory_order_relaxed);
  it->set_state_locked(Item::kInHand, false);
  return drop;
}

// Linux ep_start_scan(): steal the ready list, divert callbacks to ovflist.
void Instance::start_scan_locked(ListLink* tx) noexcept {
  if (rdllist_.next == &rdllist_) {
    tx->prev = tx->next = tx;
  } else {
    tx->next = rdllist_.next;
    tx->prev = rdllist_.prev;
    tx->next->prev = tx;
    tx->prev->next = tx;
    rdllist_.prev = rdllist_.next = &rdllist_;
  }
  ovflist_ = nullptr;
}

// Linux ep_done_scan(): ovflist items (LIFO) are head-inserted, which puts
// them back in arrival order; then what the scan did not reach goes to the
// front; then wake one waiter if anything is ready.
void Instance::done_scan_locked(ListLink* tx) noexcept {
  Item* next;
  for (Item* it = ovflist_; it != nullptr; it = next) {
    next = it->ovf_next;
    it->ovf_next = kOvfInactive;
    // Linked before leaving the overflow state: qstate never passes
    // through 0 while the item is still on a list (see detach_locked).
    if (it->registered.load(std::memory_order_relaxed) && !it->linked()) list_add_head_locked(&rdllist_, it);
    it->set_state_locked(Item::kOnOvf, false);
    // Drop the overflow list's reference.  Never the last while registered;
    // if unregistered, freeing it here is fine (item_free takes no lock).
    item_unref(it);
  }
  ovflist_ = kOvfInactive;
  if (tx->next != tx) {
    ListLink* first = tx->next;
    ListLink* last = tx->prev;
    last->next = rdllist_.next;
    rdllist_.next->prev = last;
    rdllist_.next = first;
    first->prev = &rdllist_;
  }
  if (rdllist_.next != &rdllist_) wake_one_waiter_locked();
}

// ---------------------------------------------------------------------------
// Wakeups

// Linux: list an item on ovflist while a harvest runs (LIFO through
// ovf_next); the list holds a reference.  Preconditions: ready_lock_ held,
// a scan active, the item not on ovflist yet.
void Instance::ovf_push_locked(Item* it) noexcept {
  it->ovf_next = ovflist_;
  ovflist_ = it;
  it->set_state_locked(Item::kOnOvf, true);
  it->refs.fetch_add(1, std::memory_order_relaxed);
}

// Linux wake_up(&ep->wq): one epoll_wait sleeper, if there is any.
// Preconditions: ready_lock_ held (waiters_' lock nests inside it).
void Instance::wake_one_waiter_locked() noexcept {
  if (!waiters_.active_hint()) return;
  waiters_.lock();
  waiters_.wake_locked(0);
  waiters_.unlock();
}

// Beyond Linux: a round-robin item's event goes to the waiter that has slept
// longest (sleepers are queued newest first).  Preconditions: as above.
void Instance::wake_oldest_waiter_locked() noexcept {
  if (!waiters_.active_hint()) return;
  waiters_.lock();
  waiters_.wake_oldest_locked(0);
  waiters_.unlock();
}

// Linux ep_poll_callback(): runs under the target file's wait-queue lock.
int Instance::wake_callback(core::WaitEntry* e, uint32_t key) noexcept {
  Item* it = Item::from_wait(e);
  Instance* ep = it->ep;
  int ewake = 0;
  bool pwake = false;
  // relaxed: see item.h; MOD's re-poll after its write covers the race.
  const uint32_t events = it->events.load(std::memory_order_relaxed);

  ep->ready_lock_.lock();
  if (!(events & ~kPrivateBits)) goto out;   // disabled (a fired ONESHOT)
  if (key && !(key & events)) goto out;      // not an event we want
  if (ep->ovflist_ != kOvfInactive) {        // a harvest is running
    if (it->ovf_next == kOvfInactive) ep->ovf_push_locked(it);
  } else if (!it->linked()) {
    ep->list_add_tail_locked(&ep->rdllist_, it);
  }
  if (ep->waiters_.active_hint()) {  // (wake_one_waiter_locked checks it again)
    if (events & EPOLLEXCLUSIVE) {  // (no POLLFREE keys: uepoll queues are never torn down under an item)
      switch (key & kInOutBits) {
        case EPOLLIN:
          if (events & EPOLLIN) ewake = 1;
          break;
        case EPOLLOUT:
          if (events & EPOLLOUT) ewake = 1;
          break;
        case 0:
          ewake = 1;
          break;
      }
    }
    if ((events & (EPOLLEXCLUSIVE | kRoundRobin)) == (EPOLLEXCLUSIVE | kRoundRobin))
      ep->wake_oldest_waiter_locked();  // beyond Linux: round robin over this instance's sleepers
    else
      ep->wake_one_waiter_locked();
  }
  pwake = ep->wq().active_hint();
out:
  ep->ready_lock_.unlock();
  // Linux ep_poll_safewake(): parents and poll() callers, key EPOLLIN.
  if (pwake) ep->wq().wake(EPOLLIN);
  if (!(events & EPOLLEXCLUSIVE)) ewake = 1;
  return ewake;
}

int item_wake(core::WaitEntry* e, uint32_t key) noexcept { return Instance::wake_callback(e, key); }

void Instance::queue_ready(Item* it) noexcept {
  bool pwake = false;
  ready_lock_.lock();
  bool queued = false;
  if (!it->registered.load(std::memory_order_relaxed)) {
  } else if (ovflist_ != kOvfInactive) {
    if (it->ovf_next == kOvfInactive && !it->linked()) {
      ovf_push_locked(it);
      queued = true;
    }
  } else if (!it->linked()) {
    list_add_tail_locked(&rdllist_, it);
    queued = true;
  }
  if (queued) {
    wake_one_waiter_locked();
    pwake = wq().active_hint();
  }
  ready_lock_.unlock();
  if (pwake) wq().wake(EPOLLIN);
}

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

int Instance::add(core::File* tf, int fd, uint32_t events, uint64_t data) noexcept {
  events |= EPOLLERR | EPOLLHUP;  // Linux: always reported
  core::Knobs& k = core::knobs();
  const bool target_is_ep = tf->is_epoll();
  auto* child = target_is_ep ? static_cast<Instance*>(tf) : nullptr;

  topology::Mode mode = topology::Mode::kNone;
  if (target_is_ep || !core::knob(k.rcu_ctl))
    mode = topology::Mode::kExclusive;
  else if (parent_count() > 0 || watch_hold.load(std::memory_order_seq_cst) > 0)
    mode = core::knob(k.parallel_nested_add) ? topology::Mode::kShared : topology::Mode::kExclusive;

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
    // relaxed: ordered by the shard mutex, which the teardown takes after
    // setting dead_.
    if (dead_.load(std::memory_order_relaxed)) return -EBADF;  // closed under us
    if (find_locked(s, h, tf, fd)) return -EEXIST;
    if (!watches::reserve()) return -ENOSPC;
    if (!reserve_bucket_locked(s)) {
      watches::unreserve();
      return -ENOMEM;
    }
    Item* it = item_alloc();
    if (!it) {
      watches::unreserve();
      return -ENOMEM;
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
      unhash_locked(s, h, it);
      it->registered.store(false, std::memory_order_relaxed);
      item_unref(it);
      watches::unreserve();
      mode = core::knob(k.parallel_nested_add) ? topology::Mode::kShared : topology::Mode::kExclusive;
      continue;
    }

    tf->wq().lock();
    if (events & EPOLLEXCLUSIVE)
      tf->wq().add_exclusive_locked(&it->wait);
    else
      tf->wq().add_locked(&it->wait);
    if ((events & EPOLLEXCLUSIVE) && (events & kRoundRobin)) it->wait.flags |= core::WaitEntry::kRotate;  // beyond Linux
    tf->add_watcher_locked();
    tf->wq().unlock();

    if (mode != topology::Mode::kNone) {
      // Linux: reverse_path_check() over the files listed by the check
      // (-EINVAL; -ENOMEM when the check ran out of memory).
      int err = 0;
      if (child) {
        for (core::File* f : leaves)
          if (int r = topology::reverse_path_check(f); r != 0 && err != -EINVAL) err = r;
      } else {
        err = topology::reverse_path_check(tf);
      }
      if (err) {
        unhash_locked(s, h, it);
        detach_locked(it);
        return err;
      }
    }
    // A child with kernel descriptors: this instance must wake on them too.
    if (child) {
      if (const int r = KernelWatch::on_nest(this, child)) {
        unhash_locked(s, h, it);
        detach_locked(it);
        return r;
      }
    }

    // Linux ep_item_poll() in ep_insert(): queue it if already ready.
    if (tf->poll(1) & events) queue_ready(it);
    return 0;
  }
}

int Instance::mod(core::File* tf, int fd, uint32_t events, uint64_t data) noexcept UEP_NO_THREAD_SAFETY_ANALYSIS {
  CtlLocks l(this, tf, fd);
  Item* it = find_locked(l.shard, l.h, tf, fd);
  if (!it) return -ENOENT;
  if (it->events.load(std::memory_order_relaxed) & EPOLLEXCLUSIVE) return -EINVAL;
  events |= EPOLLERR | EPOLLHUP;
  it->write_event(events, data);
  // Linux ep_modify(): smp_mb() between the mask write and the re-poll, so
  // that either the callback sees the new mask or the poll sees the event.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (tf->poll(1) & events) queue_ready(it);
  return 0;
}

int Instance::del(core::File* tf, int fd) noexcept UEP_NO_THREAD_SAFETY_ANALYSIS {
  CtlLocks l(this, tf, fd);
  Item* it = find_locked(l.shard, l.h, tf, fd);
  if (!it) return -ENOENT;
  unhash_locked(l.shard, l.h, it);
  detach_locked(it);
  return 0;
}

// Beyond Linux: UEP_EPOLL_CTL_DISABLE (2012 RFC; uepoll.h has the contract).
// ready_lock_ orders it against a harvest's delivery of the item: a harvest
// copies a ONESHOT event only if the mask it polled with is still the
// item's under ready_lock_ (send_events), and disarms it in the same
// critical section, so either that happened first (EBUSY) or the harvest
// will see the disarmed mask and skip the item.
int Instance::disable(core::File* tf, int fd) noexcept UEP_NO_THREAD_SAFETY_ANALYSIS {  // CtlLocks, as del()
  CtlLocks l(this, tf, fd);
  Item* it = find_locked(l.shard, l.h, tf, fd);
  if (!it) return -ENOENT;
  int r = 0;
  ready_lock_.lock();
  uint32_t events;
  uint64_t data;
  it->read_event(&events, &data);  // stable: MOD is kept out by the shard lock
  if (!(events & EPOLLONESHOT)) {
    r = -EINVAL;
  } else if (!(events & ~kPrivateBits)) {
    r = -EBUSY;  // delivered since armed: the receiver owns it
  } else {
    it->write_event(events & kPrivateBits, data);
    if (it->linked()) list_del_locked(it);
  }
  ready_lock_.unlock();
  return r;
}

void Instance::detach_locked(Item* it) noexcept {
  core::File* f = it->file;
  f->wq().lock();
  if (it->wait.queued()) {  // else a release of the file unlinked it
    f->wq().remove_locked(&it->wait);
    f->remove_watcher_locked();
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
  ready_lock_.lock();
  const bool registered = it->registered.load(std::memory_order_relaxed);
  ready_lock_.unlock();
  if (!registered) return;  // DEL or the instance's own teardown got it
  unhash_locked(s, h, it);
  detach_locked(it);
}

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

bool Instance::scan_has_ready(int depth) noexcept {
  DeferredPuts puts;
  core::reclaim::ReadGuard guard;  // for files polled unpinned (pin_for_poll)
  core::MutexLock scan(scan_mutex_);
  ListLink tx;
  bool found = false;
  ready_lock_.lock();
  start_scan_locked(&tx);
  while (!found && tx.next != &tx) {
    Item* it = Item::from_rdlink(tx.next);
    bool pinned;
    core::File* f = take_locked(it, &pinned);
    const uint32_t events = it->events.load(std::memory_order_relaxed);
    ready_lock_.unlock();

    const uint32_t revents = f ? (f->poll(depth + 1) & events) : 0;
    if (pinned) puts.put(f);

    ready_lock_.lock();
    if (revents && it->registered.load(std::memory_order_relaxed) && !it->linked()) {
      list_add_head_locked(&tx, it);  // stays where it was (Linux breaks here)
      found = true;
    }
    // Not ready: dropped from the list (Linux list_del_init in the scan).
    if (give_back_locked(it)) item_unref(it);
  }
  done_scan_locked(&tx);
  ready_lock_.unlock();
  return found;
}

uint32_t Instance::poll(int depth) noexcept {
  if (KernelWatch* kw = kernel_watch())
    if (depth <= kMaxNests + 1 && kw->ready(this)) return EPOLLIN | EPOLLRDNORM;
  core::reclaim::ReadGuard guard;  // for files polled unpinned (pin_for_poll)
  // Fast path: no harvest running and the first queued item is really
  // ready.  Linux's scan would stop at that same item having pruned
  // nothing, and would leave every list as it was, so skipping the scan is
  // unobservable; it saves the scan mutex and two list splices per level.
  ready_lock_.lock();
  if (!events_available_locked()) {
    ready_lock_.unlock();
    return 0;
  }
  const bool global = !core::knob(core::knobs().lockless_nested_poll);
  if (!global && ovflist_ == kOvfInactive) {
    Item* first = Item::from_rdlink(rdllist_.next);
    bool pinned;
    core::File* f = pin_for_poll(first->file, &pinned);
    // Everything needed from the item is read under the lock: it may be
    // deleted and recycled as soon as we drop it.
    const uint32_t events = first->events.load(std::memory_order_relaxed);
    if (f) {
      ready_lock_.unlock();
      const bool ready = depth <= kMaxNests + 1 && (f->poll(depth + 1) & events) != 0;
      if (pinned) f->put();  // a last put releases here: see lock_order.h on releases
      if (ready) return EPOLLIN | EPOLLRDNORM;
      ready_lock_.lock();
    }
  }
  ready_lock_.unlock();
  topology::NestedPollGuard nested(global);
  const bool ready = depth <= kMaxNests + 1 && scan_has_ready(depth);
  return ready ? (EPOLLIN | EPOLLRDNORM) : 0;
}

// ---------------------------------------------------------------------------
// wait (Linux ep_poll)

int Instance::wait(struct epoll_event* evs, int maxevents, const timespec* deadline, bool nonblocking,
                   const sigset_t* sigmask) noexcept {
  if (!core::user_range_ok(evs, static_cast<size_t>(maxevents) * sizeof(struct epoll_event))) return -EFAULT;
  // epoll_pwait: the caller's mask is in force for the whole call; we block
  // everything while awake and let ppoll install `sigmask` atomically.
  std::optional<core::SignalBlock> blocked;
  if (sigmask) blocked.emplace();

  bool timed_out = nonblocking;
  bool eintr = false;
  ready_lock_.lock();
  bool eavail = events_available_locked();
  ready_lock_.unlock();

  SpinWindow spin;
  core::ThreadWaiter* w = nullptr;
  std::optional<core::ScopedEntry> lease;  // not on the stack: see ThreadWaiter::take_entry
  for (;;) {
    // With a kernel side, its events are only known by asking the kernel.
    KernelWatch* kw = kernel_watch();
    if (eavail || kw) {
      int n = kw ? kw->harvest(this, evs, maxevents, !timed_out && !w) : send_events(evs, maxevents);
      if (n != 0) return n;
    }
    if (timed_out) return 0;
    if (eintr) return -EINTR;
    if (busy_wait(deadline, &spin)) {  // beyond Linux: EPIOCSPARAMS (epoll/busy_poll.cpp)
      eavail = true;
      continue;
    }
    if (!w) {
      int err = 0;
      w = core::ThreadWaiter::self(&err);
      if (!w) return -err;
      lease.emplace(w);
    }
    core::WaiterEntry& we = lease->get();
    if (!blocked) blocked.emplace();  // no handler may run between check and sleep
    const bool autoremove = core::knob(core::knobs().exclusive_autoremove);
    we.autoremove = autoremove;
    w->prepare();
    ready_lock_.lock();
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
    const sigset_t* mask = sigmask ? sigmask : &blocked->saved();
    const int s = kw ? kw->sleep(w, deadline, mask) : w->sleep(deadline, mask);

    eavail = true;
    ready_lock_.lock();
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

// ---------------------------------------------------------------------------
// Test hook

int Instance::debug_dump(std::string* dump) noexcept {
  struct Row {
    uint64_t id;
    int fd;
    uint32_t events;
    uint64_t data;
  };
  // Nothing is allocated under a lock that an exception could leave held:
  // the rows are collected into reserved memory (for_each_item holds a
  // shard mutex, released on unwinding, but is noexcept: no throw inside).
  try {
    std::vector<Row> rows;
    bool short_of_room = true;
    while (short_of_room) {
      rows.clear();
      short_of_room = false;
      for_each_item([&](Item* it) {
        if (rows.size() == rows.capacity()) {
          short_of_room = true;
          return;
        }
        uint32_t ev;
        uint64_t d;
        it->read_event(&ev, &d);
        rows.push_back({it->file->id(), it->fd, ev, d});
      });
      if (short_of_room) rows.reserve(rows.capacity() * 2 + 16);
    }
    std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
      return a.id != b.id ? a.id < b.id : a.fd < b.fd;
    });
    std::vector<std::pair<uint64_t, int>> ready;
    for (;;) {
      core::MutexLock scan(scan_mutex_);
      ready_lock_.lock();
      size_t n = 0;
      for (ListLink* l = rdllist_.next; l != &rdllist_; l = l->next) ++n;
      if (n <= ready.capacity()) {
        for (ListLink* l = rdllist_.next; l != &rdllist_; l = l->next) {
          Item* it = Item::from_rdlink(l);
          ready.emplace_back(it->file->id(), it->fd);
        }
        ready_lock_.unlock();
        break;
      }
      ready_lock_.unlock();
      ready.reserve(n + 16);  // no spin lock held (the scan mutex unwinds)
    }
    std::string out = "items:";
    char buf[128];
    for (const Row& r : rows) {
      std::snprintf(buf, sizeof buf, " (%llu,%d,%x,%llx)", static_cast<unsigned long long>(r.id), r.fd, r.events,
                    static_cast<unsigned long long>(r.data));
      out += buf;
    }
    out += "\nready:";
    for (const auto& [id, fd] : ready) {
      std::snprintf(buf, sizeof buf, " (%llu,%d)", static_cast<unsigned long long>(id), fd);
      out += buf;
    }
    out += "\n";
    *dump = std::move(out);
    return 0;
  } catch (const std::bad_alloc&) {
    return -ENOMEM;
  }
}

}  // namespace uepoll::epoll
