// instance_poll.cpp - an instance polled as a file (Linux
// ep_eventpoll_poll / __ep_eventpoll_poll): what a parent's harvest, a
// parent's ADD/MOD and uep_poll() callers see, EPOLLIN if some queued item
// is truly ready.  Unready items the scan meets are dropped from the ready
// list, as Linux's scan does.
//
// Locks (core/lock_order.h): the nested-poll mutex (8) only with the
// lockless_nested_poll knob off; scan_mutex_ (9), nested parent before
// child as the poll descends; ready_lock_ (12) around list steps only, never
// while polling an item's file.  Depth is bounded by EP_MAX_NESTS + 1.
#include "epoll/instance.h"

#include "core/reclaim.h"
#include "core/tuning.h"
#include "epoll/deferred_puts.h"
#include "epoll/kernel_watch.h"
#include "epoll/topology.h"

namespace uepoll::epoll {

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
  // Read-mostly path: the snapshot of an unchanged ready list (no lock, no
  // shared write; instance_snapshot.cpp).
  if (depth <= kMaxNests + 1)
    if (const int r = poll_unchanged(depth); r >= 0) return r ? (EPOLLIN | EPOLLRDNORM) : 0;
  // Fast path: no harvest running and the first queued item is really
  // ready.  Linux's scan would stop at that same item having pruned
  // nothing, and would leave every list as it was, so skipping the scan is
  // unobservable; it saves the scan mutex and two list splices per level.
  ready_lock_.lock();
  // No scan running: the list is whole, so its snapshot can be published
  // here too (an instance only ever polled by its parents is never scanned,
  // and its parents' readers would otherwise take this lock on every poll).
  // A no-op when the snapshot is still valid.
  if (ovflist_ == kOvfInactive) snap_publish_locked();
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
}  // namespace uepoll::epoll
