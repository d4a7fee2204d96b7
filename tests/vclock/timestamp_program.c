/* timestamp_program.c - a single-threaded event loop that logs timestamps
 * (tests/vclock/preload_run.sh): an epoll loop over a periodic timerfd and
 * an eventfd, with nanosleep, usleep, sleep, poll and epoll timeouts in
 * between, printing every clock it reads.  No uepoll in it: under
 * uepoll-run --virtual-time two runs print the same bytes, and a day of
 * timeouts passes in milliseconds.  Argument: seconds per simulated second
 * (default 1). */
#define _GNU_SOURCE
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/time.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

static void stamp(const char *what) {
  struct timespec m, r, b, c;
  struct timeval tv;
  clock_gettime(CLOCK_MONOTONIC, &m);
  clock_gettime(CLOCK_REALTIME, &r);
  clock_gettime(CLOCK_BOOTTIME, &b);
  clock_gettime(CLOCK_MONOTONIC_COARSE, &c);
  gettimeofday(&tv, NULL);
  printf("%-22s mono %lld.%09ld real %lld.%09ld boot %lld.%09ld coarse %lld tod %lld.%06ld time %lld\n", what,
         (long long)m.tv_sec, m.tv_nsec, (long long)r.tv_sec, r.tv_nsec, (long long)b.tv_sec, b.tv_nsec,
         (long long)c.tv_sec, (long long)tv.tv_sec, (long)tv.tv_usec, (long long)time(NULL));
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  stamp("start");
  int ep = epoll_create1(0);
  int tm = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
  int ev = eventfd(0, EFD_NONBLOCK);
  struct itimerspec its = {{3600, 0}, {0, 250000000}};  /* interval an hour, first after 250 ms */
  timerfd_settime(tm, 0, &its, NULL);
  struct epoll_event e = {EPOLLIN, {.u32 = 1}};
  epoll_ctl(ep, EPOLL_CTL_ADD, tm, &e);
  e.data.u32 = 2;
  epoll_ctl(ep, EPOLL_CTL_ADD, ev, &e);
  for (int i = 0; i < 6; ++i) {
    struct epoll_event out[2];
    int n = epoll_wait(ep, out, 2, 7200 * 1000);
    for (int k = 0; k < n; ++k) {
      uint64_t v = 0;
      ssize_t got = read(out[k].data.u32 == 1 ? tm : ev, &v, sizeof v);
      printf("event %u count %llu (read %zd)\n", out[k].data.u32, (unsigned long long)v, got);
    }
    stamp("after wait");
    if (i == 2) {
      struct timespec req = {86400, 5};  /* a day */
      nanosleep(&req, NULL);
      stamp("after nanosleep");
      uint64_t one = 1;
      if (write(ev, &one, sizeof one) != sizeof one) return 1;
    }
  }
  usleep(1500);
  stamp("after usleep");
  printf("sleep left %u\n", sleep(30));
  stamp("after sleep");
  struct pollfd p = {ev, POLLIN, 0};
  printf("poll %d\n", poll(&p, 1, 45000));
  stamp("after poll");
  struct itimerspec cur;
  timerfd_gettime(tm, &cur);
  printf("gettime %lld.%09ld interval %lld.%09ld\n", (long long)cur.it_value.tv_sec, cur.it_value.tv_nsec,
         (long long)cur.it_interval.tv_sec, cur.it_interval.tv_nsec);
  struct timespec at;
  clock_gettime(CLOCK_REALTIME, &at);
  at.tv_sec += 60;
  clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &at, NULL);
  stamp("after clock_nanosleep");
  return 0;
}
