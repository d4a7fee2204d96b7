/* fd_numbers_program.c - run plainly and under uepoll-run (run.sh): the
 * descriptor numbers a program gets, and a daemon's blanket close of the
 * descriptors it did not open, must be the same as on Linux.
 *
 * uepoll makes kernel descriptors of its own lazily (a thread's first
 * blocking wait, a timerfd's kernel timer, the timer thread's epoll); they
 * must not take the program's next numbers, and a close(3..limit),
 * close_range or closefrom of everything must neither report them (close
 * answers EBADF) nor break uepoll: a timerfd made afterwards still fires,
 * a blocking read of a pipe still wakes. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "raw_listing.h"

static void numbers(const char *when) {
  int p[2], s[2];
  if (pipe(p) < 0 || socketpair(AF_UNIX, SOCK_STREAM, 0, s) < 0) exit(1);
  int e = eventfd(0, 0), t = timerfd_create(CLOCK_MONOTONIC, 0), ep = epoll_create1(0);
  int k = open("/dev/null", O_RDONLY);
  printf("%s: pipe %d %d, pair %d %d, eventfd %d, timerfd %d, epoll %d, file %d\n", when, p[0], p[1], s[0], s[1], e,
         t, ep, k);
  int all[] = {p[0], p[1], s[0], s[1], e, t, ep, k};
  for (unsigned i = 0; i < sizeof all / sizeof *all; ++i) close(all[i]);
}

/* A timerfd in an epoll instance: a blocking wait, then a blocking read. */
static void timer_fires(const char *when) {
  int ep = epoll_create1(0), t = timerfd_create(CLOCK_MONOTONIC, 0);
  struct epoll_event ev = {.events = EPOLLIN, .data.u32 = 7};
  struct itimerspec its = {.it_value = {0, 20 * 1000 * 1000}};
  if (ep < 0 || t < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, t, &ev) < 0 || timerfd_settime(t, 0, &its, NULL) < 0) exit(1);
  struct epoll_event out;
  int n = epoll_wait(ep, &out, 1, 5000);
  uint64_t ticks = 0;
  ssize_t r = read(t, &ticks, sizeof ticks);
  timerfd_settime(t, 0, &its, NULL);
  uint64_t again = 0;
  ssize_t r2 = read(t, &again, sizeof again); /* blocks until the second expiry */
  printf("%s: timerfd %d epoll %d: wait %d (data %u), read %zd ticks %llu, blocking read %zd ticks %llu\n", when, t,
         ep, n, n == 1 ? out.data.u32 : 0, r, (unsigned long long)ticks, r2, (unsigned long long)again);
  close(t);
  close(ep);
}

static void *late_writer(void *arg) {
  usleep(20 * 1000);
  if (write(*(int *)arg, "x", 1) != 1) exit(1);
  return NULL;
}

/* A blocking read of a pipe that another thread writes later. */
static void pipe_wakes(const char *when) {
  int p[2];
  if (pipe(p) < 0) exit(1);
  pthread_t th;
  pthread_create(&th, NULL, late_writer, &p[1]);
  char c = 0;
  ssize_t r = read(p[0], &c, 1);
  pthread_join(th, NULL);
  printf("%s: pipe %d %d: blocking read %zd '%c'\n", when, p[0], p[1], r, c);
  close(p[0]);
  close(p[1]);
}

/* close(3 .. soft limit - 1): how many numbers were open. */
static void close_everything(const char *how) {
  struct rlimit rl;
  getrlimit(RLIMIT_NOFILE, &rl);
  long closed = 0, ebadf = 0, other = 0, r = 0;
  if (!strcmp(how, "close")) {
    for (long fd = 3; fd < (long)rl.rlim_cur; ++fd) {
      if (close((int)fd) == 0) ++closed;
      else if (errno == EBADF) ++ebadf;
      else ++other;
    }
    printf("close(3..limit): %ld closed, %s EBADF, %ld other\n", closed,
           ebadf == (long)rl.rlim_cur - 3 - closed ? "the rest" : "NOT the rest", other);
    return;
  }
  if (!strcmp(how, "close_range")) r = close_range(3, ~0u, 0);
  else if (!strcmp(how, "close_range_cloexec")) r = close_range(3, ~0u, CLOSE_RANGE_CLOEXEC);
  else if (!strcmp(how, "syscall")) r = syscall(SYS_close_range, 3, ~0u, 0);
  else if (!strcmp(how, "closefrom")) closefrom(3);
  int left = 0;
  for (long fd = 3; fd < (long)rl.rlim_cur; ++fd) left += fcntl((int)fd, F_GETFD) >= 0;
  printf("%s: %ld, %d left open\n", how, r, left);
}

static void daemon_start(const char *how) {
  /* uepoll's internal descriptors exist already (earlier waits, timers). */
  timer_fires("before");
  pipe_wakes("before");
  int keep = eventfd(0, 0); /* the program's own: closed by the sweep */
  close_everything(how);
  printf("eventfd %d after the sweep: write %s\n", keep, write(keep, &(uint64_t){1}, 8) < 0 ? strerrorname_np(errno) : "ok");
  numbers("after");
  timer_fires("after");
  pipe_wakes("after");
}

/* Under uepoll-run only ("own"): the numbers above the program's that the
 * kernel lists in /proc/self/fd (raw_listing.h: the system call
 * instruction, past the preload) are uepoll's own; the program's calls on them answer as
 * on free numbers, by name and by number (close, fcntl, fstat: EBADF; dup2: EBADF at or past the soft
 * limit, the program's file at the number below it, core/own_slot.h; readlink, stat and
 * open of /proc/self/fd/N and open of /proc/self/fdinfo/N: ENOENT; readdir
 * and getdents64 of both directories skip them)
 * and uepoll keeps working. */
static char g_listed[65536];

static void list_kernel_fds(void) {
  memset(g_listed, 0, sizeof g_listed);
  const int d = open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  char buf[8192];
  long n;
  while (d >= 0 && (n = raw_getdents64(d, buf, sizeof buf)) > 0) {
    for (long off = 0; off < n;) {
      const char *e = buf + off;
      const unsigned short reclen = *(const unsigned short *)(e + 16);
      const char *name = e + 19;
      const long fd = strtol(name, NULL, 10);
      if (name[0] >= '0' && name[0] <= '9' && fd < 65536) g_listed[fd] = 1;
      off += reclen;
    }
  }
  if (d >= 0) close(d);
}

static int listed(int fd) { return g_listed[fd]; }

/* The program's views of /proc/self/fd/N: 1 if none shows N. */
static int hidden(int fd) {
  char path[64], target[128];
  snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  struct stat st;
  int ok = readlink(path, target, sizeof target) < 0 && errno == ENOENT;
  ok = ok && stat(path, &st) < 0 && errno == ENOENT;
  ok = ok && open(path, O_RDONLY) < 0 && errno == ENOENT;
  snprintf(path, sizeof path, "/proc/self/fdinfo/%d", fd);
  ok = ok && open(path, O_RDONLY) < 0 && errno == ENOENT && !fopen(path, "r") && errno == ENOENT;
  for (int i = 0; i < 2; ++i) {
    DIR *d = opendir(i ? "/proc/self/fdinfo" : "/proc/self/fd");
    for (struct dirent *e; d && (e = readdir(d));) ok = ok && strtol(e->d_name, NULL, 10) != fd;
    if (d) closedir(d);
    const int dfd = open(i ? "/proc/self/fdinfo" : "/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    char buf[4096];
    unsigned short reclen;
    for (long n, off; dfd >= 0 && (n = getdents64(dfd, buf, sizeof buf)) > 0;)
      for (off = 0; off < n; off += reclen) {
        memcpy(&reclen, buf + off + 16, sizeof reclen);
        ok = ok && strtol(buf + off + 19, NULL, 10) != fd;
      }
    if (dfd >= 0) close(dfd);
  }
  return ok;
}

static int own_check(void) {
  static char inherited[65536]; /* open before uepoll made anything */
  list_kernel_fds();
  memcpy(inherited, g_listed, sizeof inherited);
  timer_fires("first");
  pipe_wakes("first");
  list_kernel_fds();
  struct rlimit rl;
  getrlimit(RLIMIT_NOFILE, &rl);
  int found = 0, closed_ebadf = 0, fcntl_ebadf = 0, dup2_free = 0, dup_ebadf = 0, hid = 0;
  for (int fd = 100; fd < 65536; ++fd) {
    if (inherited[fd] || !listed(fd)) continue;
    ++found;
    hid += hidden(fd);
    closed_ebadf += close(fd) < 0 && errno == EBADF;
    struct stat st;
    fcntl_ebadf += fcntl(fd, F_GETFD) < 0 && errno == EBADF && syscall(SYS_fcntl, fd, F_GETFD) < 0 && errno == EBADF &&
                   fstat(fd, &st) < 0 && errno == EBADF && fstatat(fd, "", &st, AT_EMPTY_PATH) < 0 && errno == EBADF &&
                   syscall(SYS_fstat, fd, &st) < 0 && errno == EBADF;
    dup_ebadf += dup(fd) < 0 && errno == EBADF && dup2(fd, 50) < 0 && errno == EBADF && dup3(fd, 50, 0) < 0 &&
                 errno == EBADF && syscall(SYS_dup, fd) < 0 && errno == EBADF && syscall(SYS_dup3, fd, 50, 0) < 0 &&
                 errno == EBADF;
    /* As on a free number: EBADF at or past the soft limit; below it the
     * number is the program's (uepoll's descriptor moves away). */
    if ((rlim_t)fd >= rl.rlim_cur) dup2_free += dup2(1, fd) < 0 && errno == EBADF;
    else dup2_free += dup2(1, fd) == fd && fcntl(fd, F_GETFD) == 0 && close(fd) == 0;
  }
  printf("own %s: close EBADF %s, fcntl and fstat EBADF %s, dup2 as on a free number %s, dup from EBADF %s, "
         "/proc/self/fd hides %s\n",
         found >= 3 ? "found" : "MISSING", closed_ebadf == found ? "all" : "NOT all",
         fcntl_ebadf == found ? "all" : "NOT all", dup2_free == found ? "all" : "NOT all",
         dup_ebadf == found ? "all" : "NOT all", hid == found ? "all" : "NOT all");
  timer_fires("after");
  pipe_wakes("after");
  return 0;
}

/* "limit", plainly and under uepoll-run, the same: with the soft limit
 * under the hard one (as most systems start a program: 1024 under a larger
 * hard limit), uepoll's own descriptors lie at or above the soft limit,
 * where no number of the program's reaches: its numbers, dup2 and F_DUPFD
 * just below the limit answer as on Linux, a dup2 onto a number past it
 * is EBADF, and children forked while another thread parks descriptors
 * (each timerfd_create parks its kernel timer) get the program's limit. */
static void *parker(void *arg) {
  volatile int *stop = arg;
  while (!*stop) {
    int t = timerfd_create(CLOCK_MONOTONIC, 0);
    if (t >= 0) close(t);
  }
  return NULL;
}

static int limit_check(void) {
  enum { kSoft = 256, kForks = 40 };
  struct rlimit rl;
  getrlimit(RLIMIT_NOFILE, &rl);
  if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max <= kSoft + 64) {
    printf("limit: the hard limit leaves no room above %d: skipped\n", kSoft);
    return 0;
  }
  rl.rlim_cur = kSoft;
  if (setrlimit(RLIMIT_NOFILE, &rl) < 0) return 1;
  timer_fires("limit");
  pipe_wakes("limit");
  numbers("limit");
  int above = 0, refused = 0;
  list_kernel_fds();
  for (int fd = kSoft; fd < 65536; ++fd) {
    if (!listed(fd)) continue;
    ++above;
    refused += dup2(1, fd) < 0 && errno == EBADF;
  }
  printf("numbers at or past the limit refuse dup2 with EBADF: %s\n", refused == above ? "all" : "NOT all");
  int d = dup2(1, kSoft - 1);
  printf("dup2(1, %d) = %d\n", kSoft - 1, d);
  close(d);
  d = fcntl(1, F_DUPFD, kSoft - 6);
  printf("F_DUPFD(1, %d) = %d\n", kSoft - 6, d);
  close(d);
  errno = 0;
  d = fcntl(1, F_DUPFD, kSoft);
  printf("F_DUPFD(1, %d) = %d %s\n", kSoft, d, strerrorname_np(errno));
  volatile int stop = 0;
  pthread_t th;
  pthread_create(&th, NULL, parker, (void *)&stop);
  int good = 0;
  for (int i = 0; i < kForks; ++i) {
    pid_t p = fork();
    if (p == 0) {
      struct rlimit c;
      getrlimit(RLIMIT_NOFILE, &c);
      _exit(c.rlim_cur == kSoft ? 0 : 1);
    }
    int st = 0;
    waitpid(p, &st, 0);
    good += WIFEXITED(st) && WEXITSTATUS(st) == 0;
  }
  stop = 1;
  pthread_join(th, NULL);
  getrlimit(RLIMIT_NOFILE, &rl);
  printf("children forked beside a parking thread with the program's limit: %d/%d; soft limit now %llu\n", good,
         kForks, (unsigned long long)rl.rlim_cur);
  timer_fires("after");
  return 0;
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (argc > 1 && !strcmp(argv[1], "own")) return own_check();
  if (argc > 1 && !strcmp(argv[1], "limit")) return limit_check();
  numbers("start");
  timer_fires("first");
  numbers("after a timer");
  pipe_wakes("first");
  numbers("after blocking waits");
  /* dup2 onto a number the program chooses. */
  int d = dup2(1, 100);
  printf("dup2(1, 100) = %d, close = %d\n", d, close(100));
  const char *hows[] = {"close", "close_range", "close_range_cloexec", "syscall", "closefrom"};
  for (unsigned i = 0; i < sizeof hows / sizeof *hows; ++i) {
    /* Each sweep in a child, as a daemon does after fork. */
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
      printf("-- %s\n", hows[i]);
      daemon_start(hows[i]);
      fflush(stdout);
      _exit(0);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    printf("-- %s: child exit %d\n", hows[i], WIFEXITED(st) ? WEXITSTATUS(st) : -1);
  }
  /* And in the process itself. */
  daemon_start("close");
  return 0;
}
