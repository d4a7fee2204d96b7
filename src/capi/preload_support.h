/* preload_support.h - library entry points that only libuepoll-preload.so
 * calls (src/preload/fork_convert.c, interpose_fd.c).  They are exported from a shared
 * libuepoll (the preload then links against it) but declared in no
 * installed header: they are not part of uepoll's API and may change with
 * any release.  The double underscore marks them private.
 *
 * Owned by src/capi/preload_support_api.cpp.  Locks: see there. */
#ifndef UEPOLL_CAPI_PRELOAD_SUPPORT_H
#define UEPOLL_CAPI_PRELOAD_SUPPORT_H

#include <uepoll/export.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What the conversion of a uepoll pipe or socket pair into a kernel one
 * (before fork) needs to know about one end. */
struct uep__stream_state {
  unsigned long long conn; /* the same for both ends of one pipe or pair */
  int side;                /* pipe: 0 read end, 1 write end; pair: 0 or 1 */
  int shutdown;            /* pair: this side's RCV (1) / SEND (2) shutdown bits; pipe: 0 */
  int is_socket;
  int sock_type;           /* pair: SOCK_STREAM, SOCK_DGRAM or SOCK_SEQPACKET */
  long msgs;               /* datagram/seqpacket pair: messages queued at this end */
};

/* 0 and *out filled; -1 with EBADF (fd not open) or EINVAL (not a uepoll
 * pipe end or socket of a pair). */
UEP_EXPORT int uep__stream_state(int fd, struct uep__stream_state *out);

/* The calls asleep on uepoll file fd (a read or write of it, uep_poll or
 * select over it; not its epoll registrations): *fixed 1 if one cannot be
 * made again elsewhere, *movable 1 if one can, by the preload
 * (core/handover.h).  0, or -1 with EBADF.  Takes the file's wait-queue
 * lock (11). */
UEP_EXPORT int uep__sleepers(int fd, int *fixed, int *movable);

/* on: marks uepoll file fd handed over to the kernel and wakes the threads
 * asleep on it, so that the movable ones leave (uep__moved); off: clears
 * the mark.  0, or -1 with EBADF.  Takes the file's wait-queue lock (11). */
UEP_EXPORT int uep__hand_over(int fd, int on);

/* The count of uepoll eventfd fd, taken for the kernel eventfd the preload
 * makes of it (*semaphore: its EFD_SEMAPHORE mode): from then on a read or
 * write of fd that the preload can make again leaves it (uep__moved) and
 * any other fails with EBADF, so no count lands in it after the take.  0,
 * or -1 with EBADF (not open, taken before) or EINVAL (not an eventfd).
 * Takes its wait-queue lock (11) to wake its sleepers. */
UEP_EXPORT int uep__eventfd_take_for_move(int fd, unsigned long long *count, int *semaphore);

/* What a movable splice or sendfile into a pipe or pair being handed over
 * had read from a source that cannot take it back (core/handover.h; the
 * call's answer counts it): written whole to fd, the descriptor that now
 * shows the destination (a kernel one after the conversion), waiting for
 * room.  The bytes written, 0 when the calling thread kept none, or -1
 * with errno (EPIPE: no reader, the rest dropped, no SIGPIPE).  No lock. */
UEP_EXPORT long uep__put_moved_bytes(int fd);

/* One registration of uepoll instance epfd: the registered descriptor
 * (uepoll's number or a kernel one), its events (a disabled
 * EPOLLONESHOT's included) and data, as uep_fdinfo's "tfd:" lines show
 * them, without the text. */
struct uep__registration {
  int tfd;
  unsigned events;
  unsigned long long data;
};
/* The registrations of the uepoll descriptors in instance epfd (those
 * uep_fdinfo lists from the instance itself; the kernel descriptors it
 * watches, which uep_fdinfo reads from /proc, are left out): the first n
 * in out, the count returned; -1 with EBADF (epfd not open), EINVAL (not
 * an instance) or ENOMEM.  Takes the instance's shard locks (6), one at a
 * time; allocates. */
UEP_EXPORT long uep__epoll_registrations(int epfd, struct uep__registration *out, long n);

/* The socket options the program set on uepoll socket fd (one of a pair),
 * copied onto kernel socket kfd; nothing for another descriptor.  System
 * calls only. */
UEP_EXPORT void uep__carry_sockopts(int fd, int kfd);

/* A new kernel descriptor (close-on-exec) that is uepoll descriptor fd for
 * the kernel (core::File::kernel_form: a timerfd's kernel timer, holding
 * its expirations), for the preload to show in fd's place when the program
 * hands it to a kernel interface; -1 with errno EBADF (fd not open),
 * EINVAL (a file without one), EOPNOTSUPP (a timerfd on the virtual
 * clock) or the kernel's. */
UEP_EXPORT int uep__kernel_form(int fd);

/* uepoll descriptor fd, shown to the program as number `shown`: if it has
 * O_ASYNC, its signals carry si_fd = shown (File::kill_fasync). */
UEP_EXPORT void uep__set_fasync_fd(int fd, int shown);

/* The text of /proc/self/fdinfo for uepoll descriptor fd's lock descriptor
 * (core::File::lock_slot: the kernel file that holds the flock and record
 * locks taken through fd's open file description), NUL-terminated in
 * buf[0..len): its "lock:" lines name those locks, for a conversion to take
 * them again on the kernel object it makes (src/preload/lock_carry.c).
 * Returns the length; 0 if no lock call made one; -1 with errno EBADF (fd
 * not open) or the kernel's.  No uepoll lock. */
UEP_EXPORT long uep__lock_fdinfo(int fd, char *buf, unsigned long len);

/* The open file description behind uepoll descriptor fd, as a number equal
 * for two descriptors exactly when they share it (dup, SCM_RIGHTS within
 * the process); 0 if fd is not open.  Lock-free. */
UEP_EXPORT unsigned long long uep__file_id(int fd);

/* uepoll's own kernel descriptors (core/own_fds.h): 1 if fd is one, else
 * 0; the lowest one >= from, or -1.  Lock-free, async-signal-safe (all but
 * uep__park_fd_high). */
UEP_EXPORT int uep__own_fd(int fd);
/* Moves kernel descriptor fd high and records it as uepoll's own
 * (core::park_high); returns its number. */
UEP_EXPORT int uep__park_fd_high(int fd);
UEP_EXPORT int uep__next_own_fd(int from);
/* Holds / gives back the window in which uepoll raises the descriptor soft
 * limit to park a descriptor above it (core::own_fds_hold): the preload
 * holds it while libc makes a child (posix_spawn, popen, system). */
UEP_EXPORT void uep__own_fds_hold(void);
UEP_EXPORT void uep__own_fds_release(void);
/* A movable own descriptor (core/own_slot.h) for the preload's own kernel
 * descriptors: made from a parked descriptor (NULL, fd closed, without
 * memory), never freed.  A system call on it is made between enter, which
 * returns the number to use, and leave with the half enter gave.
 * uep__own_vacate(n): the own descriptor at n moved elsewhere and n given
 * up, still open, for the caller's dup3 to replace (0), or -1 with errno
 * EBUSY (core::own_vacate). */
typedef struct uep__own_slot uep__own_slot;
UEP_EXPORT uep__own_slot *uep__own_slot_new(int fd);
UEP_EXPORT int uep__own_slot_enter(uep__own_slot *s, unsigned *half);
UEP_EXPORT void uep__own_slot_leave(uep__own_slot *s, unsigned half);
UEP_EXPORT int uep__own_vacate(int n);

/* The calling thread's waits that reached a sleeping system call so far
 * (core::thread_sleeps): the tests' way to tell a wait that slept from one
 * that spun. */
UEP_EXPORT unsigned long long uep__thread_sleeps(void);

/* Descriptor passing over uepoll socket pairs under the preload
 * (objects/unix_scm.h).  resolve(n): the descriptor a number the program
 * named in SCM_RIGHTS stands for (the uepoll descriptor it shows, or n
 * itself), or -EBADF.  show(u, kind): the number a received uepoll
 * descriptor u is shown under (kind one of UEP__SCM_*), or -errno with u
 * closed.  Set once, before the program runs. */
enum { UEP__SCM_EPOLL, UEP__SCM_EVENTFD, UEP__SCM_PIPE, UEP__SCM_SOCKET, UEP__SCM_TIMER, UEP__SCM_OTHER };
UEP_EXPORT void uep__set_scm_hooks(int (*resolve)(int n), int (*show)(int u, int kind));

/* Registers uepoll's own pthread_atfork handlers now if they are not yet
 * (core/fork.h), so that a child handler the preload registers after this
 * call runs after uepoll's and finds its locks usable in the child. */
UEP_EXPORT void uep__install_fork_handlers(void);

#ifdef __cplusplus
}
#endif

#endif
