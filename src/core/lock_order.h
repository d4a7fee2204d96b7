// lock_order.h - every lock in uepoll, its acquire order, and what it guards.
//
// This is the one place the order is stated (docs/design.md mirrors it;
// tests/reliability/lock_order_check.py checks that the two and the
// LockClass constants below agree).  Every lock is a core::SpinLock
// (core/spinlock.h) or core::Mutex (core/mutex.h) constructed with one of
// the LockClass constants below; the debug-build checker (core/lockdep.h,
// CMake option UEPOLL_LOCKDEP) aborts naming both locks when a thread
// breaks the order.
//
// Locks are taken in increasing level (the numbers 1 to 15 below):
// a thread holding a lock of level k may only take locks of a higher level,
// except where "nested" says the same class is taken again one nesting level
// further down (parent before child, exactly as Linux's ep->mtx subclasses;
// the topology check forbids cycles, so the chain is acyclic and at most
// EP_MAX_NESTS + 1 deep).  The checker accepts a nested class on a different
// instance, at most EP_MAX_NESTS + 2 deep; it cannot see parent-before-child.
//
//  1. virtual clock mutex      (Mutex in core/vclock.cpp): the virtual
//                               clock's timers and sleepers.  Taken with no
//                               uepoll lock held; a timer's wait-queue lock
//                               (11) is taken under it to deliver an expiry.
//  2. TimerService registry    (Mutex in objects/timerfd.cpp): the timers
//                               the service thread watches.  Taken with no
//                               uepoll lock held; a timer's wait-queue lock
//                               (11) is taken under it to deliver an expiry.
//  3. topology lock            (process-wide reader-writer lock: a reader
//                               slot owned by each thread (64, given back at
//                               thread exit; 16 shared ones beyond), each
//                               slot and the writer flag on its own cache
//                               line).  Exclusive: adding an instance to an
//                               instance (loop, depth and path checks).
//                               Shared: adding a leaf file to an instance that
//                               is itself watched (parallel_nested_add), unless its
//                               cached path profile passes (kCached, which
//                               takes neither 3 nor 4).  Never taken on
//                               DEL, MOD, wait, or ADD to a flat instance.
//  4. Topology target mutexes  (64 hashed Mutex, one per target file
//                               hash).  Taken under 3 (shared) to serialize
//                               path checks for one target file; not taken
//                               when the instance's cached path profile
//                               passes and the leaf is watched by nobody
//                               else (topology.h, kCached).
//  5. Instance::ctl_mutex_     (per instance; only when the "concurrent_ctl"
//                               knob is off: Linux's ep->mtx for ctl).
//  6. Instance shard lock      (per instance, 16 shards): the item hash for
//                               its keys, the items' registration state,
//                               MOD's seqlock writes.  A shard of a parent is
//                               held while polling a child (ADD, MOD).  A
//                               ctl batch's run (Instance::ctl_run) holds
//                               several shards of one instance, taken in
//                               index order; nothing else holds two.
//  7. KernelWatch::mu_         (per instance Mutex, epoll/kernel_watch.h):
//                               creating the instance's hub and kernel fd.
//                               Taken under 3 (exclusive) and under a
//                               parent's shard lock (6) during a nesting ADD;
//                               takes the instance's wait-queue lock (11) and
//                               ready_lock_ (12) inside.  Kernel system calls
//                               (epoll_create1, epoll_ctl) are made under it.
//                               Nested (kKernelWatch allows another
//                               instance's mu_ under this one), though no
//                               path holds two: a nesting ADD takes the
//                               child's mu_ (ensure_hub in on_nest) and
//                               releases it before the parent's
//                               (parent_hub), and attach walks up the
//                               parents one mu_ at a time.
//  8. nested-poll mutex        (one Mutex, only with the
//                               "lockless_nested_poll" knob off): taken by a
//                               thread's outermost instance poll or harvest,
//                               before any scan mutex.
//  9. Instance::scan_mutex_    (per instance Mutex, Linux's ep->mtx for
//                               the harvest): serializes harvests and
//                               readiness scans of one instance.  Nested:
//                               parent's before child's (poll of a child).
// 10. UnixSocket::iolock_      (per socket Mutex, Linux's u->iolock; a
//                               datagram or seqpacket socket's
//                               UnixDgramSocket::iolock_ likewise): one
//                               reader at a time, held from taking data off
//                               the queue to copying it out; taken with no
//                               lock held, never while sleeping.  The
//                               unix GC mutex (one Mutex, objects/unix_gc.h,
//                               Linux's unix_gc_lock) shares the level: it
//                               and an iolock_ are never held together.
//                               It guards the in-flight counts of uepoll
//                               unix sockets, the list of sockets in
//                               flight and a collection's candidates;
//                               taken by payloads taking or releasing
//                               files (a MSG_PEEK's copies, made under
//                               iolock_, are not counted) and by unix_gc,
//                               which takes the candidates' pair locks
//                               (14) inside; no file is released and
//                               nothing allocated under it.
// 11. WaitQueue::lock_         (per wait queue SpinLock).  A file's wait
//                               queue lock is also that object's state lock
//                               (counter, buffer).  Wake callbacks run under
//                               it.  Nested: a child instance's poll queue
//                               lock is taken inside a leaf's queue lock
//                               while a wakeup climbs the nesting.
// 12. Instance::ready_lock_    (per instance SpinLock, Linux's ep->lock):
//                               ready list, overflow list, item list links
//                               and flags, the kicked sleeper (kicked_).
// 13. Instance::waiters_ lock  (the instance's epoll_wait sleeper queue, a
//                               WaitQueue of its own class): taken only
//                               inside its instance's ready_lock_ (12), and
//                               nothing but kicks happen under it (so the
//                               queue only changes under ready_lock_).
// 14. Object leaf locks        (Pipe::mu_, UnixConn::mu_, UnixDgramConn::mu_:
//                               SpinLocks of the state shared by two ends).
//                               Nothing is taken under them; taken with at
//                               most one wait-queue lock (11) held; no wakeup
//                               is issued under them.
// 15. Leaf mutexes             taken with no SpinLock held, nothing under
//                               them: the fd table mutex (install/remove/
//                               bitmap, fd/table.cpp), the item cache free
//                               list (epoll/item_cache.cpp), the reclaim
//                               registry (core/reclaim.cpp), the waiter pool
//                               (core/waiter.cpp), the kernel-watch registry
//                               (instance id -> instance for the hubs' edge
//                               tags; pins with struct_get under it) and the
//                               kernel-watch probe (serializes ctl checks on
//                               an empty kernel epoll: system calls under it)
//                               in epoll/kernel_watch.cpp,
//                               KernelWatch::kick_mu_ (its doorbell's
//                               registration in its shadow epoll: epoll_ctl
//                               and poll under it,
//                               epoll/kernel_watch_direct.cpp), the
//                               virtual-time condition variable buckets
//                               (core/vcond.cpp: kicks, an eventfd write,
//                               under them).  The checker also orders them
//                               among themselves, in this order.
//
// Outside this order: libuepoll-preload.so's init and warning mutexes
// (src/preload/, std::mutex: the preload uses only the public API) are
// leaves taken with no uepoll lock held and call no uepoll function.
// Its conversions' lock (src/preload/fork_convert.c, a recursive
// pthread_mutex_t) is the outermost of all: taken with no uepoll lock held,
// around uepoll calls (the conversions, the making of a pipe or pair) and
// across a fork, whose prepare handler then takes uepoll's.
// The own-descriptor window (core/own_fds.cpp, an atomic flag) is a leaf
// too: held for the few system calls of a park (no lock taken under it),
// tried for a bounded while by a park that may hold any lock above (it
// falls back rather than wait), and waited for by fork()'s prepare handler
// after every lock the handler takes and by the preload's spawns with no
// uepoll lock held.
//
// SpinLocks (11, 12, 13, 14) are never held across a blocking call, and no
// system call, allocation or copy of user memory is made under them: a
// wakeup's eventfd write is deferred to the release of the thread's last
// SpinLock (core/spinlock.h, core/waiter.cpp; only past 32 queued wakeups is
// one written at once); the item cache spills to its free list only with no
// SpinLock held; pipes copy user memory and allocate pages outside Pipe::mu_.
// A socket pair's read copies after mu_ too, serialized by its iolock_ (10).
// Spinning is bounded (core/backoff.h): pause, then sched_yield, then short
// sleeps, so a preempted holder gets the CPU back.
//
// Releases: the last File::put() runs the epoll release, which takes 11 then,
// separately, 6 and 12 of the instances watching the file.  It is never run
// with 11, 12 or 14 held.  It may run under a scan mutex (9) (and 8) when a
// nested poll drops the last reference of a child it pinned: no path takes
// an instance's scan mutex while holding one of that instance's shard locks,
// so this cannot close a cycle (harvests defer such puts where they can).
// The checker knows this exception (lockdep_release_begin in core/file.cpp).
//
// Signal handlers (see core/deferred.h): uep_read/uep_write on eventfds and
// pipes and uep_close may run in a handler that interrupted its own thread
// inside uepoll.  Every lock wrapper counts the locks the thread holds (or is
// taking), so such a handler knows; it then takes no lock except a pipe's
// leaf lock (14) held by another thread, and queues its wakeups for the
// interrupted code's last release.
//
// User code (the callbacks of user-defined files, objects/user_file.h) runs
// with no uepoll lock held, so a program's own locks sit outside this
// order: File::poll() of a user file returns a cached mask (the user's poll
// is called only from uep_file_open, uep_file_wake and after read/write
// callbacks), and its last put never happens under a lock (harvests poll
// it unpinned; Instance::add drops the topology walk's leaf references
// after the topology lock).  uep_file_wake takes the file's queue (11) and,
// through the wake callbacks, 12 and nested 11: an eventfd write's path.
//
// Kernel-side wakeups (epoll/kernel_watch.h) are system calls outside
// every spin lock: a harvest or poll that reads a hub edge then takes the
// instance's wait-queue lock (11) like any waker; the kernel-fd signal is a
// ThreadWaiter kick (deferred past the spin lock as above).  Creating an
// instance's kernel side or hub kicks its sleepers under 12 and 13, then,
// with those released, its uep_poll callers under its wait-queue lock (11).
//
// Not locks, but ordering rules: fd-table lookups are lock-free under an
// epoch guard (core/reclaim.h); item lifetimes are reference counts
// (epoll/item.h); an instance's ready-list snapshot is a seqlock written
// under its ready_lock_ (12) (and invalidated by MOD with a CAS under the
// shard lock, 6 only) and read with no lock by zero-timeout waits and
// nested polls (epoll/instance_snapshot.cpp, docs/design.md 5.1).
#pragma once

#include <cstdint>

namespace uepoll::core {

// A lock class: one per lock of the list above.  `level` is ten times the
// number above, plus, for the leaf mutexes of 15, their place in that list:
// the checker also orders the leaves among themselves (a lower or equal
// level than a held lock aborts).  `nests` marks the classes that may be
// taken again on another instance one nesting level down.
struct LockClass {
  const char* name;
  uint8_t level;
  bool nests;
};

namespace lock_class {
inline constexpr LockClass kVClock{"virtual clock mutex", 10, false};
inline constexpr LockClass kTimerRegistry{"TimerService registry", 20, false};
inline constexpr LockClass kTopology{"topology lock", 30, false};
inline constexpr LockClass kTopologyTarget{"topology target mutex", 40, false};
inline constexpr LockClass kCtl{"Instance::ctl_mutex_", 50, false};
inline constexpr LockClass kShard{"Instance shard lock", 60, false};
inline constexpr LockClass kKernelWatch{"KernelWatch::mu_", 70, true};
inline constexpr LockClass kNestedPoll{"nested-poll mutex", 80, false};
inline constexpr LockClass kScan{"Instance::scan_mutex_", 90, true};
inline constexpr LockClass kUnixIolock{"UnixSocket::iolock_", 100, false};
inline constexpr LockClass kUnixDgramIolock{"UnixDgramSocket::iolock_", 100, false};
inline constexpr LockClass kUnixGc{"unix GC mutex", 100, false};
inline constexpr LockClass kWaitQueue{"WaitQueue::lock_", 110, true};
inline constexpr LockClass kReady{"Instance::ready_lock_", 120, false};
inline constexpr LockClass kWaiters{"Instance::waiters_ lock", 130, false};
inline constexpr LockClass kPipe{"Pipe::mu_", 140, false};
inline constexpr LockClass kUnixConn{"UnixConn::mu_", 140, false};
inline constexpr LockClass kUnixDgramConn{"UnixDgramConn::mu_", 140, false};
inline constexpr LockClass kFdTable{"fd table mutex", 150, false};
inline constexpr LockClass kItemCache{"item cache free list", 151, false};
inline constexpr LockClass kReclaimRegistry{"reclaim registry", 152, false};
inline constexpr LockClass kWaiterPool{"waiter pool", 153, false};
inline constexpr LockClass kKernelRegistry{"kernel-watch registry", 154, false};
inline constexpr LockClass kKernelProbe{"kernel-watch probe", 155, false};
inline constexpr LockClass kKernelKick{"KernelWatch::kick_mu_", 156, false};
inline constexpr LockClass kCondBucket{"virtual-time condition variable bucket", 157, false};
}  // namespace lock_class

// Deepest same-class nesting the checker accepts: EP_MAX_NESTS (4) + 2.
inline constexpr int kMaxLockNesting = 6;

}  // namespace uepoll::core
