/*
 * interpose_syscall.c - syscall(2) under the preload (owned by
 * src/preload/).
 *
 * A program that makes a system call by number through libc's syscall()
 * gets the answer the same call gets by name:
 *   - the epoll family, the object constructors, close, close_range and
 *     every call uepoll serves on its descriptors (the read and write
 *     families, lseek, fcntl, ioctl, fstat and fstatat/statx with
 *     AT_EMPTY_PATH, the *at calls on the descriptor itself (faccessat2,
 *     utimensat, fchownat, linkat, name_to_handle_at; open_tree, fspick,
 *     move_mount, open_by_handle_at), mmap, fsync, ftruncate, flock, the socket calls, dup2,
 *     dup3, splice and its kind, the timerfd calls, poll, ppoll, select,
 *     pselect6) go to the interposer of that name when a descriptor they
 *     name is a uepoll one (poll and select always: they take sets);
 *   - the calls answered for a kernel object of the type
 *     (interpose_kinds.c) and the other calls whose first argument is a
 *     descriptor (getdents, landlock, mount API, io_uring_enter, pidfd and
 *     mqueue calls, cachestat, ...) are made with the uepoll descriptor's
 *     template in its place, so that the kernel answers for a pipe, socket,
 *     eventfd, epoll or timerfd, not for the placeholder (EBADF);
 *   - io_uring_register and io_submit first make an eventfd they hand to
 *     the kernel a kernel one (eventfd_convert.c), and the files they hand
 *     it to act on (a registered file, an iocb's) kernel objects
 *     (kernel_operands.c).
 * Everything else goes to libc's syscall() unchanged.  What no table here
 * covers is listed in README.md ("System calls by descriptor").
 *
 * Locks: none.
 */
#define _GNU_SOURCE
#include "preload/preload.h"

#include <errno.h>
#include <stdint.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/select.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/uio.h>
#include <unistd.h>

#include "capi/preload_support.h"
#include "preload/interpose.h"

#ifndef SYS_cachestat
#define SYS_cachestat 451
#endif

/* The kernel's sigset_t size, which ppoll and pselect6 take explicitly. */
enum { kKernelSigset = _NSIG / 8 };

static int mapped(long fd) { return fd >= 0 && fd <= 0x7fffffff && uep_pl_map((int)fd) != 0; }
/* One of uepoll's own numbers, which the interposers answer as a free one
 * (interpose_own.c). */
static int own(long fd) { return fd >= 0 && fd <= 0x7fffffff && uep_pl_own((int)fd); }
/* A path naming a uepoll object's or an own number's /proc/self/fd entry
 * (interpose_procfd.c). */
static int procfd(long path) {
  const int n = uep_pl_fd_of_path((const char *)path);
  return n >= 0 && (uep_pl_map(n) || uep_pl_own(n));
}

/* A path naming a uepoll object's or an own number's /proc/self/fdinfo
 * entry. */
static int fdinfo(long path) {
  const int n = uep_pl_fdinfo_of_path((const char *)path);
  return n >= 0 && (uep_pl_map(n) || uep_pl_own(n));
}

/* kcmp(pid, pid, KCMP_FILE, fd1, fd2) in this process when a uepoll
 * descriptor is named (kernel/kcmp.c): 0 when both show one open file
 * description, else 1 or 2 by an order that is fixed for the process's
 * life (uepoll's files, by their identity mixed with a random value as
 * Linux mixes its pointers, before every kernel file); EBADF for a number
 * with no file.  Two kernel descriptors: the kernel's. */
static long kcmp_uepoll(int fd1, int fd2) {
  static unsigned long long cookie;
  unsigned long long c = __atomic_load_n(&cookie, __ATOMIC_RELAXED);
  if (!c) {
    c = ((unsigned long long)(uintptr_t)&cookie ^ (unsigned long long)getpid() * 0x9e3779b97f4a7c15ull) | 1;
    __atomic_store_n(&cookie, c, __ATOMIC_RELAXED);
  }
  unsigned long long v[2];
  const int fds[2] = {fd1, fd2};
  for (int i = 0; i < 2; ++i) {
    const int u = uep_pl_map(fds[i]);
    if (u) {
      v[i] = (uep__file_id(u) ^ c) * 0x9e3779b97f4a7c15ull;
      if (v[i] == ~0ull) v[i] = 0; /* below every kernel file */
    } else if (uep_pl_own(fds[i]) || UEP_PL_REAL(fcntl)(fds[i], F_GETFD) < 0) {
      errno = EBADF;
      return -1;
    } else {
      v[i] = ~0ull; /* a kernel file: after uepoll's */
    }
  }
  return (v[0] < v[1]) | ((v[0] > v[1]) << 1);
}

/* The calls uepoll serves, by number: the interposer's answer, or 0 with
 * *handled clear when no descriptor they name is a uepoll one. */
static long served_by_number(long nr, const long *a, int *handled) {
  *handled = 1;
  void *p1 = (void *)a[1];
  switch (nr) {
    case SYS_readv: if (mapped(a[0])) return readv((int)a[0], p1, (int)a[2]); break;
    case SYS_writev: if (mapped(a[0])) return writev((int)a[0], p1, (int)a[2]); break;
    case SYS_pread64: if (mapped(a[0])) return pread64((int)a[0], p1, (size_t)a[2], (off64_t)a[3]); break;
    case SYS_pwrite64: if (mapped(a[0])) return pwrite64((int)a[0], p1, (size_t)a[2], (off64_t)a[3]); break;
#if __SIZEOF_LONG__ == 8 /* one register per offset (the 32-bit ABIs split it in two) */
    case SYS_preadv: if (mapped(a[0])) return preadv64((int)a[0], p1, (int)a[2], (off64_t)a[3]); break;
    case SYS_pwritev: if (mapped(a[0])) return pwritev64((int)a[0], p1, (int)a[2], (off64_t)a[3]); break;
    case SYS_preadv2: if (mapped(a[0])) return preadv64v2((int)a[0], p1, (int)a[2], (off64_t)a[3], (int)a[5]); break;
    case SYS_pwritev2: if (mapped(a[0])) return pwritev64v2((int)a[0], p1, (int)a[2], (off64_t)a[3], (int)a[5]); break;
    case SYS_lseek: if (mapped(a[0])) return lseek64((int)a[0], (off64_t)a[1], (int)a[2]); break;
    case SYS_mmap:
      if (mapped(a[4])) {
        void *m = mmap((void *)a[0], (size_t)a[1], (int)a[2], (int)a[3], (int)a[4], (off_t)a[5]);
        return m == MAP_FAILED ? -1 : (long)m;
      }
      break;
#endif
    case SYS_fcntl: if (mapped(a[0]) || own(a[0])) return fcntl((int)a[0], (int)a[1], a[2]); break;
    case SYS_ioctl: if (mapped(a[0])) return ioctl((int)a[0], (unsigned long)a[1], (void *)a[2]); break;
    case SYS_fstat: if (mapped(a[0]) || own(a[0])) return fstat((int)a[0], p1); break;
#ifdef SYS_newfstatat
    case SYS_newfstatat: if (mapped(a[0]) || own(a[0]) || procfd(a[1])) return fstatat((int)a[0], p1, (struct stat *)a[2], (int)a[3]); break;
#endif
#ifdef SYS_kcmp
    case SYS_kcmp:
      if (a[2] == 0 /* KCMP_FILE */ && a[0] == a[1] && a[0] == (long)getpid() && (mapped(a[3]) || mapped(a[4])))
        return kcmp_uepoll((int)a[3], (int)a[4]);
      break;
#endif
#ifdef SYS_getdents
    case SYS_getdents:
#endif
    case SYS_getdents64:
      if (!mapped(a[0])) return uep_pl_getdents(nr, (int)a[0], p1, (unsigned long)a[2]); /* interpose_fddir.c */
      break;
#ifdef SYS_open
    case SYS_open:
      if (procfd(a[0]) || fdinfo(a[0])) return open((const char *)a[0], (int)a[1], (mode_t)a[2]);
      break;
#endif
    case SYS_openat:
      if (procfd(a[1]) || fdinfo(a[1])) return openat((int)a[0], p1, (int)a[2], (mode_t)a[3]);
      break;
    case SYS_readlinkat: if (procfd(a[1])) return readlinkat((int)a[0], p1, (char *)a[2], (size_t)a[3]); break;
#ifdef SYS_readlink
    case SYS_readlink: if (procfd(a[0])) return readlink((const char *)a[0], p1, (size_t)a[2]); break;
    case SYS_stat: if (procfd(a[0])) return stat((const char *)a[0], p1); break;
#endif
    case SYS_statx: if (mapped(a[0]) || own(a[0]) || procfd(a[1])) return statx((int)a[0], p1, (int)a[2], (unsigned)a[3], (struct statx *)a[4]); break;
#ifdef SYS_faccessat2
    case SYS_faccessat2: if (mapped(a[0])) return faccessat((int)a[0], p1, (int)a[2], (int)a[3]); break;
#endif
    case SYS_utimensat: if (mapped(a[0])) return utimensat((int)a[0], p1, (void *)a[2], (int)a[3]); break;
    case SYS_fchownat:
      if (mapped(a[0])) return fchownat((int)a[0], p1, (uid_t)a[2], (gid_t)a[3], (int)a[4]);
      break;
    case SYS_linkat: if (mapped(a[0])) return linkat((int)a[0], p1, (int)a[2], (void *)a[3], (int)a[4]); break;
    case SYS_name_to_handle_at:
      if (mapped(a[0])) return name_to_handle_at((int)a[0], p1, (void *)a[2], (int *)a[3], (int)a[4]);
      break;
    case SYS_open_by_handle_at: if (mapped(a[0])) return open_by_handle_at((int)a[0], p1, (int)a[2]); break;
    case SYS_open_tree: if (mapped(a[0])) return open_tree((int)a[0], p1, (unsigned)a[2]); break;
    case SYS_fspick: if (mapped(a[0])) return fspick((int)a[0], p1, (unsigned)a[2]); break;
    case SYS_move_mount:
      if (mapped(a[0]) || mapped(a[2])) return move_mount((int)a[0], p1, (int)a[2], (void *)a[3], (unsigned)a[4]);
      break;
    case SYS_fsync: if (mapped(a[0])) return fsync((int)a[0]); break;
    case SYS_fdatasync: if (mapped(a[0])) return fdatasync((int)a[0]); break;
    case SYS_ftruncate: if (mapped(a[0])) return ftruncate64((int)a[0], (off64_t)a[1]); break;
    case SYS_flock: if (mapped(a[0])) return flock((int)a[0], (int)a[1]); break;
    case SYS_fstatfs: if (mapped(a[0])) return fstatfs((int)a[0], p1); break;
    case SYS_sendto:
      if (mapped(a[0])) return sendto((int)a[0], p1, (size_t)a[2], (int)a[3], (void *)a[4], (socklen_t)a[5]);
      break;
    case SYS_recvfrom:
      if (mapped(a[0])) return recvfrom((int)a[0], p1, (size_t)a[2], (int)a[3], (void *)a[4], (socklen_t *)a[5]);
      break;
    case SYS_sendmsg: if (mapped(a[0])) return sendmsg((int)a[0], p1, (int)a[2]); break;
    case SYS_recvmsg: if (mapped(a[0])) return recvmsg((int)a[0], p1, (int)a[2]); break;
    case SYS_sendmmsg: if (mapped(a[0])) return sendmmsg((int)a[0], p1, (unsigned)a[2], (int)a[3]); break;
    case SYS_recvmmsg:
      if (mapped(a[0])) return recvmmsg((int)a[0], p1, (unsigned)a[2], (int)a[3], (struct timespec *)a[4]);
      break;
    case SYS_getsockopt:
      if (mapped(a[0])) return getsockopt((int)a[0], (int)a[1], (int)a[2], (void *)a[3], (socklen_t *)a[4]);
      break;
    case SYS_setsockopt:
      if (mapped(a[0])) return setsockopt((int)a[0], (int)a[1], (int)a[2], (void *)a[3], (socklen_t)a[4]);
      break;
    case SYS_getsockname: if (mapped(a[0])) return getsockname((int)a[0], p1, (socklen_t *)a[2]); break;
    case SYS_getpeername: if (mapped(a[0])) return getpeername((int)a[0], p1, (socklen_t *)a[2]); break;
    case SYS_shutdown: if (mapped(a[0])) return shutdown((int)a[0], (int)a[1]); break;
    case SYS_bind: if (mapped(a[0])) return bind((int)a[0], p1, (socklen_t)a[2]); break;
    case SYS_listen: if (mapped(a[0])) return listen((int)a[0], (int)a[1]); break;
    case SYS_accept: if (mapped(a[0])) return accept((int)a[0], p1, (socklen_t *)a[2]); break;
    case SYS_accept4: if (mapped(a[0])) return accept4((int)a[0], p1, (socklen_t *)a[2], (int)a[3]); break;
    case SYS_connect: if (mapped(a[0])) return connect((int)a[0], p1, (socklen_t)a[2]); break;
#ifdef SYS_dup2
    case SYS_dup2: if (mapped(a[0]) || mapped(a[1]) || own(a[0]) || own(a[1])) return dup2((int)a[0], (int)a[1]); break;
#endif
    case SYS_dup3: if (mapped(a[0]) || mapped(a[1]) || own(a[0]) || own(a[1])) return dup3((int)a[0], (int)a[1], (int)a[2]); break;
    case SYS_splice:
      if (mapped(a[0]) || mapped(a[2]))
        return splice((int)a[0], p1, (int)a[2], (loff_t *)a[3], (size_t)a[4], (unsigned)a[5]);
      break;
    case SYS_tee: if (mapped(a[0]) || mapped(a[1])) return tee((int)a[0], (int)a[1], (size_t)a[2], (unsigned)a[3]); break;
    case SYS_vmsplice: if (mapped(a[0])) return vmsplice((int)a[0], p1, (size_t)a[2], (unsigned)a[3]); break;
    case SYS_sendfile:
      if (mapped(a[0]) || mapped(a[1])) return sendfile((int)a[0], (int)a[1], (off_t *)a[2], (size_t)a[3]);
      break;
    case SYS_copy_file_range:
      if (mapped(a[0]) || mapped(a[2]))
        return copy_file_range((int)a[0], p1, (int)a[2], (loff_t *)a[3], (size_t)a[4], (unsigned)a[5]);
      break;
    case SYS_timerfd_settime:
      if (mapped(a[0])) return timerfd_settime((int)a[0], (int)a[1], (void *)a[2], (struct itimerspec *)a[3]);
      break;
    case SYS_timerfd_gettime: if (mapped(a[0])) return timerfd_gettime((int)a[0], p1); break;
#ifdef SYS_poll
    case SYS_poll: return poll((struct pollfd *)a[0], (nfds_t)a[1], (int)a[2]);
#endif
    case SYS_ppoll:
      if (!a[3] || a[4] == kKernelSigset) return ppoll((struct pollfd *)a[0], (nfds_t)a[1], (void *)a[2], (void *)a[3]);
      break;
#ifdef SYS_select
    case SYS_select: return select((int)a[0], p1, (fd_set *)a[2], (fd_set *)a[3], (struct timeval *)a[4]);
#endif
    case SYS_pselect6: {
      /* The sixth argument: {const sigset_t *ss; size_t ss_len}, or NULL. */
      const long *d = (const long *)a[5];
      if (!d || !d[0] || d[1] == kKernelSigset)
        return pselect((int)a[0], p1, (fd_set *)a[2], (fd_set *)a[3], (void *)a[4], d ? (const sigset_t *)d[0] : NULL);
      break;
    }
    default: break;
  }
  *handled = 0;
  return 0;
}

/* The calls whose first argument is a descriptor uepoll does not serve:
 * the kernel answers on the template of a uepoll one. */
static int on_template(long nr) {
  switch (nr) {
#ifdef SYS_getdents
    case SYS_getdents:
#endif
#ifdef SYS_signalfd
    case SYS_signalfd:
#endif
    case SYS_getdents64: case SYS_fchdir: case SYS_fadvise64: case SYS_readahead: case SYS_sync_file_range:
    case SYS_syncfs: case SYS_fallocate: case SYS_fchmod: case SYS_fchown: case SYS_fgetxattr: case SYS_fsetxattr:
    case SYS_flistxattr: case SYS_fremovexattr: case SYS_setns: case SYS_signalfd4: case SYS_inotify_add_watch:
    case SYS_inotify_rm_watch: case SYS_fanotify_mark: case SYS_landlock_add_rule: case SYS_landlock_restrict_self:
    case SYS_fsconfig: case SYS_fsmount: case SYS_io_uring_enter: case SYS_io_uring_register:
    case SYS_pidfd_send_signal: case SYS_pidfd_getfd: case SYS_process_madvise: case SYS_process_mrelease:
    case SYS_mq_notify: case SYS_mq_timedsend: case SYS_mq_timedreceive: case SYS_mq_getsetattr:
    case SYS_quotactl_fd: case SYS_finit_module: case SYS_cachestat:
      return 1;
    default:
      return 0;
  }
}

static long by_number(long nr, const long *a);

/* Six arguments are read whatever the caller passed, as glibc's syscall()
 * reads them: the registers, and for the sixth the caller's first stack
 * slot, which belongs to the caller's own frame (a caller with fewer
 * arguments leaves it unread by the kernel).  Where the caller is
 * uninstrumented code (libstdc++'s __cxa_guard_release waking a futex, in
 * a function-local static's first use) called from an ASan-instrumented
 * function, that slot can lie in the instrumented frame's stack redzone:
 * the read is kept out of ASan's checks. */
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UEP_PL_READS_CALLER_STACK __attribute__((no_sanitize_address))
#endif
#endif
#if !defined(UEP_PL_READS_CALLER_STACK) && defined(__SANITIZE_ADDRESS__)
#define UEP_PL_READS_CALLER_STACK __attribute__((no_sanitize_address))
#endif
#ifndef UEP_PL_READS_CALLER_STACK
#define UEP_PL_READS_CALLER_STACK
#endif
UEP_PL_READS_CALLER_STACK long syscall(long nr, ...) {
  va_list ap;
  va_start(ap, nr);
  long a[6];
  for (int i = 0; i < 6; ++i) a[i] = va_arg(ap, long);
  va_end(ap);
  switch (nr) {
#ifdef SYS_epoll_create /* the legacy calls: absent on aarch64 and other new ABIs */
    case SYS_epoll_create: return epoll_create((int)a[0]);
#endif
    case SYS_epoll_create1: return epoll_create1((int)a[0]);
    case SYS_epoll_ctl: return epoll_ctl((int)a[0], (int)a[1], (int)a[2], (struct epoll_event *)a[3]);
#ifdef SYS_epoll_wait
    case SYS_epoll_wait: return epoll_wait((int)a[0], (struct epoll_event *)a[1], (int)a[2], (int)a[3]);
#endif
    case SYS_epoll_pwait:
      return epoll_pwait((int)a[0], (struct epoll_event *)a[1], (int)a[2], (int)a[3], (const sigset_t *)a[4]);
#ifdef SYS_epoll_pwait2
    case SYS_epoll_pwait2:
      return epoll_pwait2((int)a[0], (struct epoll_event *)a[1], (int)a[2], (const struct timespec *)a[3],
                          (const sigset_t *)a[4]);
#endif
    case SYS_eventfd2: return eventfd((unsigned)a[0], (int)a[1]);
#ifdef SYS_eventfd
    case SYS_eventfd: return eventfd((unsigned)a[0], 0);
#endif
    case SYS_pipe2: return pipe2((int *)a[0], (int)a[1]);
#ifdef SYS_pipe
    case SYS_pipe: return pipe((int *)a[0]);
#endif
    case SYS_timerfd_create: return timerfd_create((int)a[0], (int)a[1]);
    case SYS_socketpair: return socketpair((int)a[0], (int)a[1], (int)a[2], (int *)a[3]);
    case SYS_close_range: return close_range((unsigned)a[0], (unsigned)a[1], (int)a[2]);
    case SYS_close:
    case SYS_dup:
      if (own(a[0])) return errno = EBADF, -1L; /* interpose_own.c */
      /* fall through */
    case SYS_read:
    case SYS_write:
      if (uep_pl_map((int)a[0])) {
        if (nr == SYS_close) return close((int)a[0]);
        if (nr == SYS_read) return read((int)a[0], (void *)a[1], (size_t)a[2]);
        if (nr == SYS_write) return write((int)a[0], (const void *)a[1], (size_t)a[2]);
        return dup((int)a[0]);
      }
      break;
    default:
      break;
  }
  if (nr == SYS_io_uring_register || nr == SYS_io_submit) {
    uep_pl_kernel_signals_syscall(nr, a); /* a ring's eventfd becomes a kernel one (eventfd_convert.c) */
    struct uep_pl_operands keep = {0};
    uep_pl_kernel_operands_syscall(nr, a, &keep); /* so do the files acted on, and an iocb's eventfd (kernel_operands.c) */
    const long r = by_number(nr, a);
    uep_pl_operands_done(&keep);
    return r;
  }
  return by_number(nr, a);
}

/* The rest of syscall(2): the calls served by number, those made on a
 * template, and the kernel's. */
static long by_number(long nr, const long *a) {
  int handled;
  long r = served_by_number(nr, a, &handled);
  if (handled) return r;
  if (on_template(nr) && mapped(a[0])) {
    struct uep_pl_tmpl_use use;
    const int t = uep_pl_template_enter((int)a[0], &use);
    if (t < 0) return -1;
    r = UEP_PL_REAL(syscall)(nr, (long)t, a[1], a[2], a[3], a[4], a[5]);
    uep_pl_template_leave(&use);
    return r;
  }
  return UEP_PL_REAL(syscall)(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}
