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

#include <cstdint>

namespace uepoll::core::reclaim {

struct Retired {
  Retired* next = nullptr;
  uint64_t epoch = 0;
  void (*free_fn)(Retired*) = nullptr;
  void* object = nullptr;  // what free_fn frees
};

// RAII read-side critical section; nests.
// Nestable and async-signal-safe: only the outermost guard of a thread
// publishes (it found the record quiescent), so a signal handler's guard
// that interrupts an outer one, even half-way, leaves it intact.
class ReadGuard {
 public:
  ReadGuard() noexcept;
  ~ReadGuard();
  ReadGuard(const ReadGuard&) = delete;
  ReadGuard& operator=(const ReadGuard&) = delete;

 private:
  bool outer_;
};

// Defers r->free_fn(r) until a grace period has passed.  Never blocks.
void retire(Retired* r) noexcept;


}  // namespace uepoll::core::reclaim
