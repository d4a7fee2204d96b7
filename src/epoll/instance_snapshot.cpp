// instance_snapshot.cpp - the read-mostly zero-timeout path: a snapshot of
// an instance's ready list that threads polling the instance with timeout 0
// (or a parent's harvest polling it as a file) read without writing any
// shared cache line, while the list stays as it is.  The design and the
// memory-ordering argument are in docs/design.md, "Read-mostly zero-timeout
// waits".
//
// Locks (core/lock_order.h): the snapshot is written only under ready_lock_
// (12) -- invalidated by every ready-list change, by MOD and by DISABLE, and
// published at the end of each scan (done_scan_locked) -- and read with no
// lock at all, inside a reclaim::ReadGuard, as a seqlock.  The readers poll
// target files (which may take their wait-queue locks, 11) with no lock held.
#include "epoll/instance.h"

#include "core/reclaim.h"
#include "core/tuning.h"
#include "core/user_memory.h"

#include <cstring>

namespace uepoll::epoll {

// Linux's harvest gives the same result as our reading of the snapshot when
// the list holds only level-triggered items of files polled unpinned: each
// is reported and requeued at the tail, which leaves the list as it was.
// seq values: odd = valid.  An invalidation moves an odd s to s + 1 and an
// even s to s + 2, always with a CAS, so a publication (a CAS from the even
// value it started from) fails if any invalidation came in between.
void Instance::snap_invalidate() noexcept {
  uint64_t s = snap_.seq.load(std::memory_order_relaxed);
  // release: pairs with the acquire load that starts snap_publish_locked,
  // so a publication that reads this value also reads the caller's writes
  // before it (MOD's new mask and data).
  while (!snap_.seq.compare_exchange_weak(s, (s | 1) + 1, std::memory_order_release, std::memory_order_relaxed)) {
  }
}

void Instance::snap_publish_locked() noexcept {
  ready_lock_.assert_held();
  // acquire: pairs with the release CAS in snap_invalidate (MOD).
  const uint64_t s = snap_.seq.load(std::memory_order_acquire);
  if (s & 1) return;  // still valid: nothing changed since it was published
  uint32_t n = 0;
  for (ListLink* l = rdllist_.next; l != &rdllist_; l = l->next) {
    if (n == kSnapMax) return;
    Item* it = Item::from_rdlink(l);
    uint32_t ev;
    uint64_t d;
    it->read_event(&ev, &d);  // a MOD meanwhile invalidates after its write
    if ((ev & (EPOLLET | EPOLLONESHOT)) || !(ev & ~kPrivateBits) || !it->file->poll_unpinned_ok()) return;
    if (n == 0)
      // release: pairs with the readers' acquire fence after their slot
      // loads; a reader that reads a slot written below also sees the
      // invalidation that preceded it (under ready_lock_), so its re-check
      // of seq fails.
      std::atomic_thread_fence(std::memory_order_release);
    snap_.file[n].store(it->file, std::memory_order_relaxed);
    snap_.events[n].store(ev, std::memory_order_relaxed);
    snap_.data[n].store(d, std::memory_order_relaxed);
    ++n;
  }
  snap_.n.store(n, std::memory_order_relaxed);
  // release: pairs with the acquire load that starts each reader; it sees
  // the slots and n written above.  Fails if a MOD invalidated meanwhile.
  uint64_t expected = s;
  snap_.seq.compare_exchange_strong(expected, s + 1, std::memory_order_release, std::memory_order_relaxed);
}

// One consistent reading of the snapshot (its files not yet polled).
struct Instance::SnapRead {
  uint64_t seq;
  uint32_t n;
  core::File* file[kSnapMax];
  uint32_t events[kSnapMax];
  uint64_t data[kSnapMax];
};

// True and *r filled if the snapshot was valid and read whole (at most
// `limit` items); false: take the locked path.
bool Instance::snap_read(SnapRead* r, uint32_t limit) const noexcept {
  // acquire: pairs with the release store that ends snap_publish_locked.
  r->seq = snap_.seq.load(std::memory_order_acquire);
  if (!(r->seq & 1)) return false;
  r->n = snap_.n.load(std::memory_order_relaxed);
  if (r->n > limit || r->n > kSnapMax) return false;
  for (uint32_t i = 0; i < r->n; ++i) {
    r->file[i] = snap_.file[i].load(std::memory_order_relaxed);
    r->events[i] = snap_.events[i].load(std::memory_order_relaxed);
    r->data[i] = snap_.data[i].load(std::memory_order_relaxed);
  }
  return snap_unchanged(r->seq);
}

bool Instance::snap_unchanged(uint64_t seq) const noexcept {
  // acquire: orders the loads before it (slots, target polls) before the
  // re-check; pairs with the release fence in snap_publish_locked.
  std::atomic_thread_fence(std::memory_order_acquire);
  return snap_.seq.load(std::memory_order_relaxed) == seq;
}

bool Instance::snap_enabled() const noexcept {
  return kernel_watch() == nullptr && core::knob(core::knobs().lockless_nested_poll);
}

bool Instance::send_events_unchanged(struct epoll_event* evs, int maxevents, int* res) noexcept {
  if (!snap_enabled()) return false;
  // Files in the snapshot are polled unpinned: their memory is retired only
  // after their items left the list, which invalidated the snapshot first.
  core::reclaim::ReadGuard guard;
  SnapRead r;
  if (!snap_read(&r, static_cast<uint32_t>(maxevents))) return false;  // n > maxevents: LT rotation
  if (r.n == 0) {
    *res = 0;  // nothing ready, no scan running
    return true;
  }
  // Linux ep_done_scan() wakes a sleeper when it leaves items ready; leave
  // that to the locked path.  A sleeper queues itself only on an empty list
  // (under ready_lock_), so one queued before the publication is seen here.
  if (waiters_.active_hint()) return false;
  struct epoll_event out[kSnapMax];
  for (uint32_t i = 0; i < r.n; ++i) {
    core::File* f = r.file[i];
    if (f->refcount() <= 0) return false;  // being released: Linux's harvest skips it
    const uint32_t revents = f->poll(1) & r.events[i];
    if (!revents) return false;  // the locked harvest drops it from the list
    out[i].events = revents;
    out[i].data.u64 = r.data[i];
  }
  if (!snap_unchanged(r.seq)) return false;
  const size_t bytes = sizeof(struct epoll_event) * r.n;
  if (core::writable_prefix(evs, bytes) < bytes) return false;  // EFAULT as Linux: locked path
  std::memcpy(static_cast<void*>(evs), out, bytes);
  *res = static_cast<int>(r.n);
  return true;
}

int Instance::poll_unchanged(int depth) noexcept {
  if (!snap_enabled()) return -1;
  SnapRead r;
  if (!snap_read(&r, kSnapMax)) return -1;
  if (r.n == 0) return 0;  // nothing queued, no scan running
  core::File* f = r.file[0];
  // As poll()'s locked fast path: the first queued item, really ready.
  if (f->refcount() > 0 && (f->poll(depth + 1) & r.events[0])) return 1;
  return -1;  // the locked scan decides (and prunes what is not ready)
}

}  // namespace uepoll::epoll
