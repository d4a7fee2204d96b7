/*
 * interpose_procfd.c - the process's descriptor directory as Linux shows it
 * (owned by src/preload/): /proc/self/fd and its other names.
 *
 * On Linux /proc/self/fd/N is a link to the file at N: readlink gives
 * "pipe:[INO]", "socket:[INO]" (INO: the fstat inode number) or
 * "anon_inode:[eventfd]", "[eventpoll]", "[timerfd]"; stat follows it to
 * that file; a number with no file is no entry (ENOENT, and a listing
 * skips it).  The kernel would show the placeholder behind a uepoll object
 * (/dev/null, fdmap.h) and list uepoll's own descriptors (core/own_fds.h),
 * which the program never had.  So, for paths naming this process's
 * descriptor N (uep_pl_fd_of_path):
 *   - readlink, readlinkat (an absolute path) and their _FORTIFY_SOURCE
 *     forms: the text above for a uepoll object, ENOENT for an own number;
 *   - stat, stat64 and their glibc < 2.33 forms, and fstatat, fstatat64,
 *     statx without AT_SYMLINK_NOFOLLOW (interpose_fd.c): the object's
 *     fstat, ENOENT for an own number (uep_pl_stat_procfd);
 *   - open, fopen (read-only) of /proc/self/fdinfo/N: a memfd holding
 *     uep_fdinfo's text for the object (Linux's lines; a registration's
 *     tfd shows the program's number), ENOENT for an own number
 *     (uep_pl_open_fdinfo, called by interpose_open.c);
 * Listings of the directories, which must skip the own numbers, are
 * interpose_fddir.c's.  Not reached: other processes' views (ls -l
 * /proc/PID/fd).
 *
 * Locks: none.
 */
#define _GNU_SOURCE
#include "preload/preload.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "preload/interpose.h"
#include <uepoll/uepoll.h>

/* "N" after the path of the process's directory `dir` ("fd" or "fdinfo"),
 * or NULL; *dir_only set when the path is the directory itself
 * ("/proc/self/fd", or with a trailing '/').  /dev/fd is the first. */
static const char *entry_part(const char *path, const char *dir, int *dir_only) {
  *dir_only = 0;
  if (uep_pl_unmapped(path) || path[0] != '/') return NULL;
  const size_t dl = strlen(dir);
  const char *rest = NULL;
  if (!strcmp(dir, "fd") && !strncmp(path, "/dev/fd", 7)) {
    rest = path + 7;
  } else if (!strncmp(path, "/proc/", 6)) {
    const char *p = path + 6;
    if (!strncmp(p, "self/", 5)) {
      p += 5;
    } else if (!strncmp(p, "thread-self/", 12)) {
      p += 12;
    } else if (*p >= '1' && *p <= '9') {
      char *end;
      const long pid = strtol(p, &end, 10);
      p = pid == (long)getpid() && *end == '/' ? end + 1 : NULL;
    } else {
      p = NULL;
    }
    if (p && !strncmp(p, dir, dl)) rest = p + dl;
  }
  if (!rest) return NULL;
  if (!*rest || (rest[0] == '/' && !rest[1])) {
    *dir_only = 1;
    return NULL;
  }
  return rest[0] == '/' ? rest + 1 : NULL;
}

/* The number an entry name gives ("N" as the kernel names it: no sign, no
 * leading zero), or -1 (interpose.h).  errno is kept (a listing's reader
 * tells its end from an error by errno). */
int uep_pl_entry_number(const char *rest) {
  if (!rest || *rest < '0' || *rest > '9' || (rest[0] == '0' && rest[1])) return -1;
  const int e = errno;
  char *end;
  const long n = strtol(rest, &end, 10);
  errno = e;
  if (*end || n > 0x7fffffff) return -1;
  return (int)n;
}

/* The number in a /proc/self/fd (or /dev/fd) entry's path, or -1. */
static int fd_of_entry_path(const char *path) {
  int dir_only;
  return uep_pl_entry_number(entry_part(path, "fd", &dir_only));
}

int uep_pl_fdinfo_of_path(const char *path) {
  int dir_only;
  return uep_pl_entry_number(entry_part(path, "fdinfo", &dir_only));
}

int uep_pl_fd_of_path(const char *path) {
  if (!uep_pl_unmapped(path) && !strncmp(path, "/dev/", 5)) {
    const char *d = path + 5;
    if (!strcmp(d, "stdin")) return 0;
    if (!strcmp(d, "stdout")) return 1;
    if (!strcmp(d, "stderr")) return 2;
  }
  return fd_of_entry_path(path);
}

/* What number n is to the program: 1 a uepoll object's; -1 with errno
 * ENOENT one of uepoll's own (no descriptor of the program's); 0 anything
 * else, which the kernel answers. */
static int classify_number(int n) {
  if (n < 0 || uep_pl_inside()) return 0;
  if (uep_pl_map(n)) return 1;
  if (uep_pl_own(n)) {
    errno = ENOENT;
    return -1;
  }
  return 0;
}

/* The same for the number path names (*n). */
static int classify(const char *path, int *n) {
  *n = uep_pl_fd_of_path(path);
  return classify_number(*n);
}

/* The same for readlink, which reads the path's last link only: /dev/stdin
 * is itself a link (to /proc/self/fd/0), the kernel's. */
static int classify_link(const char *path, int *n) {
  *n = fd_of_entry_path(path);
  return classify_number(*n);
}

/* Linux's link text for the uepoll object at n (fs/pipe.c pipefs_dname,
 * net/socket.c sockfs_dname, fs/anon_inodes.c): its length, or -1. */
static int link_text(int n, char *buf, size_t cap) {
  const char *anon = NULL;
  switch (uep_pl_kind(n)) {
    case UEP_PL_EVENTFD: anon = "eventfd"; break;
    case UEP_PL_EPOLL: anon = "eventpoll"; break;
    case UEP_PL_TIMER: anon = "timerfd"; break;
    default: break;
  }
  if (anon) return snprintf(buf, cap, "anon_inode:[%s]", anon);
  struct stat st;
  if (fstat(n, &st) < 0) return -1;
  return snprintf(buf, cap, "%s:[%lu]", S_ISFIFO(st.st_mode) ? "pipe" : "socket", (unsigned long)st.st_ino);
}

/* readlink's copy: at most len bytes, no terminating NUL (fs/namei.c). */
static ssize_t give_link(int n, char *buf, size_t len) {
  char text[64];
  const int t = link_text(n, text, sizeof text);
  if (t < 0) return -1;
  const size_t k = (size_t)t < len ? (size_t)t : len;
  memcpy(buf, text, k);
  return (ssize_t)k;
}

/* Linux checks the size first (EINVAL for 0 or past INT_MAX): the kernel's. */
static int size_ok(size_t len) { return len > 0 && len <= 0x7fffffff; }

ssize_t readlink(const char *path, char *buf, size_t len) {
  int n, c = size_ok(len) ? classify_link(path, &n) : 0;
  if (c < 0) return -1;
  if (c > 0) return give_link(n, buf, len);
  return UEP_PL_REAL(readlink)(path, buf, len);
}

ssize_t readlinkat(int dirfd, const char *path, char *buf, size_t len) {
  int n, c = size_ok(len) ? classify_link(path, &n) : 0;
  if (c < 0) return -1;
  if (c > 0) return give_link(n, buf, len);
  return UEP_PL_REAL(readlinkat)(dirfd, path, buf, len);
}

extern ssize_t __readlink_chk(const char *path, char *buf, size_t len, size_t buflen);
extern ssize_t __readlinkat_chk(int dirfd, const char *path, char *buf, size_t len, size_t buflen);
void __chk_fail(void) __attribute__((noreturn));

ssize_t __readlink_chk(const char *path, char *buf, size_t len, size_t buflen) {
  if (len > buflen) __chk_fail();
  return readlink(path, buf, len);
}

ssize_t __readlinkat_chk(int dirfd, const char *path, char *buf, size_t len, size_t buflen) {
  if (len > buflen) __chk_fail();
  return readlinkat(dirfd, path, buf, len);
}

int uep_pl_stat_procfd(const char *path, int flags, struct stat *st) {
  if (flags & AT_SYMLINK_NOFOLLOW) return 0;
  int n;
  const int c = classify(path, &n);
  if (c <= 0) return c;
  return fstat(n, st) < 0 ? -1 : 1;
}

int stat(const char *path, struct stat *st) {
  const int c = uep_pl_stat_procfd(path, 0, st);
  if (c) return c < 0 ? -1 : 0;
  return UEP_PL_REAL(stat)(path, st);
}

int stat64(const char *path, struct stat64 *st) {
  const int c = uep_pl_stat_procfd(path, 0, (struct stat *)st);
  if (c) return c < 0 ? -1 : 0;
  return UEP_PL_REAL(stat64)(path, st);
}

/* Binaries built against glibc < 2.33 call these for stat. */
int __xstat(int ver, const char *path, struct stat *st) {
  const int c = uep_pl_stat_procfd(path, 0, st);
  if (c) return c < 0 ? -1 : 0;
  int (*real)(int, const char *, struct stat *) = (int (*)(int, const char *, struct stat *))uep_pl_compat_fn("__xstat");
  if (!real) return errno = ENOSYS, -1;
  return real(ver, path, st);
}
int __xstat64(int ver, const char *path, struct stat64 *st) {
  const int c = uep_pl_stat_procfd(path, 0, (struct stat *)st);
  if (c) return c < 0 ? -1 : 0;
  int (*real)(int, const char *, struct stat64 *) = (int (*)(int, const char *, struct stat64 *))uep_pl_compat_fn("__xstat64");
  if (!real) return errno = ENOSYS, -1;
  return real(ver, path, st);
}

/* ---- /proc/self/fdinfo ---------------------------------------------------------------- */

/* The number the program shows uepoll descriptor u under, or -1. */
static int shown_number(int u, int hw) {
  for (int n = 0; n < hw; ++n)
    if (uep_pl_map(n) == u) return n;
  return -1;
}

/* text (uep_fdinfo's) into fd, each "tfd:" line's uepoll descriptor
 * number replaced by the number the program registered it under. */
static int write_fdinfo(int fd, const char *text) {
  const int hw = uep_pl_high_water();
  for (const char *line = text; *line;) {
    const char *eol = strchr(line, '\n');
    const size_t len = eol ? (size_t)(eol - line) + 1 : strlen(line);
    char *num_end;
    const long t = strncmp(line, "tfd:", 4) ? -1 : strtol(line + 4, &num_end, 10);
    if (t >= UEP_FD_BASE) {
      if (dprintf(fd, "tfd: %8d%.*s", shown_number((int)t, hw), (int)(line + len - num_end), num_end) < 0) return -1;
    } else if (write(fd, line, len) != (ssize_t)len) {
      return -1;
    }
    line += len;
  }
  return 0;
}

int uep_pl_open_fdinfo(const char *path, int flags) {
  if (uep_pl_inside()) return -2;
  const int n = uep_pl_fdinfo_of_path(path);
  if (n < 0) return -2;
  const int u = uep_pl_map(n);
  if (!u) {
    if (!uep_pl_own(n)) return -2;
    errno = ENOENT;
    return -1;
  }
  /* A read-only open is served; any other gets the kernel's answer on the
   * placeholder's entry, a file of the same kind. */
  if ((flags & O_ACCMODE) != O_RDONLY || (flags & (O_CREAT | O_DIRECTORY | O_PATH | O_TRUNC))) return -2;
  UEP_PL_ENTER();
  char *text = NULL;
  long len = uep_fdinfo(u, NULL, 0);
  int fd = -1;
  if (len >= 0 && (text = malloc((size_t)len + 1)) && uep_fdinfo(u, text, (unsigned long)len + 1) == len)
    fd = memfd_create("fdinfo", (flags & O_CLOEXEC) ? MFD_CLOEXEC : 0);
  else if (len >= 0)
    errno = ENOMEM; /* the object changed meanwhile, or no memory: as a failed open */
  if (fd >= 0 && (write_fdinfo(fd, text) < 0 || lseek(fd, 0, SEEK_SET) < 0)) {
    const int e = errno;
    close(fd);
    fd = -1;
    errno = e;
  }
  const int e = errno;
  free(text);
  UEP_PL_LEAVE();
  errno = e;
  return fd;
}
