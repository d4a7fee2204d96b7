/*
 * timed_redo.c - a socket call that left a socket pair on its way to the
 * kernel, made again there within the time its SO_RCVTIMEO or SO_SNDTIMEO
 * had left (owned by src/preload/).
 *
 * A call asleep on a uepoll pair when the pair becomes a kernel one (at
 * fork, fork_convert.c) leaves its sleep and is made again on the kernel
 * socket (core/handover.h, UEP_PL_FORWARD_REDO).  A blocking kernel call
 * would start the socket's timeout again from its full length; Linux's
 * call ends when the time it started with has passed.  So a call whose
 * deadline the library reported (uep__moved_left) is made here instead:
 * non-blocking (MSG_DONTWAIT) attempts, each "nothing yet" followed by a
 * ppoll of the socket for the time left.  Linux's answers at the end:
 *   - a receive returns what the first successful attempt got (a stream's
 *     MSG_WAITALL goes on until the buffer is full, end of file, an error
 *     or the deadline, and returns what it has);
 *   - a stream send goes on until every byte is sent, and returns the count
 *     so far at an error or the deadline; a datagram goes whole or not;
 *   - at the deadline with nothing moved: EAGAIN; a signal handler (any:
 *     a socket call with a timeout is not restarted, Linux
 *     sock_intr_errno): EINTR, or the count so far.
 * The real clock is used, as the kernel's socket timeouts are.
 *
 * Locks: none.
 */
#define _GNU_SOURCE
#include "preload/preload.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>

#include "preload/interpose.h"

/* The moved call's deadline (uep__moved_left) as an absolute end: 1, or 0
 * for none. */
static int moved_deadline(struct timespec *end) {
  const struct timespec left = uep__moved_left;
  if (left.tv_sec < 0) return 0;
  UEP_PL_REAL(clock_gettime)(CLOCK_MONOTONIC, end);
  end->tv_sec += left.tv_sec;
  end->tv_nsec += left.tv_nsec;
  if (end->tv_nsec >= 1000000000L) {
    end->tv_nsec -= 1000000000L;
    ++end->tv_sec;
  }
  return 1;
}

int uep_pl_after_move(int fd, struct timespec *end) {
  uep__moved = 0;
  const int timed = moved_deadline(end); /* before anything else runs */
  uep_pl_await_conversion();
  return timed && !uep_pl_map(fd);
}

/* Waits until fd shows `events` or end passes: 0, or -1 with EAGAIN (the
 * deadline) or ppoll's errno (EINTR after a handler). */
static int wait_until(int fd, short events, const struct timespec *end) {
  struct timespec now, left;
  UEP_PL_REAL(clock_gettime)(CLOCK_MONOTONIC, &now);
  left.tv_sec = end->tv_sec - now.tv_sec;
  left.tv_nsec = end->tv_nsec - now.tv_nsec;
  if (left.tv_nsec < 0) {
    left.tv_nsec += 1000000000L;
    --left.tv_sec;
  }
  if (left.tv_sec < 0) return errno = EAGAIN, -1;
  struct pollfd p = {fd, events, 0};
  const int r = UEP_PL_REAL(ppoll)(&p, 1, &left, NULL);
  if (r == 0) return errno = EAGAIN, -1;
  return r < 0 ? -1 : 0;
}

static int is_stream(int fd) {
  int type = 0;
  socklen_t len = sizeof type;
  return UEP_PL_REAL(getsockopt)(fd, SOL_SOCKET, SO_TYPE, &type, &len) == 0 && type == SOCK_STREAM;
}

static size_t iov_total(const struct msghdr *m) {
  size_t n = 0;
  for (size_t i = 0; i < m->msg_iovlen; ++i) n += m->msg_iov[i].iov_len;
  return n;
}

/* m's bytes past `done`, without its name and control data (which went
 * with the first part), in *cur over v. */
static void rest_of(const struct msghdr *m, size_t done, struct msghdr *cur, struct iovec *v) {
  const int n = uep_pl_iov_past(m->msg_iov, (int)m->msg_iovlen, done, v, UIO_MAXIOV);
  *cur = (struct msghdr){.msg_iov = v, .msg_iovlen = n > 0 ? (size_t)n : 0};
}

/* The count so far, or -1 with errno when nothing moved. */
static ssize_t so_far(size_t done) { return done ? (ssize_t)done : -1; }

/* Attempts until a receive gets something (a stream's MSG_WAITALL: all),
 * or a send has sent everything (a stream) or its message. */
static ssize_t timed_msg(int fd, struct msghdr *m, int flags, const struct timespec *end, int send) {
  const int whole = is_stream(fd) && (send || ((flags & MSG_WAITALL) && !(flags & MSG_PEEK)));
  const size_t total = iov_total(m);
  size_t done = 0;
  struct iovec v[UIO_MAXIOV];
  for (;;) {
    struct msghdr cur, *use = m;
    if (done) {
      rest_of(m, done, &cur, v);
      use = &cur;
    }
    ssize_t r = send ? UEP_PL_REAL(sendmsg)(fd, use, flags | MSG_DONTWAIT)
                     : UEP_PL_REAL(recvmsg)(fd, use, (flags & ~MSG_WAITALL) | MSG_DONTWAIT);
    if (r > 0) {
      done += (size_t)r;
      if (!whole || done >= total) return (ssize_t)done;
      continue;
    }
    if (r == 0) return (ssize_t)done; /* end of file; an empty message */
    if (errno != EAGAIN || (flags & MSG_DONTWAIT)) return so_far(done);
    if (wait_until(fd, send ? POLLOUT : POLLIN, end) < 0) return so_far(done);
  }
}

ssize_t uep_pl_timed_recvmsg(int fd, struct msghdr *m, int flags, const struct timespec *end) {
  return timed_msg(fd, m, flags, end, 0);
}

ssize_t uep_pl_timed_sendmsg(int fd, const struct msghdr *m, int flags, const struct timespec *end) {
  return timed_msg(fd, (struct msghdr *)m, flags, end, 1);
}

ssize_t uep_pl_timed_recv(int fd, void *buf, size_t len, int flags, const struct timespec *end) {
  struct iovec io = {buf, len};
  struct msghdr m = {.msg_iov = &io, .msg_iovlen = 1};
  return uep_pl_timed_recvmsg(fd, &m, flags, end);
}

ssize_t uep_pl_timed_send(int fd, const void *buf, size_t len, int flags, const struct timespec *end) {
  struct iovec io = {(void *)buf, len};
  struct msghdr m = {.msg_iov = &io, .msg_iovlen = 1};
  return uep_pl_timed_sendmsg(fd, &m, flags, end);
}

ssize_t uep_pl_sendmsg_rest_timed(int fd, const struct msghdr *m, int flags, size_t done, const struct timespec *end) {
  struct iovec v[UIO_MAXIOV];
  struct msghdr cur;
  rest_of(m, done, &cur, v);
  return uep_pl_timed_sendmsg(fd, &cur, flags, end);
}
