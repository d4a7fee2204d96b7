/*
 * lock_carry.c - the flock and record locks of a uepoll object carried onto
 * the kernel object a conversion makes of it (owned by src/preload/).
 *
 * uepoll keeps an object's locks on a kernel file of its own, one per open
 * file description (core/file.h, "locks").  When the preload makes the
 * object a kernel one under the same numbers (a pipe or pair before fork:
 * fork_convert.c; an eventfd or timerfd before fork, or handed to a spawned
 * child or to the kernel: eventfd_convert.c), that lock file is closed with
 * the uepoll object, and the kernel object is another file (a pipe's or a
 * socket's, another inode).  So before the uepoll descriptor closes, the
 * locks held through its lock file are read from /proc/self/fdinfo
 * (uep__lock_fdinfo: its "lock:" lines, fs/locks.c lock_get_status) and,
 * once the conversion has closed every spare descriptor of the kernel
 * object (a close drops the process's POSIX locks on its inode, as
 * filp_close does), taken again through a number that shows it:
 *
 *   FLOCK   flock(LOCK_SH or LOCK_EX), held by the open file description,
 *           which a forked child shares, as on Linux;
 *   OFDLCK  F_OFD_SETLK over the same range, held by the description too;
 *   POSIX   F_SETLK over the same range, held by the process (a forked
 *           child has none of them and sees the parent's as conflicts).
 *
 * Nothing else holds a new pipe's or socket's inode yet, so the locks are
 * taken without waiting and never conflict.  An eventfd's or timerfd's
 * anonymous inode is every process's: another process may take a lock
 * there between the release and the retake, and then the lock is refused
 * with a uepoll: line.  Leases are not kept on these files (F_SETLEASE is
 * EINVAL on them on Linux).
 *
 * Locks: none (system calls, and uep__lock_fdinfo takes none).
 */
#define _GNU_SOURCE
#include "preload/preload.h"

#include "capi/preload_support.h"
#include "preload/interpose.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>

enum { kFlock, kOfd, kPosix };

/* One "lock:" line: its kind, F_RDLCK or F_WRLCK, and its byte range. */
static int parse_line(const char *line, struct uep_pl_lock *out) {
  char kind[16], mode[16], type[16], end[32];
  long long start = 0;
  if (sscanf(line, "lock:\t%*d: %15s %15s %15s %*d %*s %lld %31s", kind, mode, type, &start, end) != 5) return 0;
  if (strcmp(mode, "ADVISORY") != 0) return 0;
  if (strcmp(kind, "FLOCK") == 0)
    out->kind = kFlock;
  else if (strcmp(kind, "OFDLCK") == 0)
    out->kind = kOfd;
  else if (strcmp(kind, "POSIX") == 0)
    out->kind = kPosix;
  else
    return 0;
  if (strcmp(type, "READ") == 0)
    out->type = F_RDLCK;
  else if (strcmp(type, "WRITE") == 0)
    out->type = F_WRLCK;
  else
    return 0;
  out->start = start;
  /* Inclusive end, or EOF: a length of 0 reaches the end of the file. */
  out->len = strcmp(end, "EOF") == 0 ? 0 : strtoll(end, NULL, 10) - start + 1;
  return out->len >= 0;
}

/* The lock file's fdinfo text, whole: read again into a buffer twice as
 * large while it fills the buffer (a "lock:" line per lock, ~70 bytes).
 * malloc'd, or NULL (no lock file, or out of memory: *oom set). */
static char *lock_text(int u, int *oom) {
  *oom = 0;
  for (size_t cap = 4096;; cap *= 2) {
    char *buf = malloc(cap);
    if (!buf) {
      *oom = 1;
      return NULL;
    }
    const long n = uep__lock_fdinfo(u, buf, cap);
    if (n > 0 && (size_t)n < cap - 1) return buf;
    free(buf);
    if (n <= 0) return NULL;
  }
}

void uep_pl_locks_collect(int u, struct uep_pl_locks *held) {
  int oom;
  char *buf = lock_text(u, &oom);
  if (!buf) {
    if (oom) uep_pl_refuse("the locks of a uepoll object made a kernel one were dropped (out of memory)");
    return;
  }
  for (const char *line = strstr(buf, "\nlock:"); line; line = strstr(line + 1, "\nlock:")) {
    struct uep_pl_lock l;
    if (!parse_line(line + 1, &l)) continue;
    struct uep_pl_lock *t = uep_pl_grow_for_one(held->l, &held->cap, held->n, sizeof *t);
    if (!t) {
      uep_pl_refuse("a lock of a uepoll object made a kernel one was dropped (out of memory)");
      break;
    }
    held->l = t;
    held->l[held->n++] = l;
  }
  free(buf);
}

void uep_pl_locks_take(struct uep_pl_locks *held, int n) {
  int refused = 0;
  for (int i = 0; i < held->n; ++i) {
    const struct uep_pl_lock *l = &held->l[i];
    int r;
    if (l->kind == kFlock) {
      r = UEP_PL_REAL(flock)(n, (l->type == F_WRLCK ? LOCK_EX : LOCK_SH) | LOCK_NB);
    } else {
      struct flock fl = {.l_type = l->type, .l_whence = SEEK_SET, .l_start = l->start, .l_len = l->len};
      r = UEP_PL_REAL(fcntl)(n, l->kind == kOfd ? F_OFD_SETLK : F_SETLK, &fl);
    }
    if (r < 0) refused = 1;
  }
  if (refused)
    uep_pl_refuse("a lock of a uepoll object made a kernel one could not be taken again on it (another "
                  "process holds a conflicting lock on the kernel's shared anonymous inode)");
  free(held->l);
  held->l = NULL;
  held->n = held->cap = 0;
}
