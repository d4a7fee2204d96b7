// unix_sockopt.cpp - UnixOpts (objects/unix_sockopt.h): a uepoll AF_UNIX
// socket's options through its kernel twin.  Locks: none (system calls on
// the twin; the caller holds its iolock_ around set()).
#include "objects/unix_sockopt.h"

#include "core/internal_call.h"
#include "core/sock_timeo.h"
#include "core/sockopt.h"
#include "core/user_memory.h"
#include "objects/unix_scm.h"

#include <cerrno>
#include <cstring>
#include <grp.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <unistd.h>

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77  // Linux 6.5; Debian 12's headers predate it
#endif

namespace uepoll::objects {

namespace {

// The kernel's answer to a call on the twin: 0 or -errno (errno kept).
long kernel_result(int r) noexcept { return r < 0 ? -errno : 0; }

// sk_getsockopt SO_PEERGROUPS for this process's credentials (the peer of
// either end of a pair is its creator): -ERANGE with the needed length put
// back when the buffer is short.
long put_peergroups(void* val, socklen_t* len) noexcept {
  const int n = ::getgroups(0, nullptr);
  if (n < 0) return -errno;
  const socklen_t need = static_cast<socklen_t>(static_cast<size_t>(n) * sizeof(gid_t));
  if (*len < need) {
    *len = need;
    return -ERANGE;
  }
  if (need && !core::user_readable(val, need)) return -EFAULT;
  // Straight into the caller's buffer (up to NGROUPS_MAX ids: no copy on
  // the stack); a change of groups in between answers as the new count.
  const int got = n ? ::getgroups(n, static_cast<gid_t*>(val)) : 0;
  if (got < 0) return -errno;
  *len = static_cast<socklen_t>(static_cast<size_t>(got) * sizeof(gid_t));
  return 0;
}

// sk_getsockopt SO_PEERNAME: the peer's address (getname with peer = 2);
// -ENOTCONN without one, -EINVAL when it is shorter than the buffer; the
// caller's length is kept.
long put_peername(core::File& sock, void* val, socklen_t* len) noexcept {
  struct sockaddr_storage addr;
  socklen_t lv = sizeof addr;
  if (sock.getpeername(reinterpret_cast<struct sockaddr*>(&addr), &lv) < 0) return -ENOTCONN;
  if (lv < *len) return -EINVAL;
  if (*len && !core::user_readable(val, *len)) return -EFAULT;
  std::memcpy(val, &addr, *len);
  return 0;
}

}  // namespace

long unix_int_optval(const void* val, socklen_t len, int* out) noexcept {
  if (len < sizeof(int)) return -EINVAL;
  if (!core::user_readable(val, sizeof(int))) return -EFAULT;
  std::memcpy(out, val, sizeof(int));
  return 0;
}

core::OwnSlot* UnixOpts::twin_slot(int type, long* err) noexcept {
  return twin_.get(
      [type] {
        core::InternalCalls internal;  // the kernel's socket, not a preload's
        const int made = ::socket(AF_UNIX, type | SOCK_CLOEXEC, 0);
        return made < 0 ? -ENOMEM : made;  // no descriptor to be had: out of memory for the option
      },
      err);
}

long UnixOpts::set(int type, int level, int name, const void* val, socklen_t len) noexcept {
  long err = 0;
  core::OwnSlot* twin = twin_slot(type, &err);
  if (!twin) return err;
  core::InternalCalls internal;
  {
    core::OwnSlot::Use u(*twin);
    if (const long e = kernel_result(::setsockopt(u.fd(), level, name, val, len))) return e;
  }
  if (level != SOL_SOCKET) return 0;
  bool rcv;
  if (core::is_sock_timeo(name, &rcv)) {
    int64_t ns = 0;
    (void)core::sock_timeo_parse(val, len, &ns);  // the kernel took it: valid
    (rcv ? rcvtimeo_ns_ : sndtimeo_ns_).store(ns, std::memory_order_relaxed);
  } else if (name == SO_RCVLOWAT) {
    rcvlowat_.store(read_int(SO_RCVLOWAT), std::memory_order_relaxed);
  }
  return 0;
}

int UnixOpts::read_int(int name) const noexcept {
  core::OwnSlot* twin = twin_.made();
  if (!twin) return 0;
  int v = 0;
  socklen_t n = sizeof v;
  core::InternalCalls internal;
  const int e = errno;
  core::OwnSlot::Use u(*twin);
  (void)::getsockopt(u.fd(), SOL_SOCKET, name, &v, &n);
  errno = e;
  return v;
}

long UnixOpts::get(int type, core::File& sock, int level, int name, void* val, socklen_t* len) noexcept {
  if (level == SOL_SOCKET) {
    bool rcv;
    switch (name) {
      case SO_PEERNAME:
      case SO_PEERGROUPS:
      case SO_PEERPIDFD:
        if (!core::user_readable(len, sizeof *len)) return -EFAULT;
        if (static_cast<int>(*len) < 0) return -EINVAL;
        if (name == SO_PEERNAME) return put_peername(sock, val, len);
        if (name == SO_PEERGROUPS) return put_peergroups(val, len);
        {
          // pidfd_prepare of the peer's pid: this process; close-on-exec.
          core::InternalCalls internal;
          const long pidfd = ::syscall(SYS_pidfd_open, ::getpid(), 0);
          if (pidfd < 0) return -errno;
          const long r = core::put_int_opt(static_cast<int>(pidfd), val, len);
          if (r < 0) ::close(static_cast<int>(pidfd));
          return r;
        }
      case SO_RCVLOWAT:
        if (!twin()) return core::put_int_opt(rcvlowat(), val, len);
        break;
      default:
        if (!twin() && core::is_sock_timeo(name, &rcv)) return core::sock_timeo_put(0, val, len);
        break;
    }
  }
  long err = 0;
  core::OwnSlot* twin = twin_slot(type, &err);
  if (!twin) return err;
  core::InternalCalls internal;
  core::OwnSlot::Use u(*twin);
  return kernel_result(::getsockopt(u.fd(), level, name, val, len));
}

void unix_carry_opts(const UnixOpts& opts, int kfd) noexcept {
  core::OwnSlot* slot = opts.twin();
  if (!slot) return;
  core::OwnSlot::Use u(*slot);
  const int twin = u.fd();
  // The options a program sets on a pair's socket and that the kernel
  // keeps per socket (sk_setsockopt), int-valued unless noted.
  static const int kInts[] = {SO_DEBUG, SO_REUSEADDR, SO_DONTROUTE, SO_BROADCAST, SO_KEEPALIVE, SO_OOBINLINE,
                              SO_NO_CHECK, SO_PRIORITY, SO_RCVLOWAT, SO_PASSSEC, SO_MARK, SO_RXQ_OVFL,
                              SO_WIFI_STATUS, SO_NOFCS, SO_SELECT_ERR_QUEUE, SO_BUSY_POLL, SO_TIMESTAMP_OLD,
                              SO_TIMESTAMPNS_OLD, SO_TIMESTAMP_NEW, SO_TIMESTAMPNS_NEW, kSoPassPidfd};
  core::InternalCalls internal;
  const int e = errno;
  // SO_TIMESTAMPING first: a timestamp option set after it decides the
  // form of both control messages (SOCK_TSTAMP_NEW), as it did here.
  int tsflags = 0;
  socklen_t tn = sizeof tsflags;
  if (::getsockopt(twin, SOL_SOCKET, SO_TIMESTAMPING_OLD, &tsflags, &tn) == 0 && tsflags)
    (void)::setsockopt(kfd, SOL_SOCKET, SO_TIMESTAMPING_OLD, &tsflags, sizeof tsflags);
  for (const int name : kInts) {
    int v = 0;
    socklen_t n = sizeof v;
    if (::getsockopt(twin, SOL_SOCKET, name, &v, &n) == 0 && v) (void)::setsockopt(kfd, SOL_SOCKET, name, &v, n);
  }
  // The buffer sizes read back doubled: set half (FORCE past the sysctl
  // cap where the process may).
  for (const int name : {SO_SNDBUF, SO_RCVBUF}) {
    int v = 0;
    socklen_t n = sizeof v;
    if (::getsockopt(twin, SOL_SOCKET, name, &v, &n) != 0) continue;
    const int half = v / 2;
    int got = 0;
    socklen_t gn = sizeof got;
    if (::setsockopt(kfd, SOL_SOCKET, name, &half, sizeof half) == 0 &&
        ::getsockopt(kfd, SOL_SOCKET, name, &got, &gn) == 0 && got < v)
      (void)::setsockopt(kfd, SOL_SOCKET, name == SO_SNDBUF ? SO_SNDBUFFORCE : SO_RCVBUFFORCE, &half, sizeof half);
  }
  struct linger lg;
  socklen_t n = sizeof lg;
  if (::getsockopt(twin, SOL_SOCKET, SO_LINGER, &lg, &n) == 0 && lg.l_onoff)
    (void)::setsockopt(kfd, SOL_SOCKET, SO_LINGER, &lg, n);
  // The timeouts as set (the twin reads an immediate one back as none).
  for (const bool rcv : {true, false}) {
    const int64_t ns = rcv ? opts.rcvtimeo_ns() : opts.sndtimeo_ns();
    if (ns == 0) continue;
    const struct timeval tv = ns < 0 ? timeval{-1, 0}
                                     : timeval{static_cast<time_t>(ns / 1000000000),
                                               static_cast<suseconds_t>(ns % 1000000000 / 1000)};
    (void)::setsockopt(kfd, SOL_SOCKET, rcv ? SO_RCVTIMEO_OLD : SO_SNDTIMEO_OLD, &tv, sizeof tv);
  }
  errno = e;
}

}  // namespace uepoll::objects
