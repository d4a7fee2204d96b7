/*
 * interpose_libc.c - libc functions that reach a descriptor only from inside
 * libc (owned by src/preload/).
 *
 * glibc's eventfd_read, dprintf, tcgetattr, lockf, ... call read, write,
 * ioctl or fcntl through libc's internal aliases, which the preload cannot
 * replace: on a uepoll descriptor they would reach the kernel with the
 * placeholder (EBADF).  Each is replaced here by the same steps through the
 * interposed calls, for uepoll descriptors only; kernel descriptors go to
 * libc's own function unchanged.  What remains out of reach is listed in
 * README.md ("Running an unmodified program on uepoll").
 *
 * Locks: none.
 */
#define _GNU_SOURCE
#include "preload/preload.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <termios.h>
#include <unistd.h>

#include "preload/interpose.h"

/* glibc: 0, or -1 when the read or write did not move 8 bytes. */
int eventfd_read(int fd, eventfd_t *value) {
  if (!uep_pl_map(fd)) return UEP_PL_REAL(eventfd_read)(fd, value);
  return read(fd, value, sizeof *value) == sizeof *value ? 0 : -1;
}

int eventfd_write(int fd, eventfd_t value) {
  if (!uep_pl_map(fd)) return UEP_PL_REAL(eventfd_write)(fd, value);
  return write(fd, &value, sizeof value) == sizeof value ? 0 : -1;
}

/* dprintf: formatted in memory, then written in full (glibc's dprintf
 * flushes a stream over the descriptor: one write per buffer). */
int vdprintf(int fd, const char *fmt, va_list ap) {
  if (!uep_pl_map(fd)) return UEP_PL_REAL(vdprintf)(fd, fmt, ap);
  char *s = NULL;
  int n = vasprintf(&s, fmt, ap);
  if (n < 0) return -1;
  for (int done = 0; done < n;) {
    ssize_t w = write(fd, s + done, (size_t)(n - done));
    if (w < 0) {
      int e = errno;
      free(s);
      errno = e;
      return -1;
    }
    done += (int)w;
  }
  free(s);
  return n;
}

int dprintf(int fd, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int r = vdprintf(fd, fmt, ap);
  va_end(ap);
  return r;
}

extern int __dprintf_chk(int fd, int flag, const char *fmt, ...);
extern int __vdprintf_chk(int fd, int flag, const char *fmt, va_list ap);
int __vdprintf_chk(int fd, int flag, const char *fmt, va_list ap) {
  if (!uep_pl_map(fd)) {
    int (*real)(int, int, const char *, va_list) = (int (*)(int, int, const char *, va_list))uep_pl_resolve("__vdprintf_chk");
    return real(fd, flag, fmt, ap);
  }
  return vdprintf(fd, fmt, ap);
}
int __dprintf_chk(int fd, int flag, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int r = __vdprintf_chk(fd, flag, fmt, ap);
  va_end(ap);
  return r;
}

/* The termios calls: glibc's ioctl (TCGETS, TCSETS*, TCFLSH, TCSBRK,
 * TCXONC, TIOCGPGRP, TIOCSPGRP, TIOCGSID), here through the interposed
 * ioctl, whose answer is the object's (ENOTTY; EINVAL for an epoll
 * instance).  glibc checks tcsetattr's action (EINVAL) first. */
static int tty_ioctl(int fd, unsigned long req, void *arg) { return ioctl(fd, req, arg); }

int tcgetattr(int fd, struct termios *t) {
  if (!uep_pl_map(fd)) return UEP_PL_REAL(tcgetattr)(fd, t);
  struct termios k;
  return tty_ioctl(fd, TCGETS, &k) < 0 ? -1 : 0;
}
int tcsetattr(int fd, int act, const struct termios *t) {
  if (!uep_pl_map(fd)) return UEP_PL_REAL(tcsetattr)(fd, act, t);
  if (act != TCSANOW && act != TCSADRAIN && act != TCSAFLUSH) return errno = EINVAL, -1;
  struct termios k = *t;
  return tty_ioctl(fd, act == TCSANOW ? TCSETS : act == TCSADRAIN ? TCSETSW : TCSETSF, &k) < 0 ? -1 : 0;
}
int tcflush(int fd, int q) {
  if (!uep_pl_map(fd)) return UEP_PL_REAL(tcflush)(fd, q);
  return tty_ioctl(fd, TCFLSH, (void *)(long)q);
}
int tcdrain(int fd) {
  if (!uep_pl_map(fd)) return UEP_PL_REAL(tcdrain)(fd);
  return tty_ioctl(fd, TCSBRK, (void *)1L);
}
int tcflow(int fd, int action) {
  if (!uep_pl_map(fd)) return UEP_PL_REAL(tcflow)(fd, action);
  return tty_ioctl(fd, TCXONC, (void *)(long)action);
}
int tcsendbreak(int fd, int d) {
  if (!uep_pl_map(fd)) return UEP_PL_REAL(tcsendbreak)(fd, d);
  return tty_ioctl(fd, TCSBRK, (void *)0L);
}
pid_t tcgetpgrp(int fd) {
  if (!uep_pl_map(fd)) return UEP_PL_REAL(tcgetpgrp)(fd);
  pid_t pg;
  return tty_ioctl(fd, TIOCGPGRP, &pg) < 0 ? -1 : pg;
}
int tcsetpgrp(int fd, pid_t pg) {
  if (!uep_pl_map(fd)) return UEP_PL_REAL(tcsetpgrp)(fd, pg);
  return tty_ioctl(fd, TIOCSPGRP, &pg);
}
pid_t tcgetsid(int fd) {
  if (!uep_pl_map(fd)) return UEP_PL_REAL(tcgetsid)(fd);
  pid_t sid;
  return tty_ioctl(fd, TIOCGSID, &sid) < 0 ? -1 : sid;
}
/* glibc's ttyname: "is a terminal" first (TCGETS), whose error it gives. */
static int not_a_tty_errno(int fd) {
  struct termios k;
  return tty_ioctl(fd, TCGETS, &k) < 0 ? errno : ENOTTY;
}
int ttyname_r(int fd, char *buf, size_t len) {
  if (!uep_pl_map(fd)) return UEP_PL_REAL(ttyname_r)(fd, buf, len);
  return not_a_tty_errno(fd); /* returns the error number */
}
char *ttyname(int fd) {
  if (!uep_pl_map(fd)) return UEP_PL_REAL(ttyname)(fd);
  errno = not_a_tty_errno(fd);
  return NULL;
}

/* sockatmark: glibc's ioctl(SIOCATMARK), answered by the object (a stream
 * pair at its out-of-band mark: 1; a datagram or seqpacket pair:
 * EOPNOTSUPP; the other objects ENOTTY, EINVAL). */
int sockatmark(int fd) {
  if (!uep_pl_map(fd)) return UEP_PL_REAL(sockatmark)(fd);
  int at = 0;
  return tty_ioctl(fd, SIOCATMARK, &at) < 0 ? -1 : at;
}

/* lockf: glibc's fcntl(F_GETLK/F_SETLK/F_SETLKW) on the whole range from
 * the current position, here through the interposed fcntl. */
int lockf(int fd, int cmd, off_t len) {
  if (!uep_pl_map(fd)) return UEP_PL_REAL(lockf)(fd, cmd, len);
  struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_CUR, .l_start = 0, .l_len = len};
  switch (cmd) {
    case F_TEST:
      fl.l_type = F_RDLCK;
      if (fcntl(fd, F_GETLK, &fl) < 0) return -1;
      if (fl.l_type == F_UNLCK || fl.l_pid == getpid()) return 0;
      return errno = EACCES, -1;
    case F_ULOCK: fl.l_type = F_UNLCK; return fcntl(fd, F_SETLK, &fl);
    case F_LOCK: return fcntl(fd, F_SETLKW, &fl);
    case F_TLOCK: return fcntl(fd, F_SETLK, &fl);
    default: return errno = EINVAL, -1;
  }
}
int lockf64(int fd, int cmd, off64_t len) {
  if (!uep_pl_map(fd)) return UEP_PL_REAL(lockf64)(fd, cmd, len);
  return lockf(fd, cmd, (off_t)len);
}
