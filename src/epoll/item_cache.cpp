// item_cache.cpp - slab + per-thread cache for items (see item_cache.h).
// Locks: the free list mutex (a leaf, 15), never under a SpinLock.
#include "epoll/item_cache.h"

#include "core/alloc.h"
#include "core/fork.h"
#include "core/thread_exit.h"
#include "core/lock_state.h"
#include "core/mutex.h"
#include "core/tuning.h"

#include <new>

namespace uepoll::epoll {

namespace {

constexpr int kSlabItems = 64;
constexpr int kCacheMax = 128;
constexpr int kCacheSpill = 64;

struct FreeNode {
  FreeNode* next;
};

core::Mutex g_free_mutex(core::lock_class::kItemCache);  // a leaf (15), never under a SpinLock
FreeNode* g_free UEP_GUARDED_BY(g_free_mutex) = nullptr;
long g_free_count UEP_GUARDED_BY(g_free_mutex) = 0;

// Trivially destructible (core/thread_exit.h): item_cache_thread_exit()
// hands the cache back when the thread exits.
struct ThreadCache {
  FreeNode* head = nullptr;
  int count = 0;
  void give_back() noexcept {
    if (!head) return;
    core::MutexLock g(g_free_mutex);
    while (head) {
      FreeNode* n = head;
      head = n->next;
      n->next = g_free;
      g_free = n;
      ++g_free_count;
    }
    count = 0;
  }
};
thread_local ThreadCache tls_cache;

bool refill(ThreadCache& c) {
  core::thread_exit_arm();  // the cache is handed back at thread exit
  {
    core::MutexLock g(g_free_mutex);
    while (g_free && c.count < kCacheSpill) {
      FreeNode* n = g_free;
      g_free = n->next;
      --g_free_count;
      n->next = c.head;
      c.head = n;
      ++c.count;
    }
  }
  if (c.head) return true;
  // A new slab: one counted allocation for 64 items, exact-size slots
  // (80 bytes, 16-aligned like the slab).  Slabs are never returned to the
  // system (a slab cache, like Linux's epi_cache).
  char* slab = static_cast<char*>(core::raw_alloc(sizeof(Item) * kSlabItems, alignof(Item)));
  if (!slab) return false;
  for (int i = 0; i < kSlabItems; ++i) {
    auto* n = reinterpret_cast<FreeNode*>(slab + i * sizeof(Item));
    n->next = c.head;
    c.head = n;
    ++c.count;
  }
  return true;
}

// Hands kCacheSpill items of c to the global free list.  Preconditions: no
// SpinLock held (the free list's lock is a Mutex).
void spill(ThreadCache& c) {
  core::MutexLock g(g_free_mutex);
  for (int i = 0; i < kCacheSpill; ++i) {
    FreeNode* m = c.head;
    c.head = m->next;
    --c.count;
    m->next = g_free;
    g_free = m;
    ++g_free_count;
  }
}

}  // namespace

void item_cache_thread_exit() noexcept { tls_cache.give_back(); }

// The fork hooks (core/fork.h), not analysed (-Wthread-safety): a lock taken
// in prepare is released in parent or child, so the free list is whole in the child.  The
// caches of the parent's other threads are lost to the child (at most
// kCacheMax items each).
void item_cache_fork_prepare() noexcept UEP_NO_THREAD_SAFETY_ANALYSIS { g_free_mutex.lock(); }
void item_cache_fork_parent() noexcept UEP_NO_THREAD_SAFETY_ANALYSIS { g_free_mutex.unlock(); }
void item_cache_fork_child() noexcept UEP_NO_THREAD_SAFETY_ANALYSIS { g_free_mutex.unlock(); }

Item* item_alloc() noexcept {
  if (!core::knob(core::knobs().alloc_reuse)) {
    void* p = core::raw_alloc(sizeof(Item), alignof(Item));
    if (!p) return nullptr;
    Item* it = new (p) Item();
    it->wait.flags = core::WaitEntry::kItem;
    return it;
  }
  ThreadCache& c = tls_cache;
  if (c.count > kCacheMax) spill(c);  // grown by frees made under a SpinLock
  if (!c.head && !refill(c)) return nullptr;
  FreeNode* n = c.head;
  c.head = n->next;
  --c.count;
  Item* it = new (n) Item();
  it->wait.flags = core::WaitEntry::kItem | Item::kFromSlab;
  return it;
}

void item_free(Item* it) noexcept {
  if (!it->from_slab()) {
    it->~Item();
    core::raw_free(it);
    return;
  }
  it->~Item();
  ThreadCache& c = tls_cache;
  // A cache that holds items was armed when it got its first one (here or
  // in refill): arm only an empty one.
  if (!c.head) core::thread_exit_arm();
  auto* n = reinterpret_cast<FreeNode*>(it);
  n->next = c.head;
  c.head = n;
  // A free made under a SpinLock (a harvest dropping a deleted item under
  // ready_lock_) never takes the free list's mutex: the cache runs over its
  // bound until the next free or allocation made without one.
  if (++c.count > kCacheMax && !core::thread_holds_spinlock()) spill(c);
}

}  // namespace uepoll::epoll
