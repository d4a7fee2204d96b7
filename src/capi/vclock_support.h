/* vclock_support.h - library entry points that only libuepoll-preload.so
 * calls (src/preload/interpose_time.c): around pthread_create, so that a new
 * thread is known to the virtual clock's automatic mode from before it is
 * created; and ITIMER_REAL (setitimer, getitimer, alarm) on the clock.
 * Exported from a shared libuepoll but declared in no installed header (the
 * double underscore marks them private, as in capi/preload_support.h).
 *
 * Owned by src/capi/vclock_api.cpp.  Locks: the clock's mutex, inside. */
#ifndef UEPOLL_CAPI_VCLOCK_SUPPORT_H
#define UEPOLL_CAPI_VCLOCK_SUPPORT_H

#include <uepoll/export.h>

#include <sys/time.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Before pthread_create: the thread to be made counts as running; returns
 * what the new thread passes to uep__vclock_started (serialized mode: its
 * record, listed from now on; else NULL). */
UEP_EXPORT void *uep__vclock_spawning(void);
/* First thing in the new thread: it takes over that count (and, serialized,
 * waits for its turn). */
UEP_EXPORT void uep__vclock_started(void *token);
/* pthread_create failed: the count (and the record) are dropped. */
UEP_EXPORT void uep__vclock_spawn_failed(void *token);

/* setitimer(ITIMER_REAL, ...) / getitimer(ITIMER_REAL, ...) on the virtual
 * clock: 0, or -1 with errno EFAULT or EINVAL (a bad timeval), as Linux. */
UEP_EXPORT int uep__vclock_setitimer(const struct itimerval *new_value, struct itimerval *old_value);
UEP_EXPORT int uep__vclock_getitimer(struct itimerval *curr);

/* pthread_cond_wait / timedwait / clockwait on uepoll waits (core/vcond.h):
 * abstime (NULL: none) on `clock`; the mutex is a pthread_mutex_t, released
 * and retaken with the real pthread functions the caller passes.  0,
 * ETIMEDOUT, EINVAL (a bad clock or abstime), as pthread_cond_timedwait. */
UEP_EXPORT int uep__vcond_wait(const void *cond, void *mutex, clockid_t clock, const struct timespec *abstime,
                               void (*unlock)(void *), void (*relock)(void *));
UEP_EXPORT void uep__vcond_signal(const void *cond, int all);
/* The same wait, ended by a signal handler with EINTR (sem_wait). */
UEP_EXPORT int uep__vcond_wait_intr(const void *cond, void *mutex, clockid_t clock, const struct timespec *abstime,
                                    void (*unlock)(void *), void (*relock)(void *));

/* uep_vclock_control_start, with enter (if not NULL) called first in the
 * server thread (the preload's: that thread's calls are uepoll's own). */
UEP_EXPORT int uep__vclock_control_start(const char *spec, void (*enter)(void));

#ifdef __cplusplus
}
#endif

#endif
