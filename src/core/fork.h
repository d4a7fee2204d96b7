// fork.h - what uepoll does around fork() (the pthread_atfork handlers of
// core/fork.cpp) and the per-module hooks they call, each defined in the
// file that owns the state it fixes.
//
// Before fork (prepare, in this order): core::fork_gate_prepare() (no other
// thread holds or takes a uepoll lock until the gate opens), then the
// process-wide mutexes whose lists must be whole in the child: the timer
// registry, the descriptor table, the reclamation registry, the item free
// list, the waiter pool, and last the window in which a park raises the
// descriptor soft limit (core/own_fds.h), so that the child gets the
// program's limit.  After fork, the parent releases them in reverse
// order and opens the gate.  Each handler's libc calls are uepoll's own
// (core/internal_call.h): under the preload they reach the kernel.  The child resets the gate, then each module
// gives the child state of its own and releases its mutex:
//   waiters      every existing ThreadWaiter is the parent's (shared kernel
//                eventfd and epoll): marked dead, closed in the child; the
//                forking thread gets a new one on its next sleep;
//   reclaim      records of threads that do not exist stop blocking grace
//                periods; their retired objects become orphans;
//   item cache   the free list is whole (other threads' caches are lost);
//   fd table     nothing to change (the child has a copy of every object);
//   timers       each kernel timer is replaced by one of the child's own
//                (same clock, flags, remaining time, interval, unread
//                count) and the service thread is started in the child.
// What the child inherits is stated in docs/linux-deviations.md.
//
// Locks: the hooks take the mutexes named above, in that order, after the
// gate.  Requirement on the gate (core/fork_gate.h): it must count these
// mutexes as uepoll locks, or at least let a thread that holds the timer
// registry take its wait-queue lock (11) -- the timer service does that, and
// stopping it at the gate with the registry held would deadlock prepare.
// The other four are leaves: their holders never wait for a gated lock.
#pragma once

namespace uepoll::core {

// Registers the handlers once per process (a function-local static);
// called by a static initializer and by the first use of the descriptor
// table.
void install_fork_handlers() noexcept;

void waiters_fork_prepare() noexcept;  // core/waiter.cpp
void waiters_fork_parent() noexcept;
void waiters_fork_child() noexcept;

namespace reclaim {
void fork_prepare() noexcept;  // core/reclaim.cpp
void fork_parent() noexcept;
void fork_child() noexcept;
}  // namespace reclaim

}  // namespace uepoll::core

namespace uepoll::fd {
void table_fork_prepare() noexcept;  // fd/table.cpp
void table_fork_parent() noexcept;
void table_fork_child() noexcept;
}  // namespace uepoll::fd

namespace uepoll::epoll {
void item_cache_fork_prepare() noexcept;  // epoll/item_cache.cpp
void item_cache_fork_parent() noexcept;
void item_cache_fork_child() noexcept;
}  // namespace uepoll::epoll

namespace uepoll::objects {
void timers_fork_prepare() noexcept;  // objects/timerfd.cpp
void timers_fork_parent() noexcept;
void timers_fork_child() noexcept;
}  // namespace uepoll::objects
