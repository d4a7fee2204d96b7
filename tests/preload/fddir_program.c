/* fddir_program.c - run plainly and under uepoll-run (run.sh): every way
 * of listing the process's descriptor directories shows the same entries.
 *
 * Under the preload uepoll keeps kernel descriptors of its own (a waiting
 * thread's eventfd and epoll, a timer's kernel timer), numbers the program
 * never had; Linux has no entries there.  After a blocking wait and a
 * timer have made them, /proc/self/fd and /proc/self/fdinfo are listed
 * through readdir, readdir64, readdir_r, fdopendir, getdents64 by name and
 * by syscall() (with a small buffer, so that some batches hold nothing but
 * such entries), syscall(SYS_getdents), scandir, scandir64 and scandirat;
 * each prints its sorted numbers, which must be the program's own.  Then
 * opens by syscall() of /proc/self/fd/N and /proc/self/fdinfo/N give what
 * open gives by name: a socket's entry ENXIO, a pipe end reopened as the
 * same pipe, an eventfd's fdinfo its count, and each number the kernel
 * lists but the listings skip (uepoll's own) ENOENT.  Paths no process
 * can have mapped get EFAULT from each call, as plainly. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "raw_listing.h"

enum { kMax = 256 };

struct set {
  int n;
  int v[kMax];
};

static void add(struct set *s, const char *name) {
  if (name[0] < '0' || name[0] > '9' || s->n == kMax) return;
  s->v[s->n++] = atoi(name);
}

static int by_value(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }

static void show(const char *how, const char *dir, struct set *s) {
  qsort(s->v, (size_t)s->n, sizeof *s->v, by_value);
  printf("%s %s:", how, dir);
  for (int i = 0; i < s->n; ++i) printf(" %d", s->v[i]);
  printf("\n");
}

static void by_readdir(const char *dir, int wide) {
  struct set s = {0};
  DIR *d = opendir(dir);
  errno = 0;
  if (wide)
    for (struct dirent64 *e; d && (e = readdir64(d));) add(&s, e->d_name);
  else
    for (struct dirent *e; d && (e = readdir(d));) add(&s, e->d_name);
  printf("end errno %s\n", errno ? strerrorname_np(errno) : "0");
  if (d) closedir(d);
  show(wide ? "readdir64" : "readdir", dir, &s);
}

#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
static void by_readdir_r(const char *dir) {
  struct set s = {0};
  DIR *d = fdopendir(open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  struct dirent entry, *e;
  while (d && readdir_r(d, &entry, &e) == 0 && e) add(&s, e->d_name);
  if (d) closedir(d);
  show("fdopendir+readdir_r", dir, &s);
}

/* getdents64 (by name, or by syscall() with nr) or getdents in buffers of
 * 64 bytes: a record or two each. */
static void by_getdents(const char *dir, const char *how, long nr) {
  struct set s = {0};
  const int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  union {
    char b[64];
    long align;
  } buf;
  for (;;) {
    const long n = nr ? syscall(nr, fd, buf.b, sizeof buf.b) : (long)getdents64(fd, buf.b, sizeof buf.b);
    if (n <= 0) break;
    for (long at = 0; at < n;) {
      unsigned short len;
      const int old = nr && nr != SYS_getdents64;
      memcpy(&len, buf.b + at + (old ? 2 * sizeof(long) : 16), sizeof len);
      add(&s, buf.b + at + (old ? 2 * sizeof(long) + 2 : 19));
      at += len;
    }
  }
  close(fd);
  show(how, dir, &s);
}

static int calls;
static int count_call(const struct dirent *e) { return ++calls, e->d_name[0] != '.'; }
static int count_call64(const struct dirent64 *e) { return ++calls, e->d_name[0] != '.'; }

static void by_scandir(const char *dir) {
  struct set s = {0};
  struct dirent **list;
  calls = 0;
  const int n = scandir(dir, &list, count_call, alphasort);
  for (int i = 0; i < n; ++i) add(&s, list[i]->d_name), free(list[i]);
  if (n >= 0) free(list);
  printf("scandir selector calls: %d more than entries\n", calls - n);
  show("scandir", dir, &s);
  struct dirent64 **list64;
  s.n = 0;
  const int n64 = scandir64(dir, &list64, count_call64, NULL);
  for (int i = 0; i < n64; ++i) add(&s, list64[i]->d_name), free(list64[i]);
  if (n64 >= 0) free(list64);
  show("scandir64", dir, &s);
  const int self = open("/proc/self", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  s.n = 0;
  const int nat = scandirat(self, strrchr(dir, '/') + 1, &list, NULL, NULL);
  for (int i = 0; i < nat; ++i) add(&s, list[i]->d_name), free(list[i]);
  if (nat >= 0) free(list);
  close(self);
  show("scandirat", dir, &s);
}

static void listings(const char *dir) {
  by_readdir(dir, 0);
  by_readdir(dir, 1);
  by_readdir_r(dir);
  by_getdents(dir, "getdents64", 0);
  by_getdents(dir, "syscall(getdents64)", SYS_getdents64);
#ifdef SYS_getdents
  by_getdents(dir, "syscall(getdents)", SYS_getdents);
#endif
  by_scandir(dir);
}

/* Each number the kernel lists and the program's listing does not: an
 * open of its entries by syscall() gives ENOENT as for a free number. */
static void hidden_numbers(void) {
  struct set shown = {0};
  DIR *d = opendir("/proc/self/fd");
  for (struct dirent *e; d && (e = readdir(d));) add(&shown, e->d_name);
  const int fd = open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  char buf[4096];
  int hidden = 0;
  int bad = 0;
  for (long n; (n = raw_getdents64(fd, buf, sizeof buf)) > 0;) {
    for (long at = 0; at < n;) {
      unsigned short len;
      memcpy(&len, buf + at + 16, sizeof len);
      const char *name = buf + at + 19;
      at += len;
      int k = name[0] >= '0' && name[0] <= '9' ? atoi(name) : -1, listed = 0;
      for (int i = 0; i < shown.n; ++i) listed |= shown.v[i] == k;
      if (k < 0 || listed || k == fd) continue;
      ++hidden;
      char path[64];
      snprintf(path, sizeof path, "/proc/self/fd/%d", k);
      errno = 0;
      long r = syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
      bad += r >= 0 || errno != ENOENT;
      snprintf(path, sizeof path, "/proc/self/fdinfo/%d", k);
      r = syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
      bad += r >= 0 || errno != ENOENT;
    }
  }
  close(fd);
  if (d) closedir(d);
  printf("opens of numbers the listing skips: %s\n", bad ? "not ENOENT" : "ENOENT");
  /* The raw listing is the kernel's: under the preload it must hold
   * uepoll's numbers (a blocking wait and a timer made them), or this
   * check checked nothing. */
  const char *pre = getenv("LD_PRELOAD");
  if (kRawListing && pre && strstr(pre, "uepoll") && !hidden) printf("the kernel lists no number of uepoll's\n");
}

static void opens(int sock, const int p[2], int e) {
  char path[64];
  snprintf(path, sizeof path, "/proc/self/fd/%d", sock);
  errno = 0;
  long r = syscall(SYS_openat, AT_FDCWD, path, O_RDWR | O_CLOEXEC);
  printf("syscall openat socket entry = %ld %s\n", r, strerrorname_np(errno));
  snprintf(path, sizeof path, "/dev/fd/%d", p[0]);
#ifdef SYS_open
  const long nr = SYS_open;
  r = syscall(nr, path, O_RDONLY | O_CLOEXEC);
#else
  r = syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
#endif
  char c = 0;
  const ssize_t w = write(p[1], "x", 1), rd = r >= 0 ? read((int)r, &c, 1) : -1;
  printf("syscall open pipe entry: %s, wrote %zd, read %zd '%c'\n", r >= 0 ? "opened" : strerrorname_np(errno), w, rd, c);
  if (r >= 0) close((int)r);
  eventfd_write(e, 7);
  snprintf(path, sizeof path, "/proc/self/fdinfo/%d", e);
  r = syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
  char text[512] = "";
  const ssize_t n = r >= 0 ? read((int)r, text, sizeof text - 1) : -1;
  if (n > 0) text[n] = 0;
  const char *count = strstr(text, "eventfd-count:");
  printf("syscall openat eventfd fdinfo: %.*s\n", count ? (int)strcspn(count, "\n") : 4, count ? count : "none");
  if (r >= 0) close((int)r);
  eventfd_t v;
  eventfd_read(e, &v);
}

/* Paths no process has mapped: each call gives the kernel's EFAULT (the
 * preload must not read them itself).  Not NULL: libc declares these
 * arguments non-null, which the sanitizer build checks.  Not in a build
 * with AddressSanitizer, whose own interceptors read the path first (and
 * fault, plainly as under the preload). */
#if defined(__SANITIZE_ADDRESS__)
#define BAD_PATHS_READABLE_BY_RUNTIME 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define BAD_PATHS_READABLE_BY_RUNTIME 1
#endif
#endif
static void bad_paths(void) {
#ifdef BAD_PATHS_READABLE_BY_RUNTIME
  return;
#endif
  const char *const bad[] = {(const char *)1, (const char *)4095, (const char *)-1L};
  for (unsigned i = 0; i < sizeof bad / sizeof *bad; ++i) {
    char buf[16];
    struct stat st;
    long r[6];
    int e[6];
    errno = 0, r[0] = open(bad[i], O_RDONLY), e[0] = errno;
    errno = 0, r[1] = openat(AT_FDCWD, bad[i], O_RDONLY), e[1] = errno;
    errno = 0, r[2] = readlink(bad[i], buf, sizeof buf), e[2] = errno;
    errno = 0, r[3] = stat(bad[i], &st), e[3] = errno;
    errno = 0, r[4] = syscall(SYS_openat, AT_FDCWD, bad[i], O_RDONLY), e[4] = errno;
    errno = 0, r[5] = (long)fopen(bad[i], "r"), e[5] = errno;
    printf("bad path %u:", i);
    for (int k = 0; k < 6; ++k) printf(" %ld %s", r[k], strerrorname_np(e[k]));
    printf("\n");
  }
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  int p[2], s[2];
  if (pipe(p) < 0 || socketpair(AF_UNIX, SOCK_STREAM, 0, s) < 0) return 1;
  const int e = eventfd(0, 0), ep = epoll_create1(0), t = timerfd_create(CLOCK_MONOTONIC, 0);
  make_own_descriptors(t, ep, p[0]);
  listings("/proc/self/fd");
  listings("/proc/self/fdinfo");
  hidden_numbers();
  opens(s[0], p, e);
  bad_paths();
  return 0;
}
