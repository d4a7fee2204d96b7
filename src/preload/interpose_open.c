/*
 * interpose_open.c - opening /proc/self/fd/N or /dev/fd/N of a uepoll object
 * (owned by src/preload/).
 *
 * On Linux such an open reopens the object behind N: a pipe end gives a new
 * open file description of the same pipe, in the mode asked for (either
 * direction); a socket, eventfd, epoll instance or timerfd gives ENXIO.  The
 * kernel would open the placeholder instead (/dev/null, fdmap.h): a silent
 * wrong answer.  So for a number that shows a uepoll object:
 *   - a pipe end: the pipe is made a kernel one under the same numbers
 *     (fork_convert.c), and the open goes to the kernel, which then answers
 *     exactly as Linux (the pipe is the kernel's from then on);
 *   - a socket, eventfd, epoll instance or timerfd: ENXIO.
 * The paths recognized: /proc/self/fd/N, /proc/thread-self/fd/N,
 * /proc/PID/fd/N with the process's own PID, /dev/fd/N, /dev/stdin,
 * /dev/stdout, /dev/stderr; through open, open64, openat, openat64 (an
 * absolute path), their _FORTIFY_SOURCE forms, fopen, fopen64 and freopen.
 * A pipe a thread is blocked on cannot be converted: ENXIO too.  One of
 * uepoll's own numbers (core/own_fds.h) is no descriptor of the program's:
 * ENOENT, as for any number with no file.  The paths are parsed by
 * interpose_procfd.c (uep_pl_fd_of_path), which also answers the opens of
 * /proc/self/fdinfo/N (uep_pl_open_fdinfo).
 *
 * Locks: none.
 */
#define _GNU_SOURCE
#include "preload/preload.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "preload/interpose.h"

/* 0: open path as the kernel would (fd is not a uepoll object, or its pipe
 * is a kernel one now); -1 with errno: the call fails so. */
static int prepare(const char *path) {
  if (uep_pl_inside()) return 0;
  int n = uep_pl_fd_of_path(path);
  if (n < 0) return 0;
  if (!uep_pl_map(n)) {
    if (!uep_pl_own(n)) return 0;
    errno = ENOENT; /* one of uepoll's own numbers: no descriptor of the program's */
    return -1;
  }
  if (uep_pl_kind(n) == UEP_PL_PIPE) {
    uep_pl_convert_stream(n);
    if (!uep_pl_map(n)) return 0;
  }
  errno = ENXIO; /* Linux: no ->open for sockets and anonymous inodes */
  return -1;
}

static mode_t mode_arg(int flags, va_list ap) {
  return (flags & (O_CREAT | __O_TMPFILE)) ? (mode_t)va_arg(ap, int) : 0;
}

/* fopen of /proc/self/fdinfo/N for reading ("r", with glibc's 'e' for
 * close-on-exec): the stream over interpose_procfd.c's answer; NULL with
 * *done clear when the kernel answers. */
static FILE *fdinfo_stream(const char *path, const char *mode, int *done) {
  *done = 0;
  if (!mode || mode[0] != 'r' || strchr(mode, '+')) return NULL;
  const int fd = uep_pl_open_fdinfo(path, O_RDONLY | (strchr(mode, 'e') ? O_CLOEXEC : 0));
  if (fd == -2) return NULL;
  *done = 1;
  if (fd < 0) return NULL;
  FILE *f = UEP_PL_REAL(fdopen)(fd, mode);
  if (!f) {
    const int e = errno;
    UEP_PL_REAL(close)(fd);
    errno = e;
  }
  return f;
}

int open(const char *path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  mode_t m = mode_arg(flags, ap);
  va_end(ap);
  const int fi = uep_pl_open_fdinfo(path, flags);
  if (fi != -2) return fi;
  if (prepare(path) < 0) return -1;
  return UEP_PL_REAL(open)(path, flags, m);
}
int open64(const char *path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  mode_t m = mode_arg(flags, ap);
  va_end(ap);
  const int fi = uep_pl_open_fdinfo(path, flags);
  if (fi != -2) return fi;
  if (prepare(path) < 0) return -1;
  return UEP_PL_REAL(open64)(path, flags, m);
}
int openat(int dirfd, const char *path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  mode_t m = mode_arg(flags, ap);
  va_end(ap);
  const int fi = uep_pl_open_fdinfo(path, flags);
  if (fi != -2) return fi;
  if (prepare(path) < 0) return -1;
  return UEP_PL_REAL(openat)(dirfd, path, flags, m);
}
int openat64(int dirfd, const char *path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  mode_t m = mode_arg(flags, ap);
  va_end(ap);
  const int fi = uep_pl_open_fdinfo(path, flags);
  if (fi != -2) return fi;
  if (prepare(path) < 0) return -1;
  return UEP_PL_REAL(openat64)(dirfd, path, flags, m);
}

/* _FORTIFY_SOURCE: open without a mode (glibc aborts on O_CREAT there). */
extern int __open_2(const char *path, int flags);
extern int __open64_2(const char *path, int flags);
extern int __openat_2(int dirfd, const char *path, int flags);
extern int __openat64_2(int dirfd, const char *path, int flags);
#define CHK_OPEN(name, params, args)                                               \
  int name params {                                                                \
    const int fi = uep_pl_open_fdinfo(path, flags);                                \
    if (fi != -2) return fi;                                                       \
    if (prepare(path) < 0) return -1;                                              \
    static int(*real) params;                                                      \
    if (!__atomic_load_n(&real, __ATOMIC_RELAXED))                                 \
      __atomic_store_n(&real, (int(*) params)uep_pl_resolve(#name), __ATOMIC_RELAXED); \
    return __atomic_load_n(&real, __ATOMIC_RELAXED) args;                          \
  }
CHK_OPEN(__open_2, (const char *path, int flags), (path, flags))
CHK_OPEN(__open64_2, (const char *path, int flags), (path, flags))
CHK_OPEN(__openat_2, (int dirfd, const char *path, int flags), (dirfd, path, flags))
CHK_OPEN(__openat64_2, (int dirfd, const char *path, int flags), (dirfd, path, flags))

FILE *fopen(const char *path, const char *mode) {
  int done;
  FILE *fi = fdinfo_stream(path, mode, &done);
  if (done) return fi;
  if (prepare(path) < 0) return NULL;
  return UEP_PL_REAL(fopen)(path, mode);
}
FILE *fopen64(const char *path, const char *mode) {
  int done;
  FILE *fi = fdinfo_stream(path, mode, &done);
  if (done) return fi;
  if (prepare(path) < 0) return NULL;
  return UEP_PL_REAL(fopen64)(path, mode);
}
FILE *freopen(const char *path, const char *mode, FILE *f) {
  if (prepare(path) < 0) return NULL;
  return UEP_PL_REAL(freopen)(path, mode, f);
}
