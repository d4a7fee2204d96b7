// instance_ready.cpp - the ready list of an instance (Linux ep->rdllist and
// ep->ovflist) and everything that puts items on it: the list primitives,
// a scan's start and end (ep_start_scan, ep_done_scan), the wake callback
// registered on target files (ep_poll_callback) and queue_ready (ADD and
// MOD found the file ready).
//
// Locks (core/lock_order.h): ready_lock_ (12), and waiters_' lock (13)
// inside it to kick one epoll_wait sleeper.  The wake callback runs under
// the target file's wait-queue lock (11) and takes the instance's own
// wait-queue lock (11, nested one level up) after dropping ready_lock_, to
// wake parents and poll() callers.  Nothing here sleeps, allocates or
// copies user memory.
#include "epoll/instance.h"

#include "core/tuning.h"
#include "core/waiter.h"
#include "epoll/item_cache.h"
#include "epoll/kernel_watch.h"

namespace uepoll::epoll {

// ---------------------------------------------------------------------------
// Ready-list primitives (ready_lock_ held)

// Links it between two adjacent links of a ready list.
void Instance::list_link_locked(ListLink* prev, ListLink* next, Item* it) noexcept {
  ready_lock_.assert_held();
  ListLink* l = &it->rdlink;
  l->prev = prev;
  l->next = next;
  prev->next = l;
  next->prev = l;
  it->set_state_locked(Item::kLinked, true);
  snap_invalidate_locked();
}

void Instance::list_add_tail_locked(ListLink* head, Item* it) noexcept { list_link_locked(head->prev, head, it); }

void Instance::list_add_head_locked(ListLink* head, Item* it) noexcept { list_link_locked(head, head->next, it); }

void Instance::list_del_locked(Item* it) noexcept {
  ready_lock_.assert_held();
  ListLink* l = &it->rdlink;
  l->prev->next = l->next;
  l->next->prev = l->prev;
  l->prev = l->next = nullptr;
  it->set_state_locked(Item::kLinked, false);
  snap_invalidate_locked();
}

// Takes the first item of a scan list into the scanner's hands: unlinks it,
// marks it in hand (a DEL meanwhile leaves the registration's reference to
// us instead of freeing it) and makes its file safe to poll.
core::File* Instance::take_locked(Item* it, bool* pinned) noexcept {
  ready_lock_.assert_held();
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
  ready_lock_.assert_held();
  snap_invalidate_locked();  // the list is about to change hands
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
// front; then wake one waiter if anything is ready, and publish the
// read-mostly snapshot of what the list now holds.
void Instance::done_scan_locked(ListLink* tx) noexcept {
  ready_lock_.assert_held();
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
  snap_publish_locked();  // beyond Linux: the read-mostly path (instance_snapshot.cpp)
}

// ---------------------------------------------------------------------------
// Wakeups

// Linux: list an item on ovflist while a harvest runs (LIFO through
// ovf_next); the list holds a reference.  Preconditions: ready_lock_ held,
// a scan active, the item not on ovflist yet.
void Instance::ovf_push_locked(Item* it) noexcept {
  ready_lock_.assert_held();
  it->ovf_next = ovflist_;
  ovflist_ = it;
  it->set_state_locked(Item::kOnOvf, true);
  it->refs.fetch_add(1, std::memory_order_relaxed);
}

// Linux wake_up(&ep->wq): one epoll_wait sleeper, if there is any --
// unless the one kicked last has not run yet (kicked_, instance.h): the
// event is on the ready list, that thread's harvest finds it, and its
// done_scan_locked() passes the wakeup on if anything is left.  Nothing is
// lost: kicked_ is cleared only by its thread, under ready_lock_, after
// its sleep and before its harvest (Instance::wait), so every event queued
// while it was set is either on the list that harvest scans or arrives
// after the clear and kicks here.  Preconditions: ready_lock_ held
// (waiters_' lock nests inside it).
void Instance::wake_one_waiter_locked() noexcept {
  ready_lock_.assert_held();
  if (!has_sleepers_locked()) return;
  if (kicked_ && !kicked_->dead() && core::knob(core::knobs().burst_wake_chain)) return;
  core::WaitEntry* took = waiters_.wake(0);
  // waiters_ holds epoll_wait sleepers' WaiterEntry entries and the kernel
  // side's doorbell entry (KernelWatch::ring_, no kWaiter: no thread to
  // remember); an entry's memory stays valid while we hold ready_lock_
  // (its owner dequeues under it).
  kicked_ = took && (took->flags & core::WaitEntry::kWaiter) ? reinterpret_cast<core::WaiterEntry*>(took)->waiter
                                                             : nullptr;
}

bool Instance::has_sleepers_locked() const noexcept {
  ready_lock_.assert_held();
  const uint32_t n = waiters_.size_hint();
  if (n != 1) return n != 0;
  const KernelWatch* kw = kernel_watch();
  return !kw || !kw->ring_idle_locked();
}

// Beyond Linux: a round-robin item's event goes to the waiter that has slept
// longest (sleepers are queued newest first).  Preconditions: as above.
void Instance::wake_oldest_waiter_locked() noexcept {
  ready_lock_.assert_held();
  if (!has_sleepers_locked()) return;
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
  if (ep->has_sleepers_locked()) {  // (wake_one_waiter_locked checks it again)
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
}  // namespace uepoll::epoll
