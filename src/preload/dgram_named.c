/*
 * dgram_named.c - a uepoll datagram socket pair end that talks to a named
 * AF_UNIX socket becomes a kernel pair end first (owned by src/preload/).
 *
 * A uepoll pair carries no names: its connect() to a named socket, its
 * sendmsg() of control data to one, and the name Linux gives a sender with
 * SO_PASSCRED are not the library's to do (docs/linux-deviations.md).  Under the preload the pair is made a kernel
 * AF_UNIX datagram pair under the same numbers (uep_pl_convert_stream,
 * fork_convert.c: queued messages, flags, SO_PASSCRED and registrations
 * carried), and the call is then the kernel's: Linux's semantics exactly,
 * the old peer's EPERM and ECONNRESET and its readiness included, since
 * both ends are the kernel's sockets from then on.  Which calls:
 *
 *   connect   an AF_UNIX address (any, so that a failing lookup is the
 *             kernel's too; AF_UNSPEC stays uepoll's: it only disconnects)
 *   sendmsg   a name and at least one control message header, or a name
 *             from an end with SO_PASSCRED or SO_PASSPIDFD on (Linux
 *             autobinds it and the receiver can reply to that name)
 *   sendto    a name from an end with either on
 *   sendmmsg  one such message among them (the whole call is then the
 *             kernel's; a pair that stays uepoll's sends message by message)
 *
 * A pair with a call asleep on it that cannot leave is left as it is
 * (uep_pl_evict_sleepers, fork_convert.c);
 * the call then gets the library's answer, and where that is EOPNOTSUPP
 * the refusal is said once (uep_pl_refuse).  Kernel descriptors never come
 * here (the callers test uep_pl_map first).
 *
 * Locks: none of its own; uepoll's calls take theirs.
 */
#define _GNU_SOURCE
#include "preload/preload.h"

#include <uepoll/uepoll.h>

#include <errno.h>
#include <stdint.h>
#include <sys/socket.h>

#include "preload/interpose.h"

/* A pointer the preload may read (a bad one is the callee's to answer). */
static int readable(const void *p) { return (uintptr_t)p >= 4096 && (uintptr_t)p < 0x00007ffffffff000ULL; }

/* The uepoll socket option `name` of fd, or -1. */
static int int_opt(int fd, int name) {
  int v = 0;
  socklen_t len = sizeof v;
  UEP_PL_ENTER();
  const int r = uep_getsockopt(uep_pl_map(fd), SOL_SOCKET, name, &v, &len);
  UEP_PL_LEAVE();
  return r == 0 ? v : -1;
}

/* 1 if the uepoll descriptor shown as fd is a datagram pair end. */
static int dgram_pair(int fd) { return uep_pl_kind(fd) == UEP_PL_SOCKET && int_opt(fd, SO_TYPE) == SOCK_DGRAM; }

/* 1 if the end fd has SO_PASSCRED or SO_PASSPIDFD on (unix_may_passcred:
 * Linux then autobinds it as it sends to a name, which keeps that name). */
static int passes_creds(int fd) { return int_opt(fd, SO_PASSCRED) > 0 || int_opt(fd, 76 /* SO_PASSPIDFD */) > 0; }

/* 1 if a datagram to the name in m (with its control data) from the pair
 * end fd is to be the kernel's: control data, or credentials passed. */
static int named_msg_wants_kernel(int fd, const struct msghdr *m) {
  if (!readable(m) || !m->msg_name || !m->msg_namelen) return 0;
  if (m->msg_control && m->msg_controllen >= sizeof(struct cmsghdr)) return 1;
  return passes_creds(fd);
}

/* Makes the pair fd shows a kernel one; 1 if fd is now a kernel descriptor. */
static int to_kernel(int fd) {
  uep_pl_convert_stream(fd);
  return !uep_pl_map(fd);
}

int uep_pl_dgram_named_connect(int fd, const struct sockaddr *a, socklen_t len, int *result) {
  if (uep_pl_inside() || !readable(a) || len < sizeof(sa_family_t) || a->sa_family != AF_UNIX || !dgram_pair(fd))
    return 0;
  if (to_kernel(fd)) {
    uep_pl_count(UEP_PL_FORWARDED, 1);
    *result = UEP_PL_REAL(connect)(fd, a, len);
    return 1;
  }
  UEP_PL_ENTER();
  *result = uep_connect(uep_pl_map(fd), a, len);
  const int e = errno;
  UEP_PL_LEAVE();
  uep_pl_count(UEP_PL_UEPOLL_CALL, 1);
  if (*result < 0 && e == EOPNOTSUPP)
    uep_pl_refuse("connect() of a uepoll datagram pair to a named socket while a thread is blocked on the pair: "
                  "not supported (EOPNOTSUPP)");
  errno = e;
  return 1;
}

int uep_pl_dgram_named_sendmsg(int fd, const struct msghdr *m, int flags, ssize_t *result) {
  if (uep_pl_inside() || uep_pl_kind(fd) != UEP_PL_SOCKET || !named_msg_wants_kernel(fd, m) || !dgram_pair(fd))
    return 0;
  if (to_kernel(fd)) return 0; /* the caller forwards it, SCM_RIGHTS made kernel's (interpose_net.c) */
  UEP_PL_ENTER();
  *result = uep_sendmsg(uep_pl_map(fd), m, flags);
  const int e = errno;
  UEP_PL_LEAVE();
  uep_pl_count(UEP_PL_UEPOLL_CALL, 1);
  if (*result < 0 && e == EOPNOTSUPP)
    uep_pl_refuse("sendmsg() of uepoll descriptors from a uepoll datagram pair to a named socket while a thread is "
                  "blocked on the pair: not supported (EOPNOTSUPP)");
  errno = e;
  return 1;
}

int uep_pl_dgram_named_sendmmsg(int fd, const struct mmsghdr *v, unsigned int vlen) {
  if (uep_pl_inside() || !vlen || !readable(v) || !readable(v + vlen - 1)) return 0;
  if (uep_pl_kind(fd) != UEP_PL_SOCKET) return 0;
  unsigned int i = 0;
  while (i < vlen && !named_msg_wants_kernel(fd, &v[i].msg_hdr)) ++i;
  return i < vlen && dgram_pair(fd) && to_kernel(fd);
}

int uep_pl_dgram_named_sendto(int fd, const struct sockaddr *a, socklen_t alen) {
  if (uep_pl_inside() || !a || !alen || uep_pl_kind(fd) != UEP_PL_SOCKET || !passes_creds(fd) ||
      !dgram_pair(fd))
    return 0;
  return to_kernel(fd);
}
