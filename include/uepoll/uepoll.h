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
 * the same int variables as kernel descriptors.  uep_read, uep_write,
 * uep_close, uep_dup, uep_poll, uep_shutdown and (for kernel epoll instances)
 * uep_epoll_ctl / uep_epoll_wait forward to the kernel when handed a kernel
 * descriptor, so a program can route all of its descriptor calls through
 * uepoll.
 *
 * Thread safety: every function is thread-safe, exactly as its Linux
 * counterpart is.  Blocking calls (waits, blocking read/write) sleep in the
 * kernel and return -1/EINTR when a signal handler runs in the calling thread,
 * whatever SA_RESTART says (as epoll_wait does; see docs/linux-deviations.md
 * for read/write).
 *
 * This header is valid C (C99 and later) and C++.
 */
#ifndef UEPOLL_UEPOLL_H
#define UEPOLL_UEPOLL_H

#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <sys/types.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

/* uepoll descriptors are UEP_FD_BASE + index, index allocated lowest-first
 * like the kernel's.  The kernel never returns a descriptor at or above
 * /proc/sys/fs/nr_open (1,048,576 by default); uepoll refuses to start its
 * table if nr_open were ever raised past UEP_FD_BASE. */
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

/* Extension: 1 if fd is an open uepoll descriptor, 0 otherwise. */
int uep_is_uepoll_fd(int fd);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* UEPOLL_UEPOLL_H */
