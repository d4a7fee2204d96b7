/*
 * interpose_fddir.c - listings of the process's descriptor directories
 * (owned by src/preload/): /proc/self/fd and /proc/self/fdinfo, under any
 * of their names (/proc/PID/..., /proc/self/task/TID/..., /dev/fd).
 *
 * On Linux a number with no file is no entry of these directories.  The
 * kernel lists uepoll's own descriptors there (core/own_fds.h), numbers the
 * program never had, so every way a program reads such a directory skips
 * them: readdir, readdir64, readdir_r, readdir64_r (a stream from opendir
 * or fdopendir alike), getdents64, syscall(SYS_getdents64) and
 * syscall(SYS_getdents), and scandir, scandir64, scandirat, scandirat64
 * (glibc reads their directory with its internal readdir, out of the
 * preload's reach, so the selector is where they skip).  A descriptor-leak
 * check that lists the directory before and after a test (Python's test
 * support does, a test suite's own checks do) then sees the numbers Linux
 * shows.
 *
 * Cost: an entry is checked only when its name is an own number (a bitmap
 * look-up), and only then is the directory asked what it is (one readlink,
 * or for scandir a stat of the directory and of the process's two
 * directories), so listings of other directories pay nothing but the
 * look-up.  Whatever a listing skips, errno is left as the listing left
 * it: a program tells the end of a readdir listing from an error by errno.
 * Not reached: another process's listing of ours, and
 * /proc/self/task/TID/fd of another thread through scandir.
 *
 * Locks: none.  The scandir selector's context is the calling thread's.
 */
#define _GNU_SOURCE
#include "preload/preload.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "preload/interpose.h"

/* An entry name that is one of uepoll's own numbers. */
static int own_name(const char *name) {
  const int n = uep_pl_entry_number(name);
  return n >= 0 && uep_pl_own(n);
}

/* The number at *p, advancing past it; -1 when there is none. */
static long number_at(const char **p) {
  if (**p < '0' || **p > '9') return -1;
  char *end;
  const long v = strtol(*p, &end, 10);
  *p = end;
  return v;
}

/* 1 when a directory's path (as /proc/self/fd/N's link reads) is this
 * process's fd or fdinfo directory: /proc/PID/fd[info] or
 * /proc/PID/task/TID/fd[info], PID ours. */
static int is_fd_dir_path(const char *path) {
  if (strncmp(path, "/proc/", 6)) return 0;
  const char *p = path + 6;
  if (number_at(&p) != (long)getpid()) return 0;
  if (!strncmp(p, "/task/", 6)) {
    p += 6;
    if (number_at(&p) < 0) return 0;
  }
  return !strcmp(p, "/fd") || !strcmp(p, "/fdinfo");
}

/* 1 when kernel descriptor fd is open on one of the process's descriptor
 * directories.  errno is kept. */
static int is_fd_dir(int fd) {
  const int e = errno;
  char path[40], link[96];
  snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  const ssize_t n = UEP_PL_REAL(readlink)(path, link, sizeof link - 1);
  int r = 0;
  if (n > 0) {
    link[n] = 0;
    r = is_fd_dir_path(link);
  }
  errno = e;
  return r;
}

/* ---- streams -------------------------------------------------------------------------- */

struct dirent *readdir(DIR *d) {
  struct dirent *e;
  while ((e = UEP_PL_REAL(readdir)(d)) && own_name(e->d_name) && is_fd_dir(dirfd(d))) {
  }
  return e;
}

struct dirent64 *readdir64(DIR *d) {
  struct dirent64 *e;
  while ((e = UEP_PL_REAL(readdir64)(d)) && own_name(e->d_name) && is_fd_dir(dirfd(d))) {
  }
  return e;
}

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
int readdir_r(DIR *d, struct dirent *entry, struct dirent **result) {
  int r;
  while ((r = UEP_PL_REAL(readdir_r)(d, entry, result)) == 0 && *result && own_name((*result)->d_name) &&
         is_fd_dir(dirfd(d))) {
  }
  return r;
}

int readdir64_r(DIR *d, struct dirent64 *entry, struct dirent64 **result) {
  int r;
  while ((r = UEP_PL_REAL(readdir64_r)(d, entry, result)) == 0 && *result && own_name((*result)->d_name) &&
         is_fd_dir(dirfd(d))) {
  }
  return r;
}
#pragma GCC diagnostic pop

/* ---- getdents --------------------------------------------------------------------------- */

/* Where the kernel's records keep their length and name
 * (include/linux/dirent.h, fs/readdir.c): getdents64's linux_dirent64 has
 * two 64-bit fields, d_reclen, d_type, then the name; getdents'
 * linux_dirent two longs, d_reclen, then the name (its d_type is the
 * record's last byte). */
struct layout {
  size_t reclen;
  size_t name;
};
static const struct layout kDirent64 = {16, 19};
static const struct layout kDirentOld = {2 * sizeof(long), 2 * sizeof(long) + 2};

static unsigned short reclen_at(const char *rec, const struct layout *l) {
  unsigned short len;
  memcpy(&len, rec + l->reclen, sizeof len);
  return len;
}

/* buf's n bytes of records from getdents on fd, without the own numbers'
 * entries when fd is a descriptor directory: the new length (0 when every
 * record was one). */
static long skip_own_records(int fd, char *buf, long n, const struct layout *l) {
  long at = 0;
  while (at < n && !own_name(buf + at + l->name)) at += reclen_at(buf + at, l);
  if (at >= n || !is_fd_dir(fd)) return n;
  long out = at;
  while (at < n) {
    const unsigned short len = reclen_at(buf + at, l);
    if (!own_name(buf + at + l->name)) {
      memmove(buf + out, buf + at, len);
      out += len;
    }
    at += len;
  }
  return out;
}

ssize_t getdents64(int fd, void *buf, size_t n) {
  if (uep_pl_map(fd)) { /* a uepoll object: its kind's answer */
    struct uep_pl_tmpl_use use;
    const int t = uep_pl_template_enter(fd, &use);
    if (t < 0) return -1;
    const ssize_t r = UEP_PL_REAL(getdents64)(t, buf, n);
    uep_pl_template_leave(&use);
    return r;
  }
  for (;;) {
    const ssize_t r = UEP_PL_REAL(getdents64)(fd, buf, n);
    if (r <= 0) return r;
    const long kept = skip_own_records(fd, buf, r, &kDirent64);
    if (kept > 0) return kept;
  }
}

long uep_pl_getdents(long nr, int fd, void *buf, unsigned long n) {
  const struct layout *l = nr == SYS_getdents64 ? &kDirent64 : &kDirentOld;
  for (;;) {
    const long r = UEP_PL_REAL(syscall)(nr, fd, buf, n);
    if (r <= 0) return r;
    const long kept = skip_own_records(fd, buf, r, l);
    if (kept > 0) return kept;
  }
}

/* ---- scandir ---------------------------------------------------------------------------- */

/* A scandir call's directory and the program's selector, for the selector
 * that skips own entries (the calling thread's: glibc calls the selector
 * in the thread that called scandir).  fd_dir: -1 until an own number's
 * entry made it ask what the directory is. */
struct scan {
  int dirfd;
  const char *path;
  int (*select)(const struct dirent *);
  int (*select64)(const struct dirent64 *);
  int fd_dir;
};
static __thread struct scan *tls_scan;

/* 1 when the directory of s is one of the process's descriptor
 * directories (its own or the calling thread's names of them).  errno is
 * kept. */
static int scan_is_fd_dir(struct scan *s) {
  if (s->fd_dir >= 0) return s->fd_dir;
  const int e = errno;
  static const char *const dirs[] = {"/proc/self/fd", "/proc/self/fdinfo", "/proc/thread-self/fd",
                                     "/proc/thread-self/fdinfo"};
  struct stat st, d;
  s->fd_dir = 0;
  if (UEP_PL_REAL(fstatat)(s->dirfd, s->path, &st, 0) == 0)
    for (size_t i = 0; i < sizeof dirs / sizeof *dirs && !s->fd_dir; ++i)
      s->fd_dir = UEP_PL_REAL(stat)(dirs[i], &d) == 0 && d.st_dev == st.st_dev && d.st_ino == st.st_ino;
  errno = e;
  return s->fd_dir;
}

static int select_entry(const struct dirent *e) {
  struct scan *s = tls_scan;
  if (own_name(e->d_name) && scan_is_fd_dir(s)) return 0;
  return s->select ? s->select(e) : 1;
}

static int select_entry64(const struct dirent64 *e) {
  struct scan *s = tls_scan;
  if (own_name(e->d_name) && scan_is_fd_dir(s)) return 0;
  return s->select64 ? s->select64(e) : 1;
}

/* Runs a scandir with s as the thread's context (a selector may itself
 * call scandir: the outer context is put back). */
#define WITH_SCAN(s, call)         \
  do {                             \
    struct scan *prev_ = tls_scan; \
    tls_scan = &(s);               \
    const int r_ = (call);         \
    tls_scan = prev_;              \
    return r_;                     \
  } while (0)

typedef int (*cmp_fn)(const struct dirent **, const struct dirent **);
typedef int (*cmp64_fn)(const struct dirent64 **, const struct dirent64 **);

int scandirat(int dirfd, const char *path, struct dirent ***list, int (*select)(const struct dirent *), cmp_fn cmp) {
  struct scan s = {dirfd, path, select, NULL, -1};
  WITH_SCAN(s, UEP_PL_REAL(scandirat)(dirfd, path, list, select_entry, cmp));
}

int scandirat64(int dirfd, const char *path, struct dirent64 ***list, int (*select)(const struct dirent64 *),
                cmp64_fn cmp) {
  struct scan s = {dirfd, path, NULL, select, -1};
  WITH_SCAN(s, UEP_PL_REAL(scandirat64)(dirfd, path, list, select_entry64, cmp));
}

int scandir(const char *path, struct dirent ***list, int (*select)(const struct dirent *), cmp_fn cmp) {
  struct scan s = {AT_FDCWD, path, select, NULL, -1};
  WITH_SCAN(s, UEP_PL_REAL(scandir)(path, list, select_entry, cmp));
}

int scandir64(const char *path, struct dirent64 ***list, int (*select)(const struct dirent64 *), cmp64_fn cmp) {
  struct scan s = {AT_FDCWD, path, NULL, select, -1};
  WITH_SCAN(s, UEP_PL_REAL(scandir64)(path, list, select_entry64, cmp));
}
