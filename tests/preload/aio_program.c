/*
 * aio_program.c - Linux AIO (libaio) with IOCB_FLAG_RESFD: the kernel
 * signals the iocb's eventfd at completion, and an epoll instance watching
 * that eventfd sees it.  Run plainly and under uepoll-run
 * (tests/preload/run.sh): the same output, where the preload makes the
 * uepoll eventfd a kernel one at io_submit (libaio calls syscall();
 * src/preload/eventfd_convert.c).  Exits 77 (skipped) when io_setup is
 * refused here.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <libaio.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

int main(void) {
  setvbuf(stdout, NULL, _IONBF, 0);
  io_context_t ctx = 0;
  int r = io_setup(4, &ctx);
  if (r < 0) {
    printf("SKIP: io_setup is refused here (%s)\n", strerror(-r));
    return 77;
  }
  char path[] = "/tmp/uepoll-aio-XXXXXX";
  int f = mkstemp(path);
  if (f < 0) return 1;
  unlink(path);
  if (write(f, "0123456789abcdef", 16) != 16) return 1;

  int ep = epoll_create1(EPOLL_CLOEXEC);
  int efd = eventfd(0, EFD_CLOEXEC); /* blocking: the preload takes its count without blocking */
  struct epoll_event ev = {.events = EPOLLIN | EPOLLET, .data.u64 = 77};
  printf("ep %d efd %d ctl %d\n", ep, efd, epoll_ctl(ep, EPOLL_CTL_ADD, efd, &ev));
  uint64_t one = 1;
  printf("write before %zd\n", write(efd, &one, sizeof one)); /* a count to carry over */
  printf("epoll_wait before %d\n", epoll_wait(ep, &ev, 1, 0));

  char buf[2][8];
  struct iocb cb[2], *cbs[2] = {&cb[0], &cb[1]};
  for (int i = 0; i < 2; ++i) {
    io_prep_pread(&cb[i], f, buf[i], 8, 8 * i);
    io_set_eventfd(&cb[i], efd);
    cb[i].data = (void *)(uintptr_t)(10 + i);
  }
  printf("io_submit %d\n", io_submit(ctx, 2, cbs));
  struct io_event done[2];
  struct timespec ts = {5, 0};
  int got = 0;
  while (got < 2) {
    r = io_getevents(ctx, 1, 2 - got, done + got, &ts);
    if (r <= 0) break;
    got += r;
  }
  printf("io_getevents %d\n", got);
  for (int i = 0; i < got; ++i)
    printf("event %lu res %ld data %.8s\n", (unsigned long)(uintptr_t)done[i].data, (long)done[i].res,
           buf[(uintptr_t)done[i].data - 10]);
  r = epoll_wait(ep, &ev, 1, 5000);
  printf("epoll_wait %d data %llu\n", r, r > 0 ? (unsigned long long)ev.data.u64 : 0ULL);
  uint64_t v = 0;
  const ssize_t n = read(efd, &v, sizeof v);
  printf("read %zd count %llu\n", n, (unsigned long long)v);
  printf("epoll_wait after %d\n", epoll_wait(ep, &ev, 1, 0));
  io_destroy(ctx);
  return 0;
}
