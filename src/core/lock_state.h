// lock_state.h - the calling thread's uepoll lock bookkeeping, shared by
// every lock wrapper (core/spinlock.h, core/mutex.h, the topology lock).
//
// `held` counts the uepoll locks the thread holds or is in the middle of
// taking or releasing: it is raised before an acquisition starts and lowered
// after a release completes, so a signal handler that finds it nonzero knows
// it interrupted its own thread inside a uepoll critical section (or a lock
// operation), whatever the lock.  `spin` counts SpinLocks held (no system
// call under them: core/waiter.cpp defers kicks while it is nonzero).
//
// The owner writes these fields with plain loads and stores (relaxed
// atomics, or plain ints); a signal fence orders them against a handler on
// the same thread.  `held` is also read by the fork gate's preparer on
// another thread (core/fork_gate.cpp): that reader is ordered by an
// asymmetric barrier (membarrier), so the fast path needs no fence.
//
// The release of the last lock (held back to 0) runs work queued meanwhile
// by signal handlers (core/deferred.h); the release of the last SpinLock
// writes kicks deferred under it (core/waiter.cpp).
#pragma once

#include <atomic>

namespace uepoll::core {

struct ThreadLockState {
  std::atomic<int> held{0};   // read by the fork gate preparer (relaxed)
  int spin = 0;               // SpinLocks held
  int kicks = 0;              // kicks deferred while spin > 0 (core/waiter.cpp)
  int deferred = 0;           // handler work queued (core/deferred.cpp)
  bool registered = false;    // known to the fork gate
  ThreadLockState* next_registered = nullptr;  // the gate's list (fork_gate.cpp)
};
// initial-exec: a fixed offset from the thread pointer even in the shared
// library (no __tls_get_addr on every lock, and none that could allocate
// in a signal handler); the struct is small enough for the static TLS
// reserve of a dlopen()ed library.  constinit: the initializer is a
// constant, so every access is one %fs-relative load or store, with no
// call of (nor test for) a thread_local wrapper of dynamic initialization.
#define UEP_TLS_INITIAL_EXEC __attribute__((tls_model("initial-exec")))
extern constinit thread_local ThreadLockState tls_lock_state UEP_TLS_INITIAL_EXEC;

// Set while the fork gate is closed (core/fork_gate.cpp).
extern std::atomic<bool> g_fork_gate_closed;

// Slow paths, out of line.
void first_lock_slow(ThreadLockState& t) noexcept;  // register; wait at a closed gate
void flush_deferred_kicks() noexcept;               // core/waiter.cpp
void run_deferred() noexcept;                       // core/deferred.cpp

// Before taking any uepoll lock.
inline void lock_enter() noexcept {
  ThreadLockState& t = tls_lock_state;
  const int n = t.held.load(std::memory_order_relaxed);
  t.held.store(n + 1, std::memory_order_relaxed);
  std::atomic_signal_fence(std::memory_order_seq_cst);
  // The fork gate: a thread taking its first lock checks the flag after
  // announcing itself (see fork_gate.cpp for the barrier pairing).
  if (n == 0 && (g_fork_gate_closed.load(std::memory_order_relaxed) || !t.registered)) [[unlikely]]
    first_lock_slow(t);
}

// After releasing a uepoll lock (or giving up a try_lock).
inline void lock_exit() noexcept {
  ThreadLockState& t = tls_lock_state;
  std::atomic_signal_fence(std::memory_order_seq_cst);
  const int n = t.held.load(std::memory_order_relaxed) - 1;
  t.held.store(n, std::memory_order_relaxed);
  std::atomic_signal_fence(std::memory_order_seq_cst);
  if (n == 0 && t.deferred) [[unlikely]]
    run_deferred();
}

// True when the calling code runs inside a uepoll critical section of its
// own thread: in a signal handler, "I interrupted uepoll".
inline bool thread_in_uepoll() noexcept {
  return tls_lock_state.held.load(std::memory_order_relaxed) > 0;
}
inline bool thread_holds_spinlock() noexcept { return tls_lock_state.spin > 0; }

// A section that is not a lock but must not be re-entered by a signal
// handler on the same thread (per-thread lists: reclaim's retired list, the
// item cache).  Counts as a held lock for the handler's decision.
class NoReentry {
 public:
  NoReentry() noexcept { lock_enter(); }
  ~NoReentry() { lock_exit(); }
  NoReentry(const NoReentry&) = delete;
  NoReentry& operator=(const NoReentry&) = delete;
};

}  // namespace uepoll::core
