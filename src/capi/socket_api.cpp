// socket_api.cpp - socket calls on uepoll socket pairs (AF_UNIX
// SOCK_STREAM): uep_send, uep_recv, uep_sendto, uep_recvfrom, uep_sendmsg,
// uep_recvmsg, uep_getsockopt, uep_setsockopt, uep_getsockname,
// uep_getpeername.  Linux 6.18 net/socket.c and net/unix/af_unix.c
// (unix_stream_sendmsg, unix_stream_recvmsg, sock_getsockopt) for what a
// connected, unnamed stream pair answers; kernel descriptors go to the
// kernel.  Per-call flags (MSG_DONTWAIT, MSG_NOSIGNAL) reach the objects
// through core/call_flags.h.
//
// Locks: none of its own (the socket's, inside UnixSocket).
#include <uepoll/uepoll.h>
#include <uepoll/detail/ops.hpp>

#include "capi/edge.h"
#include "core/call_flags.h"
#include "core/user_memory.h"
#include "fd/table.h"
#include "objects/socketpair.h"
#include "objects/user_ptr.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <sys/socket.h>
#include <sys/un.h>
#include <vector>

using uepoll::capi::to_c;
using uepoll::capi::to_c_ssize;
using uepoll::core::File;
using uepoll::core::FileKind;
using uepoll::fd::FileRef;
using uepoll::objects::UnixSocket;

namespace {

using uepoll::core::user_readable;
constexpr int kUioMaxIov = 1024;  // UIO_MAXIOV

// sockfd_lookup: EBADF, then ENOTSOCK for any other uepoll file.
long socket_of(int fd, FileRef* out) {
  FileRef f(uepoll::fd::lookup(fd));
  if (!f) return -EBADF;
  if (f->kind() != FileKind::kSocket) return -ENOTSOCK;
  *out = std::move(f);
  return 0;
}

// ___sys_sendmsg/recvmsg: the header (EFAULT), then the iovec array
// (EMSGSIZE past UIO_MAXIOV, EFAULT).
long check_msghdr(const struct msghdr* msg) {
  if (!user_readable(msg, sizeof *msg)) return -EFAULT;
  if (msg->msg_iovlen > static_cast<size_t>(kUioMaxIov)) return -EMSGSIZE;
  if (msg->msg_iovlen && !user_readable(msg->msg_iov, msg->msg_iovlen * sizeof(struct iovec))) return -EFAULT;
  return 0;
}

UnixSocket* sock(const FileRef& f) { return static_cast<UnixSocket*>(f.get()); }

// One stream send over a gathered vector (unix_stream_sendmsg).
long send_iov(UnixSocket* s, const struct iovec* iov, size_t n, int flags) {
  if (flags & MSG_OOB) return -EOPNOTSUPP;  // a kernel without CONFIG_AF_UNIX_OOB
  size_t total = 0;
  for (size_t i = 0; i < n; ++i) total += iov[i].iov_len;
  std::vector<char> buf(total ? total : 1);
  size_t off = 0;
  for (size_t i = 0; i < n; ++i) {
    if (iov[i].iov_len && uepoll::objects::faulting_ptr(iov[i].iov_base)) return -EFAULT;
    std::memcpy(buf.data() + off, iov[i].iov_base, iov[i].iov_len);
    off += iov[i].iov_len;
  }
  uepoll::core::CallFlagsScope scope((flags & MSG_DONTWAIT) != 0, (flags & MSG_NOSIGNAL) != 0);
  if (total == 0) return 0;
  return s->write(buf.data(), total);
}

// One stream receive (unix_stream_recvmsg): MSG_PEEK, MSG_DONTWAIT,
// MSG_WAITALL (a blocking call returns only with `len` bytes, at EOF, on an
// error, or when a signal interrupts it after some data).
long recv_buf(UnixSocket* s, char* buf, size_t len, int flags) {
  if (flags & MSG_OOB) return -EINVAL;       // no out-of-band byte pending
  if (flags & MSG_ERRQUEUE) return -EAGAIN;  // unix sockets queue no errors
  uepoll::core::CallFlagsScope scope((flags & MSG_DONTWAIT) != 0, false);
  const bool peek = (flags & MSG_PEEK) != 0;
  long done = s->recv(buf, len, peek);
  if (done <= 0 || peek || !(flags & MSG_WAITALL) || s->nonblocking()) return done;
  while (static_cast<size_t>(done) < len) {
    const long r = s->recv(buf + done, len - static_cast<size_t>(done), false);
    if (r <= 0) break;
    done += r;
  }
  return done;
}

// Linux copies int options with len = min(len, sizeof(int)).
long put_int_opt(int value, void* optval, socklen_t* optlen) {
  if (!user_readable(optlen, sizeof *optlen)) return -EFAULT;
  if (static_cast<int>(*optlen) < 0) return -EINVAL;
  socklen_t n = *optlen < sizeof(int) ? *optlen : sizeof(int);
  if (n && !user_readable(optval, n)) return -EFAULT;
  std::memcpy(optval, &value, n);
  *optlen = n;
  return 0;
}

long put_unnamed_addr(struct sockaddr* addr, socklen_t* len) {
  // An unnamed AF_UNIX socket: just the family (unix_getname).
  if (!user_readable(len, sizeof *len)) return -EFAULT;
  if (static_cast<int>(*len) < 0) return -EINVAL;
  const sa_family_t fam = AF_UNIX;
  socklen_t n = *len < sizeof fam ? *len : sizeof fam;
  if (n && !user_readable(addr, n)) return -EFAULT;
  std::memcpy(addr, &fam, n);
  *len = sizeof fam;
  return 0;
}

// Boolean SOL_SOCKET options with no effect on a connected AF_UNIX stream
// in Linux either: accepted, read back as 0.
bool inert_bool_opt(int optname) {
  switch (optname) {
    case SO_KEEPALIVE:
    case SO_REUSEADDR:
    case SO_REUSEPORT:
    case SO_BROADCAST:
    case SO_DEBUG:
    case SO_DONTROUTE:
    case SO_OOBINLINE:
      return true;
    default:
      return false;
  }
}

void warn_unsupported_opt(const char* call, int optname) {
  std::fprintf(stderr, "uepoll: %s(SOL_SOCKET, %d) on a uepoll socket pair: not supported (ENOPROTOOPT)\n", call,
               optname);
}

}  // namespace

namespace uepoll::detail {

long sendmsg(int fd, const struct msghdr* msg, int flags) noexcept {
  if (!uepoll::fd::in_range(fd)) return uepoll::capi::from_kernel(::sendmsg(fd, msg, flags));
  FileRef f;
  if (long r = socket_of(fd, &f)) return r;
  if (long r = check_msghdr(msg)) return r;
  if (msg->msg_controllen) {
    // SCM_RIGHTS / SCM_CREDENTIALS: uepoll pairs carry bytes only.
    std::fprintf(stderr, "uepoll: sendmsg with control data on a uepoll socket pair: not supported (EOPNOTSUPP)\n");
    return -EOPNOTSUPP;
  }
  if (msg->msg_namelen) return -EISCONN;  // unix_stream_sendmsg on a connected socket
  return send_iov(sock(f), msg->msg_iov, msg->msg_iovlen, flags);
}

long send(int fd, const void* buf, size_t len, int flags) noexcept {
  if (!uepoll::fd::in_range(fd)) return uepoll::capi::from_kernel(::send(fd, buf, len, flags));
  FileRef f;
  if (long r = socket_of(fd, &f)) return r;
  struct iovec iov = {const_cast<void*>(buf), len};
  return send_iov(sock(f), &iov, 1, flags);
}

long recvmsg(int fd, struct msghdr* msg, int flags) noexcept {
  if (!uepoll::fd::in_range(fd)) return uepoll::capi::from_kernel(::recvmsg(fd, msg, flags));
  FileRef f;
  if (long r = socket_of(fd, &f)) return r;
  if (long r = check_msghdr(msg)) return r;
  size_t total = 0;
  for (size_t i = 0; i < msg->msg_iovlen; ++i) total += msg->msg_iov[i].iov_len;
  std::vector<char> buf(total ? total : 1);
  const long r = total ? recv_buf(sock(f), buf.data(), total, flags) : 0;
  if (r < 0) return r;
  size_t off = 0;
  for (size_t i = 0; i < msg->msg_iovlen && off < static_cast<size_t>(r); ++i) {
    size_t n = msg->msg_iov[i].iov_len;
    if (n > static_cast<size_t>(r) - off) n = static_cast<size_t>(r) - off;
    std::memcpy(msg->msg_iov[i].iov_base, buf.data() + off, n);
    off += n;
  }
  msg->msg_namelen = 0;  // the peer is unnamed
  msg->msg_controllen = 0;
  msg->msg_flags = 0;
  return r;
}

long recv(int fd, void* buf, size_t len, int flags) noexcept {
  if (!uepoll::fd::in_range(fd)) return uepoll::capi::from_kernel(::recv(fd, buf, len, flags));
  FileRef f;
  if (long r = socket_of(fd, &f)) return r;
  if (len == 0) {
    // sock_recvmsg has no zero-length shortcut: it waits for data (or
    // EAGAIN), then copies none.
    char scratch;
    const long r = recv_buf(sock(f), &scratch, 1, flags | MSG_PEEK);
    return r < 0 ? r : 0;
  }
  return recv_buf(sock(f), static_cast<char*>(buf), len, flags);
}

long getsockopt(int fd, int level, int optname, void* optval, socklen_t* optlen) noexcept {
  if (!uepoll::fd::in_range(fd)) return uepoll::capi::from_kernel(::getsockopt(fd, level, optname, optval, optlen));
  FileRef f;
  if (long r = socket_of(fd, &f)) return r;
  if (level != SOL_SOCKET) return -EOPNOTSUPP;  // unix sockets have no other level
  switch (optname) {
    case SO_TYPE:
      return put_int_opt(SOCK_STREAM, optval, optlen);
    case SO_DOMAIN:
      return put_int_opt(AF_UNIX, optval, optlen);
    case SO_PROTOCOL:
      return put_int_opt(0, optval, optlen);
    case SO_ERROR:
      return put_int_opt(sock(f)->take_error(), optval, optlen);
    case SO_SNDBUF:
    case SO_RCVBUF:
      return put_int_opt(static_cast<int>(uepoll::objects::kUnixSndBuf), optval, optlen);
    case SO_ACCEPTCONN:
    case SO_PASSCRED:
      return put_int_opt(0, optval, optlen);
    default:
      if (inert_bool_opt(optname)) return put_int_opt(0, optval, optlen);
      warn_unsupported_opt("getsockopt", optname);
      return -ENOPROTOOPT;
  }
}

long setsockopt(int fd, int level, int optname, const void* optval, socklen_t optlen) noexcept {
  if (!uepoll::fd::in_range(fd)) return uepoll::capi::from_kernel(::setsockopt(fd, level, optname, optval, optlen));
  FileRef f;
  if (long r = socket_of(fd, &f)) return r;
  if (level != SOL_SOCKET) return -EOPNOTSUPP;
  if (optlen < sizeof(int)) return -EINVAL;
  if (!user_readable(optval, sizeof(int))) return -EFAULT;
  switch (optname) {
    case SO_TYPE:
    case SO_DOMAIN:
    case SO_PROTOCOL:
    case SO_ERROR:
    case SO_ACCEPTCONN:
      return -ENOPROTOOPT;  // read-only options
    default:
      if (inert_bool_opt(optname)) return 0;
      // SO_SNDBUF, SO_RCVBUF, timeouts...: would change behaviour uepoll's
      // pairs do not model (docs/linux-deviations.md).
      warn_unsupported_opt("setsockopt", optname);
      return -ENOPROTOOPT;
  }
}

long getsockname(int fd, struct sockaddr* addr, socklen_t* len) noexcept {
  if (!uepoll::fd::in_range(fd)) return uepoll::capi::from_kernel(::getsockname(fd, addr, len));
  FileRef f;
  if (long r = socket_of(fd, &f)) return r;
  return put_unnamed_addr(addr, len);
}

long getpeername(int fd, struct sockaddr* addr, socklen_t* len) noexcept {
  if (!uepoll::fd::in_range(fd)) return uepoll::capi::from_kernel(::getpeername(fd, addr, len));
  FileRef f;
  if (long r = socket_of(fd, &f)) return r;
  return put_unnamed_addr(addr, len);
}

}  // namespace uepoll::detail

extern "C" {

ssize_t uep_send(int fd, const void* buf, size_t len, int flags) {
  return to_c_ssize(uepoll::detail::send(fd, buf, len, flags));
}
ssize_t uep_recv(int fd, void* buf, size_t len, int flags) { return to_c_ssize(uepoll::detail::recv(fd, buf, len, flags)); }
ssize_t uep_sendto(int fd, const void* buf, size_t len, int flags, const struct sockaddr* addr, socklen_t alen) {
  if (!uepoll::fd::in_range(fd)) return ::sendto(fd, buf, len, flags, addr, alen);
  struct iovec iov = {const_cast<void*>(buf), len};
  struct msghdr m = {};
  m.msg_name = const_cast<struct sockaddr*>(addr);
  m.msg_namelen = addr ? alen : 0;
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  return to_c_ssize(uepoll::detail::sendmsg(fd, &m, flags));
}
ssize_t uep_recvfrom(int fd, void* buf, size_t len, int flags, struct sockaddr* addr, socklen_t* alen) {
  if (!uepoll::fd::in_range(fd)) return ::recvfrom(fd, buf, len, flags, addr, alen);
  const long r = uepoll::detail::recv(fd, buf, len, flags);
  if (r >= 0 && addr && alen) *alen = 0;  // the peer is unnamed
  return to_c_ssize(r);
}
ssize_t uep_sendmsg(int fd, const struct msghdr* msg, int flags) {
  return to_c_ssize(uepoll::detail::sendmsg(fd, msg, flags));
}
ssize_t uep_recvmsg(int fd, struct msghdr* msg, int flags) { return to_c_ssize(uepoll::detail::recvmsg(fd, msg, flags)); }
int uep_getsockopt(int fd, int level, int optname, void* optval, socklen_t* optlen) {
  return to_c(uepoll::detail::getsockopt(fd, level, optname, optval, optlen));
}
int uep_setsockopt(int fd, int level, int optname, const void* optval, socklen_t optlen) {
  return to_c(uepoll::detail::setsockopt(fd, level, optname, optval, optlen));
}
int uep_getsockname(int fd, struct sockaddr* addr, socklen_t* len) {
  return to_c(uepoll::detail::getsockname(fd, addr, len));
}
int uep_getpeername(int fd, struct sockaddr* addr, socklen_t* len) {
  return to_c(uepoll::detail::getpeername(fd, addr, len));
}

}  // extern "C"
