/*
 * tuning.h - run-time switches for uepoll's scaling mechanisms and its
 * limits.  One interface: named knobs with integer values.  (Test-only hooks,
 * among them the "fail_alloc_after" knob, are in <uepoll/testing.h>.)
 *
 * Knobs (default in brackets):
 *   "rcu_ctl"              [1] 2013 seed: DEL and lookups never take the
 *                              topology lock; flat ADD takes none.  0: every
 *                              ctl takes the process-wide topology lock
 *                              exclusively (Linux before 2013's "epmutex").
 *   "lockless_nested_poll" [1] 2017 seed: polling a nested instance takes no
 *                              process-wide lock.  0: every poll of an
 *                              instance serializes on one global mutex (Linux's
 *                              ep_call_nested before 2017).
 *   "exclusive_autoremove" [1] 2020 seed: a waiter is removed from the wait
 *                              queue atomically by the wakeup.  0: the woken
 *                              waiter removes itself later (pre-2020 window).
 *   "alloc_reuse"          [1] 2024 seed (and beyond): items and their wait
 *                              entries are recycled through a per-thread cache.
 *                              0: every ADD allocates, every DEL frees.
 *   "parallel_nested_add"  [1] 2026 seed: leaf ADD into a watched instance
 *                              takes the topology lock shared plus a hashed
 *                              per-target mutex.  0: exclusive.
 *   "concurrent_ctl"       [1] beyond Linux: ctl on one instance runs in
 *                              parallel on sharded locks.  0: every ctl on an
 *                              instance takes that instance's ctl mutex.
 *   "burst_wake_chain"     [1] beyond Linux: while the epoll_wait sleeper
 *                              kicked last has not run, further events of a
 *                              burst kick nobody; that thread's harvest wakes
 *                              the next sleeper if events remain.  0: every
 *                              event kicks a sleeper, as Linux.
 *   "busy_poll_usecs"      [0] beyond Linux: the EPIOCSPARAMS busy_poll_usecs
 *                              that new instances start with (0 to
 *                              INT32_MAX; see uepoll.h).
 *   "max_user_watches"     [Linux's formula] registrations allowed in the
 *                              process (ENOSPC past it).
 *   "max_fds"              [1048576] uepoll descriptors allowed (EMFILE).
 *
 * Thread safety: knobs may be changed at any time; a call already running
 * keeps the behaviour it started with for each lock it took.
 */
#ifndef UEPOLL_TUNING_H
#define UEPOLL_TUNING_H

#include <uepoll/export.h>

#ifdef __cplusplus
extern "C" {
#endif
UEP_API_BEGIN /* every function declared here is exported (export.h) */

/* 0 on success; -1 with errno EINVAL for an unknown knob or a value out of
 * range. */
int uep_tuning_set(const char *knob, long value);
/* 0 on success and *value set; -1 with errno EINVAL for an unknown knob. */
int uep_tuning_get(const char *knob, long *value);

UEP_API_END
#ifdef __cplusplus
}
#endif

#endif /* UEPOLL_TUNING_H */
