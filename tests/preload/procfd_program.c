/* procfd_program.c - run plainly and under uepoll-run (run.sh): the
 * process's descriptor directory must look the same.
 *
 * For a pipe, a socket pair, an eventfd, an epoll instance and a timerfd
 * (uepoll objects under the preload): readlink of /proc/self/fd/N and its
 * other names gives Linux's text ("pipe:[INO]" with the fstat inode
 * number, "anon_inode:[eventfd]"...), truncated as readlink truncates;
 * stat follows the link to the object; a listing of /proc/self/fd counts
 * the same entries before and after uepoll made its own descriptors (a
 * blocking wait, a timerfd); kcmp(KCMP_FILE) tells a dup from another
 * object.  Inode numbers differ between runs, so the program prints
 * whether they agree, not their values. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <netinet/in.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "raw_listing.h"

#ifndef KCMP_FILE
#define KCMP_FILE 0
#endif

/* The link text with its inode number replaced by "INO" when it is the
 * fstat inode number of fd. */
static void show_link(const char *what, const char *path, int fd) {
  char link[128];
  errno = 0;
  const ssize_t n = readlink(path, link, sizeof link - 1);
  if (n < 0) {
    printf("%s: readlink -1 %s\n", what, strerrorname_np(errno));
    return;
  }
  link[n] = 0;
  char *open_br = strchr(link, '[');
  struct stat st;
  if (open_br && open_br[1] >= '0' && open_br[1] <= '9' && fstat(fd, &st) == 0) {
    const unsigned long ino = strtoul(open_br + 1, NULL, 10);
    strcpy(open_br + 1, ino == (unsigned long)st.st_ino ? "INO]" : "OTHER]");
  }
  printf("%s: %s\n", what, link);
}

static void show_stat(const char *what, const char *path, int fd) {
  struct stat a, b;
  errno = 0;
  const int r = stat(path, &a);
  if (r < 0) {
    printf("%s: stat -1 %s\n", what, strerrorname_np(errno));
    return;
  }
  fstat(fd, &b);
  printf("%s: stat type %o, same inode as fstat %s\n", what, a.st_mode & S_IFMT,
         a.st_ino == b.st_ino && a.st_dev == b.st_dev ? "yes" : "no");
}

static void object(const char *what, int fd) {
  char path[64], label[96];
  snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  snprintf(label, sizeof label, "%s /proc/self/fd", what);
  show_link(label, path, fd);
  show_stat(label, path, fd);
  snprintf(path, sizeof path, "/dev/fd/%d", fd);
  snprintf(label, sizeof label, "%s /dev/fd", what);
  show_link(label, path, fd);
  snprintf(path, sizeof path, "/proc/%d/fd/%d", (int)getpid(), fd);
  snprintf(label, sizeof label, "%s /proc/PID/fd", what);
  show_link(label, path, fd);
  snprintf(path, sizeof path, "/proc/thread-self/fd/%d", fd);
  char link[128];
  ssize_t n = readlinkat(AT_FDCWD, path, link, sizeof link);
  ssize_t k = syscall(SYS_readlinkat, AT_FDCWD, path, link, sizeof link);
  printf("%s: readlinkat %s, by number %s\n", what, n > 0 ? "same length" : "failed", k == n ? "same length" : "differs");
  struct stat st;
  const int at = fstatat(AT_FDCWD, path, &st, 0);
  printf("%s: fstatat type %o\n", what, at == 0 ? st.st_mode & S_IFMT : 0);
  /* Truncation: the first bytes only, no NUL. */
  memset(link, 'x', sizeof link);
  n = readlink(path, link, 3);
  printf("%s: readlink into 3 bytes = %zd \"%.4s\"\n", what, n, link);
  errno = 0;
  n = readlink(path, link, 0);
  printf("%s: readlink into 0 bytes = %zd %s\n", what, n, strerrorname_np(errno));
  snprintf(path, sizeof path, "/proc/self/fd/0%d", fd); /* not the kernel's name for it */
  errno = 0;
  n = readlink(path, link, sizeof link);
  printf("%s: readlink of a leading zero = %zd %s\n", what, n, strerrorname_np(errno));
  snprintf(path, sizeof path, "/proc/thread-self/fd/%d", fd);
  errno = 0;
  n = fstatat(AT_FDCWD, path, &st, AT_SYMLINK_NOFOLLOW);
  printf("%s: lstat type %o\n", what, n == 0 ? st.st_mode & S_IFMT : 0);
}

/* The lines of /proc/self/fdinfo/N whose values do not depend on the run
 * (flags, the eventfd's count, the timer's clock and ticks, and each
 * registration's number, events and data, sorted by number: Linux lists
 * them in kernel address order), read with fopen or with open. */
static void show_fdinfo(const char *what, int fd, int with_open) {
  char path[64], text[4096];
  snprintf(path, sizeof path, "/proc/self/fdinfo/%d", fd);
  size_t len = 0;
  if (with_open) {
    const int f = open(path, O_RDONLY | O_CLOEXEC);
    const ssize_t n = f >= 0 ? read(f, text, sizeof text - 1) : -1;
    if (f >= 0) close(f);
    len = n > 0 ? (size_t)n : 0;
  } else {
    FILE *f = fopen(path, "re");
    len = f ? fread(text, 1, sizeof text - 1, f) : 0;
    if (f) fclose(f);
  }
  text[len] = 0;
  int tfds[16][3], nt = 0;
  for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
    if (!strncmp(line, "flags:", 6) || !strncmp(line, "eventfd-count:", 14) || !strncmp(line, "clockid:", 8) ||
        !strncmp(line, "eventfd-semaphore:", 18))
      printf("%s fdinfo (%s): %s\n", what, with_open ? "open" : "fopen", line);
    unsigned ev, data;
    int t;
    if (nt < 16 && sscanf(line, "tfd: %d events: %x data: %x", &t, &ev, &data) == 3) {
      tfds[nt][0] = t;
      tfds[nt][1] = (int)ev;
      tfds[nt++][2] = (int)data;
    }
  }
  for (int i = 0; i < nt; ++i)
    for (int j = i + 1; j < nt; ++j)
      if (tfds[j][0] < tfds[i][0])
        for (int k = 0; k < 3; ++k) {
          const int x = tfds[i][k];
          tfds[i][k] = tfds[j][k];
          tfds[j][k] = x;
        }
  for (int i = 0; i < nt; ++i)
    printf("%s fdinfo: tfd %d events %x data %x\n", what, tfds[i][0], tfds[i][1], tfds[i][2]);
  if (!len) printf("%s fdinfo: nothing read\n", what);
}

/* fdinfo: each kind, and an instance holding uepoll objects and a kernel
 * socket. */
static void fdinfo_check(const int p[2], int sock, int e, int ep, int t) {
  const int k = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct epoll_event r1 = {.events = EPOLLIN, .data.u32 = 0x11}, r2 = {.events = EPOLLOUT | EPOLLET, .data.u32 = 0x22},
                     r3 = {.events = EPOLLIN | EPOLLONESHOT, .data.u32 = 0x33};
  epoll_ctl(ep, EPOLL_CTL_ADD, e, &r1);
  epoll_ctl(ep, EPOLL_CTL_ADD, p[1], &r2);
  epoll_ctl(ep, EPOLL_CTL_ADD, k, &r3);
  eventfd_write(e, 5);
  show_fdinfo("pipe read end", p[0], 0);
  show_fdinfo("pipe write end", p[1], 1);
  show_fdinfo("socket", sock, 0);
  show_fdinfo("eventfd", e, 1);
  show_fdinfo("epoll", ep, 0);
  show_fdinfo("epoll", ep, 1);
  show_fdinfo("timerfd", t, 0);
  epoll_ctl(ep, EPOLL_CTL_DEL, e, NULL);
  epoll_ctl(ep, EPOLL_CTL_DEL, p[1], NULL);
  epoll_ctl(ep, EPOLL_CTL_DEL, k, NULL);
  close(k);
  eventfd_t v;
  eventfd_read(e, &v);
}

static int entries(void) {
  DIR *d = opendir("/proc/self/fd");
  int n = 0;
  for (struct dirent *e; d && (e = readdir(d));) n += e->d_name[0] != '.';
  if (d) closedir(d);
  return n;
}

static long kcmp_file(int a, int b) {
  errno = 0;
  return syscall(SYS_kcmp, getpid(), getpid(), KCMP_FILE, a, b);
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  const int before = entries();
  char link[64];
  const ssize_t sn = readlink("/dev/stdin", link, sizeof link - 1);
  if (sn >= 0) link[sn] = 0;
  printf("readlink /dev/stdin: %s\n", sn >= 0 ? link : "failed");
  int p[2], s[2];
  pipe(p);
  socketpair(AF_UNIX, SOCK_STREAM, 0, s);
  const int e = eventfd(0, 0), ep = epoll_create1(0), t = timerfd_create(CLOCK_MONOTONIC, 0);
  object("pipe read end", p[0]);
  object("pipe write end", p[1]);
  object("socket", s[0]);
  object("eventfd", e);
  object("epoll", ep);
  object("timerfd", t);
  fdinfo_check(p, s[0], e, ep, t);
  make_own_descriptors(t, ep, p[0]);
  printf("entries: %d more than at start\n", entries() - before);
  const int d = dup(e);
  long r1 = kcmp_file(e, d), r2 = kcmp_file(e, p[0]), r3 = kcmp_file(p[0], e);
  printf("kcmp dup %ld, other %s, order %s\n", r1, r2 == 1 || r2 == 2 ? "1 or 2" : "??",
         r2 + r3 == 3 ? "antisymmetric" : "not antisymmetric");
  const int k = open("/dev/null", O_RDONLY);
  r1 = kcmp_file(k, e);
  r2 = kcmp_file(e, k);
  printf("kcmp kernel/uepoll %s, %s\n", r1 == 1 || r1 == 2 ? "1 or 2" : "??", r1 + r2 == 3 ? "antisymmetric" : "not");
  close(d);
  r1 = kcmp_file(e, d);
  printf("kcmp closed = %ld %s\n", r1, strerrorname_np(errno));
  close(k);
  return 0;
}
