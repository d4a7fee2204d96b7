/* alarm_program.c - SIGALRM on the virtual clock (tests/vclock/preload_run.sh):
 * alarm(3600) ends an endless epoll_wait with EINTR an hour later; an
 * ITIMER_REAL interval timer interrupts nanosleep at 1, 1.5 and 2 s; alarm
 * and getitimer report what is left.  Prints virtual times in seconds since
 * the start. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t alarms;
static void on_alarm(int sig) {
  (void)sig;
  alarms++;
}

static double t0;
static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + t.tv_nsec / 1e9 - t0;
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_alarm;
  sigaction(SIGALRM, &sa, NULL);
  t0 = now();
  int ep = epoll_create1(0);
  struct epoll_event ev;
  printf("alarm(3600) = %u\n", alarm(3600));
  int r = epoll_wait(ep, &ev, 1, -1);
  printf("epoll_wait = %d %s at %.3f, alarms %d\n", r, r < 0 ? strerror(errno) : "", now(), (int)alarms);
  struct itimerval it = {{0, 500000}, {1, 0}}, old;
  setitimer(ITIMER_REAL, &it, NULL);
  for (int i = 0; i < 3; ++i) {
    struct timespec req = {10, 0}, rem = {0, 0};
    r = nanosleep(&req, &rem);
    printf("nanosleep = %d %s at %.3f, left %ld.%03ld, alarms %d\n", r, r < 0 ? strerror(errno) : "", now(),
           (long)rem.tv_sec, rem.tv_nsec / 1000000, (int)alarms);
  }
  getitimer(ITIMER_REAL, &old);
  printf("getitimer: value %ld.%06ld interval %ld.%06ld\n", (long)old.it_value.tv_sec, (long)old.it_value.tv_usec,
         (long)old.it_interval.tv_sec, (long)old.it_interval.tv_usec);
  struct itimerval off = {{0, 0}, {0, 0}};
  setitimer(ITIMER_REAL, &off, &old);
  printf("disarmed: old value %ld.%06ld\n", (long)old.it_value.tv_sec, (long)old.it_value.tv_usec);
  alarm(5);
  usleep(1600000);
  printf("alarm(0) = %u at %.3f\n", alarm(0), now());
  it.it_value.tv_usec = 1000000;
  r = setitimer(ITIMER_REAL, &it, NULL);
  printf("bad timeval: %d %s\n", r, r < 0 ? strerror(errno) : "");
  return 0;
}
