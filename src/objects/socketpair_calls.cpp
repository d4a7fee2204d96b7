// socketpair_calls.cpp - the socket calls and file operations of a uepoll
// socket pair beyond read/write/poll/shutdown (socketpair.h): Linux 6.18
// net/unix/af_unix.c (unix_stream_sendmsg, unix_stream_recvmsg,
// unix_ioctl, unix_show_fdinfo) and net/core/sock.c (sock_getsockopt) for
// what a connected, unnamed stream pair answers.  Per-call flags
// (MSG_DONTWAIT, MSG_NOSIGNAL) reach read/write through core/call_flags.h.
//
// Locks: none of its own (the connection's, inside read/write/inq/outq).
#include "core/call_flags.h"
#include "core/sockopt.h"
#include "core/user_memory.h"
#include "objects/socketpair.h"

#include <cerrno>
#include <cstring>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <vector>

namespace uepoll::objects {

namespace {

using core::put_int_opt;
using core::user_readable;

long put_unnamed_addr(struct sockaddr* addr, socklen_t* len) { return unix_put_unnamed_addr(addr, len); }

}  // namespace

// MSG_OOB: the last byte is out-of-band data (socketpair_oob.cpp; a send
// of no bytes with it is refused by sendmsg first).
long UnixSocket::send_iov(const struct iovec* iov, size_t n, int flags, ScmPayload* scm) noexcept {
  size_t total = 0;
  for (size_t i = 0; i < n; ++i) total += iov[i].iov_len;
  const bool oob = (flags & MSG_OOB) != 0 && total > 0;
  std::vector<char> buf;
  try {
    buf.resize(total ? total : 1);
  } catch (...) {
    return -ENOBUFS;
  }
  size_t off = 0;
  for (size_t i = 0; i < n; ++i) {
    if (iov[i].iov_len && core::faulting_ptr(iov[i].iov_base)) return -EFAULT;
    std::memcpy(buf.data() + off, iov[i].iov_base, iov[i].iov_len);
    off += iov[i].iov_len;
  }
  core::CallFlagsScope scope((flags & MSG_DONTWAIT) != 0, (flags & MSG_NOSIGNAL) != 0);
  if (total == 0) return 0;  // no skb: files sent with no bytes are dropped, as Linux drops them
  return write_scm(buf.data(), total, scm, oob);
}

// MSG_PEEK, MSG_DONTWAIT, MSG_WAITALL (a blocking call returns only with
// `len` bytes, or SO_RCVLOWAT's without it, at EOF, on an error, when a
// signal or SO_RCVTIMEO ends it after some data, where the control data
// stops a receive, or at out-of-band data).
long UnixSocket::recv_buf(char* buf, size_t len, int flags, ScmRecv* scm) noexcept {
  if (flags & MSG_ERRQUEUE) return -EAGAIN;  // unix sockets queue no errors
  core::CallFlagsScope scope((flags & MSG_DONTWAIT) != 0, false);
  return recv_target(buf, len, (flags & MSG_PEEK) != 0, (flags & MSG_WAITALL) != 0, scm);
}

long UnixSocket::bind(const struct sockaddr*, socklen_t) noexcept {
  return -EOPNOTSUPP;  // would name the socket: not modelled (docs/linux-deviations.md)
}
long UnixSocket::listen(int) noexcept { return -EINVAL; }                       // unix_listen: unbound
long UnixSocket::accept4(struct sockaddr*, socklen_t*, int) noexcept { return -EINVAL; }  // not listening
long UnixSocket::connect(const struct sockaddr*, socklen_t) noexcept { return -EISCONN; }

long UnixSocket::sendmsg(const struct msghdr* msg, int flags) noexcept {
  // unix_stream_sendmsg: scm_send first, then MSG_OOB without bytes, then
  // the name.
  ScmPayload scm;
  if (long r = scm_send(msg, &scm)) return r;
  if (scm.has_files()) unix_gc_before_send();  // wait_for_unix_gc
  if (flags & MSG_OOB) {
    size_t total = 0;
    for (size_t i = 0; i < msg->msg_iovlen; ++i) total += msg->msg_iov[i].iov_len;
    if (total == 0) return -EOPNOTSUPP;
  }
  if (msg->msg_namelen) return -EISCONN;  // a connected socket
  // unix_scm_to_skb -> unix_attach_fds: too_many_unix_fds
  if (scm.has_files() && unix_too_many_fds(scm.nfiles())) return -ETOOMANYREFS;
  return send_iov(msg->msg_iov, msg->msg_iovlen, flags, &scm);
}

long UnixSocket::recvmsg(struct msghdr* msg, int flags) noexcept {
  if (flags & MSG_OOB) return recv_urg(msg, flags);
  size_t total = 0;
  for (size_t i = 0; i < msg->msg_iovlen; ++i) total += msg->msg_iov[i].iov_len;
  ScmRecv scm(msg, flags);
  if (msg->msg_iovlen == 1 || total == 0) {
    // One segment (recv, recvfrom): straight into it (read() checks it).
    // No room at all: a receive of 0 bytes, which still waits for a
    // message (or EAGAIN) and takes the files of the first.
    char scratch;
    char* dst = total ? static_cast<char*>(msg->msg_iov[0].iov_base) : &scratch;
    const long r = recv_buf(dst, total, flags, &scm);
    if (r < 0) return r;
    msg->msg_namelen = 0;
    scm.finish(scm_wants());
    return r;
  }
  std::vector<char> buf;
  try {
    buf.resize(total ? total : 1);
  } catch (...) {
    return -ENOMEM;
  }
  const long r = total ? recv_buf(buf.data(), total, flags, &scm) : 0;
  if (r < 0) return r;
  size_t off = 0;
  for (size_t i = 0; i < msg->msg_iovlen && off < static_cast<size_t>(r); ++i) {
    size_t n = msg->msg_iov[i].iov_len;
    if (n > static_cast<size_t>(r) - off) n = static_cast<size_t>(r) - off;
    std::memcpy(msg->msg_iov[i].iov_base, buf.data() + off, n);
    off += n;
  }
  msg->msg_namelen = 0;  // the peer is unnamed
  scm.finish(scm_wants());
  return r;
}

long UnixSocket::getsockopt(int level, int optname, void* optval, socklen_t* optlen) noexcept {
  if (level == SOL_SOCKET) {
    switch (optname) {
      case SO_TYPE:
        return put_int_opt(SOCK_STREAM, optval, optlen);
      case SO_DOMAIN:
        return put_int_opt(AF_UNIX, optval, optlen);
      case SO_PROTOCOL:
        return put_int_opt(0, optval, optlen);
      case SO_ERROR:
        return put_int_opt(take_error(), optval, optlen);
      case SO_SNDBUF:
      case SO_RCVBUF:
        return UnixSideOpts<UnixConn>::get(*conn_, me_, optname, optval, optlen);
      case SO_PEEK_OFF:
        return UnixSideOpts<UnixConn>::get_peek_off(*conn_, me_, optval, optlen);
      case SO_ACCEPTCONN:
        return put_int_opt(0, optval, optlen);
      case SO_PASSCRED:
        return put_int_opt(passcred() ? 1 : 0, optval, optlen);
      case SO_PEERCRED:
        return put_peercred(conn_->peercred_, optval, optlen);
      default:
        break;
    }
  }
  return opts_.get(SOCK_STREAM, *this, level, optname, optval, optlen);
}

long UnixSocket::setsockopt(int level, int optname, const void* optval, socklen_t optlen) noexcept {
  core::MutexLock io(iolock_);  // Linux lock_sock: the twin and the socket agree
  if (level == SOL_SOCKET && optname == SO_PEEK_OFF)
    return UnixSideOpts<UnixConn>::set_peek_off(*conn_, me_, optval, optlen);
  if (const long e = opts_.set(SOCK_STREAM, level, optname, optval, optlen)) return e;
  if (level != SOL_SOCKET) return 0;
  take_side_option(optname);
  if (UnixSideOpts<UnixConn>::take(*conn_, me_, opts_, optname)) conn_->write_space(me_);  // sk_write_space
  return 0;
}

long UnixSocket::getsockname(struct sockaddr* addr, socklen_t* len) noexcept { return put_unnamed_addr(addr, len); }
long UnixSocket::getpeername(struct sockaddr* addr, socklen_t* len) noexcept { return put_unnamed_addr(addr, len); }

long UnixSocket::ioctl(unsigned long request, void* arg) noexcept {
  int value;
  if (request == FIONREAD)  // SIOCINQ
    value = static_cast<int>(inq());
  else if (request == TIOCOUTQ)  // SIOCOUTQ
    value = static_cast<int>(outq());
  else if (request == SIOCATMARK)
    value = at_mark();
  else
    return -ENOTTY;  // sock_ioctl: ENOIOCTLCMD
  if (!user_readable(arg, sizeof(int))) return -EFAULT;  // put_user
  *static_cast<int*>(arg) = value;
  return 0;
}

long UnixSocket::fstat(struct stat* st) noexcept { return unix_fstat(id(), st); }

bool UnixSocket::stream_state(core::StreamState* out) noexcept {
  *out = {conn_, me_, shutdown_bits(), true, SOCK_STREAM, 0};
  return true;
}

}  // namespace uepoll::objects
