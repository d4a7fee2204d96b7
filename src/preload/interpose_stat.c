/*
 * interpose_stat.c - libuepoll-preload.so's fstat, fstatat, statx and the
 * pre-2.33 __fxstat entry points (owned by src/preload/; see interpose_fd.c
 * for the rules): a uepoll object's answer is uep_fstat's, one of uepoll's
 * own numbers is a free one (EBADF), and /proc/self/fd/N of a uepoll
 * object is followed to it (interpose_procfd.c).
 *
 * Locks: none.
 */
#define _GNU_SOURCE
#include "preload/preload.h"

#include <uepoll/uepoll.h>

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "preload/interpose.h"

/* One of uepoll's own numbers is a free one to the program: EBADF, so that
 * a scan for open descriptors by fstat does not see it (interpose_own.c). */
int fstat(int fd, struct stat *st) {
  if (uep_pl_own(fd)) return errno = EBADF, -1;
  UEP_PL_FORWARD2(fd, fstat, (u, st), fstat, (fd, st));
}
int fstat64(int fd, struct stat64 *st) {
  if (uep_pl_own(fd)) return errno = EBADF, -1;
  UEP_PL_FORWARD2(fd, fstat, (u, (struct stat *)st), fstat64, (fd, st));
}

static int empty_path_at(int dirfd, const char *path, int flags) {
  return (flags & AT_EMPTY_PATH) && path && !*path && (uep_pl_map(dirfd) || uep_pl_own(dirfd));
}

/* fstatat and statx of a path: the descriptor itself (AT_EMPTY_PATH), or
 * /proc/self/fd/N of a uepoll object (interpose_procfd.c). */
int fstatat(int dirfd, const char *path, struct stat *st, int flags) {
  if (empty_path_at(dirfd, path, flags)) return fstat(dirfd, st);
  const int c = uep_pl_stat_procfd(path, flags, st);
  if (c) return c < 0 ? -1 : 0;
  return UEP_PL_REAL(fstatat)(dirfd, path, st, flags);
}

int fstatat64(int dirfd, const char *path, struct stat64 *st, int flags) {
  if (empty_path_at(dirfd, path, flags)) return fstat(dirfd, (struct stat *)st);
  const int c = uep_pl_stat_procfd(path, flags, (struct stat *)st);
  if (c) return c < 0 ? -1 : 0;
  return UEP_PL_REAL(fstatat64)(dirfd, path, st, flags);
}

int statx(int dirfd, const char *path, int flags, unsigned int mask, struct statx *sx) {
  struct stat st;
  if (empty_path_at(dirfd, path, flags)) {
    if (fstat(dirfd, &st) < 0) return -1;
  } else {
    const int c = uep_pl_stat_procfd(path, flags, &st);
    if (c < 0) return -1;
    if (!c) return UEP_PL_REAL(statx)(dirfd, path, flags, mask, sx);
  }
  memset(sx, 0, sizeof *sx);
  sx->stx_mask = STATX_BASIC_STATS;
  sx->stx_blksize = (uint32_t)st.st_blksize;
  sx->stx_nlink = (uint32_t)st.st_nlink;
  sx->stx_uid = st.st_uid;
  sx->stx_gid = st.st_gid;
  sx->stx_mode = (uint16_t)st.st_mode;
  sx->stx_ino = st.st_ino;
  sx->stx_size = (uint64_t)st.st_size;
  sx->stx_blocks = (uint64_t)st.st_blocks;
  sx->stx_atime.tv_sec = st.st_atim.tv_sec;
  sx->stx_atime.tv_nsec = (uint32_t)st.st_atim.tv_nsec;
  sx->stx_mtime.tv_sec = st.st_mtim.tv_sec;
  sx->stx_mtime.tv_nsec = (uint32_t)st.st_mtim.tv_nsec;
  sx->stx_ctime.tv_sec = st.st_ctim.tv_sec;
  sx->stx_ctime.tv_nsec = (uint32_t)st.st_ctim.tv_nsec;
  sx->stx_dev_major = major(st.st_dev);
  sx->stx_dev_minor = minor(st.st_dev);
  return 0;
}

/* Binaries built against glibc < 2.33 call these instead of fstat; newer
 * glibc keeps them only as versioned compatibility symbols. */
void *uep_pl_compat_fn(const char *name) {
  void *p = uep_pl_resolve_optional(name);
  if (!p) p = dlvsym(RTLD_NEXT, name, "GLIBC_2.2.5");
  return p;
}
int __fxstat(int ver, int fd, struct stat *st) {
  if (uep_pl_map(fd) || uep_pl_own(fd)) return fstat(fd, st);
  int (*real)(int, int, struct stat *) = (int (*)(int, int, struct stat *))uep_pl_compat_fn("__fxstat");
  if (!real) return errno = ENOSYS, -1;
  return real(ver, fd, st);
}
int __fxstat64(int ver, int fd, struct stat64 *st) {
  if (uep_pl_map(fd) || uep_pl_own(fd)) return fstat(fd, (struct stat *)st);
  int (*real)(int, int, struct stat64 *) = (int (*)(int, int, struct stat64 *))uep_pl_compat_fn("__fxstat64");
  if (!real) return errno = ENOSYS, -1;
  return real(ver, fd, st);
}
