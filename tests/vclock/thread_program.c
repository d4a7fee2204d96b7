/* thread_program.c - threads on the virtual clock (tests/vclock/preload_run.sh):
 * the main thread waits in epoll_wait with an hour's timeout while a second
 * thread computes for a while (real time, no uepoll call) and then writes a
 * pipe; then both sleep, the worker 10 s and the main thread in a wait of a
 * minute.  Under uepoll-run --virtual-time the worker holds the clock while
 * it runs (it is known from pthread_create), so the wait ends with the
 * pipe's event at the start time, and the sleeps end in virtual-time order. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

static int fds[2];

static double mono(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + t.tv_nsec / 1e9;
}

static void *worker(void *arg) {
  (void)arg;
  struct timespec real0, real1;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &real0);  /* not virtual: CPU time */
  do clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &real1);
  while ((real1.tv_sec - real0.tv_sec) * 1000000000L + (real1.tv_nsec - real0.tv_nsec) < 150000000L);
  if (write(fds[1], "x", 1) != 1) return NULL;
  sleep(10);
  if (write(fds[1], "y", 1) != 1) return NULL;
  return NULL;
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (pipe(fds) < 0) return 1;
  int ep = epoll_create1(0);
  struct epoll_event e = {EPOLLIN, {.u32 = 1}};
  epoll_ctl(ep, EPOLL_CTL_ADD, fds[0], &e);
  const double t0 = mono();
  pthread_t th;
  if (pthread_create(&th, NULL, worker, NULL) != 0) return 1;
  char c;
  int n = epoll_wait(ep, &e, 1, 3600 * 1000);
  printf("wait = %d after %.3f s\n", n, mono() - t0);
  if (read(fds[0], &c, 1) != 1) return 1;
  n = epoll_wait(ep, &e, 1, 60 * 1000);
  if (n == 1 && read(fds[0], &c, 1) == 1) printf("wait = 1 (%c) after %.3f s\n", c, mono() - t0);
  pthread_join(th, NULL);
  printf("joined after %.3f s\n", mono() - t0);
  return 0;
}
