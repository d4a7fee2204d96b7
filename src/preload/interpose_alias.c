/*
 * interpose_alias.c - glibc's other exported names of interposed calls
 * (owned by src/preload/).
 *
 * glibc exports some calls under a second, public name as well
 * (GLIBC_2.2.5 `__read`, `__write`, `__close`, `__dup2`, `__fcntl`,
 * `__poll`, `__select`, `__send`, `__connect`, `__pread64`, `__pwrite64`;
 * GLIBC_2.4 `__fxstatat`/`__fxstatat64`, which binaries built against
 * glibc < 2.33 call for fstatat; the fortified `__ttyname_r_chk`).  A
 * program or library that calls one of these names would reach the kernel
 * with the placeholder; each is routed here to the interposer of the plain
 * name, which serves uepoll descriptors and passes kernel ones on.
 *
 * Locks: none.
 */
#define _GNU_SOURCE
#include "preload/preload.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "preload/interpose.h"

ssize_t __read(int fd, void *buf, size_t n);
ssize_t __write(int fd, const void *buf, size_t n);
int __close(int fd);
int __dup2(int oldfd, int newfd);
int __fcntl(int fd, int cmd, ...);
int __poll(struct pollfd *fds, nfds_t n, int timeout);
int __select(int nfds, fd_set *r, fd_set *w, fd_set *x, struct timeval *tv);
ssize_t __send(int fd, const void *buf, size_t n, int flags);
int __connect(int fd, const struct sockaddr *a, socklen_t len);
ssize_t __pread64(int fd, void *buf, size_t n, off64_t off);
ssize_t __pwrite64(int fd, const void *buf, size_t n, off64_t off);
int __fxstatat(int ver, int dirfd, const char *path, struct stat *st, int flags);
int __fxstatat64(int ver, int dirfd, const char *path, struct stat64 *st, int flags);
int __ttyname_r_chk(int fd, char *buf, size_t len, size_t buflen);
void __chk_fail(void) __attribute__((noreturn));

ssize_t __read(int fd, void *buf, size_t n) { return read(fd, buf, n); }
ssize_t __write(int fd, const void *buf, size_t n) { return write(fd, buf, n); }
int __close(int fd) { return close(fd); }
int __dup2(int oldfd, int newfd) { return dup2(oldfd, newfd); }
int __poll(struct pollfd *fds, nfds_t n, int timeout) { return poll(fds, n, timeout); }
int __select(int nfds, fd_set *r, fd_set *w, fd_set *x, struct timeval *tv) { return select(nfds, r, w, x, tv); }
ssize_t __send(int fd, const void *buf, size_t n, int flags) { return send(fd, buf, n, flags); }
int __connect(int fd, const struct sockaddr *a, socklen_t len) { return connect(fd, a, len); }
ssize_t __pread64(int fd, void *buf, size_t n, off64_t off) { return pread64(fd, buf, n, off); }
ssize_t __pwrite64(int fd, const void *buf, size_t n, off64_t off) { return pwrite64(fd, buf, n, off); }

int __fcntl(int fd, int cmd, ...) {
  va_list ap;
  va_start(ap, cmd);
  unsigned long arg = va_arg(ap, unsigned long);
  va_end(ap);
  return fcntl(fd, cmd, arg);
}

/* glibc < 2.33's fstatat: a uepoll descriptor with "" and AT_EMPTY_PATH is
 * fstat'd by the interposed fstatat; anything else goes to glibc's own. */
static void *fxstatat_fn(const char *name) {
  void *p = uep_pl_resolve_optional(name);
  if (!p) p = dlvsym(RTLD_NEXT, name, "GLIBC_2.4");
  return p;
}

int __fxstatat(int ver, int dirfd, const char *path, struct stat *st, int flags) {
  if ((flags & AT_EMPTY_PATH) && path && !*path && uep_pl_map(dirfd)) return fstatat(dirfd, path, st, flags);
  int (*real)(int, int, const char *, struct stat *, int) =
      (int (*)(int, int, const char *, struct stat *, int))fxstatat_fn("__fxstatat");
  if (!real) return errno = ENOSYS, -1;
  return real(ver, dirfd, path, st, flags);
}

int __fxstatat64(int ver, int dirfd, const char *path, struct stat64 *st, int flags) {
  if ((flags & AT_EMPTY_PATH) && path && !*path && uep_pl_map(dirfd)) return fstatat64(dirfd, path, st, flags);
  int (*real)(int, int, const char *, struct stat64 *, int) =
      (int (*)(int, int, const char *, struct stat64 *, int))fxstatat_fn("__fxstatat64");
  if (!real) return errno = ENOSYS, -1;
  return real(ver, dirfd, path, st, flags);
}

int __ttyname_r_chk(int fd, char *buf, size_t len, size_t buflen) {
  if (len > buflen) __chk_fail();
  return ttyname_r(fd, buf, len);
}
