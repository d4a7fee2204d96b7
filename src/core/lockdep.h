// lockdep.h - the debug-build lock checker (in the spirit of Linux lockdep).
//
// Built when UEPOLL_LOCKDEP is 1 (CMake option UEPOLL_LOCKDEP, on by default
// in Debug builds); otherwise every function here is an empty inline and the
// lock wrappers compile to what they were without it.
//
// It records, per thread, the locks held (class, instance) and checks each
// acquisition against core/lock_order.h before the thread blocks or spins:
// the new lock's level must be above every held lock's level, except
//   * a class marked `nests` taken on another instance (one nesting level
//     further down), at most kMaxLockNesting deep;
//   * inside a file release (lockdep_release_begin/end, core/file.cpp): the
//     scan mutexes (9) and the nested-poll mutex (8) held when the release
//     began are not compared (lock_order.h, "Releases");
//   * in a signal handler that interrupted its own thread inside uepoll
//     (SignalFrame, core/deferred.h): the interrupted locks are not compared,
//     but only leaf locks (14) may be taken, and never one the thread holds.
// A violation prints both locks (names and levels) and aborts.  It also
// checks "no allocation and no user-memory copy under a SpinLock"
// (lockdep_assert_no_spin, called by core::raw_alloc and the copy sites),
// and that a `_locked` helper's lock is held (lockdep_assert_held, through
// Mutex::assert_held and SpinLock::assert_held).
// Locks: none (per-thread state only).
#pragma once

#include "core/lock_order.h"

#ifndef UEPOLL_LOCKDEP
#define UEPOLL_LOCKDEP 0
#endif

namespace uepoll::core {

#if UEPOLL_LOCKDEP
void lockdep_acquire(const LockClass* cls, const void* instance) noexcept;
void lockdep_release(const LockClass* cls, const void* instance) noexcept;
// A lock taken without the order check (Mutex::lock_unchecked): recorded
// only so that lockdep_assert_held finds it.
void lockdep_hold_unchecked(const void* instance) noexcept;
void lockdep_drop_unchecked(const void* instance) noexcept;
// Aborts unless the calling thread holds `instance` (Mutex::assert_held).
void lockdep_assert_held(const LockClass* cls, const void* instance) noexcept;
// Prints "cls is not held by this thread" and aborts (SpinLock::assert_held).
[[noreturn]] void lockdep_not_held(const LockClass* cls) noexcept;
void lockdep_assert_no_spin(const char* what) noexcept;
void lockdep_assert_none_held(const char* what) noexcept;
void lockdep_release_begin() noexcept;
void lockdep_release_end() noexcept;
int lockdep_signal_frame_begin() noexcept;
void lockdep_signal_frame_end(int saved) noexcept;
#else
inline void lockdep_acquire(const LockClass*, const void*) noexcept {}
inline void lockdep_release(const LockClass*, const void*) noexcept {}
inline void lockdep_hold_unchecked(const void*) noexcept {}
inline void lockdep_drop_unchecked(const void*) noexcept {}
inline void lockdep_assert_held(const LockClass*, const void*) noexcept {}
inline void lockdep_assert_no_spin(const char*) noexcept {}
inline void lockdep_assert_none_held(const char*) noexcept {}
inline void lockdep_release_begin() noexcept {}
inline void lockdep_release_end() noexcept {}
inline int lockdep_signal_frame_begin() noexcept { return 0; }
inline void lockdep_signal_frame_end(int) noexcept {}
#endif

}  // namespace uepoll::core
