/*
 * vclock.h - uepoll's virtual clock: simulated time for event-driven code.
 *
 * With the virtual clock on, CLOCK_MONOTONIC, CLOCK_BOOTTIME and
 * CLOCK_REALTIME as uepoll sees them follow a clock that only moves when it
 * is told to (manual mode) or when nothing else can happen (automatic mode):
 *   - timerfds created while it is on (uep_timerfd_create, any of those
 *     clocks and their _ALARM variants), with TFD_TIMER_ABSTIME, intervals,
 *     expiration counts and gettime exactly as Linux computes them, on the
 *     virtual clock;
 *   - the timeouts of uep_epoll_wait / uep_epoll_pwait / uep_epoll_pwait2 /
 *     uep_poll / uep_ppoll, and uep_vclock_nanosleep below.
 * Every clock moves by the same amount: MONOTONIC and BOOTTIME are equal,
 * REALTIME is MONOTONIC plus an offset that only uep_vclock_set_realtime()
 * (or the control channel's set-realtime) changes, as clock_settime does:
 * REALTIME timerfds keep their realtime expiry, and those armed with
 * TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET are cancelled (ECANCELED).
 *
 * Modes:
 *   UEP_VCLOCK_OFF     the kernel's clocks (the default).  Costs one relaxed
 *                      load per wait or timer call.
 *   UEP_VCLOCK_MANUAL  time moves only by uep_vclock_advance().
 *   UEP_VCLOCK_AUTO    as manual, and also: when every thread known to the
 *                      clock is asleep in a uepoll wait and none of them has
 *                      been woken or has a deadline already passed, the clock
 *                      jumps to the earliest pending deadline (a timer's
 *                      expiry or a wait's timeout), so a program that waits
 *                      an hour runs in microseconds (discrete-event
 *                      simulation).  A thread is known from its first uepoll
 *                      wait in virtual time (or uep_vclock_attach_thread())
 *                      until it exits; a known thread that is running, or
 *                      blocked anywhere but in a uepoll wait, holds the clock.
 *
 * Enabling (OFF -> MANUAL or AUTO) starts the clock at MONOTONIC = BOOTTIME =
 * UEP_VCLOCK_START_MONO ns and REALTIME = UEP_VCLOCK_START_REALTIME ns (fixed
 * values: two runs see the same times), unless uep_vclock_set_start() chose
 * others.  Switching between MANUAL and AUTO keeps the time.  Enable it
 * before the first uepoll timer or wait, or at a point where no thread is
 * in a uepoll wait: timers and waits begun before keep the kernel's clock.
 *
 * All functions are thread-safe.  docs/design.md ("Virtual time") describes
 * how the clock advances and how quiescence is detected.
 *
 * This header is valid C (C99 and later) and C++.
 */
#ifndef UEPOLL_VCLOCK_H
#define UEPOLL_VCLOCK_H

#include <stdint.h>
#include <sys/types.h> /* clockid_t */
#include <time.h>

#include <uepoll/export.h>
#include <uepoll/uepoll.h> /* uep_timerfd_*, and struct timespec in C99 */

#ifdef __cplusplus
extern "C" {
#endif
UEP_API_BEGIN /* every function declared here is exported (export.h) */

enum { UEP_VCLOCK_OFF = 0, UEP_VCLOCK_MANUAL = 1, UEP_VCLOCK_AUTO = 2 };

/* 1000 s after "boot", and 2026-01-01T00:00:00Z. */
#define UEP_VCLOCK_START_MONO 1000000000000LL
#define UEP_VCLOCK_START_REALTIME 1767225600000000000LL

/* Sets the mode.  0, or -1 with errno EINVAL for an unknown mode. */
int uep_vclock_enable(int mode);
/* The current mode. */
int uep_vclock_mode(void);
/* The values the clock starts at when next enabled from OFF (ns, >= 0).
 * 0, or -1/EINVAL for a negative value. */
int uep_vclock_set_start(int64_t mono_ns, int64_t realtime_ns);

/* The virtual time of `clock` in ns: CLOCK_MONOTONIC, CLOCK_BOOTTIME,
 * CLOCK_REALTIME, their _COARSE/_RAW/_ALARM variants.  -1 with errno EINVAL
 * for another clock, or when the clock is off. */
int64_t uep_vclock_now(clockid_t clock);
/* clock_gettime() on the virtual clock: 0, or -1 with EINVAL (as above). */
int uep_vclock_gettime(clockid_t clock, struct timespec *ts);

/* Moves the clock forward by ns (>= 0): every virtual timer and wait
 * timeout due by then expires, timers in the order of their expiry times
 * (equal times: the order they were armed in).  0, or -1 with errno EINVAL
 * (negative ns, a time past UEP_VCLOCK_MAX_NS on either clock, or the clock
 * is off). */
int uep_vclock_advance(int64_t ns);
/* The same, to CLOCK_MONOTONIC time mono_ns (not before now). */
int uep_vclock_advance_to(int64_t mono_ns);
/* The latest time either clock reaches (about 146 years). */
#define UEP_VCLOCK_MAX_NS (INT64_MAX / 2)

/* clock_settime(CLOCK_REALTIME) on the virtual clock: REALTIME becomes
 * realtime_ns (0 <= realtime_ns <= UEP_VCLOCK_MAX_NS); MONOTONIC and
 * BOOTTIME do not move.  As Linux: REALTIME timerfds keep their realtime
 * expiry (one now due fires), and every REALTIME timerfd armed with
 * TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET that has not seen this change
 * becomes readable and its next read or settime fails with ECANCELED.
 * Waits and sleeps keep their monotonic deadlines.  0, or -1/EINVAL. */
int uep_vclock_set_realtime(int64_t realtime_ns);

/* 1 if every thread known to the clock is asleep in a uepoll wait and none
 * of them has been woken or has a deadline already passed (the point at
 * which AUTO jumps, and at which a MANUAL driver may advance), else 0. */
int uep_vclock_idle(void);

/* Serves the control channel's line protocol (README.md, "Simulated time")
 * on spec: a path, at which a Unix stream socket is made (its directory must
 * be this user's, with no access for group or others; a stale socket there
 * is replaced; connections from another user are refused), or "fd:N", an
 * inherited connected stream socket.  One thread serves it; once per
 * process.  0, or -1 with errno EINVAL (spec), EPERM (the directory),
 * EEXIST (a file that is not a socket at path), ENOTSOCK, EBADF,
 * ENAMETOOLONG, EBUSY (already started), or bind's error. */
int uep_vclock_control_start(const char *spec);

/* clock_nanosleep(2) on the virtual clock: a uepoll wait until the
 * (TIMER_ABSTIME: absolute) time, so it counts as asleep for AUTO.  Returns
 * 0, or an error number as clock_nanosleep does: EINVAL (a bad clock, flag
 * or timespec, or the clock off), EINTR after a signal handler ran (*rem,
 * if given and the sleep relative, gets the time left), EFAULT. */
int uep_vclock_nanosleep(clockid_t clock, int flags, const struct timespec *req, struct timespec *rem);

/* Serialized mode: from now on the threads known to the clock run one at a
 * time.  A thread gives up its turn when it begins a uepoll sleep (a wait
 * that blocks, a virtual sleep, a condition-variable wait or join under the
 * preload) or exits; a thread whose sleep ends, and a new thread, wait for
 * theirs.  When the turn is free it goes to one of the runnable known
 * threads (not asleep, or woken, or past its deadline), chosen by a
 * generator seeded with `seed` among them in creation order, so the same
 * program with the same inputs and seed runs its threads in the same order
 * (README.md, "Simulated time", says what is and is not deterministic).
 * Call it before any other thread is known (the preload: UEPOLL_VCLOCK_SERIALIZE,
 * before main).  0, or -1 with errno EINVAL (the clock off) or EBUSY
 * (another thread is known already). */
int uep_vclock_serialize(uint64_t seed);

/* Makes the calling thread known to AUTO mode now (it holds the clock while
 * it runs) instead of at its first uepoll wait.  0, or -1/EINVAL when off. */
int uep_vclock_attach_thread(void);

UEP_API_END
#ifdef __cplusplus
}
#endif

#endif /* UEPOLL_VCLOCK_H */
