// vclock_serial.h - the virtual clock's serialized mode
// (uep_vclock_serialize): the threads the clock knows run one at a time,
// and at each sync point the next one is chosen by a seeded generator, so
// that a run can be replayed from its seed.
//
// What it owns.  One record per known thread (ThreadRec: an id given in
// creation order, its registered sleep if any, its futex word), listed by
// id; the turn (g_holder: the record whose thread may run, or none); the
// generator's state.  The sync points are the clock's own hooks: a sleep's
// registration gives the turn away (SleepScope::begin), a sleep's end and a
// new thread's start wait for it, a thread's exit gives it away.  When the
// turn is free, schedule_locked() gives it to one of the runnable threads
// (not asleep, or asleep and woken or past its deadline), chosen by the
// generator among them in id order: which thread runs next depends only on
// the seed and on the sequence of sync points, not on the kernel's
// scheduler.
//
// Locks.  Everything here is guarded by the clock's mutex (vclock::g_mutex,
// level 1); a thread waiting for its turn releases it and sleeps on its
// futex word (no lock held).
#pragma once

#include "core/vclock.h"

#include <cstdint>

namespace uepoll::core::vclock::serial {

struct ThreadRec;

// True once enabled (relaxed: set before any other thread is known).
bool on() noexcept;

// Preconditions for the rest: g_mutex held.
// Turns serialized mode on with `seed`; the calling thread (known) takes
// the turn.  vclock::serialize checks that no other thread is known.
void enable_locked(uint64_t seed) noexcept UEP_REQUIRES(g_mutex);
// The clock turned off: serialized mode ends, every thread waiting for its
// turn runs on (records stay with their threads until they exit).
void disable_locked() noexcept UEP_REQUIRES(g_mutex);
// The creator of a thread: the new thread's record, listed (runnable) from
// now on; nullptr when serialized mode is off.
ThreadRec* spawn_locked() noexcept UEP_REQUIRES(g_mutex);
// The new thread takes over its record and waits for its turn.
void adopt_locked(ThreadRec* r) noexcept UEP_REQUIRES(g_mutex);
// pthread_create failed: the record goes.
void drop_locked(ThreadRec* r) noexcept UEP_REQUIRES(g_mutex);
// A thread that became known otherwise (its first sleep, attach): listed.
void self_known_locked() noexcept UEP_REQUIRES(g_mutex);
// The calling thread registers sleep s (gives the turn away; the caller
// then runs maybe_advance and schedule_locked) / has left it (waits for
// its turn, releasing g_mutex meanwhile).
void sleep_begin_locked(SleepScope* s) noexcept UEP_REQUIRES(g_mutex);
void sleep_end_locked() noexcept UEP_REQUIRES(g_mutex);
// The calling thread exits: its record goes, the turn is given away.
void exit_locked() noexcept UEP_REQUIRES(g_mutex);
// A free turn goes to a runnable thread, if any.
void schedule_locked() noexcept UEP_REQUIRES(g_mutex);
// In a forked child: only the calling thread's record remains; it has the turn.
void fork_child_locked() noexcept UEP_REQUIRES(g_mutex);

}  // namespace uepoll::core::vclock::serial
