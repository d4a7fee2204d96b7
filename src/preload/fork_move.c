/*
 * fork_move.c - the byte and message moves of the fork conversion
 * (fork_convert.c, step 2; owned by src/preload/): what is queued in a
 * uepoll pipe or socket pair is read from it and written, in order, to the
 * kernel object that replaces it.  A socket's queued descriptors go with
 * their bytes, made passable over a kernel socket first (a uepoll pipe,
 * pair, eventfd or timerfd among them is converted before it; an epoll
 * instance is dropped, said once).
 *
 * Locks: none of its own; uepoll's calls take theirs.
 */
#define _GNU_SOURCE
#include "preload/preload.h"

#include <uepoll/uepoll.h>

#include "capi/preload_support.h"
#include "preload/interpose.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

/* Writes all len bytes at p to kernel descriptor fd (retrying after EINTR
 * and a short write); -1 on an error. */
static int write_all(int fd, const char *p, size_t len) {
  while (len) {
    ssize_t w = UEP_PL_REAL(write)(fd, p, len);
    if (w < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    p += w;
    len -= (size_t)w;
  }
  return 0;
}

/* Moves what is queued for reading at uepoll descriptor u (FIONREAD) to
 * kernel descriptor k, one read at a time (a read of an O_DIRECT pipe gives
 * one packet, written as one). */
int uep_pl_move_queued(int u, int k) {
  enum { kChunk = 65536 };
  int avail = 0;
  if (uep_ioctl(u, FIONREAD, &avail) < 0 || avail <= 0) return 0; /* nothing queued: no buffer */
  char *buf = malloc(kChunk);
  if (!buf) return -1;
  int rc = 0;
  do {
    ssize_t r = uep_read(u, buf, avail < kChunk ? (size_t)avail : kChunk);
    if (r <= 0) break; /* another thread took them, or an error is pending */
    if (write_all(k, buf, (size_t)r) < 0) {
      rc = -1;
      break;
    }
    avail = 0;
  } while (uep_ioctl(u, FIONREAD, &avail) == 0 && avail > 0);
  free(buf);
  return rc;
}

/* A number a received message gave (fds below): a kernel descriptor, or a
 * uepoll one shown under it; closed either way. */
static void drop_number(int n) {
  const int u = uep_pl_unbind(n);
  if (u) uep_close(u);
  UEP_PL_REAL(close)(n);
}

/* The descriptors of the SCM_RIGHTS message in m (at most max), made
 * passable over a kernel socket: a uepoll pipe or pair becomes a kernel
 * one (its own group converted first), an eventfd or timerfd too
 * (uep_pl_hand_to_kernel_inside); an epoll instance cannot be and is
 * dropped, said once.  Returns the count kept in out. */
static int kernel_passable(struct msghdr *m, int *out, int max) {
  int n = 0;
  for (struct cmsghdr *c = CMSG_FIRSTHDR(m); c; c = CMSG_NXTHDR(m, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const size_t cnt = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < cnt && n < max; ++i) {
      int fd;
      memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
      uep_pl_hand_to_kernel_inside(fd); /* kernel_operands.c */
      if (uep_pl_map(fd)) {
        uep_pl_refuse("fork(): a uepoll descriptor in flight over a uepoll socket pair (an epoll instance, a "
                      "virtual-clock timerfd, or a pair carrying itself) cannot go into the kernel pair the fork "
                      "makes of it: dropped");
        drop_number(fd);
        continue;
      }
      out[n++] = fd;
    }
  }
  return n;
}

/* The buffer of one receive's control messages: its credentials and as many
 * descriptors as one message carries (SCM_MAX_FD). */
enum { kMaxFd = 253 };
union rights_buf {
  char b[CMSG_SPACE(sizeof(struct ucred)) + CMSG_SPACE(kMaxFd * sizeof(int))];
  struct cmsghdr align;
};

/* Makes w carry fds[0..nfds) as one SCM_RIGHTS message in ctl (none when
 * nfds is 0). */
static void put_rights(struct msghdr *w, union rights_buf *ctl, const int *fds, int nfds) {
  if (!nfds) return;
  w->msg_control = ctl->b;
  w->msg_controllen = CMSG_SPACE(nfds * sizeof(int));
  struct cmsghdr *c = CMSG_FIRSTHDR(w);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(nfds * sizeof(int));
  memcpy(CMSG_DATA(c), fds, nfds * sizeof(int));
}

/* move_queued for a socket: each receive ends where Linux's does (after
 * bytes that carried files, or at out-of-band data), and its files go
 * with those bytes through the kernel peer k.  An out-of-band byte not yet
 * read is sent with MSG_OOB where it stood, so the kernel socket has the
 * same mark (a byte already read with MSG_OOB is not made again: a kernel
 * read no longer stops where it was). */
int uep_pl_move_queued_socket(int u, int k) {
  enum { kChunk = 65536 };
  char *buf = malloc(kChunk);
  union rights_buf ctl;
  int fds[kMaxFd];
  if (!buf) return -1;
  int rc = 0;
  for (;;) {
    int avail = 0, at_mark = 0;
    char oob;
    if (uep_ioctl(u, SIOCATMARK, &at_mark) == 0 && at_mark && uep_recv(u, &oob, 1, MSG_OOB | MSG_DONTWAIT) == 1) {
      if (UEP_PL_REAL(send)(k, &oob, 1, MSG_OOB | MSG_DONTWAIT | MSG_NOSIGNAL) != 1) {
        rc = -1;
        break;
      }
      continue;
    }
    if (uep_ioctl(u, FIONREAD, &avail) < 0 || avail <= 0) break;
    struct iovec iov = {buf, avail < kChunk ? (size_t)avail : kChunk};
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.b, .msg_controllen = sizeof ctl.b};
    ssize_t r = uep_recvmsg(u, &m, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    if (r <= 0) break; /* another thread took them, or an error is pending */
    const int nfds = m.msg_controllen ? kernel_passable(&m, fds, kMaxFd) : 0;
    size_t off = 0;
    while (off < (size_t)r) {
      struct iovec out = {buf + off, (size_t)r - off};
      struct msghdr w = {.msg_iov = &out, .msg_iovlen = 1};
      if (off == 0) put_rights(&w, &ctl, fds, nfds);
      ssize_t s = UEP_PL_REAL(sendmsg)(k, &w, MSG_DONTWAIT | MSG_NOSIGNAL);
      if (s < 0 && errno == EINTR) continue;
      if (s <= 0) {
        rc = -1;
        break;
      }
      off += (size_t)s;
    }
    for (int i = 0; i < nfds; ++i) drop_number(fds[i]);
    if (rc < 0) break;
  }
  free(buf);
  return rc;
}

/* Moves the n messages queued at uepoll descriptor u of a datagram or
 * seqpacket pair to kernel descriptor k, one send per message (boundaries
 * and zero-length messages kept, each with the descriptors it carries). */
int uep_pl_move_messages(int u, long n, int k) {
  enum { kMax = 1 << 23 }; /* above any sk_sndbuf (2 * wmem_max) a message can fill */
  char *buf = malloc(kMax);
  union rights_buf ctl;
  int fds[kMaxFd];
  if (!buf) return -1;
  int rc = 0;
  for (long i = 0; i < n; ++i) {
    struct iovec iov = {buf, kMax};
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.b, .msg_controllen = sizeof ctl.b};
    ssize_t r = uep_recvmsg(u, &m, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    if (r < 0) break; /* another thread took them, or an error is pending */
    const int nfds = m.msg_controllen ? kernel_passable(&m, fds, kMaxFd) : 0;
    struct iovec out = {buf, (size_t)r};
    struct msghdr w = {.msg_iov = &out, .msg_iovlen = 1};
    put_rights(&w, &ctl, fds, nfds);
    const ssize_t s = UEP_PL_REAL(sendmsg)(k, &w, MSG_DONTWAIT);
    for (int j = 0; j < nfds; ++j) drop_number(fds[j]);
    if (s != r) {
      rc = -1;
      break;
    }
  }
  free(buf);
  return rc;
}
