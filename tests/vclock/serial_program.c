/* serial_program.c - threads whose interleaving is the scheduler's on a
 * plain run (tests/vclock/serial_run.sh): four threads, each in six steps
 * prints its step and a shared counter it increments, then sleeps 1 ms;
 * all four wake at the same (virtual) times, so which one prints next is
 * decided only by who runs first.  Every fourth step a thread also posts an
 * eventfd that the main thread waits on with epoll.  Under uepoll-run
 * --virtual-time --serialize SEED two runs with one seed print the same
 * bytes. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

static atomic_int counter;
static int efd;

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + t.tv_nsec / 1e9;
}

static void *worker(void *arg) {
  int id = (int)(intptr_t)arg;
  for (int step = 0; step < 6; ++step) {
    int c = atomic_fetch_add(&counter, 1);
    printf("thread %d step %d counter %2d at %.3f\n", id, step, c, now_s());
    if (step % 4 == 3) {
      uint64_t one = 1;
      if (write(efd, &one, sizeof one) != sizeof one) return NULL;
    }
    struct timespec ms = {0, 1000000};
    nanosleep(&ms, NULL);
  }
  return NULL;
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  efd = eventfd(0, EFD_NONBLOCK);
  int ep = epoll_create1(0);
  struct epoll_event e = {EPOLLIN, {.u32 = 1}};
  epoll_ctl(ep, EPOLL_CTL_ADD, efd, &e);
  pthread_t th[4];
  for (int i = 0; i < 4; ++i) pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i);
  uint64_t posts = 0;
  while (posts < 4) {
    if (epoll_wait(ep, &e, 1, 10000) != 1) break;
    uint64_t v = 0;
    if (read(efd, &v, sizeof v) == sizeof v) posts += v;
    printf("main: %llu posts at %.3f\n", (unsigned long long)posts, now_s());
  }
  for (int i = 0; i < 4; ++i) pthread_join(th[i], NULL);
  printf("main: joined, counter %d\n", atomic_load(&counter));
  return 0;
}
