// thread_safety.h - Clang thread-safety annotations (-Wthread-safety).
//
// The lock types (core/spinlock.h SpinLock, core/mutex.h Mutex and
// SharedMutex, core/waitqueue.h WaitQueue) are capabilities; fields say
// which lock guards them (UEP_GUARDED_BY), helpers that need a lock held
// say so (UEP_REQUIRES).  With another compiler, or clang without the
// warning, every macro expands to nothing.
//
// UEP_NO_THREAD_SAFETY_ANALYSIS is used where a correct pattern cannot be
// expressed to the analysis; each use carries a comment saying which
// pattern (a lock held by a member object, a lock taken in one function and
// released in another, a callback that runs under its queue's lock).
#pragma once

#if defined(__clang__)
#define UEP_TSA(x) __attribute__((x))
#else
#define UEP_TSA(x)
#endif

#define UEP_CAPABILITY(name) UEP_TSA(capability(name))
#define UEP_SCOPED_CAPABILITY UEP_TSA(scoped_lockable)
#define UEP_GUARDED_BY(x) UEP_TSA(guarded_by(x))
#define UEP_PT_GUARDED_BY(x) UEP_TSA(pt_guarded_by(x))
#define UEP_REQUIRES(...) UEP_TSA(requires_capability(__VA_ARGS__))
#define UEP_REQUIRES_SHARED(...) UEP_TSA(requires_shared_capability(__VA_ARGS__))
#define UEP_ACQUIRE(...) UEP_TSA(acquire_capability(__VA_ARGS__))
#define UEP_ACQUIRE_SHARED(...) UEP_TSA(acquire_shared_capability(__VA_ARGS__))
#define UEP_RELEASE(...) UEP_TSA(release_capability(__VA_ARGS__))
#define UEP_RELEASE_SHARED(...) UEP_TSA(release_shared_capability(__VA_ARGS__))
#define UEP_RELEASE_GENERIC(...) UEP_TSA(release_generic_capability(__VA_ARGS__))
#define UEP_TRY_ACQUIRE(...) UEP_TSA(try_acquire_capability(__VA_ARGS__))
#define UEP_EXCLUDES(...) UEP_TSA(locks_excluded(__VA_ARGS__))
#define UEP_RETURN_CAPABILITY(x) UEP_TSA(lock_returned(x))
#define UEP_ASSERT_CAPABILITY(x) UEP_TSA(assert_capability(x))
#define UEP_NO_THREAD_SAFETY_ANALYSIS UEP_TSA(no_thread_safety_analysis)
