/*
 * tests/install/consumer.c - a C program built against an *installed* uepoll
 * (through pkg-config or find_package) by tests/install/check.sh.
 *
 * Checks: the installed header compiles as C, the installed library links from
 * a C program, and a basic round trip works: an eventfd added to an instance
 * with EPOLLIN is reported readable with its data after a write, and the
 * descriptors are uepoll ones (>= UEP_FD_BASE); the installed version.h
 * agrees with the installed library (uep_version()).  Exits 0 on success, 1
 * with a message otherwise.
 */
#include <uepoll/uepoll.h>
#include <uepoll/version.h>

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define CHECK(cond)                                                        \
  do {                                                                     \
    if (!(cond)) {                                                         \
      fprintf(stderr, "consumer.c:%d: check failed: %s (errno %d: %s)\n",  \
              __LINE__, #cond, errno, strerror(errno));                    \
      return 1;                                                            \
    }                                                                      \
  } while (0)

int main(void) {
  CHECK(strcmp(uep_version(), UEPOLL_VERSION_STRING) == 0);
  int ep = uep_epoll_create1(EPOLL_CLOEXEC);
  CHECK(ep >= UEP_FD_BASE);
  int efd = uep_eventfd(0, EFD_NONBLOCK);
  CHECK(efd >= UEP_FD_BASE);
  CHECK(uep_is_uepoll_fd(efd) == 1);

  struct epoll_event ev;
  memset(&ev, 0, sizeof ev);
  ev.events = EPOLLIN;
  ev.data.u64 = 0x1234567890abcdefULL;
  CHECK(uep_epoll_ctl(ep, EPOLL_CTL_ADD, efd, &ev) == 0);

  /* Nothing ready yet: a zero-timeout wait returns 0. */
  struct epoll_event out[4];
  CHECK(uep_epoll_wait(ep, out, 4, 0) == 0);

  uint64_t one = 1;
  CHECK(uep_write(efd, &one, sizeof one) == (ssize_t)sizeof one);
  int n = uep_epoll_wait(ep, out, 4, 1000);
  CHECK(n == 1);
  CHECK(out[0].events == EPOLLIN);
  CHECK(out[0].data.u64 == 0x1234567890abcdefULL);

  uint64_t got = 0;
  CHECK(uep_read(efd, &got, sizeof got) == (ssize_t)sizeof got);
  CHECK(got == 1);
  CHECK(uep_epoll_wait(ep, out, 4, 0) == 0);

  /* Linux's errors come through: adding twice is EEXIST. */
  errno = 0;
  CHECK(uep_epoll_ctl(ep, EPOLL_CTL_ADD, efd, &ev) == -1 && errno == EEXIST);

  CHECK(uep_close(efd) == 0);
  CHECK(uep_close(ep) == 0);
  printf("consumer (C): uepoll %s\n", uep_version());
  puts("consumer (C): ok");
  return 0;
}
