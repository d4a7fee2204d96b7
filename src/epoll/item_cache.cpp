// item_cache.cpp - slab + per-thread cache for items (see item_cache.h).
#include "epoll/item_cache.h"

#include "core/alloc.h"
#include "core/fork.h"
#include "core/thread_exit.h"
#include "core/tuning.h"

#include <mutex>
#include <new>

namespace uepoll::epoll {

namespace {

constexpr int kSlabItems = 64;
constexpr int kCacheMax = 128;
constexpr int kCacheSpill = 64;

struct FreeNode {
  FreeNode* next;
};

std::mutex g_free_mutex;
FreeNode* g_free = nullptr;  // guarded by g_free_mutex
long g_free_count = 0;        // guarded by g_free_mutex

// Trivially destructible (core/thread_exit.h): item_cache_thread_exit()
// hands the cache back when the thread exits.
struct ThreadCache {
  FreeNode* head = nullptr;
  int count = 0;
  void give_back() noexcept {
    if (!head) return;
    std::lock_guard<std::mutex> g(g_free_mutex);
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
    std::lock_guard<std::mutex> g(g_free_mutex);
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
  // A new slab: one counted allocation for 64 items.  Slabs are never
  // returned to the system (a slab cache, like Linux's epi_cache).
  char* slab = static_cast<char*>(core::raw_alloc(sizeof(Item) * kSlabItems));
  if (!slab) return false;
  for (int i = 0; i < kSlabItems; ++i) {
    auto* n = reinterpret_cast<FreeNode*>(slab + i * sizeof(Item));
    n->next = c.head;
    c.head = n;
    ++c.count;
  }
  return true;
}

}  // namespace

void item_cache_thread_exit() noexcept { tls_cache.give_back(); }

// The fork hooks (core/fork.h): the free list is whole in the child.  The
// caches of the parent's other threads are lost to the child (at most
// kCacheMax items each).
void item_cache_fork_prepare() noexcept { g_free_mutex.lock(); }
void item_cache_fork_parent() noexcept { g_free_mutex.unlock(); }
void item_cache_fork_child() noexcept { g_free_mutex.unlock(); }

Item* item_alloc() noexcept {
  if (!core::knob(core::knobs().alloc_reuse)) {
    void* p = core::raw_alloc(sizeof(Item));
    if (!p) return nullptr;
    return new (p) Item();
  }
  ThreadCache& c = tls_cache;
  if (!c.head && !refill(c)) return nullptr;
  FreeNode* n = c.head;
  c.head = n->next;
  --c.count;
  Item* it = new (n) Item();
  it->from_slab = true;
  return it;
}

void item_free(Item* it) noexcept {
  if (!it->from_slab) {
    it->~Item();
    core::raw_free(it);
    return;
  }
  it->~Item();
  ThreadCache& c = tls_cache;
  core::thread_exit_arm();
  auto* n = reinterpret_cast<FreeNode*>(it);
  n->next = c.head;
  c.head = n;
  if (++c.count > kCacheMax) {
    std::lock_guard<std::mutex> g(g_free_mutex);
    for (int i = 0; i < kCacheSpill; ++i) {
      FreeNode* m = c.head;
      c.head = m->next;
      --c.count;
      m->next = g_free;
      g_free = m;
      ++g_free_count;
    }
  }
}

}  // namespace uepoll::epoll
