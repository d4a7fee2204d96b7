/*
 * kernel_operands.c - descriptors a program hands the kernel to act on
 * later, outside any call the preload sees: the file of a Linux AIO iocb
 * (io_submit), the files registered with an io_uring ring
 * (IORING_REGISTER_FILES and its updates, then used by fixed-file SQEs),
 * the files that io_uring SQEs name directly (and a splice's or tee's
 * input), and the file of a POSIX AIO request (aio_read, aio_write, aio_fsync,
 * lio_listio: glibc's helper threads call pread/pwrite inside libc).  A
 * uepoll pipe end or socket pair shown there is made a kernel one first
 * (fork_convert.c, as at fork), a uepoll eventfd a kernel eventfd
 * (eventfd_convert.c), a uepoll timerfd its own kernel timer
 * (timerfd_convert.c), all under the same numbers, so that the kernel acts
 * on the program's object as on Linux.  An epoll instance there is given
 * its kernel form (uep_epoll_kernel_fd): in an SQE, which the kernel reads
 * once, in place; in a registered file array, a copy the kernel reads
 * instead of the program's; in an iocb, in place for the system call and
 * put back after it (the kernel reports the iocb's address, and the program
 * may read its aio_fildes again).  A timerfd on the virtual clock stays
 * behind its placeholder (README.md lists it).
 *
 * Reached through: syscall(SYS_io_submit) (libaio's io_submit) and
 * syscall(SYS_io_uring_register) (interpose_syscall.c), liburing's exported
 * io_uring_register and io_uring_register_files* (liburing makes its system
 * calls inline), glibc's aio_* and lio_listio and their 64-bit names.  The
 * kernel reads an SQE from the ring's shared memory when it is submitted:
 * liburing's exported calls that submit (io_uring_submit*, and the waits
 * that flush the queue first: io_uring_wait_cqes, io_uring_wait_cqe_timeout)
 * walk the SQEs queued since the last submission first, through liburing's
 * struct io_uring (the ABI of liburing.so.2).  A ring driven by the
 * program's own io_uring_enter system calls is not reachable.
 *
 * Locks: none of its own; the conversions take uepoll's.
 */
#define _GNU_SOURCE
#include "preload/preload.h"

#include <uepoll/uepoll.h>

#include "preload/interpose.h"

#include <aio.h>
#include <errno.h>
#include <linux/aio_abi.h>
#include <linux/io_uring.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>

/* io_uring_register(2) opcodes and arguments (Linux:
 * include/uapi/linux/io_uring.h; Debian 12's headers predate some). */
enum { kRegisterFiles = 2, kRegisterFilesUpdate = 6, kRegisterFiles2 = 13, kRegisterFilesUpdate2 = 14 };
struct files_update {
  uint32_t offset, resv;
  uint64_t fds;
};
struct rsrc_register {
  uint32_t nr, flags;
  uint64_t resv2, data, tags;
};
struct rsrc_update2 {
  uint32_t offset, resv;
  uint64_t data, tags;
  uint32_t nr, resv2;
};

void uep_pl_hand_to_kernel(int n) {
  if (n < 0 || uep_pl_inside()) return;
  UEP_PL_ENTER();
  uep_pl_hand_to_kernel_inside(n);
  UEP_PL_LEAVE();
}

void uep_pl_hand_to_kernel_inside(int n) {
  if (n < 0 || !uep_pl_map(n)) return;
  switch (uep_pl_kind(n)) {
    case UEP_PL_EVENTFD:
      uep_pl_convert_eventfd_inside(n);
      break;
    case UEP_PL_PIPE:
    case UEP_PL_SOCKET:
      uep_pl_convert_streams_of(n);
      break;
    case UEP_PL_TIMER:
      uep_pl_convert_timerfd_inside(n);
      break;
    default:
      break;
  }
}

static int polled_form(int n);

/* A registration's file array as the kernel is to read it: each file handed
 * to the kernel, and the program's array itself unless it names an epoll
 * instance, else a copy (in *copy, the caller frees it) in which each
 * instance is its kernel form.  Without memory for the copy the array goes
 * as it is. */
static const int *files_for_kernel(const int *fds, unsigned long nr, int **copy) {
  *copy = NULL;
  if (!fds) return fds;
  for (unsigned long i = 0; i < nr; ++i) {
    const int k = polled_form(fds[i]);
    if (k < 0) {
      uep_pl_hand_to_kernel(fds[i]);
      continue;
    }
    if (!*copy) {
      *copy = malloc(nr * sizeof **copy);
      if (!*copy) return fds;
      memcpy(*copy, fds, nr * sizeof **copy);
    }
    (*copy)[i] = k;
  }
  return *copy ? *copy : fds;
}

/* A copy of the registration header h (size bytes) whose file pointer, at
 * offset at, names files; h itself when files is the program's array. */
static const void *with_files(const void *h, size_t size, size_t at, const int *files, const int *theirs,
                              struct uep_pl_operands *keep) {
  if (files == theirs) return h;
  void *c = malloc(size);
  if (!c) return h;
  memcpy(c, h, size);
  const uint64_t p = (uint64_t)(uintptr_t)files;
  memcpy((char *)c + at, &p, sizeof p);
  keep->head = c;
  return c;
}

const void *uep_pl_register_operands(unsigned opcode, const void *arg, unsigned nr_args,
                                      struct uep_pl_operands *keep) {
  if (!arg) return arg;
  switch (opcode) {
    case kRegisterFiles:
      return files_for_kernel(arg, nr_args, &keep->files);
    case kRegisterFilesUpdate: {
      const struct files_update *u = arg;
      const int *theirs = (const int *)(uintptr_t)u->fds;
      return with_files(u, sizeof *u, offsetof(struct files_update, fds), files_for_kernel(theirs, nr_args, &keep->files),
                        theirs, keep);
    }
    case kRegisterFiles2:
      if (nr_args == sizeof(struct rsrc_register)) {
        const struct rsrc_register *r = arg;
        const int *theirs = (const int *)(uintptr_t)r->data;
        return with_files(r, sizeof *r, offsetof(struct rsrc_register, data),
                          files_for_kernel(theirs, r->nr, &keep->files), theirs, keep);
      }
      return arg;
    case kRegisterFilesUpdate2:
      if (nr_args == sizeof(struct rsrc_update2)) {
        const struct rsrc_update2 *r = arg;
        const int *theirs = (const int *)(uintptr_t)r->data;
        return with_files(r, sizeof *r, offsetof(struct rsrc_update2, data),
                          files_for_kernel(theirs, r->nr, &keep->files), theirs, keep);
      }
      return arg;
    default:
      return arg;
  }
}

/* An iocb that names an epoll instance names its kernel form until the
 * system call returns: keep->cbs and keep->fildes record what to put back. */
static void iocb_polled_form(struct iocb *cb, long nr, struct uep_pl_operands *keep) {
  const int k = polled_form((int)cb->aio_fildes);
  if (k < 0) return;
  if (!keep->cbs) {
    keep->cbs = malloc((size_t)nr * sizeof *keep->cbs);
    keep->fildes = malloc((size_t)nr * sizeof *keep->fildes);
    if (!keep->cbs || !keep->fildes) {
      free(keep->cbs), free(keep->fildes);
      keep->cbs = NULL, keep->fildes = NULL;
      return;
    }
  }
  keep->cbs[keep->n] = cb;
  keep->fildes[keep->n++] = cb->aio_fildes;
  cb->aio_fildes = (uint32_t)k;
}

void uep_pl_kernel_operands_syscall(long nr, long *a, struct uep_pl_operands *keep) {
  if (nr == SYS_io_uring_register) {
    a[2] = (long)(uintptr_t)uep_pl_register_operands((unsigned)a[1], (const void *)a[2], (unsigned)a[3], keep);
  } else if (nr == SYS_io_submit && a[1] > 0 && a[2]) {
    /* Each iocb's file, and the eventfd it signals (IOCB_FLAG_RESFD). */
    struct iocb *const *cbs = (struct iocb *const *)a[2];
    for (long i = 0; i < a[1]; ++i) {
      if (!cbs[i]) continue;
      iocb_polled_form(cbs[i], a[1], keep);
      uep_pl_hand_to_kernel((int)cbs[i]->aio_fildes);
      if (cbs[i]->aio_flags & IOCB_FLAG_RESFD) uep_pl_convert_eventfd((int)cbs[i]->aio_resfd);
    }
  }
}

void uep_pl_operands_done(struct uep_pl_operands *keep) {
  for (long i = 0; i < keep->n; ++i) keep->cbs[i]->aio_fildes = keep->fildes[i];
  free(keep->cbs);
  free(keep->fildes);
  free(keep->files);
  free(keep->head);
  *keep = (struct uep_pl_operands){0};
}

/* liburing's file registration (its own symbols: inline system calls). */
struct io_uring;
int io_uring_register_files(struct io_uring *ring, const int *files, unsigned nr);
int io_uring_register_files_tags(struct io_uring *ring, const int *files, const uint64_t *tags, unsigned nr);
int io_uring_register_files_update(struct io_uring *ring, unsigned off, const int *files, unsigned nr);
int io_uring_register_files_update_tag(struct io_uring *ring, unsigned off, const int *files, const uint64_t *tags,
                                       unsigned nr);

int io_uring_register_files(struct io_uring *ring, const int *files, unsigned nr) {
  int *copy;
  const int r = UEP_PL_REAL(io_uring_register_files)(ring, files_for_kernel(files, nr, &copy), nr);
  free(copy);
  return r;
}

int io_uring_register_files_tags(struct io_uring *ring, const int *files, const uint64_t *tags, unsigned nr) {
  int *copy;
  const int r = UEP_PL_REAL(io_uring_register_files_tags)(ring, files_for_kernel(files, nr, &copy), tags, nr);
  free(copy);
  return r;
}

int io_uring_register_files_update(struct io_uring *ring, unsigned off, const int *files, unsigned nr) {
  int *copy;
  const int r = UEP_PL_REAL(io_uring_register_files_update)(ring, off, files_for_kernel(files, nr, &copy), nr);
  free(copy);
  return r;
}

int io_uring_register_files_update_tag(struct io_uring *ring, unsigned off, const int *files, const uint64_t *tags,
                                       unsigned nr) {
  int *copy;
  const int r = UEP_PL_REAL(io_uring_register_files_update_tag)(ring, off, files_for_kernel(files, nr, &copy), tags, nr);
  free(copy);
  return r;
}

/* liburing's struct io_uring up to its flags (liburing.h; the same layout
 * in every liburing.so.2, 2.0 to 2.3 at least: 2.2 named two of the four
 * padding words at the end of each ring).  The preload reads the
 * submission ring's queued entries, as liburing's own flush does. */
struct uring_sq {
  unsigned *khead, *ktail, *kring_mask, *kring_entries, *kflags, *kdropped, *array;
  struct io_uring_sqe *sqes;
  unsigned sqe_head, sqe_tail;
  size_t ring_sz;
  void *ring_ptr;
  unsigned pad[4];
};
struct uring_cq {
  unsigned *khead, *ktail, *kring_mask, *kring_entries, *kflags, *koverflow;
  void *cqes;
  size_t ring_sz;
  void *ring_ptr;
  unsigned pad[4];
};
struct uring {
  struct uring_sq sq;
  struct uring_cq cq;
  unsigned flags;
};

/* The kernel form of the uepoll instance shown as n, for the kernel to
 * poll: the epoll that uep_epoll_kernel_fd keeps readable while the
 * instance has events (docs/linux-deviations.md).  -1 when n is not a
 * uepoll instance, or it has none (errno kept). */
static int polled_form(int n) {
  if (n < 0 || uep_pl_inside() || uep_pl_kind(n) != UEP_PL_EPOLL) return -1;
  const int u = uep_pl_map(n);
  if (u <= 0) return -1;
  const int saved = errno;
  UEP_PL_ENTER();
  const int k = uep_epoll_kernel_fd(u);
  UEP_PL_LEAVE();
  errno = saved;
  return k;
}

/* Each SQE queued since the last submission: its file unless it is a fixed
 * one (an index), and a splice's or tee's input.  An SQE that polls or
 * reads a uepoll instance (any opcode but EPOLL_CTL, whose target is the
 * instance's registrations) is given the instance's kernel form instead:
 * the SQE is the program's, about to be submitted, and is not read again. */
static void hand_queued_sqes(struct io_uring *ring) {
  struct uring *r = (struct uring *)ring;
  if (!r || !r->sq.sqes || !r->sq.kring_mask) return;
  const unsigned mask = *r->sq.kring_mask;
  const unsigned shift = (r->flags & IORING_SETUP_SQE128) ? 1 : 0;
  for (unsigned h = r->sq.sqe_head; h != r->sq.sqe_tail; ++h) {
    struct io_uring_sqe *sqe = &r->sq.sqes[(h & mask) << shift];
    if (!(sqe->flags & IOSQE_FIXED_FILE)) {
      const int k = sqe->opcode == IORING_OP_EPOLL_CTL ? -1 : polled_form(sqe->fd);
      if (k >= 0) sqe->fd = k;
      uep_pl_hand_to_kernel(sqe->fd);
    }
    if ((sqe->opcode == IORING_OP_SPLICE || sqe->opcode == IORING_OP_TEE) &&
        !(sqe->splice_flags & SPLICE_F_FD_IN_FIXED))
      uep_pl_hand_to_kernel(sqe->splice_fd_in);
  }
}

struct __kernel_timespec;
int io_uring_submit(struct io_uring *ring);
int io_uring_submit_and_wait(struct io_uring *ring, unsigned wait_nr);
int io_uring_submit_and_wait_timeout(struct io_uring *ring, struct io_uring_cqe **cqe_ptr, unsigned wait_nr,
                                     struct __kernel_timespec *ts, sigset_t *sigmask);
int io_uring_submit_and_get_events(struct io_uring *ring);
int io_uring_wait_cqes(struct io_uring *ring, struct io_uring_cqe **cqe_ptr, unsigned wait_nr,
                       struct __kernel_timespec *ts, sigset_t *sigmask);
int io_uring_wait_cqe_timeout(struct io_uring *ring, struct io_uring_cqe **cqe_ptr, struct __kernel_timespec *ts);

int io_uring_submit(struct io_uring *ring) {
  hand_queued_sqes(ring);
  return UEP_PL_REAL(io_uring_submit)(ring);
}

int io_uring_submit_and_wait(struct io_uring *ring, unsigned wait_nr) {
  hand_queued_sqes(ring);
  return UEP_PL_REAL(io_uring_submit_and_wait)(ring, wait_nr);
}

int io_uring_submit_and_wait_timeout(struct io_uring *ring, struct io_uring_cqe **cqe_ptr, unsigned wait_nr,
                                     struct __kernel_timespec *ts, sigset_t *sigmask) {
  hand_queued_sqes(ring);
  return UEP_PL_REAL(io_uring_submit_and_wait_timeout)(ring, cqe_ptr, wait_nr, ts, sigmask);
}

int io_uring_submit_and_get_events(struct io_uring *ring) {
  hand_queued_sqes(ring);
  return UEP_PL_REAL(io_uring_submit_and_get_events)(ring);
}

int io_uring_wait_cqes(struct io_uring *ring, struct io_uring_cqe **cqe_ptr, unsigned wait_nr,
                       struct __kernel_timespec *ts, sigset_t *sigmask) {
  hand_queued_sqes(ring);
  return UEP_PL_REAL(io_uring_wait_cqes)(ring, cqe_ptr, wait_nr, ts, sigmask);
}

int io_uring_wait_cqe_timeout(struct io_uring *ring, struct io_uring_cqe **cqe_ptr, struct __kernel_timespec *ts) {
  hand_queued_sqes(ring);
  return UEP_PL_REAL(io_uring_wait_cqe_timeout)(ring, cqe_ptr, ts);
}

/* POSIX AIO (glibc: helper threads call pread/pwrite/fsync inside libc).
 * glibc declares the pointers nonnull; the helpers check them anyway (a
 * null one reaches glibc, which answers it). */
static void hand_cb(const struct aiocb *cb) {
  if (cb) uep_pl_hand_to_kernel(cb->aio_fildes);
}

static void hand_cb64(const struct aiocb64 *cb) {
  if (cb) uep_pl_hand_to_kernel(cb->aio_fildes);
}

static void hand_list(struct aiocb *const *list, int nent) {
  for (int i = 0; list && i < nent; ++i) hand_cb(list[i]);
}

static void hand_list64(struct aiocb64 *const *list, int nent) {
  for (int i = 0; list && i < nent; ++i) hand_cb64(list[i]);
}

int aio_read(struct aiocb *cb) {
  hand_cb(cb);
  return UEP_PL_REAL(aio_read)(cb);
}

int aio_write(struct aiocb *cb) {
  hand_cb(cb);
  return UEP_PL_REAL(aio_write)(cb);
}

int aio_fsync(int op, struct aiocb *cb) {
  hand_cb(cb);
  return UEP_PL_REAL(aio_fsync)(op, cb);
}

int lio_listio(int mode, struct aiocb *const list[], int nent, struct sigevent *sev) {
  hand_list(list, nent);
  return UEP_PL_REAL(lio_listio)(mode, list, nent, sev);
}

int aio_read64(struct aiocb64 *cb) {
  hand_cb64(cb);
  return UEP_PL_REAL(aio_read64)(cb);
}

int aio_write64(struct aiocb64 *cb) {
  hand_cb64(cb);
  return UEP_PL_REAL(aio_write64)(cb);
}

int aio_fsync64(int op, struct aiocb64 *cb) {
  hand_cb64(cb);
  return UEP_PL_REAL(aio_fsync64)(op, cb);
}

int lio_listio64(int mode, struct aiocb64 *const list[], int nent, struct sigevent *sev) {
  hand_list64(list, nent);
  return UEP_PL_REAL(lio_listio64)(mode, list, nent, sev);
}
