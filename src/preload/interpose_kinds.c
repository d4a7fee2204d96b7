/*
 * interpose_kinds.c - the system calls uepoll does not serve on its objects,
 * answered as Linux answers for a kernel object of the same type (owned by
 * src/preload/).
 *
 * Without them a call on a uepoll descriptor would reach the kernel with
 * the placeholder (an O_PATH descriptor of /dev/null, fdmap.h): EBADF, or an
 * answer about /dev/null.  Instead the call is made on a template: a kernel
 * object of the same type and open mode (a pipe's read or write end, an
 * AF_UNIX stream socket whose peer is closed, an eventfd, an epoll
 * instance, a timerfd; all non-blocking, never written), made once, kept at a high number as one of uepoll's own descriptors
 * (core/own_fds.h).  The kernel's answer for the template is Linux's answer
 * for the program's object, with its errno order: signalfd (EINVAL: not a
 * signalfd), inotify_add_watch/inotify_rm_watch and fanotify_mark (EINVAL),
 * fchdir and getdents64 (ENOTDIR; getdents64 in interpose_fddir.c, which
 * also filters descriptor directories' listings),
 * fstatfs (pipefs, sockfs, anon_inodefs), fallocate/posix_fallocate,
 * posix_fadvise, readahead, sync_file_range, syncfs, the f*xattr calls,
 * setns, fstatvfs, fpathconf, fchmod/fchown/futimens (and their *at forms
 * on the descriptor itself, with linkat and name_to_handle_at), the mount
 * API on the descriptor itself (open_tree, fspick, move_mount,
 * open_by_handle_at's mount descriptor), and fcntl's leases, F_NOTIFY and seals
 * (interpose_fd.c; record locks and flock are uepoll's, on each object's
 * own lock descriptor).  None of these changes the template in a way another
 * call sees, except
 * that a mode, owner or time set on a pipe or socket is the template's, not
 * shown by fstat of the program's object.
 *
 * Also here: the positioned vector calls (preadv, pwritev and their v2 and
 * 64-bit forms: ESPIPE with an offset, readv/writev at offset -1) and
 * recvmmsg/sendmmsg (one recvmsg/sendmsg per message, Linux's rules for
 * MSG_WAITFORONE, the timeout and partial counts).
 *
 * Locks: a mutex (tmpl_mu) only to make a template the first time.
 */
#define _GNU_SOURCE
#include "preload/preload.h"

#include <uepoll/uepoll.h>

#include "capi/preload_support.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mount.h>
#include <dirent.h>
#include <sys/fanotify.h>
#include <sys/inotify.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/timerfd.h>
#include <sys/uio.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "preload/interpose.h"

/* ---- templates -------------------------------------------------------------------- */
enum { T_PIPE_R, T_PIPE_W, T_SOCKET, T_EVENTFD, T_EPOLL, T_TIMER, T_N };
/* Each template is a movable own descriptor (core/own_slot.h): a program's
 * dup2 may take its number.  Acquire/release: pairs the store below with
 * the loads. */
static uep__own_slot *tmpl[T_N];
static pthread_mutex_t tmpl_mu = PTHREAD_MUTEX_INITIALIZER;

static void publish_template(int which, int fd) {
  uep__own_slot *s = uep__own_slot_new(uep__park_fd_high(fd));
  if (s) __atomic_store_n(&tmpl[which], s, __ATOMIC_RELEASE);
}

static void make_templates_locked(int which) {
  int a[2] = {-1, -1};
  switch (which) {
    case T_PIPE_R:
    case T_PIPE_W:
      if (UEP_PL_REAL(pipe2)(a, O_CLOEXEC | O_NONBLOCK) < 0) return;
      publish_template(T_PIPE_R, a[0]);
      publish_template(T_PIPE_W, a[1]);
      return;
    case T_SOCKET:
      if (UEP_PL_REAL(socketpair)(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, a) < 0) return;
      UEP_PL_REAL(close)(a[1]); /* one end suffices: its peer's state does not matter here */
      break;
    case T_EVENTFD: a[0] = UEP_PL_REAL(eventfd)(0, EFD_CLOEXEC | EFD_NONBLOCK); break;
    case T_EPOLL: a[0] = UEP_PL_REAL(epoll_create1)(EPOLL_CLOEXEC); break;
    default: a[0] = UEP_PL_REAL(timerfd_create)(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK); break;
  }
  if (a[0] >= 0) publish_template(which, a[0]);
}

/* Enters a use of the template for uepoll descriptor shown as fd (for a
 * pipe end: the end with its open mode, or the read end if `readable`) and
 * returns the number to call the kernel with until uep_pl_template_leave;
 * or -1 (fd is a kernel descriptor; or no template could be made: errno
 * set), with nothing to leave. */
static int template_enter(int fd, int readable, struct uep_pl_tmpl_use *use) {
  use->slot = NULL;
  int u = uep_pl_map(fd);
  if (!u) return -1;
  int which;
  switch (uep_pl_kind(fd)) {
    case UEP_PL_PIPE: {
      UEP_PL_ENTER();
      int fl = uep_fcntl(u, F_GETFL);
      UEP_PL_LEAVE();
      which = (fl & O_ACCMODE) == O_WRONLY && !readable ? T_PIPE_W : T_PIPE_R;
      break;
    }
    case UEP_PL_SOCKET: which = T_SOCKET; break;
    case UEP_PL_EVENTFD: which = T_EVENTFD; break;
    case UEP_PL_EPOLL: which = T_EPOLL; break;
    default: which = T_TIMER; break;
  }
  uep__own_slot *t = __atomic_load_n(&tmpl[which], __ATOMIC_ACQUIRE);
  if (!t) {
    UEP_PL_ENTER();
    pthread_mutex_lock(&tmpl_mu);
    if (!__atomic_load_n(&tmpl[which], __ATOMIC_RELAXED)) make_templates_locked(which);
    t = __atomic_load_n(&tmpl[which], __ATOMIC_RELAXED);
    pthread_mutex_unlock(&tmpl_mu);
    UEP_PL_LEAVE();
  }
  if (!t) {
    errno = EMFILE;
    return -1;
  }
  use->slot = t;
  return uep__own_slot_enter(t, &use->half);
}

int uep_pl_template_enter(int fd, struct uep_pl_tmpl_use *use) { return template_enter(fd, 0, use); }

void uep_pl_template_leave(struct uep_pl_tmpl_use *use) {
  if (!use->slot) return;
  const int e = errno;
  uep__own_slot_leave(use->slot, use->half);
  use->slot = NULL;
  errno = e;
}

/* The call on fd itself for a kernel descriptor, on its template for a
 * uepoll one (fails with errno when no template could be made). */
#define ON_TEMPLATE(type, fail, fd, call)                        \
  do {                                                           \
    struct uep_pl_tmpl_use use_;                                 \
    int fd_ = fd;                                                \
    if (uep_pl_map(fd)) {                                        \
      fd_ = template_enter(fd, 0, &use_);                        \
      if (fd_ < 0) return (type)fail;                            \
    } else {                                                     \
      use_.slot = NULL;                                          \
    }                                                            \
    type r_ = call;                                              \
    uep_pl_template_leave(&use_);                                \
    return r_;                                                   \
  } while (0)

/* ---- answered on the template ------------------------------------------------------ */
int signalfd(int fd, const sigset_t *mask, int flags) {
  if (fd == -1) return UEP_PL_REAL(signalfd)(fd, mask, flags);
  ON_TEMPLATE(int, -1, fd, UEP_PL_REAL(signalfd)(fd_, mask, flags));
}
int inotify_add_watch(int fd, const char *path, uint32_t mask) {
  ON_TEMPLATE(int, -1, fd, UEP_PL_REAL(inotify_add_watch)(fd_, path, mask));
}
int inotify_rm_watch(int fd, int wd) { ON_TEMPLATE(int, -1, fd, UEP_PL_REAL(inotify_rm_watch)(fd_, wd)); }
int fchdir(int fd) { ON_TEMPLATE(int, -1, fd, UEP_PL_REAL(fchdir)(fd_)); }
int uep_pl_fstatfs(int fd, struct statfs *st) { ON_TEMPLATE(int, -1, fd, UEP_PL_REAL(fstatfs)(fd_, st)); }
int uep_pl_fstatfs64(int fd, struct statfs64 *st) { ON_TEMPLATE(int, -1, fd, UEP_PL_REAL(fstatfs64)(fd_, st)); }
int fallocate(int fd, int mode, off_t off, off_t len) {
  ON_TEMPLATE(int, -1, fd, UEP_PL_REAL(fallocate)(fd_, mode, off, len));
}
int fallocate64(int fd, int mode, off64_t off, off64_t len) {
  ON_TEMPLATE(int, -1, fd, UEP_PL_REAL(fallocate64)(fd_, mode, off, len));
}
/* posix_fallocate and posix_fadvise return the error number. */
int posix_fallocate(int fd, off_t off, off_t len) {
  ON_TEMPLATE(int, errno, fd, UEP_PL_REAL(posix_fallocate)(fd_, off, len));
}
int posix_fallocate64(int fd, off64_t off, off64_t len) {
  ON_TEMPLATE(int, errno, fd, UEP_PL_REAL(posix_fallocate64)(fd_, off, len));
}
int posix_fadvise(int fd, off_t off, off_t len, int advice) {
  ON_TEMPLATE(int, errno, fd, UEP_PL_REAL(posix_fadvise)(fd_, off, len, advice));
}
int posix_fadvise64(int fd, off64_t off, off64_t len, int advice) {
  ON_TEMPLATE(int, errno, fd, UEP_PL_REAL(posix_fadvise64)(fd_, off, len, advice));
}
ssize_t readahead(int fd, off64_t off, size_t n) { ON_TEMPLATE(ssize_t, -1, fd, UEP_PL_REAL(readahead)(fd_, off, n)); }
int sync_file_range(int fd, off64_t off, off64_t n, unsigned int flags) {
  ON_TEMPLATE(int, -1, fd, UEP_PL_REAL(sync_file_range)(fd_, off, n, flags));
}
int syncfs(int fd) { ON_TEMPLATE(int, -1, fd, UEP_PL_REAL(syncfs)(fd_)); }
ssize_t fgetxattr(int fd, const char *name, void *value, size_t size) {
  ON_TEMPLATE(ssize_t, -1, fd, UEP_PL_REAL(fgetxattr)(fd_, name, value, size));
}
ssize_t flistxattr(int fd, char *list, size_t size) {
  ON_TEMPLATE(ssize_t, -1, fd, UEP_PL_REAL(flistxattr)(fd_, list, size));
}
int fsetxattr(int fd, const char *name, const void *value, size_t size, int flags) {
  ON_TEMPLATE(int, -1, fd, UEP_PL_REAL(fsetxattr)(fd_, name, value, size, flags));
}
int fremovexattr(int fd, const char *name) { ON_TEMPLATE(int, -1, fd, UEP_PL_REAL(fremovexattr)(fd_, name)); }
int fanotify_mark(int fd, unsigned int flags, uint64_t mask, int dirfd, const char *path) {
  ON_TEMPLATE(int, -1, fd, UEP_PL_REAL(fanotify_mark)(fd_, flags, mask, dirfd, path));
}
int setns(int fd, int nstype) { ON_TEMPLATE(int, -1, fd, UEP_PL_REAL(setns)(fd_, nstype)); }
int fstatvfs(int fd, struct statvfs *st) { ON_TEMPLATE(int, -1, fd, UEP_PL_REAL(fstatvfs)(fd_, st)); }
int fstatvfs64(int fd, struct statvfs64 *st) { ON_TEMPLATE(int, -1, fd, UEP_PL_REAL(fstatvfs64)(fd_, st)); }
long fpathconf(int fd, int name) { ON_TEMPLATE(long, -1, fd, UEP_PL_REAL(fpathconf)(fd_, name)); }
/* The inode calls: Linux changes the pipe's or socket's own inode (or the
 * anonymous inode all eventfds, epolls and timerfds share); here the
 * template's, so the answer (0, EPERM) is Linux's.  The placeholder must
 * not see them: with AT_EMPTY_PATH they would act on /dev/null. */
int fchmod(int fd, mode_t mode) { ON_TEMPLATE(int, -1, fd, UEP_PL_REAL(fchmod)(fd_, mode)); }
int fchown(int fd, uid_t uid, gid_t gid) { ON_TEMPLATE(int, -1, fd, UEP_PL_REAL(fchown)(fd_, uid, gid)); }
int futimens(int fd, const struct timespec t[2]) { ON_TEMPLATE(int, -1, fd, UEP_PL_REAL(futimens)(fd_, t)); }
static int empty_at(int dirfd, const char *path, int flags) {
  return uep_pl_map(dirfd) && (!path || ((flags & AT_EMPTY_PATH) && !*path));
}
int faccessat(int dirfd, const char *path, int mode, int flags) {
  const char *volatile p = path; /* glibc declares it nonnull; NULL gets the kernel's EFAULT */
  if (!p || !empty_at(dirfd, p, flags)) return UEP_PL_REAL(faccessat)(dirfd, path, mode, flags);
  ON_TEMPLATE(int, -1, dirfd, UEP_PL_REAL(faccessat)(fd_, path, mode, flags));
}
int fchmodat(int dirfd, const char *path, mode_t mode, int flags) {
  if (!empty_at(dirfd, path, flags)) return UEP_PL_REAL(fchmodat)(dirfd, path, mode, flags);
  ON_TEMPLATE(int, -1, dirfd, UEP_PL_REAL(fchmodat)(fd_, path, mode, flags));
}
int fchownat(int dirfd, const char *path, uid_t uid, gid_t gid, int flags) {
  if (!empty_at(dirfd, path, flags)) return UEP_PL_REAL(fchownat)(dirfd, path, uid, gid, flags);
  ON_TEMPLATE(int, -1, dirfd, UEP_PL_REAL(fchownat)(fd_, path, uid, gid, flags));
}
int linkat(int olddirfd, const char *oldpath, int newdirfd, const char *newpath, int flags) {
  if (!empty_at(olddirfd, oldpath, flags)) return UEP_PL_REAL(linkat)(olddirfd, oldpath, newdirfd, newpath, flags);
  ON_TEMPLATE(int, -1, olddirfd, UEP_PL_REAL(linkat)(fd_, oldpath, newdirfd, newpath, flags));
}
int name_to_handle_at(int dirfd, const char *path, struct file_handle *h, int *mount_id, int flags) {
  if (!empty_at(dirfd, path, flags)) return UEP_PL_REAL(name_to_handle_at)(dirfd, path, h, mount_id, flags);
  ON_TEMPLATE(int, -1, dirfd, UEP_PL_REAL(name_to_handle_at)(fd_, path, h, mount_id, flags));
}
int utimensat(int dirfd, const char *path, const struct timespec t[2], int flags) {
  if (!empty_at(dirfd, path, flags)) return UEP_PL_REAL(utimensat)(dirfd, path, t, flags);
  ON_TEMPLATE(int, -1, dirfd, UEP_PL_REAL(utimensat)(fd_, path, t, flags));
}
/* The mount API on the descriptor itself: open_tree gives an O_PATH
 * descriptor of the template (a pipe's type, an anonymous inode's...;
 * OPEN_TREE_CLONE: EINVAL, the object's mount being internal), fspick and
 * move_mount answer as for the object (EINVAL where they refuse it), and
 * open_by_handle_at decodes on the template's file system (ESTALE). */
int open_tree(int dirfd, const char *path, unsigned int flags) {
  if (!empty_at(dirfd, path, (int)flags)) return UEP_PL_REAL(open_tree)(dirfd, path, flags);
  ON_TEMPLATE(int, -1, dirfd, UEP_PL_REAL(open_tree)(fd_, path, flags));
}
int fspick(int dirfd, const char *path, unsigned int flags) {
  if (!uep_pl_map(dirfd) || (path && !((flags & FSPICK_EMPTY_PATH) && !*path)))
    return UEP_PL_REAL(fspick)(dirfd, path, flags);
  ON_TEMPLATE(int, -1, dirfd, UEP_PL_REAL(fspick)(fd_, path, flags));
}
/* The side (from or to) named by a uepoll descriptor itself: on its
 * template; both: the "to" side's template is entered inside the "from"'s. */
static int move_mount_to(int from, const char *fpath, int to, const char *tpath, unsigned int flags) {
  if (!uep_pl_map(to) || (tpath && !((flags & MOVE_MOUNT_T_EMPTY_PATH) && !*tpath)))
    return UEP_PL_REAL(move_mount)(from, fpath, to, tpath, flags);
  ON_TEMPLATE(int, -1, to, UEP_PL_REAL(move_mount)(from, fpath, fd_, tpath, flags));
}
int move_mount(int from, const char *fpath, int to, const char *tpath, unsigned int flags) {
  if (!uep_pl_map(from) || (fpath && !((flags & MOVE_MOUNT_F_EMPTY_PATH) && !*fpath)))
    return move_mount_to(from, fpath, to, tpath, flags);
  ON_TEMPLATE(int, -1, from, move_mount_to(fd_, fpath, to, tpath, flags));
}
int open_by_handle_at(int mount_fd, struct file_handle *h, int flags) {
  ON_TEMPLATE(int, -1, mount_fd, UEP_PL_REAL(open_by_handle_at)(fd_, h, flags));
}

/* ---- positioned vector I/O ---------------------------------------------------------- */
/* Linux do_preadv/do_pwritev: a negative offset is EINVAL, then the
 * descriptor, then ESPIPE (no uepoll file is positionable): uep_pread's
 * answers.  The v2 forms at offset -1 are readv/writev; their flags are
 * checked by the kernel on the template (EOPNOTSUPP for unknown ones), and
 * RWF_NOWAIT on an object with nothing to read (or no room) is EAGAIN. */
/* pwritev2 at the current position of what a hand-over left unwritten. */
static ssize_t pwritev_rest(int fd, const struct iovec *iov, int n, size_t done, int flags) {
  struct iovec v[UIO_MAXIOV];
  const int m = uep_pl_iov_past(iov, n, done, v, UIO_MAXIOV);
  return m > 0 ? pwritev64v2(fd, v, m, -1, flags) : m;
}

static ssize_t vec_at(int fd, const struct iovec *iov, int n, off64_t off, int flags, int is_write) {
  int u = uep_pl_map(fd);
  if (off != -1) {
    UEP_PL_ENTER();
    ssize_t r = is_write ? uep_pwrite(u, NULL, 0, (off_t)off) : uep_pread(u, NULL, 0, (off_t)off);
    int e = errno;
    UEP_PL_LEAVE();
    errno = e;
    return r;
  }
  if (flags) {
    /* Linux vfs_readv/vfs_writev: the open mode (by uepoll, with no
     * iovec), nothing to move (0), then the flags (kiocb_set_rw_flags, or
     * EOPNOTSUPP past RWF_HIPRI for a file without read_iter), asked of the
     * template with a one-byte read: it is empty and non-blocking, so a
     * read with valid flags fails with EAGAIN (or finds end of file). */
    UEP_PL_ENTER();
    ssize_t m = is_write ? uep_writev(u, iov, 0) : uep_readv(u, iov, 0);
    int me = errno;
    UEP_PL_LEAVE();
    if (m < 0) return errno = me, -1;
    size_t total = 0;
    for (int i = 0; i < n; ++i) total += iov[i].iov_len;
    if (n <= 0 || total == 0) return 0;
    struct uep_pl_tmpl_use use;
    int t = template_enter(fd, 1, &use); /* a pipe's write end: its flags are the read end's */
    if (t < 0) return -1;
    char byte;
    struct iovec one = {&byte, 1};
    const int bad = UEP_PL_REAL(preadv2)(t, &one, 1, -1, flags) < 0 && errno != EAGAIN;
    uep_pl_template_leave(&use);
    if (bad) return -1;
    if (flags & RWF_NOWAIT) {
      struct pollfd p = {u, (short)(is_write ? POLLOUT : POLLIN), 0};
      UEP_PL_ENTER();
      int r = uep_poll(&p, 1, 0);
      UEP_PL_LEAVE();
      if (r == 0) return errno = EAGAIN, -1;
    }
  }
  UEP_PL_ENTER();
  ++uep__movable;
  ssize_t r = is_write ? uep_writev(u, iov, n) : uep_readv(u, iov, n);
  int e = errno;
  --uep__movable;
  UEP_PL_LEAVE();
  uep_pl_count(UEP_PL_UEPOLL_CALL, 1);
  if (__builtin_expect(uep__moved, 0)) {
    /* The object went to the kernel while the call slept (core/handover.h):
     * the call again there, or a write's rest; a socket's within the time
     * its timeout had left (timed_redo.c). */
    struct timespec end;
    const int timed = uep_pl_after_move(fd, &end);
    struct msghdr m = {.msg_iov = (struct iovec *)iov, .msg_iovlen = n > 0 ? (size_t)n : 0};
    if (r < 0 && timed) return is_write ? uep_pl_timed_sendmsg(fd, &m, 0, &end) : uep_pl_timed_recvmsg(fd, &m, 0, &end);
    if (r < 0) return is_write ? pwritev64v2(fd, iov, n, -1, flags) : preadv64v2(fd, iov, n, -1, flags);
    if (is_write && timed) return uep_pl_plus_rest(r, uep_pl_sendmsg_rest(fd, &m, 0, (size_t)r, &end));
    if (is_write) return uep_pl_plus_rest(r, pwritev_rest(fd, iov, n, (size_t)r, flags));
  }
  errno = e;
  return r;
}

ssize_t preadv(int fd, const struct iovec *iov, int n, off_t off) {
  if (!uep_pl_map(fd)) return UEP_PL_REAL(preadv)(fd, iov, n, off);
  if (off < 0) return errno = EINVAL, -1;
  return vec_at(fd, iov, n, off, 0, 0);
}
ssize_t pwritev(int fd, const struct iovec *iov, int n, off_t off) {
  if (!uep_pl_map(fd)) return UEP_PL_REAL(pwritev)(fd, iov, n, off);
  if (off < 0) return errno = EINVAL, -1;
  return vec_at(fd, iov, n, off, 0, 1);
}
ssize_t preadv64(int fd, const struct iovec *iov, int n, off64_t off) {
  if (!uep_pl_map(fd)) return UEP_PL_REAL(preadv64)(fd, iov, n, off);
  if (off < 0) return errno = EINVAL, -1;
  return vec_at(fd, iov, n, off, 0, 0);
}
ssize_t pwritev64(int fd, const struct iovec *iov, int n, off64_t off) {
  if (!uep_pl_map(fd)) return UEP_PL_REAL(pwritev64)(fd, iov, n, off);
  if (off < 0) return errno = EINVAL, -1;
  return vec_at(fd, iov, n, off, 0, 1);
}
/* Linux preadv2: offset -1 is "the current position" (readv); any other
 * negative offset is EINVAL. */
ssize_t preadv2(int fd, const struct iovec *iov, int n, off_t off, int flags) {
  if (!uep_pl_map(fd)) return UEP_PL_REAL(preadv2)(fd, iov, n, off, flags);
  if (off < -1) return errno = EINVAL, -1;
  return vec_at(fd, iov, n, off, flags, 0);
}
ssize_t pwritev2(int fd, const struct iovec *iov, int n, off_t off, int flags) {
  if (!uep_pl_map(fd)) return UEP_PL_REAL(pwritev2)(fd, iov, n, off, flags);
  if (off < -1) return errno = EINVAL, -1;
  return vec_at(fd, iov, n, off, flags, 1);
}
ssize_t preadv64v2(int fd, const struct iovec *iov, int n, off64_t off, int flags) {
  if (!uep_pl_map(fd)) return UEP_PL_REAL(preadv64v2)(fd, iov, n, off, flags);
  if (off < -1) return errno = EINVAL, -1;
  return vec_at(fd, iov, n, off, flags, 0);
}
ssize_t pwritev64v2(int fd, const struct iovec *iov, int n, off64_t off, int flags) {
  if (!uep_pl_map(fd)) return UEP_PL_REAL(pwritev64v2)(fd, iov, n, off, flags);
  if (off < -1) return errno = EINVAL, -1;
  return vec_at(fd, iov, n, off, flags, 1);
}

/* ---- recvmmsg and sendmmsg ------------------------------------------------------------ */
/* The absolute CLOCK_MONOTONIC time `rel` (normalized) from now. */
static struct timespec time_after(const struct timespec *rel) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  t.tv_sec += rel->tv_sec;
  t.tv_nsec += rel->tv_nsec;
  if (t.tv_nsec >= 1000000000L) {
    t.tv_nsec -= 1000000000L;
    ++t.tv_sec;
  }
  return t;
}

/* The time left until `end` (zero once it passed). */
static struct timespec time_left(const struct timespec *end) {
  struct timespec now, left = {0, 0};
  clock_gettime(CLOCK_MONOTONIC, &now);
  left.tv_sec = end->tv_sec - now.tv_sec;
  left.tv_nsec = end->tv_nsec - now.tv_nsec;
  if (left.tv_nsec < 0) {
    left.tv_nsec += 1000000000L;
    --left.tv_sec;
  }
  if (left.tv_sec < 0) left.tv_sec = left.tv_nsec = 0;
  return left;
}

static int before(const struct timespec *a, const struct timespec *b) {
  return a->tv_sec < b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec);
}

/* A call's count of messages `done` before it moved, plus what its rest
 * on the kernel object returned (an error after messages leaves their
 * count, as Linux's does; with none, the rest's answer is the call's). */
static int plus_rest_msgs(unsigned int done, int rest) {
  if (!done) return rest;
  return rest < 0 ? (int)done : (int)done + rest;
}

/* Linux do_recvmmsg: up to vlen messages, each as recvmsg; after the first,
 * MSG_WAITFORONE makes the rest non-blocking; the timeout is looked at after
 * each message; an error after some messages ends the call with their
 * count (the error is dropped for EAGAIN, as Linux keeps others for the
 * next call only on sockets with sk_err).  A pair that goes to the kernel
 * while the call sleeps (core/handover.h) gets the rest of the call, with
 * the time it had left. */
int recvmmsg(int fd, struct mmsghdr *v, unsigned int vlen, int flags, struct timespec *tmo) {
  int u = uep_pl_map(fd);
  if (!u) return UEP_PL_REAL(recvmmsg)(fd, v, vlen, flags, tmo);
  struct timespec end = {0, 0};
  if (tmo) {
    if (tmo->tv_sec < 0 || tmo->tv_nsec < 0 || tmo->tv_nsec >= 1000000000L) return errno = EINVAL, -1;
    end = time_after(tmo);
  }
  if (vlen > UIO_MAXIOV) vlen = UIO_MAXIOV;
  unsigned int got = 0;
  int e = 0, more = 1, moved = 0;
  UEP_PL_ENTER();
  ++uep__movable;
  while (got < vlen) {
    ssize_t r = uep_recvmsg(u, &v[got].msg_hdr, flags & ~MSG_WAITFORONE);
    moved = uep__moved;
    if (r < 0) {
      e = errno;
      break;
    }
    v[got++].msg_len = (unsigned int)r;
    if (flags & MSG_WAITFORONE) flags |= MSG_DONTWAIT;
    if (tmo) {
      struct timespec now;
      clock_gettime(CLOCK_MONOTONIC, &now);
      if (!before(&now, &end)) more = 0;
    }
    if (v[got - 1].msg_hdr.msg_flags & MSG_OOB) more = 0;
    if (!more || moved) break;
  }
  --uep__movable;
  UEP_PL_LEAVE();
  uep_pl_count(UEP_PL_UEPOLL_CALL, 1);
  if (moved) {
    struct timespec sock_end;
    const int timed = uep_pl_after_move(fd, &sock_end) && e;
    if (timed && more && got < vlen) {
      /* The message it slept for, within its SO_RCVTIMEO's time left. */
      ssize_t r = uep_pl_timed_recvmsg(fd, &v[got].msg_hdr, flags & ~MSG_WAITFORONE, &sock_end);
      if (r < 0) {
        if (tmo) *tmo = time_left(&end);
        return plus_rest_msgs(got, -1);
      }
      v[got++].msg_len = (unsigned int)r;
      if (flags & MSG_WAITFORONE) flags |= MSG_DONTWAIT;
      struct timespec now;
      clock_gettime(CLOCK_MONOTONIC, &now);
      if ((tmo && !before(&now, &end)) || (v[got - 1].msg_hdr.msg_flags & MSG_OOB)) more = 0;
    }
    if (more && got < vlen) {
      struct timespec left = time_left(&end);
      const int rest = recvmmsg(fd, v + got, vlen - got, flags, tmo ? &left : NULL);
      if (tmo) *tmo = time_left(&end);
      return plus_rest_msgs(got, rest);
    }
  }
  if (tmo) *tmo = time_left(&end);
  if (got == 0 && e) return errno = e, -1;
  return (int)got;
}

/* Linux __sys_sendmmsg: each message as sendmsg; an error after some
 * messages ends the call with their count.  A datagram pair's control data
 * to a name makes it a kernel pair first (dgram_named.c).  A pair that goes
 * to the kernel while the call sleeps gets the rest of the call: the rest
 * of a message a stream had sent part of, then the messages after it. */
int sendmmsg(int fd, struct mmsghdr *v, unsigned int vlen, int flags) {
  int u = uep_pl_map(fd);
  if (u && uep_pl_dgram_named_sendmmsg(fd, v, vlen)) { /* made a kernel pair (dgram_named.c) */
    for (unsigned int i = 0; i < vlen && i < UIO_MAXIOV; ++i) uep_pl_kernel_rights(&v[i].msg_hdr);
    u = 0;
  }
  if (!u) return UEP_PL_REAL(sendmmsg)(fd, v, vlen, flags);
  if (vlen > UIO_MAXIOV) vlen = UIO_MAXIOV;
  unsigned int sent = 0;
  int e = 0, moved = 0;
  ssize_t part = -1;
  UEP_PL_ENTER();
  ++uep__movable;
  for (; sent < vlen; ++sent) {
    ssize_t r = uep_sendmsg(u, &v[sent].msg_hdr, flags);
    if ((moved = uep__moved)) {
      part = r;
      break;
    }
    if (r < 0) {
      e = errno;
      break;
    }
    v[sent].msg_len = (unsigned int)r;
  }
  --uep__movable;
  UEP_PL_LEAVE();
  uep_pl_count(UEP_PL_UEPOLL_CALL, 1);
  if (moved) {
    struct timespec sock_end;
    /* 0 if not converted: sendmmsg below goes on with uepoll */
    const int timed = uep_pl_after_move(fd, &sock_end);
    ssize_t r = -2;                /* -2: message `sent` is left to sendmmsg below */
    if (part >= 0) {               /* a stream's message, sent in part: its rest */
      const ssize_t rest = uep_pl_sendmsg_rest(fd, &v[sent].msg_hdr, flags, (size_t)part, timed ? &sock_end : NULL);
      r = uep_pl_plus_rest(part, rest);
    } else if (timed) { /* the message it slept on, within its socket timeout's time left */
      r = uep_pl_timed_sendmsg(fd, &v[sent].msg_hdr, flags, &sock_end);
      if (r < 0) return plus_rest_msgs(sent, -1);
    }
    if (r >= 0) v[sent++].msg_len = (unsigned int)r; /* then the next, as Linux goes on after a part */
    return sent < vlen ? plus_rest_msgs(sent, sendmmsg(fd, v + sent, vlen - sent, flags)) : (int)sent;
  }
  if (sent == 0 && e) return errno = e, -1;
  return (int)sent;
}
