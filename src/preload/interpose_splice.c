/*
 * interpose_splice.c - libuepoll-preload.so's interposers for splice,
 * sendfile, copy_file_range, tee and vmsplice (owned by src/preload/; see
 * interpose_fd.c for the rules).
 *
 * With a uepoll descriptor on either side, splice, tee, vmsplice,
 * sendfile and copy_file_range go to uepoll (uep_splice...; uepoll.h says
 * what they move), each shown descriptor translated to its uepoll one and
 * the other passed as the kernel's.  Every answer, errors included, is
 * Linux's: no warning.
 *
 * Locks: none.
 */
#define _GNU_SOURCE
#include "preload/preload.h"

#include <uepoll/uepoll.h>

#include <errno.h>
#include <fcntl.h>
#include <sys/sendfile.h>
#include <sys/uio.h>
#include <unistd.h>

#include "capi/preload_support.h"
#include "preload/interpose.h"

/* The uepoll descriptor shown as n, or n itself (a kernel descriptor). */
static int as_uepoll(int n) {
  int u = uep_pl_map(n);
  return u ? u : n;
}

/* Runs a uepoll call (expr) inside the section, keeping its errno.  A
 * call that left a pipe or pair handed over to the kernel having moved
 * nothing (core/handover.h) is made again once the conversion is done
 * (redo: the interposer itself, which then finds kernel descriptors); a
 * partial count is the call's answer, as after a signal.  Bytes it had
 * read from a kernel source that its destination did not take (counted in
 * that answer) are put into what `out` shows now. */
#define UEP_PL_SPLICE_CALL(expr, out, redo) \
  do {                                      \
    UEP_PL_ENTER();                         \
    ++uep__movable;                         \
    ssize_t r_ = (expr);                    \
    int e_ = errno;                         \
    --uep__movable;                         \
    UEP_PL_LEAVE();                         \
    uep_pl_count(UEP_PL_UEPOLL_CALL, 1);    \
    if (uep__moved) {                       \
      uep__moved = 0;                       \
      uep_pl_await_conversion();            \
      if (r_ < 0) return (redo);            \
      put_moved_bytes(out);                 \
    }                                       \
    errno = e_;                             \
    return r_;                              \
  } while (0)

static void put_moved_bytes(int out) {
  const int e = errno;
  UEP_PL_ENTER();
  (void)uep__put_moved_bytes(as_uepoll(out));
  UEP_PL_LEAVE();
  errno = e;
}

ssize_t splice(int in, off64_t *oin, int out, off64_t *oout, size_t n, unsigned int flags) {
  if (!uep_pl_map(out) && !uep_pl_map(in)) return UEP_PL_REAL(splice)(in, oin, out, oout, n, flags);
  UEP_PL_SPLICE_CALL(uep_splice(as_uepoll(in), (int64_t *)oin, as_uepoll(out), (int64_t *)oout, n, flags), out,
                     splice(in, oin, out, oout, n, flags));
}
ssize_t sendfile(int out, int in, off_t *off, size_t n) {
  if (!uep_pl_map(out) && !uep_pl_map(in)) return UEP_PL_REAL(sendfile)(out, in, off, n);
  UEP_PL_SPLICE_CALL(uep_sendfile(as_uepoll(out), as_uepoll(in), off, n), out, sendfile(out, in, off, n));
}
ssize_t sendfile64(int out, int in, off64_t *off, size_t n) {
  if (!uep_pl_map(out) && !uep_pl_map(in)) return UEP_PL_REAL(sendfile64)(out, in, off, n);
  UEP_PL_SPLICE_CALL(uep_sendfile(as_uepoll(out), as_uepoll(in), (off_t *)off, n), out,
                     sendfile64(out, in, off, n));
}
ssize_t copy_file_range(int in, off64_t *oin, int out, off64_t *oout, size_t n, unsigned int flags) {
  if (!uep_pl_map(out) && !uep_pl_map(in)) return UEP_PL_REAL(copy_file_range)(in, oin, out, oout, n, flags);
  UEP_PL_SPLICE_CALL(uep_copy_file_range(as_uepoll(in), (int64_t *)oin, as_uepoll(out), (int64_t *)oout, n, flags),
                     out, copy_file_range(in, oin, out, oout, n, flags));
}
ssize_t tee(int in, int out, size_t n, unsigned int flags) {
  if (!uep_pl_map(out) && !uep_pl_map(in)) return UEP_PL_REAL(tee)(in, out, n, flags);
  UEP_PL_SPLICE_CALL(uep_tee(as_uepoll(in), as_uepoll(out), n, flags), out, tee(in, out, n, flags));
}
ssize_t vmsplice(int fd, const struct iovec *iov, size_t n, unsigned int flags) {
  if (!uep_pl_map(fd)) return UEP_PL_REAL(vmsplice)(fd, iov, n, flags);
  UEP_PL_SPLICE_CALL(uep_vmsplice(as_uepoll(fd), iov, n, flags), fd, vmsplice(fd, iov, n, flags));
}
