// lock_order.h - every lock in uepoll, its acquire order, and what it guards.
//
// This is the one place the order is stated (docs/design.md mirrors it).
// Every lock is a core::SpinLock (core/spinlock.h) or core::Mutex
// (core/mutex.h) constructed with one of the LockClass constants below; the
// debug-build checker (core/lockdep.h, CMake option UEPOLL_LOCKDEP) aborts
// naming both locks when a thread breaks the order.
//
// Locks are taken in increasing level (the numbers 1 to 8 below; the
// checker uses ten times them, so that the unnumbered locks fit between):
// a thread holding a lock of level k may only take locks of a higher level,
// except where "nested" says the same class is taken again one nesting level
// further down (parent before child, exactly as Linux's ep->mtx subclasses;
// the topology check forbids cycles, so the chain is acyclic and at most
// EP_MAX_NESTS + 1 deep).  The checker accepts a nested class on a different
// instance, at most EP_MAX_NESTS + 2 deep; it cannot see parent-before-child.
//
//  0.4 virtual clock mutex     (Mutex in core/vclock.cpp): the virtual
//                               clock's timers and sleepers.  Taken with no
//                               uepoll lock held; a timer's wait-queue lock
//                               (6) is taken under it to deliver an expiry.
//  0.5 TimerService registry   (Mutex in objects/timerfd.cpp): the timers
//                               the service thread watches.  Taken with no
//                               uepoll lock held; a timer's wait-queue lock
//                               (6) is taken under it to deliver an expiry.
//  1. topology lock            (process-wide reader-writer lock: a reader
//                               slot owned by each thread (64, given back at
//                               thread exit; 16 shared ones beyond), each
//                               slot and the writer flag on its own cache
//                               line).  Exclusive: adding an instance to an
//                               instance (loop, depth and path checks).
//                               Shared: adding a leaf file to an instance that
//                               is itself watched (2026 seed), unless its
//                               cached path profile passes (kCached, which
//                               takes neither 1 nor 2).  Never taken on
//                               DEL, MOD, wait, or ADD to a flat instance.
//  2. Topology target mutexes  (64 hashed Mutex, one per target file
//                               hash).  Taken under 1 (shared) to serialize
//                               path checks for one target file; not taken
//                               when the instance's cached path profile
//                               passes and the leaf is watched by nobody
//                               else (topology.h, kCached).
//  3. Instance::ctl_mutex_     (per instance; only when the "concurrent_ctl"
//                               knob is off: Linux's ep->mtx for ctl).
//  4. Instance shard lock      (per instance, 16 shards): the item hash for
//                               its keys, the items' registration state,
//                               MOD's seqlock writes.  A shard of a parent is
//                               held while polling a child (ADD, MOD).  A
//                               ctl batch's run (Instance::ctl_run) holds
//                               several shards of one instance, taken in
//                               index order; nothing else holds two.
//  4.2 KernelWatch::mu_       (per instance Mutex, epoll/kernel_watch.h):
//                               creating the instance's hub and kernel fd.
//                               Taken under 1 (exclusive) and under a
//                               parent's shard lock (4) during a nesting ADD;
//                               takes the instance's wait-queue lock (6) and
//                               ready_lock_ (7) inside.  Kernel system calls
//                               (epoll_create1, epoll_ctl) are made under it.
//  4.5 nested-poll mutex       (one Mutex, only with the
//                               "lockless_nested_poll" knob off): taken by a
//                               thread's outermost instance poll or harvest,
//                               before any scan mutex.
//  5. Instance::scan_mutex_    (per instance Mutex, Linux's ep->mtx for
//                               the harvest): serializes harvests and
//                               readiness scans of one instance.  Nested:
//                               parent's before child's (poll of a child).
//  5.5 UnixSocket::iolock_     (per socket Mutex, Linux's u->iolock): one
//                               reader at a time, held from taking data
//                               off the queue to copying it out; taken with
//                               no lock held, never while sleeping.
//  6. WaitQueue::lock_         (per wait queue SpinLock).  A file's wait
//                               queue lock is also that object's state lock
//                               (counter, buffer).  Wake callbacks run under
//                               it.  Nested: a child instance's poll queue
//                               lock is taken inside a leaf's queue lock
//                               while a wakeup climbs the nesting.
//  7. Instance::ready_lock_    (per instance SpinLock, Linux's ep->lock):
//                               ready list, overflow list, item list links
//                               and flags, the kicked sleeper (kicked_).
//  7.5 Instance::waiters_      (the instance's epoll_wait sleeper queue, a
//                               WaitQueue of its own class): taken only
//                               inside its instance's ready_lock_ (7), and
//                               nothing but kicks happen under it.
//  8. Object leaf locks        (Pipe::mu_, UnixConn::mu_: SpinLocks of the
//                               state shared by two ends).  Nothing is taken
//                               under them; taken with at most one wait-queue
//                               lock (6) held; no wakeup is issued under them.
//  9. Leaf mutexes             taken with no SpinLock held, nothing under
//                               them: the fd table (install/remove/bitmap,
//                               fd/table.cpp), the item cache free list
//                               (epoll/item_cache.cpp), the reclamation
//                               registry (core/reclaim.cpp), the waiter pool
//                               (core/waiter.cpp), the kernel-watch registry
//                               (instance id -> instance for the hubs' edge
//                               tags; pins with struct_get under it) and
//                               probe (serializes ctl checks on an empty
//                               kernel epoll: system calls under it) in
//                               epoll/kernel_watch.cpp, a KernelWatch's
//                               kick_mu_ (its doorbell's registration in its
//                               shadow epoll: epoll_ctl and poll under it,
//                               epoll/kernel_watch_direct.cpp), the
//                               virtual-time condition variable buckets
//                               (core/vcond.cpp: kicks, an eventfd write,
//                               under them).
//
// Outside this order: libuepoll-preload.so's init and warning mutexes
// (src/preload/, std::mutex: the preload uses only the public API) are
// leaves taken with no uepoll lock held and call no uepoll function.
//
// SpinLocks (6, 7, 7.5, 8) are never held across a blocking call, and no
// system call, allocation or copy of user memory is made under them: a
// wakeup's eventfd write is deferred to the release of the thread's last
// SpinLock (core/spinlock.h, core/waiter.cpp; only past 32 queued wakeups is
// one written at once); the item cache spills to its free list only with no
// SpinLock held; pipes copy user memory and allocate pages outside Pipe::mu_.
// A socket pair's read copies after mu_ too, serialized by its iolock_ (5.5).
// Spinning is bounded (core/backoff.h): pause, then sched_yield, then short
// sleeps, so a preempted holder gets the CPU back.
//
// Releases: the last File::put() runs the epoll release, which takes 6 then,
// separately, 4 and 7 of the instances watching the file.  It is never run
// with 6, 7 or 8 held.  It may run under a scan mutex (5) (and 4.5) when a
// nested poll drops the last reference of a child it pinned: no path takes
// an instance's scan mutex while holding one of that instance's shard locks,
// so this cannot close a cycle (harvests defer such puts where they can).
// The checker knows this exception (lockdep_release_begin in core/file.cpp).
//
// Signal handlers (see core/deferred.h): uep_read/uep_write on eventfds and
// pipes and uep_close may run in a handler that interrupted its own thread
// inside uepoll.  Every lock wrapper counts the locks the thread holds (or is
// taking), so such a handler knows; it then takes no lock except a pipe's
// leaf lock (8) held by another thread, and queues its wakeups for the
// interrupted code's last release.
//
// User code (the callbacks of user-defined files, objects/user_file.h) runs
// with no uepoll lock held, so a program's own locks sit outside this
// order: File::poll() of a user file returns a cached mask (the user's poll
// is called only from uep_file_open, uep_file_wake and after read/write
// callbacks), and its last put never happens under a lock (harvests poll
// it unpinned; Instance::add drops the topology walk's leaf references
// after the topology lock).  uep_file_wake takes the file's queue (6) and,
// through the wake callbacks, 7 and nested 6: an eventfd write's path.
//
// Kernel-side wakeups (epoll/kernel_watch.h) are system calls outside
// every spin lock: a harvest or poll that reads a hub edge then takes the
// instance's wait-queue lock (6) like any waker; the kernel-fd signal is a
// ThreadWaiter kick (deferred past the spin lock as above).  Creating an
// instance's kernel side or hub kicks its sleepers under 7 and 7.5, then,
// with those released, its uep_poll callers under its wait-queue lock (6).
//
// Not locks, but ordering rules: fd-table lookups are lock-free under an
// epoch guard (core/reclaim.h); item lifetimes are reference counts
// (epoll/item.h); an instance's ready-list snapshot is a seqlock written
// under its ready_lock_ (7) (and invalidated by MOD with a CAS under the
// shard lock, 4 only) and read with no lock by zero-timeout waits and
// nested polls (epoll/instance_snapshot.cpp, docs/design.md 5.1).
#pragma once

#include <cstdint>

namespace uepoll::core {

// A lock class: one per lock of the list above.  `level` is ten times the
// number above; `nests` marks the classes that may be taken again on another
// instance one nesting level down.
struct LockClass {
  const char* name;
  uint8_t level;
  bool nests;
};

namespace lock_class {
inline constexpr LockClass kVClock{"virtual clock mutex", 4, false};
inline constexpr LockClass kTimerRegistry{"TimerService registry", 5, false};
inline constexpr LockClass kTopology{"topology lock", 10, false};
inline constexpr LockClass kTopologyTarget{"topology target mutex", 20, false};
inline constexpr LockClass kCtl{"Instance::ctl_mutex_", 30, false};
inline constexpr LockClass kShard{"Instance shard lock", 40, false};
inline constexpr LockClass kKernelWatch{"KernelWatch::mu_", 42, true};
inline constexpr LockClass kNestedPoll{"nested-poll mutex", 45, false};
inline constexpr LockClass kScan{"Instance::scan_mutex_", 50, true};
inline constexpr LockClass kUnixIolock{"UnixSocket::iolock_", 55, false};
inline constexpr LockClass kUnixDgramIolock{"UnixDgramSocket::iolock_", 55, false};
inline constexpr LockClass kWaitQueue{"WaitQueue::lock_", 60, true};
inline constexpr LockClass kReady{"Instance::ready_lock_", 70, false};
inline constexpr LockClass kWaiters{"Instance::waiters_ lock", 75, false};
inline constexpr LockClass kPipe{"Pipe::mu_", 80, false};
inline constexpr LockClass kUnixConn{"UnixConn::mu_", 80, false};
inline constexpr LockClass kUnixDgramConn{"UnixDgramConn::mu_", 80, false};
inline constexpr LockClass kFdTable{"fd table mutex", 90, false};
inline constexpr LockClass kItemCache{"item cache free list", 91, false};
inline constexpr LockClass kReclaimRegistry{"reclaim registry", 92, false};
inline constexpr LockClass kWaiterPool{"waiter pool", 93, false};
inline constexpr LockClass kKernelRegistry{"kernel-watch registry", 94, false};
inline constexpr LockClass kKernelProbe{"kernel-watch probe", 95, false};
inline constexpr LockClass kKernelKick{"KernelWatch::kick_mu_", 96, false};
inline constexpr LockClass kCondBucket{"virtual-time condition variable bucket", 97, false};
}  // namespace lock_class

// Deepest same-class nesting the checker accepts: EP_MAX_NESTS (4) + 2.
inline constexpr int kMaxLockNesting = 6;

}  // namespace uepoll::core
