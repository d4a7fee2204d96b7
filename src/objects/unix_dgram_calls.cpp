// unix_dgram_calls.cpp - the socket calls and file operations of a uepoll
// datagram or seqpacket pair beyond the queue (unix_dgram.h): Linux 6.18
// net/unix/af_unix.c (unix_dgram_sendmsg/recvmsg, unix_seqpacket_*,
// unix_dgram_connect, unix_ioctl, unix_inq_len) and net/core/sock.c
// (sk_setsockopt/sk_getsockopt) for a connected, unnamed pair; what goes
// to a named socket is unix_dgram_named.h's.  Per-call MSG_DONTWAIT
// reaches the queue through core/call_flags.h.
//
// Locks: UnixDgramConn::mu_ (leaf) for the few fields read or set here;
// the queue's locks inside send_msg/recv_msg/disconnect.
#include "core/call_flags.h"
#include "core/sockopt.h"
#include "core/user_memory.h"
#include "objects/unix_dgram.h"
#include "objects/unix_dgram_named.h"

#include <cerrno>
#include <cstring>
#include <linux/net_tstamp.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

namespace uepoll::objects {

namespace {

using core::put_int_opt;
using core::user_readable;

// SOF_TIMESTAMPING_OPT_RX_FILTER (Linux 6.1's uapi headers lack it).
constexpr int kTimestampingOptRxFilter = 1 << 17;

}  // namespace

long UnixDgramSocket::sendmsg(const struct msghdr* msg, int flags) noexcept {
  const bool seqpacket = type() == SOCK_SEQPACKET;
  if (seqpacket) {  // unix_seqpacket_sendmsg: sock_error() first
    conn_->mu_.lock();
    const int e = conn_->side_[me_].err;
    conn_->side_[me_].err = 0;
    conn_->mu_.unlock();
    if (e) return -e;
  }
  // unix_dgram_sendmsg: scm_send first, then MSG_OOB and the name.
  ScmPayload scm;
  if (long r = scm_send(msg, &scm)) return r;
  if (scm.has_files()) unix_gc_before_send();  // wait_for_unix_gc
  if (flags & MSG_OOB) return -EOPNOTSUPP;
  size_t total = 0;
  for (size_t i = 0; i < msg->msg_iovlen; ++i) total += msg->msg_iov[i].iov_len;
  core::CallFlagsScope scope((flags & MSG_DONTWAIT) != 0, (flags & MSG_NOSIGNAL) != 0);
  if (msg->msg_namelen && !seqpacket) {  // seqpacket ignores the name
    if (long r = unix_validate_addr(static_cast<const struct sockaddr*>(msg->msg_name), msg->msg_namelen)) return r;
    // Through a kernel socket, control data included; SCM_RIGHTS naming a
    // uepoll file: EOPNOTSUPP (docs/linux-deviations.md).
    return unix_dgram_send_named(msg, scm, flags, nonblocking(), scm_wants().any());
  }
  // unix_scm_to_skb -> unix_attach_fds: too_many_unix_fds
  if (scm.has_files() && unix_too_many_fds(scm.nfiles())) return -ETOOMANYREFS;
  return send_msg(msg->msg_iov, msg->msg_iovlen, total, &scm);
}

long UnixDgramSocket::recvmsg(struct msghdr* msg, int flags) noexcept {
  if (flags & MSG_OOB) return -EOPNOTSUPP;   // sock_no_... for datagram sockets
  if (flags & MSG_ERRQUEUE) return -EAGAIN;  // unix sockets queue no errors
  core::CallFlagsScope scope((flags & MSG_DONTWAIT) != 0, false);
  int msg_flags = 0;
  ScmRecv scm(msg, flags);
  const long r = recv_msg(msg->msg_iov, msg->msg_iovlen, flags, &msg_flags, &scm);
  if (r < 0) return r;
  msg->msg_namelen = 0;  // the peer is unnamed
  scm.finish(scm_wants());  // msg_controllen, MSG_CTRUNC and MSG_CMSG_CLOEXEC
  msg->msg_flags |= msg_flags;
  return r;
}

long UnixDgramSocket::bind(const struct sockaddr*, socklen_t) noexcept {
  return -EOPNOTSUPP;  // would name the socket: not modelled (docs/linux-deviations.md)
}
// sock_no_listen / sock_no_accept for datagrams; an unbound, unlistening
// seqpacket socket: EINVAL.
long UnixDgramSocket::listen(int) noexcept { return type() == SOCK_DGRAM ? -EOPNOTSUPP : -EINVAL; }
long UnixDgramSocket::accept4(struct sockaddr*, socklen_t*, int) noexcept {
  return type() == SOCK_DGRAM ? -EOPNOTSUPP : -EINVAL;
}

long UnixDgramSocket::connect(const struct sockaddr* addr, socklen_t len) noexcept {
  if (type() == SOCK_SEQPACKET) {
    // unix_stream_connect: the address, the lookup (ENOENT, ECONNREFUSED,
    // EPROTOTYPE for a socket of another type), then EISCONN.
    if (long r = unix_validate_addr(addr, len)) return r;
    const long r = unix_probe_named(addr, len);
    if (r == 0) return -EPROTOTYPE;  // a datagram socket is there
    return r == -EPROTOTYPE ? -EISCONN : r;
  }
  if (len < sizeof(sa_family_t)) return -EINVAL;
  if (addr->sa_family != AF_UNSPEC) {
    if (long r = unix_validate_addr(addr, len)) return r;
    // Connecting to a named socket: the kernel's refusal if it refuses,
    // else EOPNOTSUPP, silently as bind() (a pair carries no peer name; the
    // preload makes the pair a kernel one first: src/preload/dgram_named.c).
    if (long r = unix_probe_named(addr, len)) return r;
    return -EOPNOTSUPP;
  }
  // AF_UNSPEC: "1003.1g breaking connected state".
  conn_->mu_.lock();
  const bool was = conn_->side_[me_].connected;
  conn_->side_[me_].connected = false;
  conn_->mu_.unlock();
  if (was) {
    conn_->wake(me_, kUnixWriteSpace);  // unix_dgram_peer_wake_disconnect_wakeup
    disconnect();
  }
  return 0;
}

long UnixDgramSocket::getsockopt(int level, int optname, void* optval, socklen_t* optlen) noexcept {
  if (level == SOL_SOCKET) {
    switch (optname) {
      case SO_TYPE:
        return put_int_opt(type(), optval, optlen);
      case SO_DOMAIN:
        return put_int_opt(AF_UNIX, optval, optlen);
      case SO_PROTOCOL:
      case SO_ACCEPTCONN:
        return put_int_opt(0, optval, optlen);
      case SO_PASSCRED:
        return put_int_opt(passcred() ? 1 : 0, optval, optlen);
      case SO_PEERCRED:
        return put_peercred(conn_->peercred_, optval, optlen);
      case SO_ERROR: {
        conn_->mu_.lock();
        const int e = conn_->side_[me_].err;
        conn_->side_[me_].err = 0;
        conn_->mu_.unlock();
        return put_int_opt(e, optval, optlen);
      }
      case SO_SNDBUF:
      case SO_RCVBUF:
        return UnixSideOpts<UnixDgramConn>::get(*conn_, me_, optname, optval, optlen);
      case SO_PEEK_OFF:
        return UnixSideOpts<UnixDgramConn>::get_peek_off(*conn_, me_, optval, optlen);
      default:
        break;
    }
  }
  return opts_.get(type(), *this, level, optname, optval, optlen);
}

long UnixDgramSocket::setsockopt(int level, int optname, const void* optval, socklen_t optlen) noexcept {
  core::MutexLock io(iolock_);  // Linux lock_sock: the twin and the socket agree
  if (level == SOL_SOCKET && optname == SO_PEEK_OFF)
    return UnixSideOpts<UnixDgramConn>::set_peek_off(*conn_, me_, optval, optlen);
  if (const long e = opts_.set(type(), level, optname, optval, optlen)) return e;
  if (level != SOL_SOCKET) return 0;
  if (optname == SO_PASSCRED || optname == kSoPassPidfd) {
    const bool on = opts_.read_int(optname) != 0;
    core::SpinGuard g(conn_->mu_);
    (optname == SO_PASSCRED ? conn_->side_[me_].passcred : conn_->side_[me_].passpidfd) = on;
  }
  if (UnixSideOpts<UnixDgramConn>::take(*conn_, me_, opts_, optname))
    conn_->wake(me_, kUnixWriteSpace);  // sk_write_space
  switch (optname) {
    case SO_TIMESTAMP_OLD:
    case SO_TIMESTAMPNS_OLD:
    case SO_TIMESTAMP_NEW:
    case SO_TIMESTAMPNS_NEW:
    case SO_TIMESTAMPING_OLD:
    case SO_TIMESTAMPING_NEW: {
      // sock_set_timestamp: which of the four is on, if any (the last
      // SO_TIMESTAMPING name set also decides _OLD or _NEW: SOCK_TSTAMP_NEW).
      int on = 0;
      for (const int name : {SO_TIMESTAMP_OLD, SO_TIMESTAMPNS_OLD, SO_TIMESTAMP_NEW, SO_TIMESTAMPNS_NEW})
        if (opts_.read_int(name)) on = name;
      // __sock_recv_timestamp: the software stamp is reported when asked
      // for, unless SOF_TIMESTAMPING_OPT_RX_FILTER limits it to receive stamps.
      const int ts = opts_.read_int(SO_TIMESTAMPING_OLD);
      const bool tsing = (ts & SOF_TIMESTAMPING_SOFTWARE) &&
                         ((ts & SOF_TIMESTAMPING_RX_SOFTWARE) || !(ts & kTimestampingOptRxFilter));
      core::SpinGuard g(conn_->mu_);
      conn_->side_[me_].tstamp = on;
      conn_->side_[me_].tsing = tsing;
      break;
    }
    default:
      break;
  }
  return 0;
}

long UnixDgramSocket::getsockname(struct sockaddr* addr, socklen_t* len) noexcept {
  return unix_put_unnamed_addr(addr, len);
}

long UnixDgramSocket::getpeername(struct sockaddr* addr, socklen_t* len) noexcept {
  conn_->mu_.lock();
  const bool connected = conn_->side_[me_].connected;
  conn_->mu_.unlock();
  if (!connected) return -ENOTCONN;  // a datagram socket whose peer it dropped
  return unix_put_unnamed_addr(addr, len);
}

long UnixDgramSocket::ioctl(unsigned long request, void* arg) noexcept {
  long value = 0;
  conn_->mu_.lock();
  const UnixDgramConn::Side& s = conn_->side_[me_];
  if (request == FIONREAD) {  // SIOCINQ, unix_inq_len
    if (type() == SOCK_SEQPACKET) {
      for (const UnixDgramConn::Msg* m = s.head; m; m = m->next) value += m->len;
    } else if (s.head) {
      value = s.head->len;  // the next datagram only
    }
  } else if (request == TIOCOUTQ) {  // SIOCOUTQ: sk_wmem_alloc
    value = s.wmem;
  } else if (request == SIOCATMARK) {  // out-of-band data is the stream pair's
    conn_->mu_.unlock();
    return -EOPNOTSUPP;
  } else {
    conn_->mu_.unlock();
    return -ENOTTY;  // sock_ioctl: ENOIOCTLCMD
  }
  conn_->mu_.unlock();
  if (!user_readable(arg, sizeof(int))) return -EFAULT;  // put_user
  *static_cast<int*>(arg) = static_cast<int>(value);
  return 0;
}

long UnixDgramSocket::fstat(struct stat* st) noexcept { return unix_fstat(id(), st); }

bool UnixDgramSocket::stream_state(core::StreamState* out) noexcept {
  conn_->mu_.lock();
  const int bits = conn_->side_[me_].shutdown;
  const long msgs = conn_->side_[me_].count;
  conn_->mu_.unlock();
  *out = {conn_, me_, bits, true, type(), msgs};
  return true;
}

}  // namespace uepoll::objects
