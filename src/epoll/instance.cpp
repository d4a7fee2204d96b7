// instance.cpp - epoll instance: construction, teardown (Linux
// ep_clear_and_put), the item hash and the uep_debug_dump test hook.
//
// The rest of Instance lives beside it, one responsibility a file:
//   instance_ready.cpp  ready-list primitives, wake callback, queue_ready
//   instance_ctl.cpp    epoll_ctl: ADD, MOD, DEL, DISABLE, item removal
//   instance_wait.cpp   epoll_wait and the harvest (ep_poll, ep_send_events)
//   instance_poll.cpp   the instance polled as a file (nesting)
//
// Locks (core/lock_order.h): the teardown takes each shard lock (4) in turn
// and, through detach_locked, target files' wait-queue locks (6) and
// ready_lock_ (7); debug_dump takes the shard locks one at a time, then
// scan_mutex_ (5) and ready_lock_ (7).  Nothing is allocated under a
// SpinLock.
#include "epoll/instance.h"

#include "core/alloc.h"
#include "epoll/item_cache.h"
#include "epoll/kernel_watch.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <new>
#include <vector>

namespace uepoll::epoll {

// ---------------------------------------------------------------------------
// Construction and lifetime

// Not analysed: constructors initialise guarded fields before publication.
Instance::Instance(int status_flags) noexcept UEP_NO_THREAD_SAFETY_ANALYSIS
    : core::File(core::FileKind::kEpoll, status_flags) {
  rdllist_.prev = rdllist_.next = &rdllist_;
}

Instance::~Instance() UEP_NO_THREAD_SAFETY_ANALYSIS {  // the last holder: no lock needed
  for (Shard& s : shards_) core::raw_free(s.buckets);
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
    for (uint32_t b = 0; b < s.nbuckets; ++b) {
      while (Item* it = s.buckets[b]) {
        s.buckets[b] = it->hash_next;
        --s.count;
        detach_locked(it);
      }
    }
  }
}

// ---------------------------------------------------------------------------
// The item hash

uint64_t Instance::hash_key(const core::File* f, int fd) noexcept {
  uint64_t h = reinterpret_cast<uintptr_t>(f) ^ (static_cast<uint64_t>(static_cast<uint32_t>(fd)) << 32);
  h ^= h >> 29;
  h *= 0xBF58476D1CE4E5B9ULL;
  h ^= h >> 32;
  return h;
}

Item* Instance::find_locked(Shard& s, uint64_t h, const core::File* f, int fd) noexcept {
  if (!s.nbuckets) return nullptr;
  for (Item* it = *bucket_for(s, h); it; it = it->hash_next)
    if (it->file == f && it->fd == fd) return it;
  return nullptr;
}

// Not analysed beyond its precondition: it rehashes into a temporary Shard
// that no other thread can see, whose mutex it does not take.
bool Instance::reserve_bucket_locked(Shard& s) noexcept UEP_NO_THREAD_SAFETY_ANALYSIS {
  if (s.count < s.nbuckets) return true;
  uint32_t n = s.nbuckets ? s.nbuckets * 2 : 4;
  auto** nb = static_cast<Item**>(core::raw_alloc(sizeof(Item*) * n));
  if (!nb) return s.nbuckets != 0;  // keep going with longer chains
  std::memset(nb, 0, sizeof(Item*) * n);
  Shard tmp;
  tmp.buckets = nb;
  tmp.nbuckets = n;
  for (uint32_t b = 0; b < s.nbuckets; ++b) {
    while (Item* it = s.buckets[b]) {
      s.buckets[b] = it->hash_next;
      Item** slot = bucket_for(tmp, hash_key(it->file, it->fd));
      it->hash_next = *slot;
      *slot = it;
    }
  }
  core::raw_free(s.buckets);
  s.buckets = nb;
  s.nbuckets = n;
  tmp.buckets = nullptr;
  return true;
}

void Instance::unhash_locked(Shard& s, uint64_t h, Item* it) noexcept {
  for (Item** p = bucket_for(s, h); *p; p = &(*p)->hash_next) {
    if (*p == it) {
      *p = it->hash_next;
      it->hash_next = nullptr;
      --s.count;
      return;
    }
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