// deferred.cpp - the per-thread queue of work left by signal handlers (see
// deferred.h).  Producer: a signal handler on the thread (slot and data
// reserved with atomic fetch_add, so a nested handler cannot get the same
// slot; an entry is published by its `ready` flag).  Consumer: the thread
// itself, in run_deferred(), called by lock_exit() when its last uepoll lock
// is released.  Locks: none.
#include "core/deferred.h"

#include "core/file.h"
#include "core/lock_state.h"
#include "core/lockdep.h"

#include <atomic>
#include <cstring>

namespace uepoll::core {

namespace {

struct Entry {
  DeferredFn fn;
  File* file;
  uint32_t arg;
  uint32_t off;
  uint32_t len;
  std::atomic<bool> ready;  // written last by the producer, cleared by the consumer
};

struct Queue {
  static constexpr unsigned kSlots = 64;
  Entry e[kSlots];
  std::atomic<unsigned> reserved{0};  // slots handed out (producers)
  unsigned head = 0;                  // next slot to run (consumer only)
  std::atomic<unsigned> data_used{0};
  char data[kDeferredData];
};
thread_local Queue tls_queue;

Entry* find_mergeable(Queue& q, DeferredFn fn, File* f, uint32_t arg) {
  const unsigned end = q.reserved.load(std::memory_order_relaxed);
  for (unsigned i = q.head; i != end; ++i) {
    Entry& e = q.e[i % Queue::kSlots];
    if (e.ready.load(std::memory_order_relaxed) && e.fn == fn && e.file == f && e.arg == arg && e.len == 0) return &e;
  }
  return nullptr;
}

}  // namespace

bool defer_has_room(DeferredFn fn, File* f, uint32_t arg, uint32_t len) noexcept {
  Queue& q = tls_queue;
  if (len == 0 && find_mergeable(q, fn, f, arg)) return true;
  if (q.reserved.load(std::memory_order_relaxed) - q.head >= Queue::kSlots) return false;
  return len <= kDeferredData - q.data_used.load(std::memory_order_relaxed);
}

bool defer_to_release(DeferredFn fn, File* f, uint32_t arg, const void* data, uint32_t len) noexcept {
  Queue& q = tls_queue;
  if (len == 0 && find_mergeable(q, fn, f, arg)) {
    // The queued entry holds a reference, so ours is not the last.
    if (!f->put_unless_last()) return false;
    return true;
  }
  if (q.reserved.load(std::memory_order_relaxed) - q.head >= Queue::kSlots) return false;
  uint32_t off = 0;
  if (len) {
    off = q.data_used.fetch_add(len, std::memory_order_relaxed);
    if (off + len > kDeferredData) return false;  // the overshoot is reclaimed when the queue drains
    std::memcpy(q.data + off, data, len);
  }
  const unsigned slot = q.reserved.fetch_add(1, std::memory_order_relaxed);
  Entry& e = q.e[slot % Queue::kSlots];
  e.fn = fn;
  e.file = f;
  e.arg = arg;
  e.off = off;
  e.len = len;
  std::atomic_signal_fence(std::memory_order_seq_cst);
  e.ready.store(true, std::memory_order_relaxed);
  std::atomic_signal_fence(std::memory_order_seq_cst);
  tls_lock_state.deferred = 1;
  return true;
}

void run_deferred() noexcept {
  ThreadLockState& t = tls_lock_state;
  Queue& q = tls_queue;
  // Counts as a held lock while it runs: handlers meanwhile queue (they do
  // not run beside us), and the releases inside fn do not recurse here.
  NoReentry section;
  for (;;) {
    t.deferred = 0;
    std::atomic_signal_fence(std::memory_order_seq_cst);
    const unsigned used = q.data_used.load(std::memory_order_relaxed);
    if (q.head == q.reserved.load(std::memory_order_relaxed)) {
      // Empty: reclaim the data area unless a handler reserved some since.
      unsigned expected = used;
      q.data_used.compare_exchange_strong(expected, 0, std::memory_order_relaxed);
      break;
    }
    Entry& e = q.e[q.head % Queue::kSlots];
    if (!e.ready.load(std::memory_order_relaxed)) break;  // a nested handler mid-way; it sets `deferred`
    DeferredFn fn = e.fn;
    File* f = e.file;
    const uint32_t arg = e.arg;
    const char* d = q.data + e.off;
    const uint32_t len = e.len;
    e.ready.store(false, std::memory_order_relaxed);
    std::atomic_signal_fence(std::memory_order_seq_cst);
    ++q.head;
    if (fn) fn(f, arg, d, len);
    if (f) f->put();
  }
}

void put_in_handler(File* f) noexcept {
  if (f->put_unless_last()) return;
  // Queued with no function: run_deferred only drops the reference.  If the
  // queue is full the reference leaks (the file stays open): never a
  // deadlock.
  (void)defer_to_release(nullptr, f, 0, nullptr, 0);
}

void deferred_wake(File* f, uint32_t key, const char*, uint32_t) noexcept { f->wq().wake(key); }

SignalFrame::SignalFrame() noexcept : saved_(lockdep_signal_frame_begin()) {}
SignalFrame::~SignalFrame() { lockdep_signal_frame_end(saved_); }

}  // namespace uepoll::core
