/*
 * interpose_net.c - libuepoll-preload.so's interposers for poll/select,
 * the socket calls, and the calls uepoll does not implement on
 * its descriptors (owned by src/preload/; see interpose_fd.c for the rules).
 *
 * Calls uepoll cannot serve on a uepoll descriptor get Linux's answer when
 * Linux has a fixed one for that object type (mmap: ENODEV; fsync,
 * ftruncate: EINVAL; listen/accept/connect on a connected pair: EINVAL,
 * EINVAL, EISCONN; isatty: ENOTTY, or EINVAL for an epoll instance);
 * flock is uepoll's (uep_flock); bind on a pair is an error with a
 * one-line warning (interpose_sock.c); splice and its kind are
 * interpose_splice.c's; fstatfs is answered for a kernel object of the
 * type (interpose_kinds.c).  Anything else reaches the
 * kernel with the placeholder descriptor (fdmap.h), which answers EBADF.
 * syscall(2) is interpose_syscall.c's.
 * socket, bind, listen, accept, accept4 and connect on a provider's socket
 * are interpose_sock.c's.
 *
 * Locks: none.
 */
#define _GNU_SOURCE
#include "preload/preload.h"

#include <uepoll/uepoll.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/timerfd.h>
#include <termios.h>
#include <unistd.h>

#include "capi/preload_support.h"
#include "preload/interpose.h"

/* ---- poll and select ------------------------------------------------------------ */
/* Runs `call` on a copy of fds with uepoll descriptors translated, then
 * copies revents back.  Only when some entry is a uepoll descriptor, or on
 * the virtual clock (uep_pl_vt_mode, interpose_time.c) for the program's
 * calls: then a poll of kernel descriptors only is a uepoll wait too, so its
 * timeout is virtual and it counts as asleep for automatic mode. */
static int any_mapped(const struct pollfd *fds, nfds_t n) {
  if (!fds) return 0;
  for (nfds_t i = 0; i < n; ++i)
    if (uep_pl_map(fds[i].fd)) return 1;
  return 0;
}

/* translated_poll's answer when it left a file handed over to the kernel
 * (core/handover.h): its caller polls again, with the time left, once the
 * conversion is done (the number then shows the kernel object). */
enum { kPollMoved = -2 };

static int translated_poll(struct pollfd *fds, nfds_t n, const struct timespec *tmo, const sigset_t *mask,
                           int timeout_ms, int is_ppoll) {
  struct pollfd small[64];
  struct pollfd *t = n <= 64 ? small : malloc(n * sizeof *t);
  if (!t) {
    errno = ENOMEM;
    return -1;
  }
  for (nfds_t i = 0; i < n; ++i) {
    t[i] = fds[i];
    int u = uep_pl_map(fds[i].fd);
    if (u) t[i].fd = u;
  }
  UEP_PL_ENTER();
  ++uep__movable;
  int r = is_ppoll ? uep_ppoll(t, n, tmo, mask) : uep_poll(t, n, timeout_ms);
  int e = errno;
  --uep__movable;
  UEP_PL_LEAVE();
  const int moved = uep__moved;
  uep__moved = 0;
  for (nfds_t i = 0; i < n; ++i) fds[i].revents = t[i].revents;
  if (t != small) free(t);
  uep_pl_count(UEP_PL_UEPOLL_CALL, 1);
  if (moved && r < 0) {
    uep_pl_await_conversion();
    return kPollMoved;
  }
  errno = e;
  return r;
}

static int virtual_wait(void) { return uep_pl_vt_mode && !uep_pl_inside(); }

/* A poll that left a file handed over to the kernel is made again with the
 * time it had left (uep__moved_left, from the library's own deadline). */
static int do_poll(struct pollfd *fds, nfds_t n, int timeout) {
  for (;;) {
    if (!any_mapped(fds, n) && !virtual_wait()) return UEP_PL_REAL(poll)(fds, n, timeout);
    const int r = translated_poll(fds, n, NULL, NULL, timeout, 0);
    if (r != kPollMoved) return r;
    const struct timespec left = uep__moved_left;
    if (timeout > 0 && left.tv_sec >= 0) timeout = (int)(left.tv_sec * 1000 + (left.tv_nsec + 999999) / 1000000);
  }
}

static int do_ppoll(struct pollfd *fds, nfds_t n, const struct timespec *tmo, const sigset_t *mask) {
  struct timespec left;
  for (;;) {
    if (!any_mapped(fds, n) && !virtual_wait()) return UEP_PL_REAL(ppoll)(fds, n, tmo, mask);
    const int r = translated_poll(fds, n, tmo, mask, 0, 1);
    if (r != kPollMoved) return r;
    left = uep__moved_left;
    if (tmo && left.tv_sec >= 0) tmo = &left;
  }
}

int poll(struct pollfd *fds, nfds_t n, int timeout) { return do_poll(fds, n, timeout); }
int ppoll(struct pollfd *fds, nfds_t n, const struct timespec *tmo, const sigset_t *mask) {
  return do_ppoll(fds, n, tmo, mask);
}

extern void __chk_fail(void) __attribute__((noreturn));
int __poll_chk(struct pollfd *fds, nfds_t n, int timeout, size_t fdslen) {
  if (fdslen / sizeof *fds < n) __chk_fail();
  return do_poll(fds, n, timeout);
}
int __ppoll_chk(struct pollfd *fds, nfds_t n, const struct timespec *tmo, const sigset_t *mask, size_t fdslen) {
  if (fdslen / sizeof *fds < n) __chk_fail();
  return do_ppoll(fds, n, tmo, mask);
}

/* select/pselect over sets that name uepoll descriptors (shown at ordinary
 * numbers, so they fit in an fd_set): one poll with Linux's select bits
 * (POLLIN_SET, POLLOUT_SET, POLLEX_SET of fs/select.c). */
static int select_mapped(int nfds, fd_set *r, fd_set *w, fd_set *x) {
  for (int fd = 0; fd < nfds && fd < FD_SETSIZE; ++fd)
    if (((r && FD_ISSET(fd, r)) || (w && FD_ISSET(fd, w)) || (x && FD_ISSET(fd, x))) && uep_pl_map(fd)) return 1;
  return 0;
}

static int select_by_poll(int nfds, fd_set *r, fd_set *w, fd_set *x, const struct timespec *tmo, const sigset_t *mask) {
  if (nfds > FD_SETSIZE) nfds = FD_SETSIZE;
  struct pollfd p[FD_SETSIZE];
  nfds_t n = 0;
  for (int fd = 0; fd < nfds; ++fd) {
    short ev = 0;
    if (r && FD_ISSET(fd, r)) ev |= POLLIN | POLLRDNORM | POLLRDBAND | POLLHUP | POLLERR;
    if (w && FD_ISSET(fd, w)) ev |= POLLOUT | POLLWRNORM | POLLWRBAND | POLLERR;
    if (x && FD_ISSET(fd, x)) ev |= POLLPRI;
    if (ev) p[n++] = (struct pollfd){fd, ev, 0};
  }
  int rc = do_ppoll(p, n, tmo, mask);
  if (rc < 0) return rc;
  for (nfds_t i = 0; i < n; ++i)
    if (p[i].revents & POLLNVAL) {
      errno = EBADF;
      return -1;
    }
  int count = 0;
  for (nfds_t i = 0; i < n; ++i) {
    int fd = p[i].fd;
    short re = p[i].revents;
    if (r && FD_ISSET(fd, r)) {
      if (re & (POLLIN | POLLRDNORM | POLLRDBAND | POLLHUP | POLLERR)) ++count;
      else FD_CLR(fd, r);
    }
    if (w && FD_ISSET(fd, w)) {
      if (re & (POLLOUT | POLLWRNORM | POLLWRBAND | POLLERR)) ++count;
      else FD_CLR(fd, w);
    }
    if (x && FD_ISSET(fd, x)) {
      if (re & POLLPRI) ++count;
      else FD_CLR(fd, x);
    }
  }
  return count;
}

int select(int nfds, fd_set *r, fd_set *w, fd_set *x, struct timeval *tv) {
  if (nfds < 0 || (!select_mapped(nfds, r, w, x) && !virtual_wait())) return UEP_PL_REAL(select)(nfds, r, w, x, tv);
  struct timespec ts, *tp = NULL;
  if (tv) {
    if (tv->tv_sec < 0 || tv->tv_usec < 0 || tv->tv_usec >= 1000000) {
      errno = EINVAL;
      return -1;
    }
    ts.tv_sec = tv->tv_sec;
    ts.tv_nsec = tv->tv_usec * 1000;
    tp = &ts;
  }
  return select_by_poll(nfds, r, w, x, tp, NULL);
}

int pselect(int nfds, fd_set *r, fd_set *w, fd_set *x, const struct timespec *tmo, const sigset_t *mask) {
  if (nfds < 0 || (!select_mapped(nfds, r, w, x) && !virtual_wait())) return UEP_PL_REAL(pselect)(nfds, r, w, x, tmo, mask);
  return select_by_poll(nfds, r, w, x, tmo, mask);
}

/* ---- sockets -------------------------------------------------------------------- */
/* A call left with its socket timeout running goes on within it, and so
 * does the rest of one that had moved part (timed_redo.c): the rests below
 * take that deadline, or NULL. */
static ssize_t send_rest(int fd, const void *buf, size_t len, int flags, ssize_t done, const struct timespec *end) {
  const char *p = (const char *)buf + done;
  return end ? uep_pl_timed_send(fd, p, len - (size_t)done, flags, end) : send(fd, p, len - (size_t)done, flags);
}
static ssize_t recv_rest(int fd, void *buf, size_t len, int flags, ssize_t done, const struct timespec *end) {
  char *p = (char *)buf + done;
  return end ? uep_pl_timed_recv(fd, p, len - (size_t)done, flags, end) : recv(fd, p, len - (size_t)done, flags);
}
ssize_t send(int fd, const void *buf, size_t len, int flags) {
  UEP_PL_FORWARD_REDO(fd, send, (u, buf, len, flags), send, (fd, buf, len, flags),
                      if (uep_timed_) return uep_pl_timed_send(fd, buf, len, flags, &uep_end_); continue,
                      return uep_pl_plus_rest(r_, send_rest(fd, buf, len, flags, r_, UEP_PL_MOVED_END())));
}
ssize_t recv(int fd, void *buf, size_t len, int flags) {
  /* A partial count left by a hand-over: MSG_WAITALL's rest (not a peek). */
  UEP_PL_FORWARD_REDO(fd, recv, (u, buf, len, flags), recv, (fd, buf, len, flags),
                      if (uep_timed_) return uep_pl_timed_recv(fd, buf, len, flags, &uep_end_); continue,
                      if (!(flags & MSG_PEEK))
                        return uep_pl_plus_rest(r_, recv_rest(fd, buf, len, flags, r_, UEP_PL_MOVED_END())));
}
static ssize_t timed_sendto(int fd, const void *buf, size_t len, int flags, const struct sockaddr *a, socklen_t alen,
                            const struct timespec *end) {
  struct iovec io = {(void *)buf, len};
  struct msghdr m = {.msg_name = (void *)a, .msg_namelen = a ? alen : 0, .msg_iov = &io, .msg_iovlen = 1};
  return uep_pl_timed_sendmsg(fd, &m, flags, end);
}
static ssize_t sendto_rest(int fd, const void *buf, size_t len, int flags, const struct sockaddr *a, socklen_t alen,
                           ssize_t done, const struct timespec *end) {
  const char *p = (const char *)buf + done;
  const size_t n = len - (size_t)done;
  return end ? timed_sendto(fd, p, n, flags, a, alen, end) : sendto(fd, p, n, flags, a, alen);
}
static ssize_t timed_recvfrom(int fd, void *buf, size_t len, int flags, struct sockaddr *a, socklen_t *alen,
                              const struct timespec *end) {
  struct iovec io = {buf, len};
  struct msghdr m = {.msg_name = a, .msg_namelen = a && alen ? *alen : 0, .msg_iov = &io, .msg_iovlen = 1};
  const ssize_t r = uep_pl_timed_recvmsg(fd, &m, flags, end);
  if (r >= 0 && a && alen) *alen = m.msg_namelen;
  return r;
}
/* A datagram pair end with SO_PASSCRED sending to a name: made a kernel
 * pair end first (dgram_named.c), so that Linux autobinds it. */
ssize_t sendto(int fd, const void *buf, size_t len, int flags, const struct sockaddr *a, socklen_t alen) {
  if (a && uep_pl_map(fd)) (void)uep_pl_dgram_named_sendto(fd, a, alen);
  UEP_PL_FORWARD_REDO(fd, sendto, (u, buf, len, flags, a, alen), sendto, (fd, buf, len, flags, a, alen),
                      if (uep_timed_) return timed_sendto(fd, buf, len, flags, a, alen, &uep_end_); continue,
                      return uep_pl_plus_rest(r_, sendto_rest(fd, buf, len, flags, a, alen, r_, UEP_PL_MOVED_END())));
}
ssize_t recvfrom(int fd, void *buf, size_t len, int flags, struct sockaddr *a, socklen_t *alen) {
  UEP_PL_FORWARD_REDO(fd, recvfrom, (u, buf, len, flags, a, alen), recvfrom, (fd, buf, len, flags, a, alen),
                      if (uep_timed_) return timed_recvfrom(fd, buf, len, flags, a, alen, &uep_end_); continue,
                      (void)0);
}
/* SCM_RIGHTS over a kernel socket: a uepoll pipe, socket pair, eventfd or
 * timerfd named in it becomes a kernel one first (kernel_operands.c), so
 * that the receiver gets the object; an epoll instance (or a timer on the
 * virtual clock, a pipe a thread is blocked on) would reach the kernel as
 * its placeholder: said once. */
static int plausible(const void *p) { return (uintptr_t)p >= 4096 && (uintptr_t)p < 0x00007ffffffff000ULL; }

void uep_pl_kernel_rights(const struct msghdr *m) {
  /* A bad pointer is the kernel's to answer (EFAULT): only plausible ones
   * are looked at, and only when uepoll shows descriptors at all. */
  if (uep_pl_inside() || !uep_pl_high_water() || !plausible(m) || !plausible(m->msg_control) ||
      m->msg_controllen < sizeof(struct cmsghdr))
    return;
  for (struct cmsghdr *c = CMSG_FIRSTHDR((struct msghdr *)m); c; c = CMSG_NXTHDR((struct msghdr *)m, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS || c->cmsg_len < CMSG_LEN(0)) continue;
    const size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < n; ++i) {
      int fd;
      memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
      if (!uep_pl_map(fd)) continue;
      uep_pl_hand_to_kernel(fd);
      if (uep_pl_map(fd))
        uep_pl_refuse("sendmsg(SCM_RIGHTS) of a uepoll epoll instance (or a busy pipe, a virtual-clock timerfd) over "
                      "a kernel socket: the receiver gets a placeholder (UEPOLL_PRELOAD_KINDS can keep that kind in "
                      "the kernel)");
    }
  }
}

/* sendmsg of what a hand-over left unsent (UEP_PL_FORWARD_REDO, sendmmsg):
 * the bytes only, the control data went with the first part (a stream's);
 * within `end` if there is one. */
ssize_t uep_pl_sendmsg_rest(int fd, const struct msghdr *m, int flags, size_t done, const struct timespec *end) {
  if (end) return uep_pl_sendmsg_rest_timed(fd, m, flags, done, end);
  struct iovec v[UIO_MAXIOV];
  const int n = uep_pl_iov_past(m->msg_iov, (int)m->msg_iovlen, done, v, UIO_MAXIOV);
  if (n <= 0) return n;
  struct msghdr rest = {.msg_iov = v, .msg_iovlen = (size_t)n};
  return sendmsg(fd, &rest, flags);
}

/* A datagram pair end's control data to a name: the pair is made a kernel
 * one first (dgram_named.c), then this is a kernel socket's sendmsg. */
ssize_t sendmsg(int fd, const struct msghdr *m, int flags) {
  ssize_t r;
  if (uep_pl_map(fd) && uep_pl_dgram_named_sendmsg(fd, m, flags, &r)) return r;
  if (!uep_pl_map(fd)) uep_pl_kernel_rights(m);
  UEP_PL_FORWARD_REDO(fd, sendmsg, (u, m, flags), sendmsg, (fd, m, flags),
                      if (uep_timed_) {
                        uep_pl_kernel_rights(m);
                        return uep_pl_timed_sendmsg(fd, m, flags, &uep_end_);
                      } return sendmsg(fd, m, flags),
                      return uep_pl_plus_rest(r_, uep_pl_sendmsg_rest(fd, m, flags, (size_t)r_, UEP_PL_MOVED_END())));
}
ssize_t recvmsg(int fd, struct msghdr *m, int flags) {
  UEP_PL_FORWARD_REDO(fd, recvmsg, (u, m, flags), recvmsg, (fd, m, flags),
                      if (uep_timed_) return uep_pl_timed_recvmsg(fd, m, flags, &uep_end_); continue,
                      (void)0);
}
ssize_t __recv_chk(int fd, void *buf, size_t len, size_t buflen, int flags) {
  if (len > buflen) __chk_fail();
  return recv(fd, buf, len, flags);
}
ssize_t __recvfrom_chk(int fd, void *buf, size_t len, size_t buflen, int flags, struct sockaddr *a, socklen_t *alen) {
  if (len > buflen) __chk_fail();
  return recvfrom(fd, buf, len, flags, a, alen);
}
int getsockopt(int fd, int level, int name, void *val, socklen_t *len) {
  UEP_PL_FORWARD2(fd, getsockopt, (u, level, name, val, len), getsockopt, (fd, level, name, val, len));
}
int setsockopt(int fd, int level, int name, const void *val, socklen_t len) {
  UEP_PL_FORWARD2(fd, setsockopt, (u, level, name, val, len), setsockopt, (fd, level, name, val, len));
}
int getsockname(int fd, struct sockaddr *a, socklen_t *len) {
  UEP_PL_FORWARD2(fd, getsockname, (u, a, len), getsockname, (fd, a, len));
}
int getpeername(int fd, struct sockaddr *a, socklen_t *len) {
  UEP_PL_FORWARD2(fd, getpeername, (u, a, len), getpeername, (fd, a, len));
}
int shutdown(int fd, int how) { UEP_PL_FORWARD2(fd, shutdown, (u, how), shutdown, (fd, how)); }

/* ---- calls uepoll does not implement --------------------------------------------- */
/* Linux do_mmap on a file without ->mmap (pipes, sockets, anonymous
 * inodes): the open mode is checked first (EACCES), then ENODEV. */
static int mmap_errno(int fd, int prot, int flags) {
  UEP_PL_ENTER();
  int fl = uep_fcntl(uep_pl_map(fd), F_GETFL);
  UEP_PL_LEAVE();
  int acc = fl < 0 ? O_RDWR : (fl & O_ACCMODE);
  int readable = acc == O_RDONLY || acc == O_RDWR, writable = acc == O_WRONLY || acc == O_RDWR;
  if (!readable) return EACCES;
  if ((flags & MAP_TYPE) != MAP_PRIVATE && (prot & PROT_WRITE) && !writable) return EACCES;
  return ENODEV;
}

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
  if (!(flags & MAP_ANONYMOUS) && uep_pl_map(fd)) {
    errno = mmap_errno(fd, prot, flags);
    return MAP_FAILED;
  }
  return UEP_PL_REAL(mmap)(addr, len, prot, flags, fd, off);
}
void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off64_t off) {
  if (!(flags & MAP_ANONYMOUS) && uep_pl_map(fd)) {
    errno = mmap_errno(fd, prot, flags);
    return MAP_FAILED;
  }
  return UEP_PL_REAL(mmap64)(addr, len, prot, flags, fd, off);
}

int fsync(int fd) {
  if (uep_pl_map(fd)) return errno = EINVAL, -1;
  return UEP_PL_REAL(fsync)(fd);
}
int fdatasync(int fd) {
  if (uep_pl_map(fd)) return errno = EINVAL, -1;
  return UEP_PL_REAL(fdatasync)(fd);
}
int ftruncate(int fd, off_t len) {
  if (uep_pl_map(fd)) return errno = EINVAL, -1;
  return UEP_PL_REAL(ftruncate)(fd, len);
}
int ftruncate64(int fd, off64_t len) {
  if (uep_pl_map(fd)) return errno = EINVAL, -1;
  return UEP_PL_REAL(ftruncate64)(fd, len);
}
int isatty(int fd) {
  if (uep_pl_map(fd)) { /* glibc: tcgetattr (ENOTTY; EINVAL for an epoll instance: interpose_libc.c) */
    struct termios t;
    return tcgetattr(fd, &t) == 0;
  }
  return UEP_PL_REAL(isatty)(fd);
}

/* pipefs, sockfs or anon_inodefs, as Linux says (interpose_kinds.c). */
int fstatfs(int fd, struct statfs *st) { return uep_pl_fstatfs(fd, st); }
int fstatfs64(int fd, struct statfs64 *st) { return uep_pl_fstatfs64(fd, st); }
/* Linux's locks, kept by the kernel on the object's lock descriptor
 * (uep_flock; core/file.h). */
int flock(int fd, int op) { UEP_PL_FORWARD2(fd, flock, (u, op), flock, (fd, op)); }

/* ---- stdio on a uepoll descriptor: a FILE whose I/O goes through uepoll ---------- */
static ssize_t cookie_read(void *c, char *buf, size_t n) { return read((int)(intptr_t)c, buf, n); }
static ssize_t cookie_write(void *c, const char *buf, size_t n) { return write((int)(intptr_t)c, buf, n); }
static int cookie_seek(void *c, off64_t *pos, int whence) {
  (void)c;
  (void)pos;
  (void)whence;
  errno = ESPIPE;
  return -1;
}
static int cookie_close(void *c) { return close((int)(intptr_t)c); }

FILE *fdopen(int fd, const char *mode) {
  if (!uep_pl_map(fd)) return UEP_PL_REAL(fdopen)(fd, mode);
  cookie_io_functions_t io = {cookie_read, cookie_write, cookie_seek, cookie_close};
  return fopencookie((void *)(intptr_t)fd, mode, io);
}

/* ---- closing ranges ---------------------------------------------------------------- */
static void close_mapped(unsigned first, unsigned last) {
  unsigned hw = (unsigned)uep_pl_high_water();
  for (unsigned n = first; n <= last && n < hw; ++n) {
    int u = uep_pl_unbind((int)n);
    if (u) {
      UEP_PL_ENTER();
      uep_close(u);
      UEP_PL_LEAVE();
    }
  }
}

/* uepoll's own descriptors in the range are skipped (interpose_own.c). */
int close_range(unsigned int first, unsigned int last, int flags) {
  if (!(flags & CLOSE_RANGE_CLOEXEC)) close_mapped(first, last);
  return uep_pl_close_range_sparing(first, last, flags);
}

void closefrom(int lowfd) {
  const unsigned first = lowfd < 0 ? 0 : (unsigned)lowfd; /* glibc: a negative lowfd is 0 */
  close_mapped(first, ~0u);
  if (uep_pl_close_range_sparing(first, ~0u, 0) < 0) UEP_PL_REAL(closefrom)(lowfd);
}

/* ---- fork ---------------------------------------------------------------------------- */
/* fork(), vfork() and posix_spawn[p]() turn uepoll pipes and socket pairs
 * into kernel ones first (fork_convert.c).  What is left after that (an
 * object a thread was blocked on, or a fork libc makes internally, as
 * daemon() does) is a copy in the child.  A copy an exec would pass on
 * (not close-on-exec) is said at once in the child.  A close-on-exec one
 * differs from Linux only once the child uses it (a thread of a
 * multithreaded parent reading its own pipe while another spawns: the
 * child execs without touching it), so it is marked, and said at its first
 * use (uep_pl_map): any call on the number but closing it, changing its
 * close-on-exec flag or a close_range.  daemon()'s parent exits at once,
 * so its child is the only owner: nothing to say. */
static __thread int in_daemon;

int daemon(int nochdir, int noclose) {
  in_daemon = 1;
  int r = UEP_PL_REAL(daemon)(nochdir, noclose);
  in_daemon = 0;
  return r;
}

static void say_copies(int shared, const char *when) {
  char msg[360];
  snprintf(msg, sizeof msg,
           "fork(): %d uepoll pipe/socket-pair descriptor(s) could not be made kernel ones before the fork "
           "(a thread asleep on them could not leave its call, as while it runs a long signal handler, or "
           "libc forked internally) and are copies in the child%s "
           "(UEPOLL_PRELOAD_KINDS=epoll,eventfd,timerfd keeps pipes and pairs in the kernel)",
           shared, when);
  uep_pl_refuse(msg);
}

void uep_pl_fork_copy_used(int n) {
  if (uep_pl_take_fork_copy(n)) say_copies(1, ", which used one");
}

static void child_after_fork(void) {
  if (in_daemon) return;
  int hw = uep_pl_high_water(), shared = 0;
  for (int n = 0; n < hw; ++n) {
    int k = uep_pl_kind(n);
    const int u = k == UEP_PL_PIPE || k == UEP_PL_SOCKET ? uep_pl_map_quiet(n) : 0;
    if (!u) continue;
    UEP_PL_ENTER();
    const int fdfl = uep_fcntl(u, F_GETFD);
    UEP_PL_LEAVE();
    if (fdfl < 0 || !(fdfl & FD_CLOEXEC) || !uep_pl_mark_fork_copy(n)) ++shared;
  }
  if (shared) say_copies(shared, "");
}

/* Descriptor passing over uepoll pairs (capi/preload_support.h): a number
 * the program names is the uepoll descriptor it shows, or a kernel one (a
 * number that is uepoll's own is not the program's: EBADF); a received
 * uepoll descriptor is shown under the lowest free number, in order. */
static int scm_resolve(int n) {
  if (uep__own_fd(n)) return -EBADF;
  const int u = uep_pl_map(n);
  return u ? u : n;
}

static int scm_show(int u, int kind) {
  static const int kinds[] = {UEP_PL_EPOLL, UEP_PL_EVENTFD, UEP_PL_PIPE, UEP_PL_SOCKET, UEP_PL_TIMER, UEP_PL_PROVIDER};
  const int n = uep_pl_bind_new(u, kinds[kind >= 0 && kind <= UEP__SCM_OTHER ? kind : UEP__SCM_OTHER], 0);
  if (n < 0) uep_close(u);
  return n;
}

__attribute__((constructor)) static void register_fork_handler(void) {
  uep__install_fork_handlers(); /* first: child_after_fork uses uepoll's fd table */
  pthread_atfork(NULL, NULL, child_after_fork);
  uep__set_scm_hooks(scm_resolve, scm_show);
}
