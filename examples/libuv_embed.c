/*
 * libuv_embed.c - a uepoll instance inside a libuv loop.
 *
 * The instance watches a uepoll eventfd (user-space) and a kernel pipe;
 * libuv watches the instance through uep_epoll_kernel_fd() with a
 * uv_poll_t, exactly as it would watch a socket.  A producer thread writes
 * the eventfd ROUNDS times, waiting each time until the loop has consumed
 * the value, then writes the pipe once; the loop stops when it has seen
 * both.  Exits 0 on success, 1 on a failure or after 10 s.
 *
 * The pattern to copy: on UV_READABLE, call uep_epoll_wait(ep, ..., 0)
 * until it returns fewer events than asked for.
 */
#define _GNU_SOURCE /* pipe2 */
#include <uepoll/uepoll.h>

#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <uv.h>

enum { ROUNDS = 1000, TAG_EFD = 1, TAG_PIPE = 2 };

static int ep, efd, pipe_fds[2];
static uint64_t consumed;          /* eventfd values read by the loop */
static int pipe_seen;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static uv_poll_t poller;
static uv_timer_t guard;

static void *producer(void *arg) {
  (void)arg;
  for (uint64_t i = 1; i <= ROUNDS; ++i) {
    uint64_t one = 1;
    if (uep_write(efd, &one, sizeof one) != sizeof one) abort();
    pthread_mutex_lock(&mu);
    while (consumed < i) pthread_cond_wait(&cv, &mu); /* one wakeup per round */
    pthread_mutex_unlock(&mu);
  }
  if (write(pipe_fds[1], "k", 1) != 1) abort(); /* a kernel event, same instance */
  return NULL;
}

static void on_ready(uv_poll_t *h, int status, int events) {
  (void)h;
  (void)events;
  if (status < 0) {
    fprintf(stderr, "uv_poll: %s\n", uv_strerror(status));
    exit(1);
  }
  struct epoll_event evs[8];
  int n;
  do { /* drain: the kernel fd stays readable until a wait returns less */
    n = uep_epoll_wait(ep, evs, 8, 0);
    for (int i = 0; i < n; ++i) {
      if (evs[i].data.u64 == TAG_EFD) {
        uint64_t v;
        if (uep_read(efd, &v, sizeof v) == sizeof v) {
          pthread_mutex_lock(&mu);
          consumed += v;
          pthread_cond_signal(&cv);
          pthread_mutex_unlock(&mu);
        }
      } else if (evs[i].data.u64 == TAG_PIPE) {
        char c;
        if (read(pipe_fds[0], &c, 1) == 1) pipe_seen = 1;
      }
    }
  } while (n == 8);
  if (consumed == ROUNDS && pipe_seen) {
    uv_poll_stop(&poller);
    uv_timer_stop(&guard);
    uv_close((uv_handle_t *)&poller, NULL);
    uv_close((uv_handle_t *)&guard, NULL);
  }
}

static void on_timeout(uv_timer_t *t) {
  (void)t;
  fprintf(stderr, "libuv_embed: timed out (consumed %llu of %d, pipe %d)\n", (unsigned long long)consumed, ROUNDS,
          pipe_seen);
  exit(1);
}

int main(void) {
  ep = uep_epoll_create1(EPOLL_CLOEXEC);
  efd = uep_eventfd(0, EFD_NONBLOCK);
  if (ep < 0 || efd < 0 || pipe2(pipe_fds, O_NONBLOCK | O_CLOEXEC) < 0) {
    perror("setup");
    return 1;
  }
  struct epoll_event ev = {.events = EPOLLIN, .data.u64 = TAG_EFD};
  struct epoll_event kev = {.events = EPOLLIN, .data.u64 = TAG_PIPE};
  if (uep_epoll_ctl(ep, EPOLL_CTL_ADD, efd, &ev) < 0 || uep_epoll_ctl(ep, EPOLL_CTL_ADD, pipe_fds[0], &kev) < 0) {
    perror("uep_epoll_ctl");
    return 1;
  }
  const int kfd = uep_epoll_kernel_fd(ep); /* owned by ep: never closed here */
  if (kfd < 0) {
    perror("uep_epoll_kernel_fd");
    return 1;
  }

  uv_loop_t *loop = uv_default_loop();
  uv_poll_init(loop, &poller, kfd);
  uv_poll_start(&poller, UV_READABLE, on_ready);
  uv_timer_init(loop, &guard);
  uv_timer_start(&guard, on_timeout, 10000, 0);

  pthread_t th;
  pthread_create(&th, NULL, producer, NULL);
  uv_run(loop, UV_RUN_DEFAULT);
  pthread_join(th, NULL);
  uv_loop_close(loop);

  printf("libuv_embed: %llu eventfd wakeups and 1 kernel pipe event through uv_poll_t\n",
         (unsigned long long)consumed);
  uep_close(efd);
  uep_close(ep);
  close(pipe_fds[0]);
  close(pipe_fds[1]);
  return 0;
}
