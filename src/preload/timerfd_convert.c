/*
 * timerfd_convert.c - a uepoll timerfd handed to the kernel to act on (an
 * io_uring SQE's or registered file, an AIO iocb's, a POSIX AIO request's:
 * kernel_operands.c) becomes its own kernel timer under the same numbers
 * (owned by src/preload/).
 *
 * A uepoll timerfd keeps all of its state in a kernel timerfd (expiry,
 * interval, count, TFD_TIMER_CANCEL_ON_SET: objects/timerfd.h), so the
 * kernel form is that very timer, not a copy: uep__kernel_form gives a dup
 * of it that also holds the expirations carried across fork().  Then, as
 * eventfd_convert.c does for eventfds (uep_pl_move_to_kernel):
 *
 *   1. the dup is dup3()'d onto every number showing the timer (FD_CLOEXEC
 *      per number), and takes the timer's O_NONBLOCK;
 *   2. each registration of the timer in the program's uepoll instances is
 *      made again on the kernel descriptor, same events and data;
 *   3. the uepoll descriptors are closed.
 * From then on it is a kernel timerfd, watched by uepoll instances like any
 * other kernel descriptor.  A timer on the virtual clock has no kernel form
 * (its kernel timer is never armed) and stays behind its placeholder
 * (README.md).
 *
 * A thread asleep reading it (read, poll, select...) first leaves it and
 * reads or polls the kernel timer once the conversion is done
 * (uep_pl_evict_sleepers, core/handover.h); one that cannot leave (its
 * thread runs a signal handler for two seconds or more) keeps waiting on
 * the former object.  Locks: the conversions' lock (uep_pl_convert_lock), then uepoll's calls
 * take theirs.
 */
#define _GNU_SOURCE
#include "preload/preload.h"

#include <uepoll/uepoll.h>

#include "capi/preload_support.h"
#include "preload/interpose.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

/* A timer's identity: its open file description (a timerfd is never
 * opened twice; dup and descriptor passing share the description). */
static unsigned long long timer_key(int u) { return uep__file_id(u); }

static int convert_locked(int n) {
  const int u = uep_pl_map(n);
  const unsigned long long key = u ? timer_key(u) : 0;
  if (!key) return -1;
  int *us = NULL, ns = 0;
  int *shown = uep_pl_numbers_showing(UEP_PL_TIMER, timer_key, key, &us, &ns);
  const int fl = uep_fcntl(u, F_GETFL);
  const int k = ns && fl >= 0 ? uep__kernel_form(u) : -1;
  if (k < 0) {
    free(shown);
    free(us);
    return -1;
  }
  /* A thread asleep reading it through the interposers leaves it, and
   * reads the kernel timer once this is done (core/handover.h). */
  (void)uep_pl_evict_sleepers(&u, 1);
  /* Read again after the mark: a change made since has left (core/handover.h). */
  const int fl_now = uep_fcntl(u, F_GETFL);
  struct uep_pl_locks held = {0};
  uep_pl_move_to_kernel(k, shown, us, ns, key, timer_key, "timerfd", &held);
  /* The timer's own reads were non-blocking whatever the program's flags:
   * the kernel file now takes the program's. */
  UEP_PL_REAL(fcntl)(k, F_SETFL, (fl_now >= 0 ? fl_now : fl) & O_NONBLOCK);
  UEP_PL_REAL(close)(k);
  uep_pl_locks_take(&held, shown[0]);
  free(shown);
  free(us);
  return 0;
}

int uep_pl_convert_timerfd(int n) {
  if (uep_pl_inside()) return -1;
  UEP_PL_ENTER();
  const int r = uep_pl_convert_timerfd_inside(n);
  UEP_PL_LEAVE();
  return r;
}

int uep_pl_convert_timerfd_inside(int n) {
  if (n < 0 || uep_pl_kind(n) != UEP_PL_TIMER || !uep_pl_map(n)) return -1;
  uep_pl_convert_lock();
  const int r = convert_locked(n);
  uep_pl_convert_unlock();
  return r;
}
