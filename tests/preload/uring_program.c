/*
 * uring_program.c - an eventfd registered with io_uring (liburing's
 * io_uring_register_eventfd, its io_uring_register, and
 * syscall(SYS_io_uring_register)) is signalled by the kernel's completions,
 * and an epoll instance watching it sees them.  Run plainly and under
 * uepoll-run (tests/preload/run.sh): the same output, where the preload
 * makes each uepoll eventfd a kernel one as it is registered
 * (src/preload/eventfd_convert.c).  Then registered files: a pipe's ends
 * registered with io_uring_register_files, read and written through
 * fixed-file SQEs, where the preload makes the pipe a kernel one as it is
 * registered (src/preload/kernel_operands.c).  Then SQEs that name a
 * pipe, a socket pair and an eventfd directly (and a splice between them),
 * where the preload makes each a kernel one as liburing submits the SQE
 * (kernel_operands.c), an SQE that polls an epoll instance, and epoll
 * instances among registered files, polled by fixed-file SQEs (the preload
 * registers a copy of the array naming each instance's kernel form), and a
 * timerfd read by SQEs, which the preload makes its own kernel timer
 * (src/preload/timerfd_convert.c).
 * Exits 77 (skipped) when this
 * kernel or sandbox refuses io_uring_setup.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <liburing.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "show_kind.h"

/* Prints and consumes every completion there is. */
static void drain_cqes(struct io_uring *ring, const char *how) {
  struct io_uring_cqe *cqe;
  while (io_uring_peek_cqe(ring, &cqe) == 0) {
    printf("%s: cqe %llu res %d\n", how, (unsigned long long)cqe->user_data, cqe->res);
    io_uring_cqe_seen(ring, cqe);
  }
}

/* Submits `n` NOPs and waits on the epoll instance for the eventfd. */
static void nops_and_wait(struct io_uring *ring, int ep, int efd, int n, const char *how) {
  for (int i = 0; i < n; ++i) {
    struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
    io_uring_prep_nop(sqe);
    sqe->user_data = (uint64_t)(100 + i);
  }
  printf("%s: submit %d\n", how, io_uring_submit(ring));
  struct epoll_event ev[4];
  int r = epoll_wait(ep, ev, 4, 5000);
  printf("%s: epoll_wait %d data %llu\n", how, r, r > 0 ? (unsigned long long)ev[0].data.u64 : 0ULL);
  uint64_t v = 0;
  ssize_t got = read(efd, &v, sizeof v);
  printf("%s: read %zd count>=1 %s\n", how, got, v >= 1 ? "yes" : "no");
  struct io_uring_cqe *cqe;
  int seen = 0;
  while (io_uring_peek_cqe(ring, &cqe) == 0) {
    printf("%s: cqe %llu res %d\n", how, (unsigned long long)cqe->user_data, cqe->res);
    io_uring_cqe_seen(ring, cqe);
    ++seen;
  }
  r = epoll_wait(ep, ev, 4, 0);
  printf("%s: %d cqes, then epoll_wait %d\n", how, seen, r);
}

int main(void) {
  setvbuf(stdout, NULL, _IONBF, 0);
  struct io_uring ring;
  int r = io_uring_queue_init(8, &ring, 0);
  if (r < 0) {
    printf("SKIP: io_uring_setup is refused here (%s)\n", strerror(-r));
    return 77;
  }
  int ep = epoll_create1(EPOLL_CLOEXEC);
  int efd[3];
  for (int i = 0; i < 3; ++i) {
    /* Registered in the instance before io_uring sees it: the registration
     * (events and data) must follow the eventfd. */
    efd[i] = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = 40 + (uint64_t)i};
    epoll_ctl(ep, EPOLL_CTL_ADD, efd[i], &ev);
  }
  printf("ep %d efds %d %d %d\n", ep, efd[0], efd[1], efd[2]);

  uint64_t one = 1; /* a count to carry over: the first read below sees it too */
  printf("write before %zd\n", write(efd[0], &one, sizeof one));
  printf("register_eventfd %d\n", io_uring_register_eventfd(&ring, efd[0]));
  show_kind("liburing", efd[0]);
  nops_and_wait(&ring, ep, efd[0], 3, "liburing");
  printf("unregister %d\n", io_uring_unregister_eventfd(&ring));

  r = io_uring_register(ring.ring_fd, IORING_REGISTER_EVENTFD, &efd[1], 1);
  printf("io_uring_register %d\n", r);
  nops_and_wait(&ring, ep, efd[1], 2, "io_uring_register");
  printf("unregister %d\n", io_uring_unregister_eventfd(&ring));

  long s = syscall(SYS_io_uring_register, ring.ring_fd, IORING_REGISTER_EVENTFD, &efd[2], 1);
  printf("syscall %ld\n", s);
  nops_and_wait(&ring, ep, efd[2], 1, "syscall");
  printf("unregister %d\n", io_uring_unregister_eventfd(&ring));

  /* _ASYNC signals only completions that ran asynchronously: only the
   * registration and the descriptor's kind are compared. */
  int efd4 = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  printf("register_eventfd_async %d\n", io_uring_register_eventfd_async(&ring, efd4));
  show_kind("async", efd4);
  printf("unregister %d\n", io_uring_unregister_eventfd(&ring));

  /* Bad input: a closed number, as Linux (EBADF from the kernel). */
  int bad = efd4 + 10;
  printf("register closed fd %d\n", io_uring_register_eventfd(&ring, bad));

  /* Registered files: a pipe written and read by fixed-file SQEs. */
  int p[2];
  if (pipe(p) < 0) return 1;
  printf("register_files %d\n", io_uring_register_files(&ring, p, 2));
  char out[8] = "ringpipe", in[8] = {0};
  struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
  io_uring_prep_write(sqe, 1, out, sizeof out, 0);
  sqe->flags |= IOSQE_FIXED_FILE | IOSQE_IO_LINK;
  sqe->user_data = 201;
  sqe = io_uring_get_sqe(&ring);
  io_uring_prep_read(sqe, 0, in, sizeof in, 0);
  sqe->flags |= IOSQE_FIXED_FILE;
  sqe->user_data = 202;
  printf("files: submit %d\n", io_uring_submit_and_wait(&ring, 2));
  struct io_uring_cqe *cqe;
  while (io_uring_peek_cqe(&ring, &cqe) == 0) {
    printf("files: cqe %llu res %d\n", (unsigned long long)cqe->user_data, cqe->res);
    io_uring_cqe_seen(&ring, cqe);
  }
  printf("files: read %.8s\n", in);
  printf("unregister_files %d\n", io_uring_unregister_files(&ring));

  /* SQEs naming descriptors directly: a pipe written and read, a socket
   * pair's end read, an eventfd read, and a splice from the pipe into the
   * socket pair, each submitted by another of liburing's calls. */
  int q[2], sp[2];
  if (pipe(q) < 0 || socketpair(AF_UNIX, SOCK_STREAM, 0, sp) < 0) return 1;
  const int qe = eventfd(3, EFD_NONBLOCK);
  char qin[8] = {0}, sin[4] = {0};
  uint64_t qv = 0;
  sqe = io_uring_get_sqe(&ring);
  io_uring_prep_write(sqe, q[1], out, sizeof out, 0);
  sqe->flags |= IOSQE_IO_LINK;
  sqe->user_data = 301;
  sqe = io_uring_get_sqe(&ring);
  io_uring_prep_read(sqe, q[0], qin, 4, 0);
  sqe->user_data = 302;
  printf("direct: submit %d\n", io_uring_submit_and_wait(&ring, 2));
  drain_cqes(&ring, "direct");
  sqe = io_uring_get_sqe(&ring);
  io_uring_prep_splice(sqe, q[0], -1, sp[0], -1, 4, 0);
  sqe->user_data = 303;
  struct __kernel_timespec wait = {.tv_sec = 5};
  printf("direct: submit %d\n", io_uring_submit_and_wait_timeout(&ring, &cqe, 1, &wait, NULL));
  drain_cqes(&ring, "direct");
  sqe = io_uring_get_sqe(&ring);
  io_uring_prep_read(sqe, sp[1], sin, sizeof sin, 0);
  sqe->user_data = 304;
  printf("direct: submit %d\n", io_uring_submit(&ring));
  printf("direct: wait %d\n", io_uring_wait_cqe_timeout(&ring, &cqe, &wait));
  drain_cqes(&ring, "direct");
  sqe = io_uring_get_sqe(&ring);
  io_uring_prep_read(sqe, qe, &qv, sizeof qv, 0);
  sqe->user_data = 305;
  printf("direct: submit %d\n", io_uring_submit_and_get_events(&ring));
  printf("direct: wait %d\n", io_uring_wait_cqe_timeout(&ring, &cqe, &wait));
  drain_cqes(&ring, "direct");
  printf("direct: read %.4s, spliced %.4s, eventfd %llu\n", qin, sin, (unsigned long long)qv);

  /* An epoll instance polled by an SQE (its eventfd written after the
   * submission), then read by an SQE (EINVAL, as a read of any epoll), and
   * the instance still reports its event to epoll_wait. */
  int pep = epoll_create1(0), pev = eventfd(0, EFD_NONBLOCK);
  struct epoll_event pe = {.events = EPOLLIN, .data.u64 = 77};
  if (pep < 0 || pev < 0 || epoll_ctl(pep, EPOLL_CTL_ADD, pev, &pe) < 0) return 1;
  sqe = io_uring_get_sqe(&ring);
  io_uring_prep_poll_add(sqe, pep, POLLIN);
  sqe->user_data = 401;
  printf("epoll: submit %d\n", io_uring_submit(&ring));
  drain_cqes(&ring, "epoll");
  if (write(pev, &one, sizeof one) != sizeof one) return 1;
  printf("epoll: wait %d\n", io_uring_wait_cqe_timeout(&ring, &cqe, &wait));
  drain_cqes(&ring, "epoll");
  char junk[16];
  sqe = io_uring_get_sqe(&ring);
  io_uring_prep_read(sqe, pep, junk, sizeof junk, 0);
  sqe->user_data = 402;
  printf("epoll: submit %d\n", io_uring_submit_and_wait(&ring, 1));
  drain_cqes(&ring, "epoll");
  struct epoll_event got_ev;
  const int pn = epoll_wait(pep, &got_ev, 1, 0);
  printf("epoll: epoll_wait %d data %llu\n", pn, pn > 0 ? (unsigned long long)got_ev.data.u64 : 0ULL);

  /* Epoll instances among registered files: registered with a pipe end by
   * io_uring_register_files and polled by a fixed-file SQE (its eventfd
   * written after the submission), then put at index 0 by
   * syscall(SYS_io_uring_register, IORING_REGISTER_FILES_UPDATE), an
   * instance with an event already, polled the same way.  The program's
   * arrays keep naming the instances. */
  int rep = epoll_create1(0), rev = eventfd(0, EFD_NONBLOCK);
  int rep2 = epoll_create1(0), rev2 = eventfd(1, EFD_NONBLOCK);
  struct epoll_event re = {.events = EPOLLIN};
  if (rep < 0 || rev < 0 || epoll_ctl(rep, EPOLL_CTL_ADD, rev, &re) < 0) return 1;
  if (rep2 < 0 || rev2 < 0 || epoll_ctl(rep2, EPOLL_CTL_ADD, rev2, &re) < 0) return 1;
  int rfiles[2] = {p[0], rep};
  printf("files+epoll: register_files %d\n", io_uring_register_files(&ring, rfiles, 2));
  printf("files+epoll: array names the instance %d\n", rfiles[1] == rep);
  sqe = io_uring_get_sqe(&ring);
  io_uring_prep_poll_add(sqe, 1, POLLIN);
  sqe->flags |= IOSQE_FIXED_FILE;
  sqe->user_data = 501;
  printf("files+epoll: submit %d\n", io_uring_submit(&ring));
  drain_cqes(&ring, "files+epoll");
  if (write(rev, &one, sizeof one) != sizeof one) return 1;
  printf("files+epoll: wait %d\n", io_uring_wait_cqe_timeout(&ring, &cqe, &wait));
  drain_cqes(&ring, "files+epoll");
  int ufiles[1] = {rep2};
  struct io_uring_files_update upd = {.offset = 0, .fds = (uint64_t)(uintptr_t)ufiles};
  printf("files+epoll: update %ld\n", syscall(SYS_io_uring_register, ring.ring_fd, IORING_REGISTER_FILES_UPDATE, &upd, 1));
  printf("files+epoll: update names the instance %d\n", ufiles[0] == rep2 && upd.fds == (uint64_t)(uintptr_t)ufiles);
  sqe = io_uring_get_sqe(&ring);
  io_uring_prep_poll_add(sqe, 0, POLLIN);
  sqe->flags |= IOSQE_FIXED_FILE;
  sqe->user_data = 502;
  printf("files+epoll: submit %d\n", io_uring_submit_and_wait(&ring, 1));
  drain_cqes(&ring, "files+epoll");
  printf("files+epoll: unregister_files %d\n", io_uring_unregister_files(&ring));

  /* A timerfd read by an SQE when it expires (blocking: the read waits in
   * the kernel), then, re-armed, as a registered file. */
  const int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
  struct itimerspec its = {.it_value = {.tv_nsec = 20 * 1000 * 1000}};
  uint64_t ticks = 0;
  if (tfd < 0 || timerfd_settime(tfd, 0, &its, NULL) < 0) return 1;
  sqe = io_uring_get_sqe(&ring);
  io_uring_prep_read(sqe, tfd, &ticks, sizeof ticks, 0);
  sqe->user_data = 601;
  printf("timerfd: submit %d\n", io_uring_submit_and_wait(&ring, 1));
  drain_cqes(&ring, "timerfd");
  printf("timerfd: count %llu\n", (unsigned long long)ticks);
  ticks = 0;
  if (timerfd_settime(tfd, 0, &its, NULL) < 0) return 1;
  printf("timerfd: register_files %d\n", io_uring_register_files(&ring, &tfd, 1));
  sqe = io_uring_get_sqe(&ring);
  io_uring_prep_read(sqe, 0, &ticks, sizeof ticks, 0);
  sqe->flags |= IOSQE_FIXED_FILE;
  sqe->user_data = 602;
  printf("timerfd: submit %d\n", io_uring_submit_and_wait(&ring, 1));
  drain_cqes(&ring, "timerfd");
  printf("timerfd: count %llu\n", (unsigned long long)ticks);
  printf("timerfd: unregister_files %d\n", io_uring_unregister_files(&ring));
  io_uring_queue_exit(&ring);
  return 0;
}
