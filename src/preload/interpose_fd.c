/*
 * interpose_fd.c - libuepoll-preload.so's interposers for object creation,
 * epoll, and the descriptor calls (owned by src/preload/; fstat and its
 * kind are interpose_stat.c's).  Written in C so
 * that each definition matches glibc's declaration exactly.
 *
 * Every interposer does one of two things:
 *   - the descriptor is one the preload shows for a uepoll object (fdmap.h:
 *     uep_pl_map(n) != 0): call uepoll's function of the same name on the
 *     uepoll descriptor, inside an "in uepoll" section;
 *   - otherwise: call the libc function (dlsym RTLD_NEXT), unchanged.
 * Creation calls (epoll_create*, eventfd, pipe*, socketpair AF_UNIX
 * SOCK_STREAM/SOCK_DGRAM/SOCK_SEQPACKET, timerfd_create) make uepoll objects, except when made by
 * uepoll itself (inside the section: its own kernel eventfds, epolls and
 * timerfds) or when UEPOLL_PRELOAD_KINDS leaves the kind out.
 *
 * Locks: none here.  Thread-safe: the map is lock-free (fdmap.h).
 */
#define _GNU_SOURCE
#include "preload/preload.h"

#include <uepoll/uepoll.h>

#include "capi/preload_support.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/uio.h>
#include <unistd.h>

#include "preload/interpose.h"

__thread int uep_pl_depth;

/* ---- which kinds become uepoll objects ----------------------------------- */
static int kinds_mask = -1; /* bit per UEP_PL_* kind; -1: not parsed yet */

int uep_pl_enabled(int kind) {
  int m = __atomic_load_n(&kinds_mask, __ATOMIC_RELAXED);
  if (m < 0) {
    const char *s = getenv("UEPOLL_PRELOAD_KINDS");
    if (!s || !*s) {
      m = (1 << UEP_PL_NKINDS) - 1;
    } else {
      /* Comma-separated names; uepoll-run refuses anything else, a program
       * preloaded by hand is told once about what is ignored. */
      static const char *names[] = {"", "epoll", "eventfd", "pipe", "socketpair", "timerfd"};
      m = 0;
      int bad = 0;
      for (const char *p = s;; ++p) {
        size_t len = strcspn(p, ",");
        int k = 1;
        while (k < UEP_PL_NKINDS && (strlen(names[k]) != len || strncmp(p, names[k], len) != 0)) ++k;
        if (k < UEP_PL_NKINDS) m |= 1 << k;
        else bad = 1;
        p += len;
        if (!*p) break;
      }
      if (bad) uep_pl_refuse("UEPOLL_PRELOAD_KINDS: unknown or empty kinds ignored "
                             "(known: epoll,eventfd,pipe,socketpair,timerfd)");
    }
    __atomic_store_n(&kinds_mask, m, __ATOMIC_RELAXED);
  }
  return (m >> kind) & 1;
}

/* UEPOLL_PRELOAD_KINDS is read once, at load: a program may replace its
 * environment later (nginx's workers keep only TZ). */
__attribute__((constructor)) static void parse_kinds_at_load(void) { (void)uep_pl_enabled(0); }

/* Shows uepoll descriptor u (>= 0) under a new kernel number; -1 on error. */
int uep_pl_show(int u, int kind) {
  if (u < 0) return -1;
  int n = uep_pl_bind_new(u, kind, 0);
  if (n < 0) {
    uep_close(u);
    errno = -n;
    return -1;
  }
  uep_pl_count_created(kind);
  return n;
}

static int show_pair(int u[2], int out[2], int kind) {
  int a = uep_pl_bind_new(u[0], kind, 0);
  int b = a < 0 ? a : uep_pl_bind_new(u[1], kind, 0);
  if (b < 0) {
    if (a >= 0) {
      uep_pl_unbind(a);
      UEP_PL_REAL(close)(a);
    }
    uep_close(u[0]);
    uep_close(u[1]);
    errno = -b;
    return -1;
  }
  uep_pl_count_created(kind);
  out[0] = a;
  out[1] = b;
  return 0;
}

/* ---- creation ---------------------------------------------------------------- */
/* The library's sleeps on its own kernel epolls (a uepoll instance's
 * shadow epoll) call libc's epoll_pwait and epoll_pwait2 directly, not the
 * interposers below: their descriptor is never a uepoll one, nor a call of
 * the program's.  Set before the first uepoll instance is made (only these
 * two interposers make one; a forked child has its parent's), not at load:
 * a process that makes none pays no look-up.  Every thread stores the same
 * values; the release of the second pairs with the acquire here, so that a
 * thread that finds it set (and the threads it hands its instance to) sees
 * the first. */
static void kernel_sleeps_resolve(void) {
  if (__atomic_load_n(&uep__kernel_epoll_pwait2, __ATOMIC_ACQUIRE)) return;
  __atomic_store_n(&uep__kernel_epoll_pwait, UEP_PL_REAL(epoll_pwait), __ATOMIC_RELAXED);
  __atomic_store_n(&uep__kernel_epoll_pwait2, UEP_PL_REAL(epoll_pwait2), __ATOMIC_RELEASE);
}

int epoll_create(int size) {
  if (uep_pl_inside() || !uep_pl_enabled(UEP_PL_EPOLL)) return UEP_PL_REAL(epoll_create)(size);
  kernel_sleeps_resolve();
  UEP_PL_ENTER();
  int r = uep_pl_show(uep_epoll_create(size), UEP_PL_EPOLL);
  UEP_PL_LEAVE();
  return r;
}

int epoll_create1(int flags) {
  if (uep_pl_inside() || !uep_pl_enabled(UEP_PL_EPOLL)) return UEP_PL_REAL(epoll_create1)(flags);
  kernel_sleeps_resolve();
  UEP_PL_ENTER();
  int r = uep_pl_show(uep_epoll_create1(flags), UEP_PL_EPOLL);
  UEP_PL_LEAVE();
  return r;
}

int eventfd(unsigned int initval, int flags) {
  if (uep_pl_inside() || !uep_pl_enabled(UEP_PL_EVENTFD)) return UEP_PL_REAL(eventfd)(initval, flags);
  UEP_PL_ENTER();
  int r = uep_pl_show(uep_eventfd(initval, flags), UEP_PL_EVENTFD);
  UEP_PL_LEAVE();
  return r;
}

int timerfd_create(int clockid, int flags) {
  if (uep_pl_inside() || !uep_pl_enabled(UEP_PL_TIMER)) return UEP_PL_REAL(timerfd_create)(clockid, flags);
  UEP_PL_ENTER();
  int r = uep_pl_show(uep_timerfd_create(clockid, flags), UEP_PL_TIMER);
  UEP_PL_LEAVE();
  return r;
}

int pipe2(int fds[2], int flags) {
  if (uep_pl_inside() || !uep_pl_enabled(UEP_PL_PIPE)) return UEP_PL_REAL(pipe2)(fds, flags);
  UEP_PL_ENTER();
  int u[2];
  uep_pl_convert_lock(); /* a fork sees the pipe whole or not at all */
  int r = uep_pipe2(u, flags);
  if (r == 0) r = show_pair(u, fds, UEP_PL_PIPE);
  uep_pl_convert_unlock();
  UEP_PL_LEAVE();
  return r;
}

int pipe(int fds[2]) {
  if (uep_pl_inside() || !uep_pl_enabled(UEP_PL_PIPE)) return UEP_PL_REAL(pipe)(fds);
  return pipe2(fds, 0);
}

int socketpair(int domain, int type, int protocol, int sv[2]) {
  /* What uepoll implements: AF_UNIX stream, datagram (SOCK_RAW is one)
   * and seqpacket pairs; anything else stays the kernel's. */
  const int base = type & ~(SOCK_NONBLOCK | SOCK_CLOEXEC);
  if (uep_pl_inside() || !uep_pl_enabled(UEP_PL_SOCKET) || domain != AF_UNIX ||
      (base != SOCK_STREAM && base != SOCK_DGRAM && base != SOCK_SEQPACKET && base != SOCK_RAW))
    return UEP_PL_REAL(socketpair)(domain, type, protocol, sv);
  UEP_PL_ENTER();
  int u[2];
  uep_pl_convert_lock(); /* a fork sees the pair whole or not at all */
  int r = uep_socketpair(domain, type, protocol, u);
  if (r == 0) r = show_pair(u, sv, UEP_PL_SOCKET);
  uep_pl_convert_unlock();
  UEP_PL_LEAVE();
  return r;
}

/* ---- epoll --------------------------------------------------------------------- */
int epoll_ctl(int epfd, int op, int fd, struct epoll_event *event) {
  int ue = uep_pl_map(epfd);
  if (!ue) {
    if (uep_pl_map(fd)) {
      /* A kernel epoll instance (UEPOLL_PRELOAD_KINDS without epoll) cannot
       * watch a uepoll object; the kernel would see the placeholder. */
      uep_pl_refuse("epoll_ctl() of a uepoll descriptor in a kernel epoll instance: not supported (EPERM); "
                    "keep epoll in UEPOLL_PRELOAD_KINDS");
      errno = EPERM;
      return -1;
    }
    uep_pl_count(UEP_PL_FORWARDED, 1);
    return UEP_PL_REAL(epoll_ctl)(epfd, op, fd, event);
  }
  int uf = uep_pl_map(fd);
  UEP_PL_ENTER();
  int r = uep_epoll_ctl(ue, op, uf ? uf : fd, event);
  UEP_PL_LEAVE();
  uep_pl_count(UEP_PL_CTL, 1);
  if (r == 0 && op == EPOLL_CTL_ADD) uep_pl_count_registration(uf ? uep_pl_kind(fd) : UEP_PL_KERNEL);
  return r;
}

static int counted_wait(int r) {
  uep_pl_count(UEP_PL_WAIT, 1);
  if (r > 0) uep_pl_count(UEP_PL_WAKEUP, (uint64_t)r);
  return r;
}

int epoll_wait(int epfd, struct epoll_event *events, int maxevents, int timeout) {
  int ue = uep_pl_map(epfd);
  if (!ue) {
    uep_pl_count(UEP_PL_FORWARDED, 1);
    return UEP_PL_REAL(epoll_wait)(epfd, events, maxevents, timeout);
  }
  UEP_PL_ENTER();
  int r = uep_epoll_wait(ue, events, maxevents, timeout);
  UEP_PL_LEAVE();
  return counted_wait(r);
}

int epoll_pwait(int epfd, struct epoll_event *events, int maxevents, int timeout, const sigset_t *sigmask) {
  int ue = uep_pl_map(epfd);
  if (!ue) {
    uep_pl_count(UEP_PL_FORWARDED, 1);
    return UEP_PL_REAL(epoll_pwait)(epfd, events, maxevents, timeout, sigmask);
  }
  UEP_PL_ENTER();
  int r = uep_epoll_pwait(ue, events, maxevents, timeout, sigmask);
  UEP_PL_LEAVE();
  return counted_wait(r);
}

int epoll_pwait2(int epfd, struct epoll_event *events, int maxevents, const struct timespec *timeout,
                 const sigset_t *sigmask) {
  int ue = uep_pl_map(epfd);
  if (!ue) {
    uep_pl_count(UEP_PL_FORWARDED, 1);
    return UEP_PL_REAL(epoll_pwait2)(epfd, events, maxevents, timeout, sigmask);
  }
  UEP_PL_ENTER();
  int r = uep_epoll_pwait2(ue, events, maxevents, timeout, sigmask);
  UEP_PL_LEAVE();
  return counted_wait(r);
}

int timerfd_settime(int fd, int flags, const struct itimerspec *new_value, struct itimerspec *old_value) {
  UEP_PL_FORWARD2(fd, timerfd_settime, (u, flags, new_value, old_value), timerfd_settime, (fd, flags, new_value, old_value));
}

int timerfd_gettime(int fd, struct itimerspec *curr) {
  UEP_PL_FORWARD2(fd, timerfd_gettime, (u, curr), timerfd_gettime, (fd, curr));
}

/* ---- read and write ------------------------------------------------------------- */
/* A socket call left with its timeout running goes on within it
 * (timed_redo.c); so does the rest of one that had moved part. */
ssize_t read(int fd, void *buf, size_t count) {
  UEP_PL_FORWARD_REDO(fd, read, (u, buf, count), read, (fd, buf, count),
                      if (uep_timed_) return uep_pl_timed_recv(fd, buf, count, 0, &uep_end_); continue, (void)0);
}
/* write of buf's bytes past `done`, within `end` if there is one. */
static ssize_t write_rest(int fd, const void *buf, size_t count, ssize_t done, const struct timespec *end) {
  const char *p = (const char *)buf + done;
  return end ? uep_pl_timed_send(fd, p, count - (size_t)done, 0, end) : write(fd, p, count - (size_t)done);
}
ssize_t write(int fd, const void *buf, size_t count) {
  UEP_PL_FORWARD_REDO(fd, write, (u, buf, count), write, (fd, buf, count),
                      if (uep_timed_) return uep_pl_timed_send(fd, buf, count, 0, &uep_end_); continue,
                      return uep_pl_plus_rest(r_, write_rest(fd, buf, count, r_, UEP_PL_MOVED_END())));
}
/* A message over iov (n entries), for the timed calls. */
static struct msghdr iov_msg(const struct iovec *iov, int n) {
  return (struct msghdr){.msg_iov = (struct iovec *)iov, .msg_iovlen = n > 0 ? (size_t)n : 0};
}
ssize_t readv(int fd, const struct iovec *iov, int n) {
  UEP_PL_FORWARD_REDO(fd, readv, (u, iov, n), readv, (fd, iov, n),
                      if (uep_timed_) {
                        struct msghdr m = iov_msg(iov, n);
                        return uep_pl_timed_recvmsg(fd, &m, 0, &uep_end_);
                      } continue,
                      (void)0);
}
int uep_pl_iov_past(const struct iovec *iov, int n, size_t done, struct iovec *out, int cap) {
  int m = 0;
  for (int i = 0; i < n; ++i) {
    if (done >= iov[i].iov_len) {
      done -= iov[i].iov_len;
      continue;
    }
    if (m == cap) return -1;
    out[m].iov_base = (char *)iov[i].iov_base + done;
    out[m].iov_len = iov[i].iov_len - done;
    done = 0;
    ++m;
  }
  return m;
}

/* writev of what a hand-over left unwritten (UEP_PL_FORWARD_REDO), within
 * the deadline `end` if there is one. */
static ssize_t writev_rest(int fd, const struct iovec *iov, int n, size_t done, const struct timespec *end) {
  if (end) {
    struct msghdr m = iov_msg(iov, n);
    return uep_pl_sendmsg_rest_timed(fd, &m, 0, done, end);
  }
  struct iovec v[UIO_MAXIOV];
  const int m = uep_pl_iov_past(iov, n, done, v, UIO_MAXIOV);
  return m > 0 ? writev(fd, v, m) : m;
}

ssize_t writev(int fd, const struct iovec *iov, int n) {
  UEP_PL_FORWARD_REDO(fd, writev, (u, iov, n), writev, (fd, iov, n),
                      if (uep_timed_) {
                        struct msghdr m = iov_msg(iov, n);
                        return uep_pl_timed_sendmsg(fd, &m, 0, &uep_end_);
                      } continue,
                      return uep_pl_plus_rest(r_, writev_rest(fd, iov, n, (size_t)r_, UEP_PL_MOVED_END())));
}
ssize_t pread(int fd, void *buf, size_t count, off_t off) { UEP_PL_FORWARD2(fd, pread, (u, buf, count, off), pread, (fd, buf, count, off)); }
ssize_t pwrite(int fd, const void *buf, size_t count, off_t off) {
  UEP_PL_FORWARD2(fd, pwrite, (u, buf, count, off), pwrite, (fd, buf, count, off));
}
ssize_t pread64(int fd, void *buf, size_t count, off64_t off) {
  UEP_PL_FORWARD2(fd, pread, (u, buf, count, off), pread64, (fd, buf, count, off));
}
ssize_t pwrite64(int fd, const void *buf, size_t count, off64_t off) {
  UEP_PL_FORWARD2(fd, pwrite, (u, buf, count, off), pwrite64, (fd, buf, count, off));
}
off_t lseek(int fd, off_t off, int whence) { UEP_PL_FORWARD2(fd, lseek, (u, off, whence), lseek, (fd, off, whence)); }
off64_t lseek64(int fd, off64_t off, int whence) { UEP_PL_FORWARD2(fd, lseek, (u, off, whence), lseek64, (fd, off, whence)); }

/* _FORTIFY_SOURCE entry points: the size check, then the call. */
extern void __chk_fail(void) __attribute__((noreturn));
ssize_t __read_chk(int fd, void *buf, size_t count, size_t buflen) {
  if (count > buflen) __chk_fail();
  return read(fd, buf, count);
}
ssize_t __pread_chk(int fd, void *buf, size_t count, off_t off, size_t buflen) {
  if (count > buflen) __chk_fail();
  return pread(fd, buf, count, off);
}
ssize_t __pread64_chk(int fd, void *buf, size_t count, off64_t off, size_t buflen) {
  if (count > buflen) __chk_fail();
  return pread64(fd, buf, count, off);
}

/* ---- close and dup --------------------------------------------------------------- */
/* Kernel descriptors are closed (and replaced by dup2/dup3) through uepoll's
 * own uep_close/uep_dup2/uep_dup3, which pass them on to the kernel (back
 * through these interposers, inside the section: straight to libc), so that
 * uepoll sees every kernel descriptor's end (a registration of a kernel file
 * in a uepoll instance depends on it). */
int close(int fd) {
  if (uep_pl_own(fd)) { /* a number the program never had (interpose_own.c) */
    errno = EBADF;
    return -1;
  }
  int u = uep_pl_unbind(fd);
  if (!u) {
    if (uep_pl_inside()) return UEP_PL_REAL(close)(fd);
    uep_pl_count(UEP_PL_FORWARDED, 1);
    UEP_PL_ENTER();
    int r = uep_close(fd);
    UEP_PL_LEAVE();
    return r;
  }
  UEP_PL_ENTER();
  uep_close(u);
  UEP_PL_LEAVE();
  UEP_PL_REAL(close)(fd); /* the placeholder */
  uep_pl_count(UEP_PL_UEPOLL_CALL, 1);
  return 0;
}

/* A copy of uepoll descriptor u (made by `dup_call`) shown at the lowest
 * free number >= min. */
static int show_dup(int fd, int u2, int min) {
  if (u2 < 0) return -1;
  int n = uep_pl_bind_new(u2, uep_pl_kind(fd), min);
  if (n < 0) {
    uep_close(u2);
    errno = -n;
    return -1;
  }
  return n;
}

int dup(int fd) {
  if (uep_pl_own(fd)) { /* not open for the program (interpose_own.c) */
    errno = EBADF;
    return -1;
  }
  int u = uep_pl_map(fd);
  if (!u) return UEP_PL_REAL(dup)(fd);
  UEP_PL_ENTER();
  int r = show_dup(fd, uep_dup(u), 0);
  UEP_PL_LEAVE();
  return r;
}

static int dup3_program(int oldfd, int newfd, int flags);

int dup3(int oldfd, int newfd, int flags) {
  /* A standard stream's number gets a kernel pipe or pair (fork_convert.c). */
  if (newfd >= 0 && newfd <= 2 && oldfd != newfd && !uep_pl_inside() &&
      (uep_pl_kind(oldfd) == UEP_PL_PIPE || uep_pl_kind(oldfd) == UEP_PL_SOCKET) && uep_pl_map(oldfd))
    uep_pl_convert_stream(oldfd);
  /* uepoll's own descriptors (interpose_own.c): not open for the program
   * (EBADF, after Linux's flag and same-number checks); one at newfd moves
   * out of the way (EBADF past the soft limit, as Linux answers there;
   * EBUSY where it cannot move). */
  if (uep_pl_own(oldfd) && !(flags & ~O_CLOEXEC) && oldfd != newfd) {
    errno = EBADF;
    return -1;
  }
  if (uep_pl_own(newfd) && oldfd != newfd && !(flags & ~O_CLOEXEC)) {
    const int e = uep_pl_own_target_errno(newfd);
    if (e == EBADF || fcntl(oldfd, F_GETFD) >= 0) {
      if (e == EBADF || uep_pl_own_vacate(newfd) < 0) {
        errno = e;
        return -1;
      }
      /* newfd is still open on a duplicate of uepoll's descriptor, which
       * the dup3 replaces atomically; one that fails closes it. */
      const int r = dup3_program(oldfd, newfd, flags);
      if (r < 0) {
        const int saved = errno;
        UEP_PL_REAL(close)(newfd);
        errno = saved;
      }
      return r;
    }
  }
  return dup3_program(oldfd, newfd, flags);
}

/* dup3 once newfd is not uepoll's own. */
static int dup3_program(int oldfd, int newfd, int flags) {
  int uo = uep_pl_map(oldfd);
  if (!uo) {
    if (!uep_pl_map(newfd)) {
      if (uep_pl_inside()) return UEP_PL_REAL(dup3)(oldfd, newfd, flags);
      UEP_PL_ENTER();
      int r = uep_dup3(oldfd, newfd, flags);
      UEP_PL_LEAVE();
      return r;
    }
    /* A kernel file replaces a uepoll one shown at newfd. */
    if (oldfd == newfd) return UEP_PL_REAL(dup3)(oldfd, newfd, flags);
    int r = UEP_PL_REAL(dup3)(oldfd, newfd, flags);
    if (r < 0) return r;
    int prev = uep_pl_unbind(newfd);
    if (prev) {
      UEP_PL_ENTER();
      uep_close(prev);
      UEP_PL_LEAVE();
    }
    return r;
  }
  if (flags & ~O_CLOEXEC) {
    errno = EINVAL;
    return -1;
  }
  if (oldfd == newfd) {
    errno = EINVAL;
    return -1;
  }
  UEP_PL_ENTER();
  int r = -1;
  int u2 = uep_fcntl(uo, (flags & O_CLOEXEC) ? F_DUPFD_CLOEXEC : F_DUPFD, 0);
  if (u2 >= 0) {
    int prev = uep_pl_bind_at(newfd, u2, uep_pl_kind(oldfd));
    if (prev < 0) {
      uep_close(u2);
      errno = -prev;
    } else {
      if (prev) uep_close(prev); /* Linux do_dup2: the old file closes after the swap */
      r = newfd;
    }
  }
  UEP_PL_LEAVE();
  return r;
}

int dup2(int oldfd, int newfd) {
  if (uep_pl_own(oldfd)) { /* not open for the program (interpose_own.c) */
    errno = EBADF;
    return -1;
  }
  if ((uep_pl_own(newfd) || (newfd >= 0 && newfd <= 2 && uep_pl_map(oldfd))) && oldfd != newfd)
    return dup3(oldfd, newfd, 0);
  if (oldfd == newfd) {
    if (uep_pl_map(oldfd)) return newfd;
    return UEP_PL_REAL(dup2)(oldfd, newfd);
  }
  if (!uep_pl_map(oldfd) && !uep_pl_map(newfd)) {
    if (uep_pl_inside()) return UEP_PL_REAL(dup2)(oldfd, newfd);
    UEP_PL_ENTER();
    int r = uep_dup2(oldfd, newfd);
    UEP_PL_LEAVE();
    return r;
  }
  return dup3(oldfd, newfd, 0);
}

/* ---- fcntl and ioctl --------------------------------------------------------------- */
static int do_fcntl(int fd, int cmd, unsigned long arg, int (*real)(int, int, ...)) {
  /* The close-on-exec flag is the number's, not a use of the object. */
  int u = cmd == F_GETFD || cmd == F_SETFD ? uep_pl_map_quiet(fd) : uep_pl_map(fd);
  if (!u) {
    if (uep_pl_own(fd)) { /* a number the program never had (interpose_own.c) */
      errno = EBADF;
      return -1;
    }
    uep_pl_count(UEP_PL_FORWARDED, 1);
    return real(fd, cmd, arg);
  }
  switch (cmd) {
    /* Linux's answers for a kernel object of this type (interpose_kinds.c);
     * record locks are uepoll's (uep_fcntl: the file's lock descriptor). */
    case F_GETLEASE: case F_SETLEASE: case F_NOTIFY: case F_ADD_SEALS: case F_GET_SEALS: {
      struct uep_pl_tmpl_use use;
      const int t = uep_pl_template_enter(fd, &use);
      if (t < 0) return -1;
      const int r = real(t, cmd, arg);
      uep_pl_template_leave(&use);
      return r;
    }
    default: break;
  }
  UEP_PL_ENTER();
  int r;
  if (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC) {
    /* The number is the kernel's (>= arg); the uepoll side only copies. */
    r = show_dup(fd, uep_fcntl(u, cmd, 0UL), (int)arg);
  } else {
    /* A flag change that finds the file being handed over to the kernel
     * (core/handover.h) leaves it, and is made again on the kernel object. */
    const int movable = cmd == F_SETFL;
    uep__movable += movable;
    r = uep_fcntl(u, cmd, arg);
    uep__movable -= movable;
    if (r == 0 && cmd == F_SETFL && (arg & O_ASYNC)) uep__set_fasync_fd(u, fd); /* si_fd: the program's number */
  }
  UEP_PL_LEAVE();
  uep_pl_count(UEP_PL_UEPOLL_CALL, 1);
  if (cmd == F_SETFL && uep__moved) { /* handed over to the kernel meanwhile: made again there */
    uep__moved = 0;
    uep_pl_await_conversion();
    return do_fcntl(fd, cmd, arg, real);
  }
  return r;
}

int fcntl(int fd, int cmd, ...) {
  va_list ap;
  va_start(ap, cmd);
  unsigned long arg = va_arg(ap, unsigned long);
  va_end(ap);
  return do_fcntl(fd, cmd, arg, UEP_PL_REAL(fcntl));
}

int fcntl64(int fd, int cmd, ...) {
  va_list ap;
  va_start(ap, cmd);
  unsigned long arg = va_arg(ap, unsigned long);
  va_end(ap);
  static int (*real)(int, int, ...);
  int (*f)(int, int, ...) = __atomic_load_n(&real, __ATOMIC_RELAXED);
  if (!f) {
    f = (int (*)(int, int, ...))uep_pl_resolve_optional("fcntl64");
    if (!f) f = UEP_PL_REAL(fcntl);
    __atomic_store_n(&real, f, __ATOMIC_RELAXED);
  }
  return do_fcntl(fd, cmd, arg, f);
}

int ioctl(int fd, unsigned long request, ...) {
  va_list ap;
  va_start(ap, request);
  void *arg = va_arg(ap, void *);
  va_end(ap);
  /* KVM's irqfd and ioeventfd: the eventfd becomes a kernel one (eventfd_convert.c). */
  if (!uep_pl_inside() && !uep_pl_map(fd)) uep_pl_kernel_signals_ioctl(request, arg);
  if (request == FIOASYNC && uep_pl_map(fd)) {
    UEP_PL_ENTER();
    ++uep__movable;
    const int u = uep_pl_map(fd), r = uep_ioctl(u, request, arg);
    --uep__movable;
    if (r == 0) uep__set_fasync_fd(u, fd); /* si_fd: the program's number */
    UEP_PL_LEAVE();
    if (uep__moved) { /* handed over to the kernel meanwhile: made again there */
      uep__moved = 0;
      uep_pl_await_conversion();
      return ioctl(fd, request, arg);
    }
    return r;
  }
  UEP_PL_FORWARD2(fd, ioctl, (u, request, arg), ioctl, (fd, request, arg));
}
