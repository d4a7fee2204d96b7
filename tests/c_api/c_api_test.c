/*
 * c_api_test.c - the public C header compiles as strict ISO C (C11 and C99,
 * -pedantic -Werror) and the C API works from C: an eventfd, a pipe and a
 * timerfd in an epoll instance, a blocking wait, errno on failure.  Exits 0
 * on success, 1 (after printing the failed check) otherwise.  Owned by the
 * conformance suite.
 */
/* No feature-test macro before the header: it must stand on its own in
 * strict ISO C. */
#include <uepoll/uepoll.h>

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* Strict ISO C hides POSIX clock names; this is Linux's value. */
#ifndef CLOCK_MONOTONIC
#define CLOCK_MONOTONIC 1
#endif

static int failures = 0;

#define CHECK(cond)                                                         \
  do {                                                                      \
    if (!(cond)) {                                                          \
      fprintf(stderr, "%s:%d: check failed: %s (errno %d: %s)\n", __FILE__, \
              __LINE__, #cond, errno, strerror(errno));                     \
      failures++;                                                           \
    }                                                                       \
  } while (0)

int main(void) {
  struct epoll_event ev, out[4];
  uint64_t v = 1;
  int ep, efd, p[2], tfd;
  struct itimerspec its;

  ep = uep_epoll_create1(EPOLL_CLOEXEC);
  CHECK(ep >= UEP_FD_BASE);
  CHECK(uep_is_uepoll_fd(ep) == 1);
  CHECK(uep_is_uepoll_fd(0) == 0);
  efd = uep_eventfd(0, EFD_NONBLOCK);
  CHECK(efd >= UEP_FD_BASE);

  memset(&ev, 0, sizeof ev);
  ev.events = EPOLLIN;
  ev.data.u64 = 42;
  CHECK(uep_epoll_ctl(ep, EPOLL_CTL_ADD, efd, &ev) == 0);
  CHECK(uep_epoll_wait(ep, out, 4, 0) == 0);
  CHECK(uep_write(efd, &v, sizeof v) == (ssize_t)sizeof v);
  CHECK(uep_epoll_wait(ep, out, 4, 1000) == 1);
  CHECK(out[0].events == EPOLLIN && out[0].data.u64 == 42);
  v = 0;
  CHECK(uep_read(efd, &v, sizeof v) == (ssize_t)sizeof v && v == 1);
  CHECK(uep_read(efd, &v, sizeof v) == -1 && errno == EAGAIN);
  CHECK(uep_epoll_wait(ep, out, 4, 0) == 0);

  /* Errors come back as -1 and Linux's errno. */
  errno = 0;
  CHECK(uep_epoll_ctl(ep, EPOLL_CTL_ADD, efd, NULL) == -1 && errno == EFAULT);
  errno = 0;
  CHECK(uep_epoll_ctl(ep, EPOLL_CTL_ADD, efd, &ev) == -1 && errno == EEXIST);
  errno = 0;
  CHECK(uep_epoll_wait(ep, out, 0, 0) == -1 && errno == EINVAL);

  /* A pipe, and a timer that wakes a blocking wait after 10 ms. */
  CHECK(uep_pipe2(p, O_NONBLOCK) == 0);
  ev.events = EPOLLIN;
  ev.data.u64 = 7;
  CHECK(uep_epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev) == 0);
  CHECK(uep_write(p[1], "hi", 2) == 2);
  CHECK(uep_epoll_wait(ep, out, 4, -1) == 1 && out[0].data.u64 == 7);
  {
    char buf[4];
    CHECK(uep_read(p[0], buf, sizeof buf) == 2);
  }
  tfd = uep_timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
  CHECK(tfd >= UEP_FD_BASE);
  memset(&its, 0, sizeof its);
  its.it_value.tv_nsec = 10 * 1000 * 1000;
  ev.events = EPOLLIN | EPOLLET;
  ev.data.u64 = 9;
  CHECK(uep_epoll_ctl(ep, EPOLL_CTL_ADD, tfd, &ev) == 0);
  CHECK(uep_timerfd_settime(tfd, 0, &its, NULL) == 0);
  CHECK(uep_epoll_wait(ep, out, 4, 5000) == 1 && out[0].data.u64 == 9 && out[0].events == EPOLLIN);
  CHECK(uep_read(tfd, &v, sizeof v) == (ssize_t)sizeof v && v == 1);

  CHECK(uep_close(tfd) == 0);
  CHECK(uep_close(p[0]) == 0);
  CHECK(uep_close(p[1]) == 0);
  CHECK(uep_close(efd) == 0);
  CHECK(uep_close(ep) == 0);
  errno = 0;
  CHECK(uep_close(ep) == -1 && errno == EBADF);

  if (failures) {
    fprintf(stderr, "c_api_test: %d check(s) failed\n", failures);
    return 1;
  }
  printf("c_api_test: ok\n");
  return 0;
}
