// instance.cpp - epoll instance: construction, teardown (Linux
// ep_clear_and_put), the item hash and the uep_debug_dump test hook.
//
// The rest of Instance lives beside it, one responsibility a file:
//   instance_ready.cpp  ready-list primitives, wake callback, queue_ready
//   instance_ctl.cpp    epoll_ctl: ADD, MOD, DEL, DISABLE, item removal
//   instance_wait.cpp   epoll_wait and the harvest (ep_poll, ep_send_events)
//   instance_poll.cpp   the instance polled as a file (nesting)
//
// Locks (core/lock_order.h): the teardown takes each shard lock (6) in turn
// and, through detach_locked, target files' wait-queue locks (11) and
// ready_lock_ (12); debug_dump takes the shard locks one at a time, then
// scan_mutex_ (9) and ready_lock_ (12).  Nothing is allocated under a
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

// Constructors and destructors are outside the analysis: they run before
// publication and after the last reference.
Instance::Instance(int status_flags) noexcept
    : core::File(core::FileKind::kEpoll, status_flags) {
  set_poll_unpinned();  // poll reads only the instance's own lists
  rdllist_.prev = rdllist_.next = &rdllist_;
}

Instance::~Instance() {
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
    s.index.drain([this, &s](Item* it) {
      s.mutex.assert_held();  // drain runs its callback in this scope
      detach_locked(s, it);
    });
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