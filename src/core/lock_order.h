// lock_order.h - every lock in uepoll, its acquire order, and what it guards.
//
// This is the one place the order is stated (docs/design.md mirrors it).
// Locks are taken from 1 to 7; a thread holding lock k may only take locks
// with a larger number, except where "nested" says the same class is taken
// again one nesting level further down (parent before child, exactly as
// Linux's ep->mtx subclasses; the topology check forbids cycles, so the
// chain is acyclic and at most EP_MAX_NESTS + 1 deep).
//
//  1. topology lock            (process-wide reader-writer lock with one
//                               reader slot per thread hash, each slot and
//                               the writer flag on its own cache line).  Exclusive: adding an instance to an
//                               instance (loop, depth and path checks).
//                               Shared: adding a leaf file to an instance that
//                               is itself watched (2026 seed).  Never taken on
//                               DEL, MOD, wait, or ADD to a flat instance.
//  2. Topology target mutexes  (64 hashed std::mutex, one per target file
//                               hash).  Taken under 1 (shared) to serialize
//                               path checks for one target file.
//  3. Instance::ctl_mutex_     (per instance; only when the "concurrent_ctl"
//                               knob is off: Linux's ep->mtx for ctl).
//  4. Instance shard lock      (per instance, 16 shards): the item hash for
//                               its keys, the items' registration state,
//                               MOD's seqlock writes.  Nested: a shard of a
//                               parent is held while polling a child.
// 4a. KernelWatch::mu_        (per instance, epoll/kernel_watch.h): creating
//                               the instance's hub and kernel fd.  Taken
//                               under 1 (exclusive) and under a parent's
//                               shard lock (4) during a nesting ADD; takes
//                               the instance's wait-queue lock (6) and
//                               ready_lock_ (7) inside.  Kernel system calls
//                               (epoll_create1, epoll_ctl) are made under it.
//  5. Instance::scan_mutex_    (per instance std::mutex, Linux's ep->mtx for
//                               the harvest): serializes harvests and
//                               readiness scans of one instance.  Nested:
//                               parent's before child's (poll of a child).
//  6. WaitQueue::lock_         (per wait queue SpinLock).  A file's wait
//                               queue lock is also that object's state lock
//                               (counter, buffer).  Wake callbacks run under
//                               it.  Nested: a child instance's poll queue
//                               lock is taken inside a leaf's queue lock
//                               while a wakeup climbs the nesting.
//  7. Instance::ready_lock_    (per instance SpinLock, Linux's ep->lock):
//                               ready list, overflow list, item list links
//                               and flags.  Inside it: the instance's own
//                               waiter queue lock (6, a different queue),
//                               which is never held while taking any 7.
//  8. Object leaf locks        (Pipe::mu_, UnixConn::mu_: SpinLocks of the
//                               state shared by two ends).  Nothing is taken
//                               under them; taken with at most one wait-queue
//                               lock (6) held; no wakeup is issued under them.
//  -  item_cache free list     (std::mutex in epoll/item_cache.cpp): a leaf,
//                               taken when a thread's item cache over- or
//                               underflows; may be taken under 7 (a scan
//                               recycling an item it held).
//  -  KernelWatch registry and probe mutexes (std::mutex in
//                               epoll/kernel_watch.cpp): leaves; the registry
//                               (instance id -> instance for the hubs' edge
//                               tags) pins with struct_get under it; the
//                               probe serializes ctl checks on an empty
//                               kernel epoll.  No uepoll lock is held.
//  -  TimerService registry    (std::mutex in objects/timerfd.cpp): taken
//                               with no uepoll lock held; a timer's
//                               wait-queue lock (6) is taken under it to
//                               deliver an expiry.
//
// Never held across a blocking call: 6, 7 and 8 (SpinLocks), and no system
// call is made under them: a wakeup's eventfd write is deferred to the
// release of the thread's last SpinLock (core/spinlock.h, core/waiter.cpp;
// only past 32 queued wakeups is one written at once).
//
// Releases: the last File::put() runs the epoll release, which takes 6 then,
// separately, 4 and 7 of the instances watching the file.  It is never run
// with 6 or 7 held.  It may run under a scan mutex (5) when a nested poll
// drops the last reference of a child it pinned: no path takes an
// instance's scan mutex while holding one of that instance's shard locks,
// so this cannot close a cycle (harvests defer such puts where they can).
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
// ThreadWaiter kick (deferred past the spin lock as above).
//
// Not locks, but ordering rules: fd-table lookups are lock-free under an
// epoch guard (core/reclaim.h); item lifetimes are reference counts
// (epoll/item.h).
#pragma once
