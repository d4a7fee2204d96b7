/*
 * interpose_time.c - libuepoll-preload.so's interposers for time, on
 * uepoll's virtual clock (include/uepoll/vclock.h) when UEPOLL_VIRTUAL_TIME
 * is "auto" or "manual" (uepoll-run --virtual-time): clock_gettime (the
 * MONOTONIC, BOOTTIME and REALTIME clocks and their _COARSE, _RAW and
 * _ALARM variants), gettimeofday and time read it; nanosleep,
 * clock_nanosleep, usleep and sleep sleep on it, as uepoll waits (so they
 * count as asleep for automatic mode); setitimer/getitimer(ITIMER_REAL)
 * and alarm arm the clock's one interval timer, whose expiry sends SIGALRM
 * to the process; pthread_cond_wait, _timedwait,
 * _clockwait, _signal and _broadcast run on uepoll waits (core/vcond.h), so
 * a thread waiting on a condition variable counts as asleep and its timeout
 * is virtual (process-shared condition variables stay libc's); so do
 * unnamed process-private semaphores (sem_init ... sem_destroy).  With the
 * variable unset, or for other clocks (CPU-time clocks), and for uepoll's
 * own calls, every function is libc's.  The timeouts of epoll, poll and
 * select (interpose_net.c: over any descriptors) follow the clock inside
 * the library.
 *
 * The constructor enables the clock before main(), makes the loading
 * thread known to automatic mode (it holds the clock while it runs) and
 * starts the control channel (UEPOLL_VCLOCK_CONTROL); pthread_create makes
 * each new thread known from before it exists until it exits, so that the
 * clock never jumps while a thread of the program runs (or is blocked
 * anywhere but in a uepoll wait).
 * Owned by src/preload/.  No locks here (the clock's, in the library).
 */
#define _GNU_SOURCE
#include "preload/interpose.h"

#include "capi/vclock_support.h"

#include <uepoll/vclock.h>

#include <errno.h>
#include <stdint.h>
#include <pthread.h>
#include <semaphore.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

/* The mode fixed at load (0 = off): a plain load, read on every call. */
int uep_pl_vt_mode;

/* Fork handlers for the tables below (threads, semaphores). */
static void vt_fork_prepare(void);
static void vt_fork_parent(void);
static void vt_fork_child(void);

static void control_enter(void) { UEP_PL_ENTER(); }

/* UEPOLL_VCLOCK_SERIALIZE=SEED (decimal): serialized mode
 * (uep_vclock_serialize), inherited by children (same seed). */
static void serialize_at_load(void) {
  const char *v = getenv("UEPOLL_VCLOCK_SERIALIZE");
  if (!v || !*v) return;
  char *end = NULL;
  errno = 0;
  unsigned long long seed = strtoull(v, &end, 10);
  if (*v < '0' || *v > '9' || *end || errno) {
    fprintf(stderr, "uepoll: UEPOLL_VCLOCK_SERIALIZE=%s: not a decimal seed; threads are not serialized\n", v);
    return;
  }
  if (uep_vclock_serialize((uint64_t)seed) != 0)
    fprintf(stderr, "uepoll: UEPOLL_VCLOCK_SERIALIZE=%s: %s; threads are not serialized\n", v, strerror(errno));
}

/* UEPOLL_VCLOCK_CONTROL (a socket path, or fd:N): the control channel
 * (uep_vclock_control_start), for this process only: the variable is
 * removed, so that a child (which has a clock of its own) does not claim
 * the same socket. */
static void control_at_load(void) {
  const char *c = getenv("UEPOLL_VCLOCK_CONTROL");
  if (!c || !*c) return;
  char spec[256];
  snprintf(spec, sizeof spec, "%s", c);
  unsetenv("UEPOLL_VCLOCK_CONTROL");
  if (uep__vclock_control_start(spec, control_enter) != 0)
    fprintf(stderr, "uepoll: UEPOLL_VCLOCK_CONTROL=%s: %s%s; no control channel\n", spec, strerror(errno),
            errno == EPERM ? " (its directory must be yours, mode 0700)" : "");
}

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
    uep_pl_vt_mode = mode;
    (void)uep_vclock_attach_thread();
    (void)pthread_atfork(vt_fork_prepare, vt_fork_parent, vt_fork_child);
    serialize_at_load();
    control_at_load();
  }
  UEP_PL_LEAVE();
}

/* The virtual clock serves `clock` in this call. */
static int virtual_for(clockid_t clock) {
  if (!uep_pl_vt_mode || uep_pl_inside()) return 0;
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
  if (!uep_pl_vt_mode || uep_pl_inside()) return UEP_PL_REAL(gettimeofday)(tv, tz);
  struct timeval scratch;
  if (tz && UEP_PL_REAL(gettimeofday)(&scratch, tz) < 0) return -1; /* the kernel's sys_tz */
  virtual_timeval(tv);
  return 0;
}

time_t time(time_t *t) {
  if (!uep_pl_vt_mode || uep_pl_inside()) return UEP_PL_REAL(time)(t);
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
  if (!uep_pl_vt_mode || uep_pl_inside()) return UEP_PL_REAL(nanosleep)(req, rem);
  int r = virtual_sleep(CLOCK_MONOTONIC, 0, req, rem);
  if (r == 0) return 0;
  errno = r;
  return -1;
}

int usleep(useconds_t us) {
  if (!uep_pl_vt_mode || uep_pl_inside()) return UEP_PL_REAL(usleep)(us);
  struct timespec req = {(time_t)(us / 1000000), (long)(us % 1000000) * 1000};
  return nanosleep(&req, NULL);
}

unsigned int sleep(unsigned int seconds) {
  if (!uep_pl_vt_mode || uep_pl_inside()) return UEP_PL_REAL(sleep)(seconds);
  struct timespec req = {(time_t)seconds, 0}, rem = {0, 0};
  if (nanosleep(&req, &rem) == 0) return 0;
  /* glibc: the seconds left, rounded up when a fraction remains. */
  return (unsigned int)rem.tv_sec + (rem.tv_nsec != 0);
}

/* ---- ITIMER_REAL ---------------------------------------------------------------- */
int setitimer(__itimer_which_t which, const struct itimerval *new_value, struct itimerval *old_value) {
  if (!uep_pl_vt_mode || uep_pl_inside() || which != ITIMER_REAL) return UEP_PL_REAL(setitimer)(which, new_value, old_value);
  UEP_PL_ENTER();
  int r = uep__vclock_setitimer(new_value, old_value);
  int e = errno;
  UEP_PL_LEAVE();
  errno = e;
  return r;
}

int getitimer(__itimer_which_t which, struct itimerval *curr) {
  if (!uep_pl_vt_mode || uep_pl_inside() || which != ITIMER_REAL) return UEP_PL_REAL(getitimer)(which, curr);
  UEP_PL_ENTER();
  int r = uep__vclock_getitimer(curr);
  int e = errno;
  UEP_PL_LEAVE();
  errno = e;
  return r;
}

unsigned int alarm(unsigned int seconds) {
  if (!uep_pl_vt_mode || uep_pl_inside()) return UEP_PL_REAL(alarm)(seconds);
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
/* Threads made on the virtual clock: known to the clock from before they exist
 * (uep__vclock_spawning), and joinable on a uepoll wait: a thread in
 * pthread_join counts as asleep, and the joined thread's end (return,
 * pthread_exit or cancellation: a cleanup handler) wakes it.  threads[]
 * lists the threads made here (state 1) and ended (state 2) and not yet
 * joined, under thread_mu (a real mutex); a thread not listed (made
 * elsewhere, or with the table full) is joined in the kernel, and its
 * joiner holds the clock meanwhile. */
enum { THREAD_SLOTS = 1024 };
static pthread_mutex_t thread_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
  pthread_t id;
  int state; /* 0 free, 1 running, 2 ended */
} threads[THREAD_SLOTS];
static int thread_key; /* the address joiners wait on (core/vcond.h) */

/* Preconditions: thread_mu held. */
static int thread_slot(pthread_t t) {
  for (int i = 0; i < THREAD_SLOTS; ++i)
    if (threads[i].state && pthread_equal(threads[i].id, t)) return i;
  return -1;
}
static void thread_mark(pthread_t t, int state) {
  int i = thread_slot(t);
  if (i < 0)
    for (i = 0; i < THREAD_SLOTS && threads[i].state; ++i) {
    }
  if (i >= THREAD_SLOTS) return;
  threads[i].id = t;
  if (threads[i].state < state) threads[i].state = state;
}

struct vt_start {
  void *(*fn)(void *);
  void *arg;
  void *token; /* uep__vclock_spawning's */
};

static void vt_thread_ended(void *unused) {
  (void)unused;
  pthread_mutex_lock(&thread_mu);
  thread_mark(pthread_self(), 2);
  UEP_PL_ENTER();
  uep__vcond_signal(&thread_key, 1);
  UEP_PL_LEAVE();
  pthread_mutex_unlock(&thread_mu);
}

static void *vt_thread_main(void *p) {
  struct vt_start s = *(struct vt_start *)p;
  free(p);
  UEP_PL_ENTER();
  uep__vclock_started(s.token);
  UEP_PL_LEAVE();
  void *r;
  pthread_cleanup_push(vt_thread_ended, NULL);
  r = s.fn(s.arg);
  pthread_cleanup_pop(1);
  return r;
}

int pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *), void *arg) {
  if (!uep_pl_vt_mode || uep_pl_inside()) return UEP_PL_REAL(pthread_create)(th, attr, fn, arg);
  struct vt_start *s = malloc(sizeof *s);
  if (!s) return EAGAIN;
  s->fn = fn;
  s->arg = arg;
  UEP_PL_ENTER();
  s->token = uep__vclock_spawning();
  UEP_PL_LEAVE();
  void *token = s->token;
  int r = UEP_PL_REAL(pthread_create)(th, attr, vt_thread_main, s);
  if (r != 0) {
    free(s);
    UEP_PL_ENTER();
    uep__vclock_spawn_failed(token);
    UEP_PL_LEAVE();
    return r;
  }
  pthread_mutex_lock(&thread_mu);
  thread_mark(*th, 1); /* (2 already if it has ended) */
  pthread_mutex_unlock(&thread_mu);
  return 0;
}

static void thread_mu_unlock(void *m) { pthread_mutex_unlock((pthread_mutex_t *)m); }
static void thread_mu_lock(void *m) { pthread_mutex_lock((pthread_mutex_t *)m); }

int pthread_join(pthread_t t, void **ret) {
  if (uep_pl_vt_mode && !uep_pl_inside()) {
    pthread_mutex_lock(&thread_mu);
    int i;
    while ((i = thread_slot(t)) >= 0 && threads[i].state == 1) {
      UEP_PL_ENTER();
      int r = uep__vcond_wait(&thread_key, &thread_mu, CLOCK_REALTIME, NULL, thread_mu_unlock, thread_mu_lock);
      UEP_PL_LEAVE();
      if (r != 0) break;
    }
    if (i >= 0 && threads[i].state == 2) threads[i].state = 0;
    pthread_mutex_unlock(&thread_mu);
  }
  return UEP_PL_REAL(pthread_join)(t, ret);
}

/* ---- condition variables --------------------------------------------------------- */
/* The condition variables pthread_cond_init made with a CLOCK_MONOTONIC or a
 * process-shared attribute (the rest: CLOCK_REALTIME, private).  Open
 * addressing on the address; entries are never removed (destroy clears the
 * flags), so a lookup stops at the first empty slot.  Relaxed atomics
 * would do for the flags, but acquire/release pair the key's publication
 * with its flags. */
enum { COND_MONOTONIC = 1, COND_SHARED = 2, COND_SLOTS = 4096 };
static struct {
  const void *key;
  int flags;
} cond_table[COND_SLOTS];

static unsigned cond_hash(const void *c) { return (unsigned)(((uintptr_t)c >> 3) * 2654435761u) % COND_SLOTS; }

static void cond_set_flags(const void *c, int flags) {
  for (unsigned i = cond_hash(c), n = 0; n < COND_SLOTS; ++n, i = (i + 1) % COND_SLOTS) {
    const void *k = __atomic_load_n(&cond_table[i].key, __ATOMIC_ACQUIRE);
    if (!k && flags == 0) return; /* not there: nothing to clear */
    if (!k) {
      const void *expected = NULL;
      if (!__atomic_compare_exchange_n(&cond_table[i].key, &expected, c, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        k = expected;
      else
        k = c;
    }
    if (k == c) {
      __atomic_store_n(&cond_table[i].flags, flags, __ATOMIC_RELEASE);
      return;
    }
  }
}

static int cond_flags(const void *c) {
  for (unsigned i = cond_hash(c), n = 0; n < COND_SLOTS; ++n, i = (i + 1) % COND_SLOTS) {
    const void *k = __atomic_load_n(&cond_table[i].key, __ATOMIC_ACQUIRE);
    if (!k) return 0;
    if (k == c) return __atomic_load_n(&cond_table[i].flags, __ATOMIC_ACQUIRE);
  }
  return 0;
}

/* On uepoll waits: the clock on, not inside uepoll, not process-shared. */
static int cond_virtual(const void *c) {
  return uep_pl_vt_mode && !uep_pl_inside() && !(cond_flags(c) & COND_SHARED);
}

int pthread_cond_init(pthread_cond_t *c, const pthread_condattr_t *attr) {
  int r = UEP_PL_REAL(pthread_cond_init)(c, attr);
  if (r != 0 || !uep_pl_vt_mode) return r;
  int flags = 0, pshared = PTHREAD_PROCESS_PRIVATE;
  clockid_t clk = CLOCK_REALTIME;
  if (attr) {
    pthread_condattr_getclock(attr, &clk);
    pthread_condattr_getpshared(attr, &pshared);
  }
  if (clk == CLOCK_MONOTONIC) flags |= COND_MONOTONIC;
  if (pshared == PTHREAD_PROCESS_SHARED) flags |= COND_SHARED;
  cond_set_flags(c, flags);
  return 0;
}

int pthread_cond_destroy(pthread_cond_t *c) {
  if (uep_pl_vt_mode) cond_set_flags(c, 0);
  return UEP_PL_REAL(pthread_cond_destroy)(c);
}

static void vt_mutex_unlock(void *m) { (void)pthread_mutex_unlock((pthread_mutex_t *)m); }
static void vt_mutex_lock(void *m) { (void)pthread_mutex_lock((pthread_mutex_t *)m); }

static int cond_wait_on(pthread_cond_t *c, pthread_mutex_t *m, clockid_t clk, const struct timespec *abstime) {
  UEP_PL_ENTER();
  int r = uep__vcond_wait(c, m, clk, abstime, vt_mutex_unlock, vt_mutex_lock);
  UEP_PL_LEAVE();
  return r;
}

int pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m) {
  if (!cond_virtual(c)) return UEP_PL_REAL(pthread_cond_wait)(c, m);
  return cond_wait_on(c, m, CLOCK_REALTIME, NULL);
}

int pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *abstime) {
  if (!cond_virtual(c)) return UEP_PL_REAL(pthread_cond_timedwait)(c, m, abstime);
  return cond_wait_on(c, m, (cond_flags(c) & COND_MONOTONIC) ? CLOCK_MONOTONIC : CLOCK_REALTIME, abstime);
}

int pthread_cond_clockwait(pthread_cond_t *c, pthread_mutex_t *m, clockid_t clk, const struct timespec *abstime) {
  if (!cond_virtual(c)) return UEP_PL_REAL(pthread_cond_clockwait)(c, m, clk, abstime);
  return cond_wait_on(c, m, clk, abstime);
}

int pthread_cond_signal(pthread_cond_t *c) {
  if (!cond_virtual(c)) return UEP_PL_REAL(pthread_cond_signal)(c);
  UEP_PL_ENTER();
  uep__vcond_signal(c, 0);
  UEP_PL_LEAVE();
  return 0;
}

int pthread_cond_broadcast(pthread_cond_t *c) {
  if (!cond_virtual(c)) return UEP_PL_REAL(pthread_cond_broadcast)(c);
  UEP_PL_ENTER();
  uep__vcond_signal(c, 1);
  UEP_PL_LEAVE();
  return 0;
}

/* ---- semaphores ------------------------------------------------------------------ */
/* Unnamed process-private semaphores made by sem_init on the virtual clock keep
 * their count here (the sem_t is not used), under sem_mu, and wait on uepoll
 * waits keyed by their address; named and process-shared ones stay libc's.
 * Slots are reused once destroyed (key kept, live cleared). */
enum { SEM_SLOTS = 4096 };
static pthread_mutex_t sem_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
  const void *key;
  int live;
  unsigned int count;
} sems[SEM_SLOTS];

/* The live slot of sem, or -1.  Preconditions: sem_mu held. */
static int sem_slot(const void *sem) {
  for (unsigned i = cond_hash(sem), n = 0; n < SEM_SLOTS; ++n, i = (i + 1) % SEM_SLOTS) {
    if (!sems[i].key) return -1;
    if (sems[i].key == sem && sems[i].live) return (int)i;
  }
  return -1;
}

static int sem_virtual(void) { return uep_pl_vt_mode && !uep_pl_inside(); }

int sem_init(sem_t *sem, int pshared, unsigned int value) {
  int r = UEP_PL_REAL(sem_init)(sem, pshared, value);
  if (r != 0 || !sem_virtual() || pshared) return r;
  pthread_mutex_lock(&sem_mu);
  for (unsigned i = cond_hash(sem), n = 0; n < SEM_SLOTS; ++n, i = (i + 1) % SEM_SLOTS) {
    if (sems[i].key && sems[i].key != sem && sems[i].live) continue;
    sems[i].key = sem;
    sems[i].live = 1;
    sems[i].count = value;
    break;
  } /* full: the semaphore stays libc's */
  pthread_mutex_unlock(&sem_mu);
  return 0;
}

int sem_destroy(sem_t *sem) {
  if (sem_virtual()) {
    pthread_mutex_lock(&sem_mu);
    int i = sem_slot(sem);
    if (i >= 0) sems[i].live = 0;
    pthread_mutex_unlock(&sem_mu);
  }
  return UEP_PL_REAL(sem_destroy)(sem);
}

static void sem_mu_unlock(void *m) { pthread_mutex_unlock((pthread_mutex_t *)m); }
static void sem_mu_lock(void *m) { pthread_mutex_lock((pthread_mutex_t *)m); }

/* sem_wait, sem_trywait (!block), sem_timedwait/clockwait (abstime) on a
 * semaphore of ours: 0 or -1 with errno; 1 if sem is not ours. */
static int sem_take(sem_t *sem, int block, clockid_t clk, const struct timespec *abstime) {
  pthread_mutex_lock(&sem_mu);
  int i = sem_slot(sem), r = 0;
  if (i < 0) {
    pthread_mutex_unlock(&sem_mu);
    return 1;
  }
  while (sems[i].count == 0) {
    if (!block) {
      r = EAGAIN;
      break;
    }
    UEP_PL_ENTER();
    r = uep__vcond_wait_intr(sem, &sem_mu, clk, abstime, sem_mu_unlock, sem_mu_lock);
    UEP_PL_LEAVE();
    if (r != 0) break;
    if ((i = sem_slot(sem)) < 0) { /* destroyed meanwhile: undefined; fail */
      r = EINVAL;
      break;
    }
  }
  if (r == 0) sems[i].count--;
  pthread_mutex_unlock(&sem_mu);
  if (r == 0) return 0;
  errno = r;
  return -1;
}

int sem_wait(sem_t *sem) {
  int r = sem_virtual() ? sem_take(sem, 1, CLOCK_REALTIME, NULL) : 1;
  return r == 1 ? UEP_PL_REAL(sem_wait)(sem) : r;
}

int sem_trywait(sem_t *sem) {
  int r = sem_virtual() ? sem_take(sem, 0, CLOCK_REALTIME, NULL) : 1;
  return r == 1 ? UEP_PL_REAL(sem_trywait)(sem) : r;
}

int sem_timedwait(sem_t *restrict sem, const struct timespec *restrict abstime) {
  int r = sem_virtual() ? sem_take(sem, 1, CLOCK_REALTIME, abstime) : 1;
  return r == 1 ? UEP_PL_REAL(sem_timedwait)(sem, abstime) : r;
}

int sem_clockwait(sem_t *restrict sem, clockid_t clk, const struct timespec *restrict abstime) {
  int r = sem_virtual() ? sem_take(sem, 1, clk, abstime) : 1;
  return r == 1 ? UEP_PL_REAL(sem_clockwait)(sem, clk, abstime) : r;
}

int sem_post(sem_t *sem) {
  if (sem_virtual()) {
    pthread_mutex_lock(&sem_mu);
    int i = sem_slot(sem);
    if (i >= 0) {
      int r = 0;
      if (sems[i].count >= (unsigned)SEM_VALUE_MAX) {
        r = EOVERFLOW;
      } else {
        sems[i].count++;
        UEP_PL_ENTER();
        uep__vcond_signal(sem, 0);
        UEP_PL_LEAVE();
      }
      pthread_mutex_unlock(&sem_mu);
      if (r == 0) return 0;
      errno = r;
      return -1;
    }
    pthread_mutex_unlock(&sem_mu);
  }
  return UEP_PL_REAL(sem_post)(sem);
}

int sem_getvalue(sem_t *restrict sem, int *restrict value) {
  if (sem_virtual()) {
    pthread_mutex_lock(&sem_mu);
    int i = sem_slot(sem);
    if (i >= 0) *value = (int)sems[i].count;
    pthread_mutex_unlock(&sem_mu);
    if (i >= 0) return 0;
  }
  return UEP_PL_REAL(sem_getvalue)(sem, value);
}

/* ---- fork ------------------------------------------------------------------------ */
/* The tables' mutexes are held across fork(); in the child the parent's
 * other threads do not exist (their entries go; nobody waits on a
 * semaphore any more, the counts stay). */
static void vt_fork_prepare(void) {
  pthread_mutex_lock(&thread_mu);
  pthread_mutex_lock(&sem_mu);
}
static void vt_fork_parent(void) {
  pthread_mutex_unlock(&sem_mu);
  pthread_mutex_unlock(&thread_mu);
}
static void vt_fork_child(void) {
  for (int i = 0; i < THREAD_SLOTS; ++i) threads[i].state = 0;
  pthread_mutex_unlock(&sem_mu);
  pthread_mutex_unlock(&thread_mu);
}
