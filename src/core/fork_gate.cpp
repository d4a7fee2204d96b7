// fork_gate.cpp - the fork gate (see fork_gate.h) and the registry of
// threads' lock states it reads.
//
// Pairing.  A thread taking its first uepoll lock stores held = 1, then
// (compiler barrier only) loads g_fork_gate_closed (core/lock_state.h,
// lock_enter).  The preparer stores g_fork_gate_closed = true, then issues
// an asymmetric barrier (membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED), or
// an mprotect that makes the kernel interrupt every CPU running the
// process, where membarrier is refused), then reads each thread's `held`.
// The barrier runs a full fence on every running thread, so either the
// preparer sees held != 0 (and waits for 0), or the thread sees the gate
// closed (and steps back: held = 0, then waits for the gate to open).  The
// fast path pays a relaxed load and a branch; no fence.
//
// Locks: g_registry (a pthread mutex, not a uepoll lock: taken when a
// thread registers or exits, and held by the preparer from prepare to
// parent/child so that no thread registers while the gate is closed).
#include "core/fork_gate.h"

#include "core/thread_exit.h"

#include "core/backoff.h"
#include "core/lock_state.h"

#include <atomic>
#include <cstdlib>
#include <linux/membarrier.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace uepoll::core {

constinit thread_local ThreadLockState tls_lock_state UEP_TLS_INITIAL_EXEC;
std::atomic<bool> g_fork_gate_closed{false};

namespace {

// The registered threads' states, linked through their own
// ThreadLockState::next_registered (no allocation: a thread's first lock
// cannot fail for want of memory).  A state lives in its thread's TLS, so
// it is unlinked before the thread's TLS goes: fork_gate_thread_exit() runs
// last among the thread-exit hooks (core/thread_exit.h).
pthread_mutex_t g_registry = PTHREAD_MUTEX_INITIALIZER;
ThreadLockState* g_registered = nullptr;              // guarded by g_registry
std::atomic<ThreadLockState*> g_gate_owner{nullptr};  // the preparing thread

void register_thread(ThreadLockState& t) {
  thread_exit_arm();  // fork_gate_thread_exit() unlinks it at thread exit
  pthread_mutex_lock(&g_registry);
  t.next_registered = g_registered;
  g_registered = &t;
  t.registered = true;
  pthread_mutex_unlock(&g_registry);
}

// A full memory barrier on every thread of the process that is running.
void heavy_barrier() {
  static int mode = 0;  // 0 unknown, 1 membarrier, 2 mprotect; only the preparer (under g_registry)
  if (mode == 0) {
    mode = syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0 ? 1 : 2;
  }
  if (mode == 1 && syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0) return;
  mode = 2;
  // Changing the protection of a touched page makes the kernel shoot down
  // its TLB entry on every CPU that runs this process: an interrupt, hence
  // a full barrier, on each of them.
  static char* page = nullptr;
  const long size = sysconf(_SC_PAGESIZE);
  if (!page) {
    void* p = mmap(nullptr, static_cast<size_t>(size), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      std::atomic_thread_fence(std::memory_order_seq_cst);
      return;
    }
    page = static_cast<char*>(p);
  }
  mprotect(page, static_cast<size_t>(size), PROT_READ | PROT_WRITE);
  *static_cast<volatile char*>(page) = 0;
  mprotect(page, static_cast<size_t>(size), PROT_READ);
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

// Whether a thread other than `me` is registered.  Preconditions: g_registry held.
bool other_registered(const ThreadLockState* me) {
  for (const ThreadLockState* s = g_registered; s; s = s->next_registered)
    if (s != me) return true;
  return false;
}

}  // namespace

void first_lock_slow(ThreadLockState& t) noexcept {
  if (!t.registered) {
    // Step back while registering: the registry is held by a preparer for
    // the whole fork, and it must not see us half-entered.
    t.held.store(0, std::memory_order_relaxed);
    register_thread(t);
    t.held.store(1, std::memory_order_relaxed);
    std::atomic_signal_fence(std::memory_order_seq_cst);
  }
  while (g_fork_gate_closed.load(std::memory_order_relaxed) &&
         g_gate_owner.load(std::memory_order_relaxed) != &t) {
    t.held.store(0, std::memory_order_relaxed);
    Backoff b;
    while (g_fork_gate_closed.load(std::memory_order_acquire)) b.pause();
    t.held.store(1, std::memory_order_relaxed);
    std::atomic_signal_fence(std::memory_order_seq_cst);
  }
}

void fork_gate_prepare() noexcept {
  ThreadLockState& me = tls_lock_state;
  if (!me.registered) register_thread(me);
  pthread_mutex_lock(&g_registry);
  g_gate_owner.store(&me, std::memory_order_relaxed);
  g_fork_gate_closed.store(true, std::memory_order_seq_cst);
  // Only a registered thread can hold a uepoll lock, and none can register
  // while g_registry is held: with no other thread registered there is
  // nobody to wait for, and no barrier to pay (a single-threaded server
  // forking per request).
  if (!other_registered(&me)) return;
  heavy_barrier();
  for (ThreadLockState* s = g_registered; s; s = s->next_registered) {
    if (s == &me) continue;  // the caller's own locks are ignored
    Backoff b;
    while (s->held.load(std::memory_order_acquire) != 0) b.pause();
  }
}

void fork_gate_parent() noexcept {
  g_gate_owner.store(nullptr, std::memory_order_relaxed);
  g_fork_gate_closed.store(false, std::memory_order_release);
  pthread_mutex_unlock(&g_registry);
}

void fork_gate_child() noexcept {
  // Only the forking thread exists here: forget the others.
  ThreadLockState* me = &tls_lock_state;
  g_registered = me->registered ? me : nullptr;
  me->next_registered = nullptr;
  g_gate_owner.store(nullptr, std::memory_order_relaxed);
  g_fork_gate_closed.store(false, std::memory_order_relaxed);
  pthread_mutex_unlock(&g_registry);  // taken by fork_gate_prepare (this thread)
}

void fork_gate_thread_exit() noexcept {
  ThreadLockState& t = tls_lock_state;
  if (!t.registered) return;
  pthread_mutex_lock(&g_registry);
  for (ThreadLockState** p = &g_registered; *p; p = &(*p)->next_registered) {
    if (*p == &t) {
      *p = t.next_registered;
      break;
    }
  }
  t.registered = false;
  pthread_mutex_unlock(&g_registry);
}

}  // namespace uepoll::core
