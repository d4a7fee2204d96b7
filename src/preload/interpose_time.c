/*
 * interpose_time.c - libuepoll-preload.so's interposers for time, on
 * uepoll's virtual clock (include/uepoll/vclock.h) when UEPOLL_VIRTUAL_TIME
 * is "auto" or "manual" (uepoll-run --virtual-time): clock_gettime (the
 * MONOTONIC, BOOTTIME and REALTIME clocks and their _COARSE, _RAW and
 * _ALARM variants), gettimeofday and time read it; nanosleep,
 * clock_nanosleep, usleep and sleep sleep on it, as uepoll waits (so they
 * count as asleep for automatic mode); setitimer/getitimer(ITIMER_REAL)
 * and alarm arm the clock's one interval timer, whose expiry sends SIGALRM
 * to the process.  With the variable unset, or for
 * other clocks (CPU-time clocks), and for uepoll's own calls, every
 * function is libc's.  The timeouts of epoll, poll and select on uepoll
 * descriptors and uepoll timerfds follow the clock inside the library.
 *
 * The constructor enables the clock before main() and makes the loading
 * thread known to automatic mode (it holds the clock while it runs); in
 * automatic mode pthread_create makes each new thread known from before it
 * exists until it exits, so that the clock never jumps while a thread of
 * the program runs (or is blocked anywhere but in a uepoll wait).
 * Owned by src/preload/.  No locks here (the clock's, in the library).
 */
#define _GNU_SOURCE
#include "preload/interpose.h"

#include "capi/vclock_support.h"

#include <uepoll/vclock.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

/* The mode fixed at load (0 = off): a plain load, read on every call. */
static int vt_mode;

__attribute__((constructor)) static void virtual_time_at_load(void) {
  const char *m = getenv("UEPOLL_VIRTUAL_TIME");
  if (!m || !*m || strcmp(m, "off") == 0) return;
  int mode;
  if (strcmp(m, "auto") == 0) {
    mode = UEP_VCLOCK_AUTO;
  } else if (strcmp(m, "manual") == 0) {
    mode = UEP_VCLOCK_MANUAL;
  } else {
    fprintf(stderr, "uepoll: UEPOLL_VIRTUAL_TIME=%s: not auto, manual or off; the real clock is used\n", m);
    return;
  }
  UEP_PL_ENTER();
  if (uep_vclock_enable(mode) == 0) {
    vt_mode = mode;
    (void)uep_vclock_attach_thread();
  }
  UEP_PL_LEAVE();
}

/* The virtual clock serves `clock` in this call. */
static int virtual_for(clockid_t clock) {
  if (!vt_mode || uep_pl_inside()) return 0;
  struct timespec ts;
  return uep_vclock_gettime(clock, &ts) == 0;
}

int clock_gettime(clockid_t clock, struct timespec *ts) {
  if (!virtual_for(clock)) return UEP_PL_REAL(clock_gettime)(clock, ts);
  return uep_vclock_gettime(clock, ts);
}

/* The virtual REALTIME into *tv, which may be NULL: glibc declares
 * gettimeofday's tv non-null, the kernel accepts NULL, and so does this
 * (tested here, not on the declared parameter). */
static void virtual_timeval(struct timeval *tv) {
  if (!tv) return;
  struct timespec ts;
  uep_vclock_gettime(CLOCK_REALTIME, &ts);
  tv->tv_sec = ts.tv_sec;
  tv->tv_usec = ts.tv_nsec / 1000;
}

int gettimeofday(struct timeval *restrict tv, void *restrict tz) {
  if (!vt_mode || uep_pl_inside()) return UEP_PL_REAL(gettimeofday)(tv, tz);
  struct timeval scratch;
  if (tz && UEP_PL_REAL(gettimeofday)(&scratch, tz) < 0) return -1; /* the kernel's sys_tz */
  virtual_timeval(tv);
  return 0;
}

time_t time(time_t *t) {
  if (!vt_mode || uep_pl_inside()) return UEP_PL_REAL(time)(t);
  struct timespec ts;
  uep_vclock_gettime(CLOCK_REALTIME, &ts);
  if (t) *t = ts.tv_sec;
  return ts.tv_sec;
}

/* A sleep on the virtual clock: the error number, as clock_nanosleep. */
static int virtual_sleep(clockid_t clock, int flags, const struct timespec *req, struct timespec *rem) {
  UEP_PL_ENTER();
  int r = uep_vclock_nanosleep(clock, flags, req, rem);
  UEP_PL_LEAVE();
  return r;
}

int clock_nanosleep(clockid_t clock, int flags, const struct timespec *req, struct timespec *rem) {
  if (!virtual_for(clock)) return UEP_PL_REAL(clock_nanosleep)(clock, flags, req, rem);
  return virtual_sleep(clock, flags, req, rem);
}

int nanosleep(const struct timespec *req, struct timespec *rem) {
  if (!vt_mode || uep_pl_inside()) return UEP_PL_REAL(nanosleep)(req, rem);
  int r = virtual_sleep(CLOCK_MONOTONIC, 0, req, rem);
  if (r == 0) return 0;
  errno = r;
  return -1;
}

int usleep(useconds_t us) {
  if (!vt_mode || uep_pl_inside()) return UEP_PL_REAL(usleep)(us);
  struct timespec req = {(time_t)(us / 1000000), (long)(us % 1000000) * 1000};
  return nanosleep(&req, NULL);
}

unsigned int sleep(unsigned int seconds) {
  if (!vt_mode || uep_pl_inside()) return UEP_PL_REAL(sleep)(seconds);
  struct timespec req = {(time_t)seconds, 0}, rem = {0, 0};
  if (nanosleep(&req, &rem) == 0) return 0;
  /* glibc: the seconds left, rounded up when a fraction remains. */
  return (unsigned int)rem.tv_sec + (rem.tv_nsec != 0);
}

/* ---- ITIMER_REAL ---------------------------------------------------------------- */
int setitimer(__itimer_which_t which, const struct itimerval *new_value, struct itimerval *old_value) {
  if (!vt_mode || uep_pl_inside() || which != ITIMER_REAL) return UEP_PL_REAL(setitimer)(which, new_value, old_value);
  UEP_PL_ENTER();
  int r = uep__vclock_setitimer(new_value, old_value);
  int e = errno;
  UEP_PL_LEAVE();
  errno = e;
  return r;
}

int getitimer(__itimer_which_t which, struct itimerval *curr) {
  if (!vt_mode || uep_pl_inside() || which != ITIMER_REAL) return UEP_PL_REAL(getitimer)(which, curr);
  UEP_PL_ENTER();
  int r = uep__vclock_getitimer(curr);
  int e = errno;
  UEP_PL_LEAVE();
  errno = e;
  return r;
}

unsigned int alarm(unsigned int seconds) {
  if (!vt_mode || uep_pl_inside()) return UEP_PL_REAL(alarm)(seconds);
  struct itimerval nv = {{0, 0}, {(time_t)seconds, 0}}, ov;
  UEP_PL_ENTER();
  (void)uep__vclock_setitimer(&nv, &ov);
  UEP_PL_LEAVE();
  /* Linux alarm_setitimer: the old value rounded to the nearest second, and
   * never 0 while one was pending. */
  if ((!ov.it_value.tv_sec && ov.it_value.tv_usec) || ov.it_value.tv_usec >= 500000) ov.it_value.tv_sec++;
  return (unsigned int)ov.it_value.tv_sec;
}

/* ---- threads ------------------------------------------------------------------ */
struct vt_start {
  void *(*fn)(void *);
  void *arg;
};

static void *vt_thread_main(void *p) {
  struct vt_start s = *(struct vt_start *)p;
  free(p);
  UEP_PL_ENTER();
  uep__vclock_started();
  UEP_PL_LEAVE();
  return s.fn(s.arg);
}

int pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *), void *arg) {
  if (vt_mode != UEP_VCLOCK_AUTO || uep_pl_inside()) return UEP_PL_REAL(pthread_create)(th, attr, fn, arg);
  struct vt_start *s = malloc(sizeof *s);
  if (!s) return EAGAIN;
  s->fn = fn;
  s->arg = arg;
  UEP_PL_ENTER();
  uep__vclock_spawning();
  UEP_PL_LEAVE();
  int r = UEP_PL_REAL(pthread_create)(th, attr, vt_thread_main, s);
  if (r != 0) {
    free(s);
    UEP_PL_ENTER();
    uep__vclock_spawn_failed();
    UEP_PL_LEAVE();
  }
  return r;
}
