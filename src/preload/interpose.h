/* interpose.h - helpers shared by the C interposers (owned by src/preload/).
 * No locks. */
#ifndef UEPOLL_PRELOAD_INTERPOSE_H
#define UEPOLL_PRELOAD_INTERPOSE_H

#include "preload/preload.h"

#include <stddef.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/types.h>

/* Depth of uepoll calls on this thread: > 0 while an interposer runs
 * uepoll, so that the kernel objects uepoll makes for itself (its waiters'
 * eventfds and epolls, kernel timerfds, fstat templates) are not turned into
 * uepoll objects again. */
extern __thread int uep_pl_depth;
/* > 0 while the library makes calls for itself outside an interposer: its
 * fork handlers and its own threads (core/internal_call.h). */
extern __thread int uep__internal_depth;
static inline int uep_pl_inside(void) { return uep_pl_depth > 0 || uep__internal_depth > 0; }
/* The library's marks of a call the interposer can make again on a kernel
 * object, and of one that left its sleep for that (core/handover.h).
 * Initial-exec: libuepoll is loaded with the preload, at start-up. */
extern __thread int uep__movable __attribute__((tls_model("initial-exec")));
extern __thread int uep__moved __attribute__((tls_model("initial-exec")));
extern __thread struct timespec uep__moved_left __attribute__((tls_model("initial-exec")));
/* libc's epoll_pwait and epoll_pwait2 for the library's sleeps on its own kernel epolls
 * (core/internal_call.h); set by interpose_fd.c before its first uepoll
 * instance. */
extern int (*uep__kernel_epoll_pwait)(int, struct epoll_event *, int, int, const sigset_t *);
extern int (*uep__kernel_epoll_pwait2)(int, struct epoll_event *, int, const struct timespec *, const sigset_t *);
/* A path argument that no process can have mapped: the first page, or an
 * address in the kernel's half.  The path interposers pass it to the
 * kernel unread, which answers EFAULT as Linux does, instead of reading it
 * themselves and faulting. */
static inline int uep_pl_unmapped(const void *p) {
  return (unsigned long)p < 4096 || (long)p < 0;
}
#define UEP_PL_ENTER() (++uep_pl_depth)
#define UEP_PL_LEAVE() (--uep_pl_depth)

int uep_pl_enabled(int kind);
/* interpose_time.c: the virtual clock's mode fixed at load (0: off). */
extern int uep_pl_vt_mode;
/* interpose_own.c: 1 if fd is one of uepoll's own kernel descriptors and
 * the caller is the program (not uepoll); close_range that skips them. */
int uep_pl_own(int fd);
/* The errno of a dup2/dup3 onto own number n: EBADF at or past the soft
 * RLIMIT_NOFILE, else EBUSY. */
int uep_pl_own_target_errno(int n);
/* Moves the own descriptor at n elsewhere and closes n: 0, or -1 (EBUSY). */
int uep_pl_own_vacate(int n);
int uep_pl_close_range_sparing(unsigned first, unsigned last, int flags);
/* interpose_kinds.c: a kernel object of the type and open mode of the
 * uepoll object shown as fd, one of uepoll's movable own descriptors: the
 * number to use until uep_pl_template_leave (which keeps errno), or -1
 * with errno if none (nothing to leave then); fstatfs on it. */
struct statfs;
struct statfs64;
struct uep__own_slot;
struct uep_pl_tmpl_use {
  struct uep__own_slot *slot;
  unsigned half;
};
int uep_pl_template_enter(int fd, struct uep_pl_tmpl_use *use);
void uep_pl_template_leave(struct uep_pl_tmpl_use *use);
/* fork_convert.c: makes the uepoll pipe or socket pair shown as n a kernel
 * one, under the same numbers. */
void uep_pl_convert_stream(int n);
/* fork_convert.c: one registration of a uepoll descriptor in a uepoll
 * instance (a uep_fdinfo line), and all of those whose descriptor key()
 * names (nonzero: its object), from the instances the program shows below
 * number hw (*count set, malloc'd array, NULL if none). */
struct uep_pl_reg {
  int ue;                  /* the instance's uepoll descriptor */
  int tfd;                 /* the registered uepoll descriptor */
  unsigned long long conn; /* its object, as key() named it */
  struct epoll_event ev;
};
struct uep_pl_reg *uep_pl_collect_registrations(int hw, int *count, unsigned long long (*key)(int tfd));
/* Room for one more element in a doubling array (realloc; NULL when out of
 * memory, arr still valid). */
void *uep_pl_grow_for_one(void *arr, int *cap, int used, size_t elem);
/* fork_convert.c: converts every uepoll pipe and socket pair the program
 * shows (only < 0), or only the one that number `only` shows; called inside
 * uepoll (UEP_PL_ENTER) or from the fork interposers. */
void uep_pl_convert_streams_of(int only);
/* fork_convert.c: the conversions' lock (recursive: a conversion converts
 * what its object carries from inside).  Taken by every conversion into
 * kernel objects, by the making of a uepoll pipe or pair (so that a fork
 * or spawn, which holds it from its conversions to the new process, never
 * sees one half made), and by fork() and posix_spawn[p]() from their
 * conversions until the child exists.  Outermost: taken before any of
 * uepoll's locks.  uep_pl_convert_lock_child() makes it free again in a
 * forked child, whose only thread is not its owner any more. */
void uep_pl_convert_lock(void);
void uep_pl_convert_unlock(void);
void uep_pl_convert_lock_child(void);
/* fork_convert.c: the calls asleep on uepoll files u[0..n) (one
 * descriptor per file, 0 for none) leave them for their interposers to make
 * again once the conversion that holds convert_mu is done: 1 when none is
 * left, 0 (marks taken back) when one cannot leave. */
int uep_pl_evict_sleepers(const int *u, int n);
/* Returns once no conversion runs (a call that left a handed-over file
 * makes itself again after it: convert_mu taken and released). */
void uep_pl_await_conversion(void);
/* fork_move.c: moves what is queued at uepoll descriptor u to kernel
 * descriptor k: a pipe's bytes (one read, one write: an O_DIRECT pipe's
 * packets stay whole), a stream socket's bytes with the descriptors they
 * carry, or the n messages of a datagram or seqpacket socket.  0, or -1
 * when a write failed or memory ran out. */
int uep_pl_move_queued(int u, int k);
int uep_pl_move_queued_socket(int u, int k);
int uep_pl_move_messages(int u, long n, int k);
/* eventfd_convert.c: makes the uepoll eventfd shown as n (and every number
 * showing the same eventfd) a kernel eventfd, under the same numbers: 0, or
 * -1 when n shows no uepoll eventfd or no kernel one could be made.  The
 * hooks: the calls that hand an eventfd to the kernel to signal. */
int uep_pl_convert_eventfd(int n);
/* The same from inside uepoll's calls (UEP_PL_ENTER held: the fork
 * conversion's move of descriptors in flight). */
int uep_pl_convert_eventfd_inside(int n);
/* Before a spawn (posix_spawn[p], popen, system): each uepoll eventfd and
 * timerfd the child would inherit (not close-on-exec) made a kernel one, so
 * that the child shares it (timerfd_convert.c for timers). */
void uep_pl_convert_inherited(void);
/* Before fork() and vfork(): every uepoll eventfd and timerfd the program
 * shows made a kernel one, so that parent and child share it (a timerfd on
 * the virtual clock stays, a copy in the child). */
void uep_pl_convert_at_fork(void);
void uep_pl_kernel_signals_syscall(long nr, const long *a);
/* lock_carry.c: the flock and record locks held through uepoll descriptor
 * u's open file description, read before the conversion closes it
 * (appended to *held, zeroed by the caller), and taken again through kernel
 * number n once no spare descriptor of the new kernel object is left to
 * close (frees *held).  A lock that cannot be taken again is said. */
struct uep_pl_lock {
  int kind;  /* FLOCK, OFDLCK or POSIX (lock_carry.c) */
  short type; /* F_RDLCK or F_WRLCK */
  long long start, len;
};
struct uep_pl_locks {
  struct uep_pl_lock *l;
  int n, cap;
};
void uep_pl_locks_collect(int u, struct uep_pl_locks *held);
void uep_pl_locks_take(struct uep_pl_locks *held, int n);
/* The steps a conversion into a kernel object shares (eventfd_convert.c):
 * the numbers showing a uepoll object of `kind` that key_of names `key`
 * (malloc'd, their uepoll descriptors in *us, malloc'd), and the object's
 * kernel descriptor k put at those numbers (k left open), its
 * registrations moved to it, its locks read into *held (for the caller to
 * take again through shown[0] after it closes k) and the uepoll
 * descriptors closed. */
int *uep_pl_numbers_showing(int kind, unsigned long long (*key_of)(int u), unsigned long long key, int **us,
                            int *ns);
void uep_pl_move_to_kernel(int k, const int *shown, const int *us, int ns, unsigned long long key,
                           unsigned long long (*key_of)(int u), const char *what, struct uep_pl_locks *held);
/* timerfd_convert.c: the uepoll timerfd shown as n becomes its own kernel
 * timer under the same numbers (0), or stays (-1: not a uepoll timerfd, on
 * the virtual clock, or no kernel form). */
int uep_pl_convert_timerfd(int n);
int uep_pl_convert_timerfd_inside(int n); /* UEP_PL_ENTER held */
/* kernel_operands.c: the descriptor n handed to the kernel to act on later
 * (an AIO iocb's, a registered io_uring file, one passed over a kernel
 * socket or in flight at fork): a uepoll pipe, pair, eventfd or timerfd
 * becomes a kernel one first, under the same numbers.  The hooks:
 * io_uring_register's file opcodes (the argument the kernel is to read
 * returned: a copy where the files name an epoll instance), and syscall(2)'s
 * io_submit and io_uring_register (a[2] replaced the same way); each
 * caller makes the system call and then uep_pl_operands_done(keep), which
 * puts back the iocbs' files and frees the copies. */
struct iocb;
struct uep_pl_operands {
  int *files;          /* a registration's file array, copied */
  void *head;          /* its header, copied to point at files */
  struct iocb **cbs;   /* iocbs given an instance's kernel form, */
  unsigned *fildes;    /* with their own aio_fildes, */
  long n;              /* n of them */
};
void uep_pl_hand_to_kernel(int n);
void uep_pl_hand_to_kernel_inside(int n); /* the same, UEP_PL_ENTER held */
const void *uep_pl_register_operands(unsigned opcode, const void *arg, unsigned nr_args,
                                      struct uep_pl_operands *keep);
void uep_pl_kernel_operands_syscall(long nr, long *a, struct uep_pl_operands *keep);
void uep_pl_operands_done(struct uep_pl_operands *keep);
void uep_pl_kernel_signals_ioctl(unsigned long request, void *arg);
/* dgram_named.c: a uepoll datagram pair end's connect to an AF_UNIX
 * address, or sendmsg to a name with control data or SO_PASSCRED on, made
 * on a kernel pair (converted first).  Returns 1 when it answered the call (*result, errno
 * set), 0 when the caller goes on as usual (fd then possibly a kernel
 * descriptor now). */
int uep_pl_dgram_named_connect(int fd, const struct sockaddr *a, socklen_t len, int *result);
int uep_pl_dgram_named_sendmsg(int fd, const struct msghdr *m, int flags, ssize_t *result);
/* 1 when a message of v is such a sendmsg's and the pair fd
 * shows was made a kernel one for it (fd is then a kernel descriptor). */
struct mmsghdr;
int uep_pl_dgram_named_sendmmsg(int fd, const struct mmsghdr *v, unsigned int vlen);
/* The same for sendto (a name, SO_PASSCRED on). */
int uep_pl_dgram_named_sendto(int fd, const struct sockaddr *a, socklen_t alen);
/* interpose_net.c: the uepoll pipes and pairs that m's SCM_RIGHTS names
 * made kernel ones, for a sendmsg on a kernel socket. */
void uep_pl_kernel_rights(const struct msghdr *m);
/* interpose_procfd.c: the descriptor number a path names (/proc/self/fd/N,
 * /proc/thread-self/fd/N, /proc/PID/fd/N with our PID, /dev/fd/N,
 * /dev/stdin...), or -1; and a stat of such a path that follows the link
 * (flags: AT_SYMLINK_NOFOLLOW or not): 1 with *st filled for a uepoll
 * object, -1 with errno ENOENT for one of uepoll's own numbers, 0 when the
 * kernel answers. */
struct stat;
int uep_pl_fd_of_path(const char *path);
/* The N of a path naming /proc/self/fdinfo/N (its other names as above), or -1. */
/* The number a descriptor directory's entry name gives ("N" as the
 * kernel names it: no sign, no leading zero), or -1; NULL gives -1. */
int uep_pl_entry_number(const char *name);
int uep_pl_fdinfo_of_path(const char *path);
/* interpose_fddir.c: syscall(nr) for getdents or getdents64 of kernel
 * descriptor fd, a descriptor directory's listing without uepoll's own
 * numbers. */
long uep_pl_getdents(long nr, int fd, void *buf, unsigned long n);
/* interpose_fd.c: a glibc compatibility symbol (the plain name, else its
 * GLIBC_2.2.5 version, as binaries built against glibc < 2.33 bind the
 * stat family), or NULL. */
void *uep_pl_compat_fn(const char *name);
int uep_pl_stat_procfd(const char *path, int flags, struct stat *st);
/* An open of /proc/self/fdinfo/N (flags: open's): the new descriptor, -1
 * with errno (ENOENT for an own number), or -2 when the kernel answers. */
int uep_pl_open_fdinfo(const char *path, int flags);
int uep_pl_fstatfs(int fd, struct statfs *st);
int uep_pl_fstatfs64(int fd, struct statfs64 *st);
int uep_pl_show(int u, int kind);

/* The libc function `name` (dlsym RTLD_NEXT, resolved once; relaxed atomics:
 * every thread stores the same value). */
#define UEP_PL_REAL(name)                                                        \
  (__extension__({                                                               \
    static __typeof__(&name) uep_fn_;                                            \
    __typeof__(&name) f_ = __atomic_load_n(&uep_fn_, __ATOMIC_RELAXED);          \
    if (!f_) {                                                                   \
      f_ = (__typeof__(&name))uep_pl_resolve(#name);                             \
      __atomic_store_n(&uep_fn_, f_, __ATOMIC_RELAXED);                          \
    }                                                                            \
    f_;                                                                          \
  }))

/* Body of an interposer: uep_<uname> uargs, with `u` the uepoll
 * descriptor behind fd, or libc's kname kargs.  Keeps uepoll's errno.  The
 * library may end the uepoll call early when its file is handed over to
 * the kernel (core/handover.h; fork_convert.c): then
 * the interposer waits for the conversion and runs `redo` when the call
 * moved nothing (`continue`: the call again, on what fd shows now; or a
 * `return` of the interposer called again, for one that prepares a kernel
 * call), or `rest` when it had moved data (a partial count r_): nothing for
 * calls whose partial count is their answer, a `return` of the count plus
 * the rest's for those that go on (write).  Both see uep_timed_ and
 * uep_end_ (UEP_PL_MOVED_END): a socket call whose SO_RCVTIMEO/SO_SNDTIMEO
 * deadline was running makes its call again within it (timed_redo.c). */
#define UEP_PL_FORWARD_REDO(fd, uname, uargs, kname, kargs, redo, rest) \
  do {                                                         \
    for (;;) {                                                 \
      int u = uep_pl_map(fd);                                  \
      if (!u) {                                                \
        uep_pl_count(UEP_PL_FORWARDED, 1);                     \
        return UEP_PL_REAL(kname) kargs;                       \
      }                                                        \
      UEP_PL_ENTER();                                          \
      ++uep__movable;                                          \
      __typeof__(uep_##uname uargs) r_ = uep_##uname uargs;    \
      int e_ = errno;                                          \
      --uep__movable;                                          \
      UEP_PL_LEAVE();                                          \
      uep_pl_count(UEP_PL_UEPOLL_CALL, 1);                     \
      if (__builtin_expect(uep__moved, 0)) {                   \
        struct timespec uep_end_ = {0, 0};                     \
        const int uep_timed_ = uep_pl_after_move(fd, &uep_end_); \
        (void)uep_timed_;                                      \
        if (r_ < 0) {                                          \
          redo;                                                \
        } else {                                               \
          rest;                                                \
        }                                                      \
      }                                                        \
      errno = e_;                                              \
      return r_;                                               \
    }                                                          \
  } while (0)

/* In a redo or rest: the moved call's deadline, or NULL for none. */
#define UEP_PL_MOVED_END() (uep_timed_ ? &uep_end_ : NULL)

/* The same for a call with nothing to prepare or go on with. */
#define UEP_PL_FORWARD2(fd, uname, uargs, kname, kargs) \
  UEP_PL_FORWARD_REDO(fd, uname, uargs, kname, kargs, continue, (void)0)

/* A partial count r plus what the call for the rest returned (< 0: an
 * error after r bytes moved, which leaves the count r, as a signal does). */
static inline ssize_t uep_pl_plus_rest(ssize_t r, ssize_t rest) { return rest < 0 ? r : r + rest; }
/* iov past its first `done` bytes, in out (cap entries): the count of
 * entries, or -1 if they do not fit (interpose_fd.c). */
int uep_pl_iov_past(const struct iovec *iov, int n, size_t done, struct iovec *out, int cap);
/* timed_redo.c: after a call that left fd handed over to the kernel
 * (uep__moved set), clears the flag and waits for the conversion
 * (uep_pl_await_conversion); then 1 with the absolute CLOCK_MONOTONIC end
 * of the call's deadline (uep__moved_left) in *end if it had one and fd is
 * the kernel's now, else 0 (no deadline, or fd still uepoll's).  Then the
 * socket call made again on the kernel socket until that end, as Linux's
 * call ends at its timeout: the count, or -1 with errno (EAGAIN at the
 * end). */
int uep_pl_after_move(int fd, struct timespec *end);
ssize_t uep_pl_timed_recvmsg(int fd, struct msghdr *m, int flags, const struct timespec *end);
ssize_t uep_pl_timed_sendmsg(int fd, const struct msghdr *m, int flags, const struct timespec *end);
ssize_t uep_pl_timed_recv(int fd, void *buf, size_t len, int flags, const struct timespec *end);
ssize_t uep_pl_timed_send(int fd, const void *buf, size_t len, int flags, const struct timespec *end);
/* m's bytes past its first `done`, within end: their count, or -1. */
ssize_t uep_pl_sendmsg_rest_timed(int fd, const struct msghdr *m, int flags, size_t done, const struct timespec *end);
/* sendmsg of m's bytes past its first `done` (interpose_net.c), within
 * `end` if not NULL. */
ssize_t uep_pl_sendmsg_rest(int fd, const struct msghdr *m, int flags, size_t done, const struct timespec *end);

#endif
