/* cond_program.c - condition variables on the virtual clock
 * (tests/vclock/preload_run.sh): a consumer thread waits on a condition
 * variable (CLOCK_MONOTONIC, timeout an hour) while the producer sleeps 10 s
 * and then signals; a second timed wait of 30 s times out; a pool of three
 * idle workers in pthread_cond_wait (untimed) does not hold the clock while
 * the main thread sleeps a minute; a broadcast ends them; a semaphore's
 * timed wait times out on the virtual clock, and its count is kept. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv, pool_cv = PTHREAD_COND_INITIALIZER;
static int ready, quit, exited;
static double t0;

static double mono(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + t.tv_nsec / 1e9;
}

static void *consumer(void *arg) {
  (void)arg;
  struct timespec at;
  clock_gettime(CLOCK_MONOTONIC, &at);
  at.tv_sec += 3600;
  pthread_mutex_lock(&mu);
  int r = 0;
  while (!ready && r == 0) r = pthread_cond_timedwait(&cv, &mu, &at);
  printf("consumer: %s at %.3f\n", r ? strerror(r) : "signalled", mono() - t0);
  clock_gettime(CLOCK_MONOTONIC, &at);
  at.tv_sec += 30;
  r = 0;
  while (r == 0) r = pthread_cond_timedwait(&cv, &mu, &at);
  printf("consumer: %s at %.3f\n", r ? strerror(r) : "signalled", mono() - t0);
  pthread_mutex_unlock(&mu);
  return NULL;
}

static void *pooled(void *arg) {
  (void)arg;
  pthread_mutex_lock(&mu);
  while (!quit) pthread_cond_wait(&pool_cv, &mu);
  exited++;
  pthread_mutex_unlock(&mu);
  return NULL;
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  pthread_condattr_t a;
  pthread_condattr_init(&a);
  pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
  pthread_cond_init(&cv, &a);
  t0 = mono();
  pthread_t c, p[3];
  pthread_create(&c, NULL, consumer, NULL);
  for (int i = 0; i < 3; ++i) pthread_create(&p[i], NULL, pooled, NULL);
  sleep(10);
  pthread_mutex_lock(&mu);
  ready = 1;
  pthread_cond_signal(&cv);
  pthread_mutex_unlock(&mu);
  pthread_join(c, NULL);
  printf("main: consumer joined at %.3f\n", mono() - t0);
  sleep(60);
  pthread_mutex_lock(&mu);
  quit = 1;
  pthread_cond_broadcast(&pool_cv);
  pthread_mutex_unlock(&mu);
  for (int i = 0; i < 3; ++i) pthread_join(p[i], NULL);
  printf("main: %d pooled threads exited at %.3f\n", exited, mono() - t0);
  sem_t s;
  sem_init(&s, 0, 0);
  struct timespec at;
  clock_gettime(CLOCK_REALTIME, &at);
  at.tv_sec += 5;
  int r = sem_timedwait(&s, &at);
  printf("sem_timedwait = %d %s at %.3f\n", r, r ? strerror(errno) : "", mono() - t0);
  sem_post(&s);
  int v = -1;
  sem_getvalue(&s, &v);
  r = sem_trywait(&s);
  int r2 = sem_trywait(&s);
  printf("value %d, trywait %d, then %d %s\n", v, r, r2, r2 ? strerror(errno) : "");
  sem_destroy(&s);
  return 0;
}
