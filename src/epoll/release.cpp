// release.cpp - Linux eventpoll_release_file(): when a file's last
// reference goes, every item watching it is removed from its instance, one
// at a time: found and unlinked under the file's wait-queue lock (11), then
// removed from its instance under that instance's shard and ready locks
// (6, 12).  The two steps never overlap, so the lock order holds.
#include "epoll/release.h"

#include "core/file.h"
#include "epoll/instance.h"
#include "epoll/item.h"
#include "epoll/topology.h"

namespace uepoll::epoll {

void release_file(core::File* f) noexcept {
  // Linux: if (likely(!READ_ONCE(file->f_ep))) return;  Nobody can add a
  // registration now: that needs a reference and the count reached zero.
  if (f->watchers.load(std::memory_order_acquire) == 0) return;
  for (;;) {
    f->wq().lock();
    core::WaitEntry* e = f->wq().find_locked([](core::WaitEntry* x) {
      return (x->flags & core::WaitEntry::kItem) != 0;
    });
    if (!e) {
      f->wq().unlock();
      return;
    }
    Item* it = Item::from_wait(e);
    Instance* ep = it->ep;
    // Pin the item and its owner before dropping the queue lock: the
    // instance may be closing concurrently, and its teardown cannot finish
    // while the item is still on this queue, so its struct count is live.
    // (The pin that Linux's CVE-2026-46242 fix added on this path.)
    it->refs.fetch_add(1, std::memory_order_relaxed);
    ep->struct_get();
    f->wq().remove_locked(e);
    f->remove_watcher_locked();
    if (f->is_epoll()) topology::edges_changed();  // an edge into f goes
    f->wq().unlock();
    ep->remove_released(it);
    Instance::item_unref(it);
    ep->struct_put();
  }
}

}  // namespace uepoll::epoll
