// reclaim.cpp - epoch-based reclamation (see reclaim.h).
//
// Epoch E (global).  A thread inside a ReadGuard publishes (E_seen << 1) | 1
// in its record; outside it publishes 0.  E may advance from e to e+1 only
// when every active record published e.  An object retired while E == e is
// unlinked before retire() read E, so any reader that can still reach it
// published an epoch <= e; once E >= e + 2 every such reader has left.
// All of these loads and stores are seq_cst: the unlink (a seq_cst store or
// exchange on the slot), retire's load of E, the advance, a reader's
// publication and its load of the slot are one total order.
//
// Locks: g_registry_mutex (a leaf, 15) for record registration and the
// orphan list.
#include "core/reclaim.h"

#include "core/fork.h"
#include "core/lock_state.h"
#include "core/mutex.h"
#include "core/thread_exit.h"

#include <atomic>
#include <new>

namespace uepoll::core::reclaim {

// The state ReadGuard's inline fast path reads (reclaim.h).
constinit std::atomic<uint64_t> detail::g_epoch{2};
constinit thread_local detail::RecordHolder detail::tls_record;

using detail::g_epoch;
using detail::ThreadRecord;
using detail::tls_record;

namespace {

std::atomic<ThreadRecord*> g_records{nullptr};
Mutex g_registry_mutex(lock_class::kReclaimRegistry);
// Readers inside a guard without a record of their own (its allocation
// failed): while any is active the epoch does not advance at all, which is
// conservative and needs no per-reader epoch.  seq_cst: one total order
// with the unlinks, retire's load of the epoch and try_advance's check.
std::atomic<long> g_fallback_readers{0};
Retired* g_orphans UEP_GUARDED_BY(g_registry_mutex) = nullptr;

ThreadRecord* acquire_record() {
  for (ThreadRecord* r = g_records.load(std::memory_order_acquire); r; r = r->next_record) {
    bool expected = false;
    if (!r->in_use.load(std::memory_order_relaxed) &&
        r->in_use.compare_exchange_strong(expected, true, std::memory_order_acq_rel))
      return r;
  }
  auto* r = new (std::nothrow) ThreadRecord();
  if (!r) return nullptr;  // the caller's guards fall back (g_fallback_readers)
  r->in_use.store(true, std::memory_order_relaxed);
  MutexLock g(g_registry_mutex);
  r->next_record = g_records.load(std::memory_order_relaxed);
  // release: pairs with the acquire loads that walk the registry.
  g_records.store(r, std::memory_order_release);
  return r;
}

// Runs the free functions of every object in *list retired at or before
// `safe`; keeps the others.  Returns how many it kept.
unsigned long reap(Retired** list, uint64_t safe) {
  unsigned long kept = 0;
  Retired** link = list;
  while (Retired* r = *link) {
    if (r->epoch <= safe) {
      *link = r->next;
      r->free_fn(r);
    } else {
      link = &r->next;
      ++kept;
    }
  }
  return kept;
}

// Advances the epoch if every active reader has seen the current one.
uint64_t try_advance() {
  uint64_t e = g_epoch.load(std::memory_order_seq_cst);
  if (g_fallback_readers.load(std::memory_order_seq_cst) > 0) return e;
  for (ThreadRecord* r = g_records.load(std::memory_order_acquire); r; r = r->next_record) {
    uint64_t s = r->state.load(std::memory_order_seq_cst);
    if ((s & 1) && (s >> 1) != e) return e;
  }
  g_epoch.compare_exchange_strong(e, e + 1, std::memory_order_seq_cst);
  return g_epoch.load(std::memory_order_seq_cst);
}

void reap_orphans(uint64_t safe) {
  if (!g_registry_mutex.try_lock()) return;
  if (g_orphans) reap(&g_orphans, safe);
  g_registry_mutex.unlock();
}

// Preconditions: g_registry_mutex held; r's owner gone (exiting, or absent
// in a forked child).  Moves r's retired objects to the orphan list.
void orphan_retired_locked(ThreadRecord* r) UEP_REQUIRES(g_registry_mutex) {
  if (r->retired) {
    Retired* last = r->retired;
    while (last->next) last = last->next;
    last->next = g_orphans;
    g_orphans = r->retired;
  }
  r->retired = nullptr;
  r->retired_count = 0;
}

// Thread exit: retired objects to the orphan list, the record free for
// another thread.
void release_record() noexcept {
  ThreadRecord* rec = tls_record.rec;
  if (!rec) return;
  if (rec->retired) {
    MutexLock g(g_registry_mutex);
    orphan_retired_locked(rec);
  }
  rec->state.store(0, std::memory_order_seq_cst);
  rec->in_use.store(false, std::memory_order_release);
  tls_record.rec = nullptr;
}

ThreadRecord* self() {
  if (!tls_record.rec) {
    tls_record.rec = acquire_record();
    if (tls_record.rec) thread_exit_arm();
  }
  return tls_record.rec;
}

}  // namespace

// Thread exit (core/thread_exit.h): retired objects to the orphan list,
// the record free for another thread.
void thread_exit() noexcept { release_record(); }

// The fork hooks (core/fork.h), not analysed (-Wthread-safety): a lock taken
// in prepare is released in parent or child.  g_registry_mutex is held across fork() so
// that the orphan list and the registry are whole in the child.
void fork_prepare() noexcept UEP_NO_THREAD_SAFETY_ANALYSIS { g_registry_mutex.lock(); }
void fork_parent() noexcept UEP_NO_THREAD_SAFETY_ANALYSIS { g_registry_mutex.unlock(); }

// In the child, only the forking thread exists.  Every other record stops
// counting as a reader (its thread will never leave its guard, and would
// block every grace period), its retired objects go to the orphan list
// (freed by later grace periods), and it becomes free for the child's new
// threads.  The forking thread's own record is kept as it is.
void fork_child() noexcept UEP_NO_THREAD_SAFETY_ANALYSIS {
  ThreadRecord* mine = tls_record.rec;
  for (ThreadRecord* r = g_records.load(std::memory_order_relaxed); r; r = r->next_record) {
    if (r == mine) continue;
    orphan_retired_locked(r);
    r->state.store(0, std::memory_order_relaxed);
    r->in_use.store(false, std::memory_order_relaxed);
  }
  // Record-less readers (g_fallback_readers): only ours can still be one.
  g_fallback_readers.store(tls_record.fallback_depth ? 1 : 0, std::memory_order_relaxed);
  g_registry_mutex.unlock();
}

// The inline fast paths (reclaim.h) found no record, or a fallback guard
// outstanding: the full entry, as before the split.
void ReadGuard::enter_slow() noexcept {
  ThreadRecord* r = tls_record.fallback_depth ? nullptr : self();
  if (!r) {  // no memory for a record: count as a reader that blocks advances
    outer_ = nullptr;
    fallback_ = true;
    if (tls_record.fallback_depth++ == 0) g_fallback_readers.fetch_add(1, std::memory_order_seq_cst);
    return;
  }
  enter(r);
}

void ReadGuard::leave_fallback() noexcept {
  // release: the section's reads happen before a reclaimer that sees 0.
  if (--tls_record.fallback_depth == 0) g_fallback_readers.fetch_sub(1, std::memory_order_release);
}

void retire(Retired* obj) noexcept {
  NoReentry section;  // the retired list is per thread: no handler beside us
  ThreadRecord* r = self();
  if (!r) {
    // No record to keep it on: the orphan list (reaped by any thread that
    // retires later).  The epoch is read before linking, as below.
    obj->epoch = g_epoch.load(std::memory_order_seq_cst);
    MutexLock g(g_registry_mutex);
    obj->next = g_orphans;
    g_orphans = obj;
    return;
  }
  obj->epoch = g_epoch.load(std::memory_order_seq_cst);
  obj->next = r->retired;
  r->retired = obj;
  if (++r->retired_count >= 32) {
    uint64_t e = try_advance();
    r->retired_count = reap(&r->retired, e - 2);
    reap_orphans(e - 2);
  }
}

}  // namespace uepoll::core::reclaim
