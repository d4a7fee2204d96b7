// reclaim.h - epoch-based deferred reclamation (uepoll's RCU).
//
// Readers that find an object without holding a lock or a reference (the
// descriptor table's lock-free lookup, which then takes a reference with
// File::tryget) run inside a ReadGuard.  An object that such a reader might
// still see is handed to retire() once it is unreachable; its free function
// runs only after every ReadGuard that was active at that moment has ended
// (a grace period), exactly the contract of call_rcu().
//
// Why not liburcu: its read-side and grace-period primitives are inline
// assembly that ThreadSanitizer cannot see, so every grace period would be
// a false race in the TSan build that CI runs.  This scheme is the classic
// three-epoch EBR built on seq_cst atomics only; docs/design.md gives the
// argument that it is as sound as call_rcu for our use.
//
// Locks: a process-wide mutex guards only the registration of new threads
// and the orphan list of exiting threads; ReadGuard and retire() take none.
#pragma once

#include <atomic>
#include <cstdint>

namespace uepoll::core::reclaim {

struct Retired {
  Retired* next = nullptr;
  uint64_t epoch = 0;
  void (*free_fn)(Retired*) = nullptr;
  void* object = nullptr;  // what free_fn frees
};

namespace detail {
// A thread's reader record (core/reclaim.cpp has the scheme).
struct alignas(64) ThreadRecord {
  std::atomic<uint64_t> state{0};  // 0 = quiescent, else (epoch<<1)|1
  std::atomic<bool> in_use{false};
  ThreadRecord* next_record = nullptr;  // immutable once published
  // Owner-only fields:
  Retired* retired = nullptr;
  unsigned long retired_count = 0;
};
// Trivially destructible (core/thread_exit.h): thread_exit() releases it.
struct RecordHolder {
  ThreadRecord* rec = nullptr;
  unsigned fallback_depth = 0;  // guards held as a g_fallback_readers reader
};
extern constinit std::atomic<uint64_t> g_epoch;
extern constinit thread_local RecordHolder tls_record;
}  // namespace detail

// RAII read-side critical section; nests.
// Nestable and async-signal-safe: only the outermost guard of a thread
// publishes (it found the record quiescent), so a signal handler's guard
// that interrupts an outer one, even half-way, leaves it intact.
// Inline: a thread with its record and no fallback guard (every thread but
// one that could not allocate a record) enters and leaves without a call.
class ReadGuard {
 public:
  ReadGuard() noexcept {
    const detail::RecordHolder& h = detail::tls_record;
    if (h.fallback_depth == 0 && h.rec) [[likely]]
      enter(h.rec);
    else
      enter_slow();
  }
  // Leaves as entered, without reading the thread's record again: a guard
  // entered with the record sees no fallback guard until it ends (one
  // starts only while another is outstanding or no record exists), and
  // one entered as a fallback reader leaves as one.
  ~ReadGuard() {
    if (fallback_) [[unlikely]] {
      leave_fallback();
      return;
    }
    // release: everything read inside the section happens before a
    // reclaimer that sees the quiescent state frees anything.
    if (outer_) outer_->state.store(0, std::memory_order_release);
  }
  ReadGuard(const ReadGuard&) = delete;
  ReadGuard& operator=(const ReadGuard&) = delete;

 private:
  void enter(detail::ThreadRecord* r) noexcept {
    // Only this thread (or a handler on it, which restores what it found)
    // writes the record's state, so a relaxed load tells whether an outer
    // guard already published.  seq_cst: one total order with the
    // unlinks, retire's load of the epoch and the advance (reclaim.cpp).
    fallback_ = false;
    outer_ = r->state.load(std::memory_order_relaxed) == 0 ? r : nullptr;
    if (outer_) {
      const uint64_t e = detail::g_epoch.load(std::memory_order_seq_cst);
      r->state.store((e << 1) | 1, std::memory_order_seq_cst);
    }
  }
  void enter_slow() noexcept;
  void leave_fallback() noexcept;

  detail::ThreadRecord* outer_;  // the record this guard published, or null
  bool fallback_;                 // entered as a g_fallback_readers reader
};

// Defers r->free_fn(r) until a grace period has passed.  Never blocks.
void retire(Retired* r) noexcept;


}  // namespace uepoll::core::reclaim
