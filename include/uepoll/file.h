/*
 * file.h - the file interface: how an object becomes a uepoll file.
 *
 * Linux's model is struct file_operations + struct proto_ops, with
 * wake_up_poll(wq, key) to announce readiness and sk_wait_event() to block.
 * A provider (a user-space network stack, a message channel, a device model)
 * fills one struct uep_file_operations and gets descriptors that every
 * uepoll call treats as it treats its own eventfds, pipes and socket pairs:
 * epoll (LT, ET, ONESHOT, EXCLUSIVE, nesting), poll, select, read/write and
 * their vector forms, the socket calls, fcntl, ioctl, fstat, fdinfo, dup,
 * close.  uepoll's built-in objects are written through the same set of
 * operations.
 *
 * docs/design.md, "The file interface", says which locks are held (none
 * of uepoll's) and from which threads each operation runs; tests/user_file/
 * table_test.cpp holds a provider to every rule here.  Valid C (C99 and
 * later) and C++.
 *
 * Conventions
 *  - Every operation returns a count or 0 on success and a NEGATIVE errno
 *    on failure (-EAGAIN, -ENOTCONN...), as the kernel's operations do.
 *    Operations are called with no uepoll lock held, in the thread of the
 *    program's call, possibly concurrently with each other.
 *  - `call` tells each operation the descriptor's status flags (f_flags:
 *    O_NONBLOCK, O_APPEND, O_ASYNC...) and the call's own flags (flags:
 *    MSG_* for send/recv, SOCK_NONBLOCK|SOCK_CLOEXEC for accept4, 0
 *    otherwise).
 *  - A NULL operation means "not supported": uepoll answers as Linux does
 *    for a file without it (EINVAL for read/write, ENOTTY for ioctl,
 *    ENOTSOCK for a socket call on a file whose ops.sock_type is 0,
 *    EOPNOTSUPP for a socket call a socket does not support...).
 *  - Blocking is uepoll's: an operation never sleeps.  It returns -EAGAIN
 *    and uepoll, for a blocking descriptor (no O_NONBLOCK, no MSG_DONTWAIT),
 *    sleeps until a wake whose key has the bits the call needs, then calls
 *    it again (read/recv/accept: EPOLLIN|EPOLLRDNORM|EPOLLRDHUP|EPOLLHUP|
 *    EPOLLERR; write/send/connect: EPOLLOUT|EPOLLWRNORM|EPOLLHUP|EPOLLERR).
 *    SO_RCVTIMEO / SO_SNDTIMEO bound the sleep (EAGAIN), a signal handler
 *    ends it with EINTR (or restarts the call after an SA_RESTART handler
 *    where signal(7) says so).  On a file with UEP_FILE_STREAM a blocking
 *    write or send goes on until every byte is taken (or a signal stops it
 *    with the partial count), as on a Linux stream socket.  A connect that
 *    returns -EINPROGRESS on a blocking descriptor sleeps until EPOLLOUT|
 *    EPOLLERR|EPOLLHUP and returns the pending error (0 if none).
 *  - Errors that belong to no call (a reset, a refused connect) are posted
 *    with uep_file_set_error: the next socket call returns it once,
 *    SO_ERROR reads and clears it, and EPOLLERR is in the mask while it is
 *    pending, as Linux's sk->sk_err.
 */
#ifndef UEPOLL_FILE_H
#define UEPOLL_FILE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>

#include <uepoll/export.h>

#ifdef __cplusplus
extern "C" {
#endif
UEP_API_BEGIN

struct uep_file; /* uepoll's file; a provider holds it through handles */

struct uep_file_call {
  int f_flags; /* the open description's status flags (F_GETFL) */
  int flags;   /* the call's own flags (MSG_*, SOCK_*), 0 if it has none */
};

/* ops.flags */
#define UEP_FILE_PUSH 0x1u   /* readiness is pushed (uep_file_notify /     \
                                uep_file_set_mask): poll may be NULL and is \
                                never called by a wake */
#define UEP_FILE_STREAM 0x2u /* blocking writes complete (stream socket) */
#define UEP_FILE_RDONLY 0x4u /* open for reading only: a write is EBADF, \
                                F_GETFL shows O_RDONLY (a pipe's read end) */
#define UEP_FILE_WRONLY 0x8u /* open for writing only: a read is EBADF,   \
                                F_GETFL shows O_WRONLY (a pipe's write end) */
#define UEP_FILE_FIFO 0x10u  /* a FIFO (a pipe end): fstat S_IFIFO|0600,  \
                                lseek ESPIPE, F_SETFL keeps O_ASYNC and    \
                                O_DIRECT (an op sees them in f_flags) */

struct uep_file_operations {
  /* sizeof(struct uep_file_operations) as the provider was compiled: a
   * later uepoll reads only the fields that fit, and treats the rest as
   * NULL / 0.  Required (EINVAL if smaller than the version 1 table). */
  size_t size;
  uint32_t flags;    /* UEP_FILE_* */
  int sock_family;   /* AF_INET...; 0 for a file that is not a socket */
  int sock_type;     /* SOCK_STREAM, SOCK_DGRAM, SOCK_SEQPACKET; 0: none */
  int sock_protocol; /* SO_PROTOCOL's answer */

  /* Current readiness (EPOLL* bits).  Must not block, may take the
   * provider's own locks.  uepoll never calls it from inside a wake nor
   * under a lock of its own: it is called at uep_file_create and after
   * every operation on the file, in the program's thread.  Between those
   * calls, epoll, poll and select see its last result with the key of
   * every uep_file_notify since OR-ed in (so bits that go away outside an
   * operation need uep_file_set_mask).  Never called with UEP_FILE_PUSH
   * (then optional): the mask is initial_mask, notify and set_mask's. */
  uint32_t (*poll)(void *ctx);

  /* The buffers are the caller's after Linux's access_ok (below the user
   * address limit; EFAULT otherwise), as a driver gets them: an operation
   * that copies must treat NULL and the first page as a fault (-EFAULT,
   * after what it did first, as copy_to_user fails there).  A zero-length
   * call reaches the operation. */
  ssize_t (*read_iter)(void *ctx, const struct iovec *iov, int iovcnt,
                       const struct uep_file_call *call);
  ssize_t (*write_iter)(void *ctx, const struct iovec *iov, int iovcnt,
                        const struct uep_file_call *call);
  /* arg is the caller's third argument.  FIONBIO and FIOASYNC are
   * uepoll's (they change f_flags and call setfl); FIONREAD, SIOCOUTQ and
   * the rest reach this operation.  On a UEP_FILE_FIFO file, fcntl's
   * F_GETPIPE_SZ and F_SETPIPE_SZ reach it too (request F_GETPIPE_SZ or
   * F_SETPIPE_SZ, arg the fcntl argument cast to a pointer; the result is
   * fcntl's); on other files they are EBADF, as Linux. */
  int (*ioctl)(void *ctx, unsigned long request, void *arg,
               const struct uep_file_call *call);
  /* Fills what it knows; uepoll sets st_dev/st_ino/st_nlink first, and
   * st_mode S_IFSOCK for a socket (sock_type != 0), else S_IFIFO... the
   * operation may overwrite any field.  Optional. */
  int (*fstat)(void *ctx, struct stat *st);
  /* F_SETFL / FIONBIO / FIOASYNC: the status flags change from old_flags
   * to new_flags; a negative errno refuses the change.  Optional. */
  int (*setfl)(void *ctx, int old_flags, int new_flags);
  /* /proc/self/fdinfo lines after uepoll's own (pos, flags, mnt_id, ino):
   * writes at most len bytes, returns the length.  Optional. */
  ssize_t (*show_fdinfo)(void *ctx, char *buf, size_t len);
  /* The file is gone: its last descriptor is closed, every call and wake
   * in flight on it has returned, it is in no epoll instance.  Runs once,
   * in the thread that made the last uep_close (or in the program's
   * call that held the last pin, or on uepoll's release thread after a
   * uep_file_put), never inside a wake or a uep_file_put, never with a
   * uepoll lock held.  No operation runs after it starts. */
  void (*release)(void *ctx);

  /* Socket operations (proto_ops).  addr/len are the caller's, after
   * uepoll's user-memory checks. */
  int (*bind)(void *ctx, const struct sockaddr *addr, socklen_t len);
  int (*listen)(void *ctx, int backlog);
  /* Returns a NEW uepoll descriptor (made with uep_file_create, its
   * flags from call->flags: SOCK_NONBLOCK, SOCK_CLOEXEC) or -errno;
   * -EAGAIN makes a blocking accept sleep.  */
  int (*accept4)(void *ctx, struct sockaddr *addr, socklen_t *len,
                 const struct uep_file_call *call);
  /* 0, -EINPROGRESS (blocking descriptors: see above), or -errno. */
  int (*connect)(void *ctx, const struct sockaddr *addr, socklen_t len,
                 const struct uep_file_call *call);
  ssize_t (*sendmsg)(void *ctx, const struct msghdr *msg,
                     const struct uep_file_call *call);
  ssize_t (*recvmsg)(void *ctx, struct msghdr *msg,
                     const struct uep_file_call *call);
  int (*shutdown)(void *ctx, int how);
  /* SO_TYPE, SO_DOMAIN, SO_PROTOCOL, SO_RCVTIMEO and SO_SNDTIMEO are
   * uepoll's, and SO_ERROR while an error posted with uep_file_set_error
   * is pending (without one, getsockopt(SO_ERROR) reaches this operation
   * if there is one, else reads 0); every other option reaches these. */
  int (*getsockopt)(void *ctx, int level, int name, void *val, socklen_t *len);
  int (*setsockopt)(void *ctx, int level, int name, const void *val,
                    socklen_t len);
  int (*getsockname)(void *ctx, struct sockaddr *addr, socklen_t *len);
  int (*getpeername)(void *ctx, struct sockaddr *addr, socklen_t *len);
};

/* A new descriptor (lowest free uepoll number) for a new file with *ops
 * (copied, up to ops->size) and ctx; *handle gets the file's handle, for
 * the wakes below.  The handle keeps itself valid, not the file open: the
 * file is released when its descriptors (and pins) are gone, and the
 * wakes on its handle then do nothing; drop the handle once with
 * uep_file_put (any time, also inside release).  flags: O_NONBLOCK, O_CLOEXEC (SOCK_NONBLOCK and
 * SOCK_CLOEXEC are the same bits).  initial_mask: the readiness until the
 * first notify (with UEP_FILE_PUSH; otherwise poll is called once).
 * Errors (-1 and errno), in this order: EINVAL (other flags), EFAULT (ops
 * or handle NULL), EINVAL (ops->size too small, or no poll without
 * UEP_FILE_PUSH), ENOMEM, EMFILE.  release is never called on error. */
int uep_file_create(const struct uep_file_operations *ops, void *ctx,
                    int flags, uint32_t initial_mask,
                    struct uep_file **handle);

/* Readiness changed: `key` holds the bits that became true (Linux's
 * wake_up_poll(wq, key)); the file's waiters whose events intersect key
 * are woken (one EPOLLEXCLUSIVE item), key 0 wakes every waiter.  With
 * UEP_FILE_PUSH the file's mask becomes mask | key (use uep_file_set_mask
 * for bits that go away); without it, the next harvest calls poll.
 * Any thread, any time, with any of the provider's locks held, also inside
 * any operation; never calls an operation, never runs release, never
 * blocks, allocates nothing.  After the file is released it does nothing
 * (release starts only after every wake in flight has returned). */
void uep_file_notify(struct uep_file *handle, uint32_t key);

/* The file's whole current mask (for stacks that keep counters): bits
 * that became set wake their waiters as uep_file_notify(bits) does, bits
 * that went away are no longer reported by poll, epoll or select.  Same
 * thread and lock rules as uep_file_notify. */
void uep_file_set_mask(struct uep_file *handle, uint32_t mask);

/* Both at once, as Linux's object changes its state and then calls
 * wake_up_poll(wq, key): the file's whole mask becomes `mask`, and its
 * waiters are woken for `key` exactly as uep_file_notify(key) wakes them
 * (key 0: every waiter), whatever rose or fell.  For providers that keep
 * Linux's wakeup keys (a rising bit without a wake, or a wake without a
 * change, are both possible).  Same thread and lock rules. */
void uep_file_notify_mask(struct uep_file *handle, uint32_t mask,
                          uint32_t key);

/* Posts a pending error (a positive errno; 0 clears): see the header's
 * conventions.  Adds EPOLLERR and wakes.  Same rules as uep_file_notify. */
void uep_file_set_error(struct uep_file *handle, int err);

/* Linux's fget: the file behind descriptor fd, pinned (it is not released
 * before uep_file_put of this handle, a different pointer from the create
 * handle), if it was made with these operations (ops compared by address
 * of the table passed to uep_file_create); *ctx (if ctx is not NULL) gets
 * its ctx.  NULL with errno EBADF (not open) or ENOTSOCK (a uepoll or
 * kernel descriptor of another kind).  Works on a uep_dup'd descriptor. */
struct uep_file *uep_file_get(int fd, const struct uep_file_operations *ops,
                              void **ctx);
/* Drops a handle (uep_file_create's or uep_file_get's), from any
 * thread, with any of the provider's locks held.  It never runs release:
 * if it drops the last pin of a closed file, release runs on uepoll's own
 * release thread (no lock held there either).  NULL is ignored. */
void uep_file_put(struct uep_file *handle);

UEP_API_END
#ifdef __cplusplus
}
#endif

#endif /* UEPOLL_FILE_H */
