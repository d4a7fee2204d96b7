// thread_exit.h - per-thread cleanup at thread exit, without C++
// thread_local destructors.
//
// A thread_local object with a destructor makes glibc register that
// destructor on the thread's first use of it (__cxa_thread_atexit_impl),
// with a calloc whose failure is fatal ("failed to register TLS destructor:
// out of memory"): a thread's first uepoll call under memory pressure would
// kill the process.  So uepoll's per-thread state is trivially destructible
// and each module calls thread_exit_arm() when a thread first gets state
// that needs cleaning up.  One pthread key, whose value is set non-null for
// such threads (one of the first 32 keys: no allocation), runs every
// module's exit hook below when the thread exits.
//
// Locks: none here; the hooks take what their modules take on thread exit.
#pragma once

namespace uepoll::core {

// Makes the calling thread run the exit hooks when it exits.  Idempotent,
// allocation-free, cheap after the first call (one thread_local load).  If
// the process is out of pthread keys, the hooks do not run and a thread's
// cached state is leaked at its exit.
void thread_exit_arm() noexcept;

// The hooks, each defined in the module that owns the state.
void waiter_thread_exit() noexcept;  // core/waiter.cpp: the waiter back to the pool
namespace vclock {
void thread_exit() noexcept;  // core/vclock.cpp: a known thread leaves automatic mode's count
}
void fork_gate_thread_exit() noexcept;  // core/fork_gate.cpp: off the gate's list (runs last)
namespace reclaim {
void thread_exit() noexcept;  // core/reclaim.cpp: the record released
}

}  // namespace uepoll::core

namespace uepoll::epoll {
void item_cache_thread_exit() noexcept;  // epoll/item_cache.cpp: cached items to the free list
void watches_thread_exit() noexcept;     // epoll/watches.cpp: batched credits given back
void topology_thread_exit() noexcept;    // epoll/topology.cpp: the owned reader slot given back
}  // namespace uepoll::epoll
