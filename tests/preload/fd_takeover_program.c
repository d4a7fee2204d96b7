/* fd_takeover_program.c - run plainly and under uepoll-run (run.sh): a
 * program's dup2 onto the highest numbers below its descriptor limit, with
 * the soft limit equal to the hard one, answers as on Linux, where those
 * numbers are free.
 *
 * Under uepoll-run that is where uepoll's own kernel descriptors lie (a
 * sleeping thread's eventfd and epolls, its signalfd, a timerfd's kernel
 * timer, the timer service's epoll and doorbell, the templates of
 * interpose_kinds.c: core/own_fds.h), so each dup2 moves one of them while
 * other threads sleep on it, are woken through it and time out on it
 * (core/own_slot.h).  Every dup2 must succeed with the program's file at the
 * number, and afterwards every sleeper, timer and wakeup must still work. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/statfs.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "raw_listing.h"

enum { kLimit = 512, kTaken = 48 };

static int g_pipe[2];    /* thread "reader" blocks in read() on it */
static int g_ep;         /* eventfd g_ev inside; "sleeper" waits on it */
static int g_ev;
static volatile int g_stop;
static long g_sleeper_events;

static void *reader(void *arg) {
  (void)arg;
  char c = 0;
  ssize_t r = read(g_pipe[0], &c, 1); /* blocks until main writes, after the takeover */
  return (void *)(intptr_t)(r == 1 && c == 'r');
}

/* Sleeps in short epoll_waits (timing out, or woken by "kicker"), so that
 * the moves meet a sleeper at every point of its sleep. */
static void *sleeper(void *arg) {
  (void)arg;
  while (!g_stop) {
    struct epoll_event ev;
    if (epoll_wait(g_ep, &ev, 1, 1) == 1) {
      uint64_t v;
      if (read(g_ev, &v, sizeof v) == sizeof v) ++g_sleeper_events;
    }
  }
  return NULL;
}

static void *kicker(void *arg) {
  (void)arg;
  while (!g_stop) {
    uint64_t one = 1;
    if (write(g_ev, &one, sizeof one) != sizeof one) exit(1);
    usleep(200);
  }
  return NULL;
}

static int timer_ticks(int t) {
  int ep = epoll_create1(0);
  struct epoll_event ev = {.events = EPOLLIN};
  if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, t, &ev) < 0) exit(1);
  int n = epoll_wait(ep, &ev, 1, 5000);
  uint64_t ticks = 0;
  ssize_t r = read(t, &ticks, sizeof ticks);
  close(ep);
  return n == 1 && r == sizeof ticks && ticks >= 1;
}

/* Under uepoll-run ("count"): how many of the numbers the takeover aims at
 * hold uepoll's own descriptors, which the kernel lists (raw_listing.h)
 * and the program cannot use (EBADF), so that a test can tell that the
 * takeover met some. */
static int own_in_range(void) {
  const int d = open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  char buf[8192];
  long n;
  int own = 0;
  while (d >= 0 && (n = raw_getdents64(d, buf, sizeof buf)) > 0) {
    for (long off = 0; off < n;) {
      const char *name = buf + off + 19;
      const long fd = strtol(name, NULL, 10);
      if (name[0] >= '0' && name[0] <= '9' && fd >= kLimit - kTaken && fd < kLimit)
        own += fcntl((int)fd, F_GETFD) < 0 && errno == EBADF;
      off += *(const unsigned short *)(buf + off + 16);
    }
  }
  if (d >= 0) close(d);
  return own;
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  const int count = argc > 1 && !strcmp(argv[1], "count");
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) < 0) return 1;
  if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < kLimit) {
    printf("takeover: the hard limit is under %d: skipped\n", kLimit);
    return 0;
  }
  rl.rlim_cur = rl.rlim_max = kLimit; /* soft = hard: no room above the limit */
  if (setrlimit(RLIMIT_NOFILE, &rl) < 0) return 1;

  /* Descriptors of uepoll's own near the limit (under uepoll-run). */
  int marker[2];
  if (pipe(g_pipe) < 0 || pipe(marker) < 0) return 1;
  g_ev = eventfd(0, EFD_NONBLOCK);
  g_ep = epoll_create1(0);
  struct epoll_event ev = {.events = EPOLLIN};
  if (g_ev < 0 || g_ep < 0 || epoll_ctl(g_ep, EPOLL_CTL_ADD, g_ev, &ev) < 0) return 1;
  struct epoll_event out;
  (void)epoll_wait(g_ep, &out, 1, 5); /* this thread sleeps once */
  int t = timerfd_create(CLOCK_MONOTONIC, 0);
  struct itimerspec its = {.it_interval = {0, 3 * 1000 * 1000}, .it_value = {0, 3 * 1000 * 1000}};
  if (t < 0 || timerfd_settime(t, 0, &its, NULL) < 0) return 1;
  struct statfs sfs;
  if (fstatfs(g_pipe[0], &sfs) < 0) return 1; /* a template, under uepoll-run */
  pthread_t th_reader, th_sleeper, th_kicker;
  pthread_create(&th_reader, NULL, reader, NULL);
  pthread_create(&th_sleeper, NULL, sleeper, NULL);
  pthread_create(&th_kicker, NULL, kicker, NULL);
  usleep(20 * 1000);
  if (count) printf("uepoll's own descriptors among them: %d\n", own_in_range());

  /* The takeover: each number the program's, its file there. */
  int ok = 0, right = 0;
  for (int n = kLimit - 1; n >= kLimit - kTaken; --n) {
    if (n == marker[1]) continue;
    if (dup2(marker[1], n) != n) {
      printf("dup2(%d, %d): %s\n", marker[1], n, strerrorname_np(errno));
      continue;
    }
    ++ok;
    char c = 0;
    right += fcntl(n, F_GETFD) == 0 && write(n, "m", 1) == 1 && read(marker[0], &c, 1) == 1 && c == 'm';
  }
  printf("dup2 onto the %d highest numbers below the limit: %d done, %d with the program's file\n", kTaken, ok,
         right);

  /* uepoll still works: the sleepers wake, the timer fires, new threads sleep. */
  usleep(20 * 1000);
  int fired = timer_ticks(t);
  if (write(g_pipe[1], "r", 1) != 1) return 1;
  void *got = NULL;
  pthread_join(th_reader, &got);
  g_stop = 1;
  pthread_join(th_kicker, NULL);
  pthread_join(th_sleeper, NULL);
  printf("after: timer fires %d, blocked reader woken %d, sleeper woken at least once %d, fstatfs %d\n", fired,
         (int)(intptr_t)got, g_sleeper_events > 0, fstatfs(g_pipe[0], &sfs) == 0);
  /* The numbers given back: a blocking wait of a new thread still sleeps
   * and wakes. */
  for (int n = kLimit - 1; n >= kLimit - kTaken; --n)
    if (n != marker[1]) close(n);
  g_stop = 0;
  if (pipe(g_pipe) < 0) return 1;
  pthread_create(&th_reader, NULL, reader, NULL);
  usleep(10 * 1000);
  if (write(g_pipe[1], "r", 1) != 1) return 1;
  pthread_join(th_reader, &got);
  printf("after closing them: new reader woken %d, timer fires %d\n", (int)(intptr_t)got, timer_ticks(t));
  return 0;
}
