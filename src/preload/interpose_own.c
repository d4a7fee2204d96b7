/*
 * interpose_own.c - what a program's close, close_range, closefrom and
 * dup2/dup3 do to uepoll's own kernel descriptors (owned by src/preload/).
 *
 * uepoll's own descriptors (a waiting thread's eventfd and epoll, timerfds'
 * kernel timers, instances' kernel-side epolls, the placeholders' source)
 * live at high numbers the program never got (core/own_fds.h).  On Linux
 * those numbers are free in the program, so its calls on them answer as on
 * a free number and leave uepoll's descriptors alone:
 *   - close(n), fcntl(n, ...), fstat(n), dup(n), dup2/dup3 from n: EBADF,
 *     by name and by syscall() (so a scan for open descriptors with
 *     F_GETFD or fstat, as daemons and leak checkers do, does not see
 *     them); /proc/self/fd/n is no entry (interpose_procfd.c);
 *   - close_range(first, last, flags), closefrom(first): every other number
 *     in the range is closed (or marked close-on-exec), the own ones are
 *     skipped (they are close-on-exec already);
 *   - dup2/dup3 onto n: EBADF where n is at or past the soft
 *     RLIMIT_NOFILE (where uepoll parks its descriptors when the hard
 *     limit leaves room: Linux's answer for such a number); below it,
 *     uepoll's descriptor moves to another number and the program's file
 *     is installed at n (core/own_slot.h), as on a free number.  Where it
 *     cannot move (a lock descriptor through which a record lock was
 *     set, the virtual clock's sockets: docs/linux-deviations.md) the
 *     answer is EBUSY, Linux's when the
 *     target number is being installed by another thread.
 * uepoll's own calls (inside an interposer, uep_pl_inside()) are not
 * filtered.  Locks: none.
 */
#define _GNU_SOURCE
#include "preload/preload.h"

#include "capi/preload_support.h"

#include <errno.h>
#include <limits.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "preload/interpose.h"

int uep_pl_own(int fd) { return !uep_pl_inside() && uep__own_fd(fd); }

int uep_pl_own_vacate(int n) {
  UEP_PL_ENTER();
  const int r = uep__own_vacate(n);
  UEP_PL_LEAVE();
  return r;
}

int uep_pl_own_target_errno(int n) {
  struct rlimit rl;
  uep__own_fds_hold(); /* the program's limit, not one a park raised */
  const int r = getrlimit(RLIMIT_NOFILE, &rl);
  uep__own_fds_release();
  return r == 0 && rl.rlim_cur != RLIM_INFINITY && (rlim_t)n >= rl.rlim_cur ? EBADF : EBUSY;
}

/* close_range(first, last, flags) through the kernel, skipping own
 * descriptors; Linux's checks (flags, first > last) come from the kernel. */
int uep_pl_close_range_sparing(unsigned first, unsigned last, int flags) {
  int n = uep_pl_inside() || first > last || first > (unsigned)INT_MAX ? -1 : uep__next_own_fd((int)first);
  if (n < 0 || (unsigned)n > last) return (int)UEP_PL_REAL(syscall)(SYS_close_range, first, last, flags);
  /* Linux's flag check first (first == last + 1 would be EINVAL too). */
  if (flags & ~(CLOSE_RANGE_UNSHARE | CLOSE_RANGE_CLOEXEC)) {
    errno = EINVAL;
    return -1;
  }
  for (;;) {
    if ((unsigned)n > first && UEP_PL_REAL(syscall)(SYS_close_range, first, (unsigned)n - 1, flags) < 0) return -1;
    flags &= ~CLOSE_RANGE_UNSHARE; /* the table is the process's own after the first call */
    if ((unsigned)n == last) return 0;
    first = (unsigned)n + 1;
    n = uep__next_own_fd((int)first);
    if (n < 0 || (unsigned)n > last) return (int)UEP_PL_REAL(syscall)(SYS_close_range, first, last, flags);
  }
}
