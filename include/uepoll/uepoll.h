/*
 * uepoll.h - the C API of uepoll: Linux epoll over user-space I/O objects.
 *
 * Every function here mirrors the Linux system call of the same name without
 * the "uep_" prefix: same arguments, same return values, -1 with Linux's errno
 * on failure, and the same order in which errors are detected (Linux 6.18, see
 * docs/linux-deviations.md for the few intentional differences).
 *
 * Descriptors.  uepoll descriptors are plain ints taken from a range that the
 * kernel never hands out (UEP_FD_BASE and up, see below), so they can live in
 * the same int variables as kernel descriptors.  Every descriptor call here
 * (uep_read, uep_write, uep_close, uep_dup, uep_poll, uep_shutdown, the rest
 * of the descriptor surface below, and uep_epoll_ctl / uep_epoll_wait for
 * kernel epoll instances) forwards to the kernel when handed a kernel
 * descriptor, so a program can route all of its descriptor calls through
 * uepoll.  <uepoll/compat.h> does that for a source file unchanged, and
 * libuepoll-preload.so (uepoll-run) for an unmodified binary.
 *
 * Thread safety: every function is thread-safe, exactly as its Linux
 * counterpart is.  Blocking calls sleep in the kernel.  Waits (epoll_wait,
 * poll) return -1/EINTR when a signal handler runs in the calling thread,
 * whatever SA_RESTART says, as Linux's do; a blocking read or write on a
 * pipe, socket pair, eventfd, timerfd or user-defined file is restarted
 * after a handler installed with SA_RESTART and returns -1/EINTR after any
 * other, as signal(7) says (the exceptions: docs/linux-deviations.md).
 *
 * Out of memory: no call aborts; one that cannot allocate fails with -1/ENOMEM
 * (ENOBUFS for a socket write, as Linux) and changes nothing.
 *
 * fork(): the child gets a copy of every uepoll object as it was at the fork
 * and can use all of them (blocking waits, its own threads, timers); parent
 * and child no longer see each other's changes (Linux shares them).  Details
 * in docs/linux-deviations.md ("fork()").
 *
 * This header is valid C (C99 and later) and C++.
 */
#ifndef UEPOLL_UEPOLL_H
#define UEPOLL_UEPOLL_H

#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/eventfd.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>

#include <uepoll/export.h>
#include <uepoll/version.h>

#ifdef __cplusplus
extern "C" {
#endif
UEP_API_BEGIN /* every function declared here is exported (export.h) */

/* uepoll descriptors are UEP_FD_BASE + index, index allocated lowest-first
 * like the kernel's.  The kernel never returns a descriptor at or above
 * /proc/sys/fs/nr_open (1,048,576 by default).  If nr_open were raised to
 * UEP_FD_BASE or more, the two ranges could meet: uepoll then creates no
 * descriptor, every call that would create one fails with EMFILE, and one
 * line on stderr (printed once) says why. */
#define UEP_FD_BASE 0x40000000
#define UEP_FD_MAX 0x7ffffff0

/* ---- epoll ---------------------------------------------------------- */
int uep_epoll_create(int size);
int uep_epoll_create1(int flags);
int uep_epoll_ctl(int epfd, int op, int fd, struct epoll_event *event);
int uep_epoll_wait(int epfd, struct epoll_event *events, int maxevents,
                   int timeout);
int uep_epoll_pwait(int epfd, struct epoll_event *events, int maxevents,
                    int timeout, const sigset_t *sigmask);
int uep_epoll_pwait2(int epfd, struct epoll_event *events, int maxevents,
                     const struct timespec *timeout, const sigset_t *sigmask);

/* Extension: a kernel descriptor for putting uepoll instance epfd into a
 * kernel event loop (libuv's uv_poll_t, Boost.Asio, a kernel epoll, poll()):
 * it polls readable (POLLIN) whenever uep_epoll_wait(epfd, ..., 0) would
 * return at least one event, and becomes readable when an event arrives
 * from any thread.  It may also poll readable when the instance's ready
 * list holds items that a harvest finds not ready after all; the next
 * uep_epoll_wait / uep_epoll_pwait* call on epfd (which then returns 0)
 * clears that.  So a loop should, on readable, call uep_epoll_wait(epfd,
 * ..., 0) until it returns fewer events than it asked for (the loop may
 * watch it level- or edge-triggered).  The same descriptor on every call;
 * owned by the instance: never close it; valid until the instance's last
 * descriptor is closed.  Nothing is created before the first call.
 * Errors: EBADF (epfd not open), EINVAL (epfd is not a uepoll epoll
 * instance), EMFILE/ENFILE/ENOMEM (no kernel descriptor available), ELOOP
 * or EINVAL (the kernel refuses the nesting that the instance's kernel side
 * would need, where it would refuse a loop's epoll over a kernel epoll
 * watching the same descriptors; see docs/linux-deviations.md), ENOSPC
 * (max_user_watches).  After an error the next call tries again.
 * Thread-safe; never blocks. */
int uep_epoll_kernel_fd(int epfd);

/* ---- objects -------------------------------------------------------- */
int uep_eventfd(unsigned int initval, int flags);
int uep_pipe(int pipefd[2]);
int uep_pipe2(int pipefd[2], int flags);
int uep_socketpair(int domain, int type, int protocol, int sv[2]);
int uep_shutdown(int sockfd, int how);
int uep_timerfd_create(int clockid, int flags);
int uep_timerfd_settime(int fd, int flags, const struct itimerspec *new_value,
                        struct itimerspec *old_value);
int uep_timerfd_gettime(int fd, struct itimerspec *curr_value);

/* ---- descriptors ---------------------------------------------------- */
/* Async-signal-safety.  uep_write and uep_read on eventfds and pipes, and
 * uep_close, may be called from a signal handler, even one that interrupted
 * its own thread inside any uepoll call: they never wait for a lock that
 * thread holds, and a wakeup they cause is never lost (it is delivered when
 * the interrupted call releases its last lock).  In that case a call that
 * would sleep fails with EAGAIN, a pipe read fails with EAGAIN, a pipe
 * write of more than PIPE_BUF bytes fails with EAGAIN, and a write to a pipe
 * the thread was using may be completed after the handler returns (see
 * docs/design.md, "Signal handlers").  Conditions: the thread made one
 * uepoll call before, and handlers calling uepoll do not nest.  No other
 * uepoll call is async-signal-safe; fork() from such a handler is not
 * supported.  Kernel descriptors are passed to the kernel's calls. */
ssize_t uep_read(int fd, void *buf, size_t count);
ssize_t uep_write(int fd, const void *buf, size_t count);
int uep_close(int fd);
int uep_dup(int oldfd);
int uep_poll(struct pollfd *fds, nfds_t nfds, int timeout);

/* ---- the rest of the descriptor surface ----------------------------- *
 * Same contract as the libc function of the name, for each uepoll object
 * type as Linux answers for the kernel's object (docs/linux-deviations.md
 * lists the differences); kernel descriptors are passed to the kernel.
 *   fcntl: F_DUPFD, F_DUPFD_CLOEXEC, F_GETFD, F_SETFD, F_GETFL, F_SETFL
 *          (O_NONBLOCK, O_APPEND, O_ASYNC, O_DIRECT for pipes, O_NOATIME),
 *          F_GETPIPE_SZ, F_[GS]ETOWN[_EX], F_[GS]ETSIG (O_ASYNC pipes and
 *          pairs signal the owner as kill_fasync), F_GETLK, F_SETLK,
 *          F_SETLKW and their F_OFD_ forms (as flock below); other
 *          commands EINVAL.
 *   flock: Linux's locks, kept by the kernel on a kernel file of the
 *          object's inode kind made at the first lock call (one anonymous
 *          inode for every eventfd, epoll instance and timerfd, one inode
 *          for the two ends of a pipe, one per socket): conflicts between
 *          open file descriptions, LOCK_NB (EWOULDBLOCK), blocking
 *          (EINTR, or restarted after an SA_RESTART handler), released
 *          with the open file description; a close of any descriptor of
 *          the file drops the process's record locks on it.  May block.
 *          EMFILE/ENFILE when that kernel file cannot be made.
 *   ioctl: FIONBIO, FIOASYNC, FIOCLEX, FIONCLEX, FIONREAD (pipes, sockets),
 *          TIOCOUTQ (sockets); on an epoll instance EPIOCSPARAMS and
 *          EPIOCGPARAMS (busy-poll waits, below), EINVAL for others;
 *          ENOTTY otherwise.
 *   dup2/dup3: atomically replace an open uepoll descriptor.  A uepoll file
 *          cannot be put at a kernel descriptor number nor a kernel file at
 *          a uepoll number: EBADF (as for a newfd out of range).
 *   pread/pwrite: ESPIPE; lseek: ESPIPE (pipes, sockets), 0 (anonymous
 *          inodes: epoll, eventfd, timerfd), as Linux.
 *   fstat: S_IFIFO|0600 (pipes), S_IFSOCK|0777 (sockets), 0600 without a
 *          type (epoll, eventfd, timerfd: an anonymous inode).
 *   select/pselect: an fd_set cannot hold a uepoll descriptor (they lie
 *          far above FD_SETSIZE): these are the kernel's calls, for kernel
 *          descriptors only.  Use uep_poll/uep_ppoll for uepoll ones.
 *   Socket calls: on a uepoll descriptor that is not a socket ENOTSOCK
 *          (after EBADF, in Linux's order); on a file made with
 *          uep_file_create (<uepoll/file.h>) they reach its socket
 *          operations.  On uepoll socket pairs: MSG_DONTWAIT, MSG_NOSIGNAL,
 *          MSG_PEEK, MSG_WAITALL; no control messages (EOPNOTSUPP);
 *          listen and accept EINVAL, connect EISCONN (a connected pair),
 *          bind EOPNOTSUPP (naming a pair is not modelled). */
int uep_fcntl(int fd, int cmd, ... /* arg */);
int uep_ioctl(int fd, unsigned long request, ... /* arg */);
int uep_flock(int fd, int operation);
int uep_dup2(int oldfd, int newfd);
int uep_dup3(int oldfd, int newfd, int flags);
ssize_t uep_readv(int fd, const struct iovec *iov, int iovcnt);
ssize_t uep_writev(int fd, const struct iovec *iov, int iovcnt);
ssize_t uep_pread(int fd, void *buf, size_t count, off_t offset);
ssize_t uep_pwrite(int fd, const void *buf, size_t count, off_t offset);
off_t uep_lseek(int fd, off_t offset, int whence);
int uep_fstat(int fd, struct stat *statbuf);
int uep_ppoll(struct pollfd *fds, nfds_t nfds, const struct timespec *tmo,
              const sigset_t *sigmask);
int uep_select(int nfds, fd_set *readfds, fd_set *writefds, fd_set *exceptfds,
               struct timeval *timeout);
int uep_pselect(int nfds, fd_set *readfds, fd_set *writefds,
                fd_set *exceptfds, const struct timespec *timeout,
                const sigset_t *sigmask);
/* splice, tee, vmsplice, sendfile, copy_file_range with a uepoll
 * descriptor on a side (two kernel descriptors go to the kernel).  Linux's
 * checks in Linux's order (EINVAL for flags, EBADF, ESPIPE for an offset
 * on a pipe, EFAULT, EBADF for the wrong direction, EINVAL without a pipe
 * or with a file that cannot be spliced, EINVAL for splicing a pipe to
 * itself).  What moves: splice between a uepoll pipe or socket pair and a
 * kernel file, pipe or socket in either direction, and between two uepoll
 * objects; tee between uepoll pipes and between a uepoll and a kernel
 * pipe; vmsplice into and out of a uepoll pipe (SPLICE_F_GIFT ignored:
 * the pages are copied); sendfile from a kernel file or a uepoll socket
 * into a uepoll pipe, a uepoll socket or a kernel descriptor.  Bytes go
 * through one buffer of 64 KiB per call; Linux's counts (into a pipe: at
 * most what its free buffers hold, a page each; out of a pipe: what the
 * destination takes, the rest stays queued), SPLICE_F_NONBLOCK and
 * O_NONBLOCK as Linux adds them (EAGAIN), EPIPE and SIGPIPE without
 * readers, offsets and file positions advanced by the bytes moved.
 * copy_file_range: EISDIR or EINVAL, as Linux says for a file that is not
 * regular.  Offsets are loff_t (int64_t). */
ssize_t uep_splice(int fd_in, int64_t *off_in, int fd_out, int64_t *off_out,
                   size_t len, unsigned int flags);
ssize_t uep_tee(int fd_in, int fd_out, size_t len, unsigned int flags);
ssize_t uep_vmsplice(int fd, const struct iovec *iov, size_t nr_segs,
                     unsigned int flags);
ssize_t uep_sendfile(int out_fd, int in_fd, off_t *offset, size_t count);
ssize_t uep_copy_file_range(int fd_in, int64_t *off_in, int fd_out,
                            int64_t *off_out, size_t len, unsigned int flags);
ssize_t uep_send(int sockfd, const void *buf, size_t len, int flags);
ssize_t uep_recv(int sockfd, void *buf, size_t len, int flags);
ssize_t uep_sendto(int sockfd, const void *buf, size_t len, int flags,
                   const struct sockaddr *dest_addr, socklen_t addrlen);
ssize_t uep_recvfrom(int sockfd, void *buf, size_t len, int flags,
                     struct sockaddr *src_addr, socklen_t *addrlen);
ssize_t uep_sendmsg(int sockfd, const struct msghdr *msg, int flags);
ssize_t uep_recvmsg(int sockfd, struct msghdr *msg, int flags);
int uep_getsockopt(int sockfd, int level, int optname, void *optval,
                   socklen_t *optlen);
int uep_setsockopt(int sockfd, int level, int optname, const void *optval,
                   socklen_t optlen);
int uep_getsockname(int sockfd, struct sockaddr *addr, socklen_t *addrlen);
int uep_getpeername(int sockfd, struct sockaddr *addr, socklen_t *addrlen);
int uep_bind(int sockfd, const struct sockaddr *addr, socklen_t addrlen);
int uep_listen(int sockfd, int backlog);
int uep_accept(int sockfd, struct sockaddr *addr, socklen_t *addrlen);
int uep_accept4(int sockfd, struct sockaddr *addr, socklen_t *addrlen,
                int flags);
int uep_connect(int sockfd, const struct sockaddr *addr, socklen_t addrlen);

/* Extension: 1 if fd is an open uepoll descriptor, 0 otherwise. */
int uep_is_uepoll_fd(int fd);

/* ---- user-defined files (extension) --------------------------------
 * A program's own object (a user-space socket, a message channel...) as a
 * uepoll descriptor: epoll, poll, read, write, dup and close treat it as
 * they treat eventfds and pipes (LT, ET, ONESHOT, EXCLUSIVE, nesting,
 * removal from every instance at the last close).  Linux's model:
 * file_operations->poll/read/write/release and wake_up_poll().
 *
 * Callbacks.  uepoll calls them with NO lock of its own held, in the
 * thread of the call that runs them (poll: uep_file_open, uep_file_wake,
 * uep_read, uep_write; read/write: uep_read/uep_write; release: below),
 * so possibly concurrently, with each other and with themselves.  A
 * callback may call any uepoll function, uep_file_wake included (on this
 * file or another).  The object's own locking is the program's: take your
 * locks inside the callbacks, never across a uepoll call that may run
 * one of them (see uep_file_wake).
 *
 *  poll(ctx)  returns the current readiness (EPOLLIN, EPOLLOUT, EPOLLHUP,
 *             EPOLLERR, EPOLLRDHUP, EPOLLPRI, EPOLLRDNORM...).  Required.
 *             uepoll calls it once in uep_file_open, in every
 *             uep_file_wake before anyone is woken, and after every read
 *             or write callback (once more when a concurrent call on
 *             another thread raced it); epoll, poll and blocking reads see the
 *             value of the latest call (harvests never call user code).
 *             So readiness that changes outside read/write must be
 *             announced with uep_file_wake -- also when it goes away (a
 *             wake for bits that are not ready delivers nothing; Linux
 *             re-polls at every harvest instead).  Must not block.
 *  read(ctx, buf, len), write(ctx, buf, len)
 *             as read(2)/write(2): return the byte count, or -1 with errno
 *             set (errno 0 is reported as EIO; a count above len as EIO).
 *             NULL: uep_read / uep_write fail with EINVAL.  buf and len
 *             are the caller's, after uepoll's own checks (a buffer past
 *             the user address range is EFAULT; len is clamped to
 *             Linux's MAX_RW_COUNT).  On a descriptor without O_NONBLOCK,
 *             -1/EAGAIN makes the caller sleep until uep_file_wake with
 *             EPOLLIN|EPOLLRDNORM|EPOLLRDHUP|EPOLLHUP|EPOLLERR (read) or
 *             EPOLLOUT|EPOLLWRNORM|EPOLLHUP|EPOLLERR (write) or key 0, then
 *             call it again; a signal handler ends the sleep with EINTR
 *             (the call is restarted after an SA_RESTART handler).
 *             With O_NONBLOCK, EAGAIN is returned.
 *  release(ctx)  the file was closed: its last descriptor is gone and
 *             every call in progress on it (reads, writes, polls, wakes)
 *             has returned.  Runs exactly once, in the thread that dropped
 *             the last reference (uep_close, the end of a uep_* call on a
 *             descriptor closed meanwhile, or a uep_file_wake that was
 *             polling when the last descriptor closed); by then the file
 *             is removed from every epoll instance.  No callback is called
 *             after it starts.  May be NULL.
 *
 * uep_file_open(ops, ctx, flags, &handle): a new descriptor (lowest free)
 *   for a new file with the callbacks in *ops (copied) and ctx, and in
 *   *handle one reference to it.  flags: O_NONBLOCK (the descriptor's
 *   status flag), O_CLOEXEC (the descriptor's FD_CLOEXEC; uepoll
 *   descriptors are not inherited by exec in any case).  Calls ops->poll once before returning.  Errors,
 *   in this order: EINVAL (other flags), EFAULT (ops or handle NULL or not
 *   user memory), EINVAL (ops->poll NULL), ENOMEM, EMFILE.  On error
 *   *handle is untouched and release is never called (poll may have
 *   been, for EMFILE).
 *
 * uep_file_wake(handle, events): the object's readiness changed: calls
 *   ops->poll, then wakes the file's waiters for `events` as Linux's
 *   wake_up_poll(wq, events): epoll items whose events intersect them
 *   (one EPOLLEXCLUSIVE item), blocked poll()s, readers or writers.
 *   events == 0 wakes every waiter whatever it waits for (wake_up()).
 *   Any thread, any time, also inside a callback of this or another file
 *   (from inside this file's own poll, read or write it is delivered once
 *   that callback has returned and poll has been called); after the file
 *   is closed it does nothing.
 *   Because it calls ops->poll, do not hold a lock that poll (or release)
 *   takes while calling it: change the state under your lock, unlock,
 *   then wake.  Blocks only as long as poll does; allocates nothing.
 *
 * uep_file_unref(handle): drops the handle's reference.  Call it exactly
 *   once per handle, from any thread (also inside release); the handle is
 *   invalid afterwards.  It does not close the file (descriptors do), and
 *   the handle may outlive the file.  NULL is ignored.
 */
struct uep_file;
struct uep_file_ops {
  uint32_t (*poll)(void *ctx);
  ssize_t (*read)(void *ctx, void *buf, size_t len);
  ssize_t (*write)(void *ctx, const void *buf, size_t len);
  void (*release)(void *ctx);
};
int uep_file_open(const struct uep_file_ops *ops, void *ctx, int flags,
                  struct uep_file **handle);
void uep_file_wake(struct uep_file *handle, uint32_t events);
void uep_file_unref(struct uep_file *handle);

/* ---- beyond Linux: issue 10 ---------------------------------------------
 * Extensions that Linux's eventpoll was offered on LKML but does not have
 * (or has only for NIC queues).  docs/design.md ("Beyond Linux") gives the
 * seed or RFC of each and how it is built.  Each is documented here with
 * its contract. */

/* Busy-poll waits (Linux 6.9's per-instance ioctl, new meaning).
 * uep_ioctl(epfd, EPIOCSPARAMS, &p) / uep_ioctl(epfd, EPIOCGPARAMS, &p) take
 * Linux's struct and check the argument exactly as Linux 6.18 does: EFAULT
 * if p cannot be read (SET) or written (GET); then for SET, EINVAL if
 * __pad != 0, busy_poll_usecs > INT32_MAX or prefer_busy_poll > 1, EPERM if
 * busy_poll_budget > 64 (NAPI_POLL_WEIGHT) without CAP_NET_ADMIN.  Any other
 * request on an instance is EINVAL (Linux's ep_eventpoll_ioctl); EPIOC* on a
 * uepoll descriptor that is not an instance is ENOTTY; on a kernel
 * descriptor the call goes to the kernel.
 * On a uepoll instance busy_poll_usecs means: a wait that would sleep first
 * spins on the instance's ready list for up to that many microseconds
 * (never past its timeout), with the CPU's pause hint and no system call;
 * an event queued meanwhile is returned at once, and the thread that queued
 * it makes no wakeup call (the spinner is not on the sleeper queue).  An
 * instance that holds kernel descriptors adds one poll() of them to every
 * look, so their events end the spin too (a kernel eventfd, pipe or socket
 * written meanwhile wakes no thread: the spinner is not asleep in the
 * kernel either).  Only
 * then does the wait queue itself and sleep.  The window adapts: each spin
 * that ends without an event halves the instance's next window (down to
 * 1/4096 of busy_poll_usecs), each that finds one doubles it again, and
 * while it is reduced one wait in 64 spins the whole busy_poll_usecs (so a
 * machine with no spare CPU, where spinning only delays the producer, soon
 * stops paying for it); EPIOCSPARAMS restores the whole window.  Signals stay blocked during
 * the spin of an epoll_pwait with a mask (delayed at most busy_poll_usecs),
 * on an instance with kernel descriptors only those the mask blocks (so
 * that a signal Linux discards, SIGCHLD at SIG_DFL, is discarded and does
 * not end the sleep after the spin; another runs its handler as below).
 * Without a mask they are not blocked while spinning (that would cost two
 * system calls per wait): a handler that runs during the spin does not end
 * the wait with EINTR, the wait carries on as if the signal had come just
 * before the call (docs/linux-deviations.md).
 * busy_poll_budget and prefer_busy_poll are stored and reported only.
 * Default: the "busy_poll_usecs" knob of uepoll/tuning.h (0, Linux's
 * behaviour), copied into each instance when it is created. */
#ifndef EPIOCSPARAMS
struct epoll_params {
  unsigned int busy_poll_usecs;   /* __u32 */
  unsigned short busy_poll_budget; /* __u16 */
  unsigned char prefer_busy_poll;  /* __u8 */
  unsigned char __pad;             /* must be zero */
};
#define EPOLL_IOC_TYPE 0x8A
#define EPIOCSPARAMS _IOW(EPOLL_IOC_TYPE, 0x01, struct epoll_params)
#define EPIOCGPARAMS _IOR(EPOLL_IOC_TYPE, 0x02, struct epoll_params)
#endif
/* (uep_ioctl itself is declared with the descriptor surface above.) */

/* Round-robin exclusive wakeups (Jason Baron, "epoll: introduce round robin
 * wakeup mode", 2015 RFC).  An event flag that takes effect only together
 * with EPOLLEXCLUSIVE on EPOLL_CTL_ADD (which otherwise refuses unknown
 * bits with EINVAL; a kernel instance still does).  Without EPOLLEXCLUSIVE
 * the bit is accepted and ignored, as Linux accepts and keeps any unknown
 * bit there (tests/conformance CtlMask.AnyBitsAcceptedWithoutExclusive).
 * When an event on the target file wakes the instances registered on it
 * exclusively, the registration that took the wakeup moves to the back of
 * the file's queue, so N instances (one per worker thread) that each watch
 * the file with this flag take the wakeups in turn (FIFO rotation) instead
 * of the first idle one taking all of them.  Likewise among threads that
 * wait on one instance: an event of such a registration wakes the thread
 * that has slept longest, where Linux wakes the newest sleeper (so one busy
 * thread would otherwise take every event).  Without the flag the order
 * stays Linux's.  The bit is never reported by a wait. */
#define UEP_EPOLLROUNDROBIN (1u << 26)

/* Safe disable (Paton J. Lewis, "epoll: Add EPOLL_CTL_DISABLE", 2012,
 * merged for 3.7-rc and reverted; there op 4, which Linux today answers
 * with EINVAL, so uepoll's op lies outside Linux's op numbers).
 * uep_epoll_ctl(epfd, UEP_EPOLL_CTL_DISABLE, fd, NULL) on an EPOLLONESHOT
 * registration: returns 0 and disarms it if no event for it was handed to
 * a wait since it was last armed (ADD or MOD); after that 0 no
 * uep_epoll_wait in any thread returns its event, so the caller may free
 * what data points to (then DEL it).
 * Returns -1/EBUSY if an event was handed out since it was armed: the thread
 * that got it owns it and must re-arm or delete it.  EINVAL for a
 * registration without EPOLLONESHOT (nothing can be promised), ENOENT if fd
 * is not registered, and otherwise the errors of EPOLL_CTL_DEL (event is
 * ignored).  uepoll instances only: a kernel epfd gives what Linux gives
 * for an unknown op (EFAULT for a NULL event, else EINVAL). */
#define UEP_EPOLL_CTL_DISABLE 0x75650004

/* Batched control (Fam Zheng, "epoll: Add epoll_ctl_batch", 2015 RFC).
 * Executes cmds[0..ncmds) in order as uep_epoll_ctl(epfd, op, fd, &event)
 * would, storing 0 or -errno in each command's result, and stops after the
 * first failure.  Returns the number of commands executed (the failed one
 * included), or -1 with errno for errors of the call itself, checked in
 * this order: EINVAL if ncmds < 0 or ncmds > UEP_CTL_BATCH_MAX (a bound on
 * how long one call holds uepoll's epoch guard), EFAULT if cmds cannot be
 * read and written, EBADF / EINVAL if epfd is not an open epoll instance.  ncmds == 0
 * returns 0 after those checks.  Each command is atomic; the batch is not
 * (other threads may see a prefix).  A kernel epfd runs the commands one
 * epoll_ctl(2) each. */
struct uep_ctl_cmd {
  int op;
  int fd;
  struct epoll_event event;
  int result;
};
#define UEP_CTL_BATCH_MAX 1024
int uep_epoll_ctl_batch(int epfd, struct uep_ctl_cmd *cmds, int ncmds);

/* fdinfo: what /proc/self/fdinfo/FD shows for fd, in Linux 6.18's format
 * (snprintf-like: writes at most len bytes including the NUL, returns the
 * full length, or -1/EBADF).  Lines: "pos:", "flags:" (octal, with
 * O_CLOEXEC when the descriptor has FD_CLOEXEC, as Linux), "mnt_id:" (0: uepoll
 * files are on no mount), "ino:" (the file's uepoll id), then per type:
 * instances one "tfd: %8d events: %8x data: %16llx  pos:0 ino:%lx sdev:%x"
 * line per registration of a uepoll file (ino: the target's uepoll id,
 * sdev: 0), sorted by (target id, fd), then the kernel's own lines for the
 * kernel descriptors it watches; eventfds "eventfd-count:", "eventfd-id:" (the file id),
 * "eventfd-semaphore:"; timerfds the kernel's own lines; socket pairs
 * "scm_fds: 0"; pipes nothing more.  A kernel fd gives the kernel's text. */
long uep_fdinfo(int fd, char *buf, unsigned long len);

UEP_API_END

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* UEPOLL_UEPOLL_H */
