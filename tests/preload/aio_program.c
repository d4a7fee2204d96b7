/*
 * aio_program.c - Linux AIO (libaio) with IOCB_FLAG_RESFD: the kernel
 * signals the iocb's eventfd at completion, and an epoll instance watching
 * that eventfd sees it.  Run plainly and under uepoll-run
 * (tests/preload/run.sh): the same output, where the preload makes the
 * uepoll eventfd a kernel one at io_submit (libaio calls syscall();
 * src/preload/eventfd_convert.c).  Then the files the kernel acts on:
 * IOCB_CMD_POLL and IOCB_CMD_PREAD on a pipe, and POSIX AIO (glibc's
 * helper threads call pread/pwrite inside libc) on a pipe and a socket
 * pair, where the preload makes each a kernel one at the call
 * (src/preload/kernel_operands.c), IOCB_CMD_POLL on an epoll instance,
 * which the preload gives the instance's kernel form for the call, and a
 * timerfd polled and read by AIO (in a fork child too, with the count it
 * carried), which the preload makes its own kernel timer
 * (src/preload/timerfd_convert.c).  Exits 77 (skipped) when io_setup is
 * refused here.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <aio.h>
#include <libaio.h>
#include <poll.h>
#include <sys/socket.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
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

  /* A pipe's read end polled and read by the kernel's AIO. */
  int p[2];
  if (pipe(p) < 0) return 1;
  struct iocb pc, rc, *one_cb[1];
  io_prep_poll(&pc, p[0], POLLIN);
  pc.data = (void *)(uintptr_t)20;
  one_cb[0] = &pc;
  printf("io_submit poll %d\n", io_submit(ctx, 1, one_cb));
  printf("write pipe %zd\n", write(p[1], "pipedata", 8));
  got = io_getevents(ctx, 1, 1, done, &ts);
  printf("io_getevents %d data %lu res 0x%lx\n", got, got > 0 ? (unsigned long)(uintptr_t)done[0].data : 0UL,
         got > 0 ? (unsigned long)done[0].res : 0UL);
  char pbuf[16] = {0};
  io_prep_pread(&rc, p[0], pbuf, sizeof pbuf, 0);
  rc.data = (void *)(uintptr_t)21;
  one_cb[0] = &rc;
  r = io_submit(ctx, 1, one_cb);
  printf("io_submit pread %d\n", r);
  if (r == 1) {
    got = io_getevents(ctx, 1, 1, done, &ts);
    printf("io_getevents %d res %ld data %.8s\n", got, got > 0 ? (long)done[0].res : 0L, pbuf);
  }

  /* An epoll instance polled by the kernel's AIO (its eventfd written after
   * the submission); the iocb names the instance again when io_submit has
   * returned, and the completion reports the iocb's address. */
  int aep = epoll_create1(0), aev = eventfd(0, EFD_NONBLOCK);
  struct epoll_event ae = {.events = EPOLLIN, .data.u64 = 88};
  if (aep < 0 || aev < 0 || epoll_ctl(aep, EPOLL_CTL_ADD, aev, &ae) < 0) return 1;
  struct iocb ec;
  io_prep_poll(&ec, aep, POLLIN);
  ec.data = (void *)(uintptr_t)22;
  one_cb[0] = &ec;
  r = io_submit(ctx, 1, one_cb);
  printf("io_submit epoll poll %d, iocb names the instance %d\n", r, (int)ec.aio_fildes == aep);
  printf("write eventfd %zd\n", write(aev, &one, sizeof one));
  got = io_getevents(ctx, 1, 1, done, &ts);
  printf("io_getevents %d data %lu res 0x%lx obj is the iocb %d\n", got,
         got > 0 ? (unsigned long)(uintptr_t)done[0].data : 0UL, got > 0 ? (unsigned long)done[0].res : 0UL,
         got > 0 && done[0].obj == &ec);
  r = epoll_wait(aep, &ev, 1, 0);
  printf("epoll_wait instance %d data %llu\n", r, r > 0 ? (unsigned long long)ev.data.u64 : 0ULL);

  /* A timerfd polled, then read, by the kernel's AIO, and watched by an
   * epoll instance whose registration follows it to the kernel. */
  const int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK), tep = epoll_create1(0);
  struct epoll_event te = {.events = EPOLLIN, .data.u64 = 99};
  struct itimerspec its = {.it_value = {.tv_nsec = 20 * 1000 * 1000}};
  if (tfd < 0 || tep < 0 || epoll_ctl(tep, EPOLL_CTL_ADD, tfd, &te) < 0 || timerfd_settime(tfd, 0, &its, NULL) < 0)
    return 1;
  struct iocb tc;
  io_prep_poll(&tc, tfd, POLLIN);
  tc.data = (void *)(uintptr_t)23;
  one_cb[0] = &tc;
  printf("io_submit timerfd poll %d\n", io_submit(ctx, 1, one_cb));
  got = io_getevents(ctx, 1, 1, done, &ts);
  printf("io_getevents %d data %lu res 0x%lx\n", got, got > 0 ? (unsigned long)(uintptr_t)done[0].data : 0UL,
         got > 0 ? (unsigned long)done[0].res : 0UL);
  r = epoll_wait(tep, &ev, 1, 5000);
  printf("epoll_wait timerfd %d data %llu\n", r, r > 0 ? (unsigned long long)ev.data.u64 : 0ULL);
  uint64_t ticks = 0;
  io_prep_pread(&tc, tfd, &ticks, sizeof ticks, 0);
  tc.data = (void *)(uintptr_t)24;
  printf("io_submit timerfd pread %d\n", io_submit(ctx, 1, one_cb));
  got = io_getevents(ctx, 1, 1, done, &ts);
  printf("io_getevents %d res %ld count %llu\n", got, got > 0 ? (long)done[0].res : 0L, (unsigned long long)ticks);
  printf("epoll_wait timerfd after %d\n", epoll_wait(tep, &ev, 1, 0));
  struct itimerspec cur = {.it_value = {.tv_sec = 1}};
  r = timerfd_gettime(tfd, &cur);
  printf("gettime %d disarmed %d\n", r, cur.it_value.tv_sec == 0 && cur.it_value.tv_nsec == 0);

  /* A timer that expired before fork(), read by the child's AIO: the
   * child's count is the one the timer held. */
  const int tf2 = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
  its.it_value.tv_nsec = 1000 * 1000;
  if (tf2 < 0 || timerfd_settime(tf2, 0, &its, NULL) < 0) return 1;
  struct pollfd tp = {.fd = tf2, .events = POLLIN};
  printf("poll expired timer %d\n", poll(&tp, 1, 5000));
  const pid_t pid = fork();
  if (pid == 0) {
    io_context_t cctx = 0;
    if (io_setup(1, &cctx) < 0) _exit(1);
    ticks = 0;
    io_prep_pread(&tc, tf2, &ticks, sizeof ticks, 0);
    printf("child: io_submit timerfd pread %d\n", io_submit(cctx, 1, one_cb));
    got = io_getevents(cctx, 1, 1, done, &ts);
    printf("child: io_getevents %d res %ld count %llu\n", got, got > 0 ? (long)done[0].res : 0L,
           (unsigned long long)ticks);
    _exit(0);
  }
  int status = 0;
  printf("child exit %d\n", pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  io_destroy(ctx);

  /* POSIX AIO: a write to the pipe, a read from a socket pair. */
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0 || write(sv[1], "pairdata", 8) != 8) return 1;
  struct aiocb wa = {.aio_fildes = p[1], .aio_buf = "posixaio", .aio_nbytes = 8};
  char sbuf[8];
  struct aiocb ra = {.aio_fildes = sv[0], .aio_buf = sbuf, .aio_nbytes = sizeof sbuf};
  printf("aio_write %d aio_read %d\n", aio_write(&wa), aio_read(&ra));
  const struct aiocb *const both[2] = {&wa, &ra};
  for (int i = 0; i < 2; ++i)
    while (aio_error(both[i]) == EINPROGRESS) aio_suspend(both, 2, &ts);
  const ssize_t wr = aio_return(&wa), rr = aio_return(&ra);
  printf("aio_write: error %s return %zd; aio_read: error %s return %zd\n", strerrorname_np(aio_error(&wa)), wr,
         strerrorname_np(aio_error(&ra)), rr);
  return 0;
}
