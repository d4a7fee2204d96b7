// socket_api.cpp - the socket calls on uepoll descriptors: uep_bind,
// uep_listen, uep_accept, uep_accept4, uep_connect, uep_send, uep_recv,
// uep_sendto, uep_recvfrom, uep_sendmsg, uep_recvmsg, uep_getsockopt,
// uep_setsockopt, uep_getsockname, uep_getpeername (uep_shutdown:
// fd_api.cpp).  Linux 6.18 net/socket.c: the checks the socket layer makes
// before it calls the protocol (sockfd_lookup: EBADF then ENOTSOCK, the
// address copy, the msghdr and iovec copy), in its order; then the file's
// socket operation (core::File, e.g. objects/socketpair_calls.cpp).
// Kernel descriptors go to the kernel.
//
// Locks: none of its own (the file's, inside its operations).
#include <uepoll/uepoll.h>
#include <uepoll/detail/ops.hpp>

#include "capi/edge.h"
#include "core/user_memory.h"
#include "fd/table.h"
#include "fd/target.h"

#include <cerrno>
#include <cstring>
#include <sys/socket.h>

using uepoll::capi::to_c;
using uepoll::capi::to_c_ssize;
using uepoll::fd::FileRef;

namespace {

using uepoll::core::user_readable;
constexpr int kUioMaxIov = 1024;  // UIO_MAXIOV

// sockfd_lookup: EBADF, then ENOTSOCK for any other uepoll file.
long socket_of(const uepoll::fd::Target& t) {
  if (t.closed()) return -EBADF;
  if (!t->is_socket()) return -ENOTSOCK;
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

// move_addr_to_kernel: a length outside [0, sizeof(sockaddr_storage)] is
// EINVAL, an unreadable address EFAULT.
long check_addr(const struct sockaddr* addr, socklen_t len) {
  if (static_cast<int>(len) < 0 || len > sizeof(struct sockaddr_storage)) return -EINVAL;
  if (len && !user_readable(addr, len)) return -EFAULT;
  return 0;
}

// One receive into buf (recv/recvfrom).  sock_recvmsg has no zero-length
// shortcut: a zero-length receive waits for data (or EAGAIN) without
// taking any, so it peeks one byte into a scratch buffer.
long recv_into(uepoll::core::File* f, void* buf, size_t len, int flags, struct msghdr* m) {
  // A receive of 0 bytes takes a datagram, or an out-of-band byte; on a
  // stream it only waits for data (a peek of one byte).
  if (!len && (f->zero_recv_takes_message() || (flags & MSG_OOB))) {
    struct iovec iov = {buf, 0};
    m->msg_iov = &iov;
    m->msg_iovlen = 1;
    const long r = f->recvmsg(m, flags);
    m->msg_iov = nullptr;
    m->msg_iovlen = 0;
    return r;
  }
  char scratch;
  struct iovec iov = {len ? buf : &scratch, len ? len : 1};
  m->msg_iov = &iov;
  m->msg_iovlen = 1;
  const long r = f->recvmsg(m, len ? flags : flags | MSG_PEEK);
  m->msg_iov = nullptr;
  m->msg_iovlen = 0;
  return r < 0 ? r : (len ? r : 0);
}

}  // namespace

namespace uepoll::detail {

long bind(int fd, const struct sockaddr* addr, socklen_t len) noexcept {
  uepoll::fd::Target f(fd);
  if (f.kernel()) return uepoll::capi::from_kernel(::bind(fd, addr, len));
  if (long r = socket_of(f)) return r;
  if (long r = check_addr(addr, len)) return r;
  return f->bind(addr, len);
}

long listen(int fd, int backlog) noexcept {
  uepoll::fd::Target f(fd);
  if (f.kernel()) return uepoll::capi::from_kernel(::listen(fd, backlog));
  if (long r = socket_of(f)) return r;
  return f->listen(backlog);
}

long accept4(int fd, struct sockaddr* addr, socklen_t* len, int flags) noexcept {
  uepoll::fd::Target f(fd);
  if (f.kernel()) return uepoll::capi::from_kernel(::accept4(fd, addr, len, flags));
  if (flags & ~(SOCK_CLOEXEC | SOCK_NONBLOCK)) return -EINVAL;  // __sys_accept4, before the descriptor
  if (long r = socket_of(f)) return r;
  if (addr && !user_readable(len, sizeof *len)) return -EFAULT;
  return f->accept4(addr, len, flags);
}

long connect(int fd, const struct sockaddr* addr, socklen_t len) noexcept {
  uepoll::fd::Target f(fd);
  if (f.kernel()) return uepoll::capi::from_kernel(::connect(fd, addr, len));
  // __sys_connect: the descriptor, the address copy, then sock_from_file.
  if (f.closed()) return -EBADF;
  if (long r = check_addr(addr, len)) return r;
  if (!f->is_socket()) return -ENOTSOCK;
  return f->connect(addr, len);
}

long sendmsg(int fd, const struct msghdr* msg, int flags) noexcept {
  uepoll::fd::Target f(fd);
  if (f.kernel()) return uepoll::capi::from_kernel(::sendmsg(fd, msg, flags));
  if (long r = socket_of(f)) return r;
  if (long r = check_msghdr(msg)) return r;
  return f->sendmsg(msg, flags);
}

long send(int fd, const void* buf, size_t len, int flags) noexcept {
  uepoll::fd::Target f(fd);
  if (f.kernel()) return uepoll::capi::from_kernel(::send(fd, buf, len, flags));
  if (long r = socket_of(f)) return r;
  struct iovec iov = {const_cast<void*>(buf), len};
  struct msghdr m = {};
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  return f->sendmsg(&m, flags);
}

long recvmsg(int fd, struct msghdr* msg, int flags) noexcept {
  uepoll::fd::Target f(fd);
  if (f.kernel()) return uepoll::capi::from_kernel(::recvmsg(fd, msg, flags));
  if (long r = socket_of(f)) return r;
  if (long r = check_msghdr(msg)) return r;
  return f->recvmsg(msg, flags);
}

long recv(int fd, void* buf, size_t len, int flags) noexcept {
  uepoll::fd::Target f(fd);
  if (f.kernel()) return uepoll::capi::from_kernel(::recv(fd, buf, len, flags));
  if (long r = socket_of(f)) return r;
  struct msghdr m = {};
  return recv_into(f.get(), buf, len, flags, &m);
}

long recvfrom(int fd, void* buf, size_t len, int flags, struct sockaddr* addr, socklen_t* alen) noexcept {
  uepoll::fd::Target f(fd);
  if (f.kernel()) return uepoll::capi::from_kernel(::recvfrom(fd, buf, len, flags, addr, alen));
  if (long r = socket_of(f)) return r;
  const bool want_name = addr && alen && user_readable(alen, sizeof *alen);
  struct msghdr m = {};
  m.msg_name = want_name ? addr : nullptr;
  m.msg_namelen = want_name && static_cast<int>(*alen) > 0 ? *alen : 0;
  const long r = recv_into(f.get(), buf, len, flags, &m);
  if (r >= 0 && addr && alen) {
    if (!want_name) return -EFAULT;  // move_addr_to_user
    *alen = m.msg_namelen;
  }
  return r;
}

long getsockopt(int fd, int level, int optname, void* optval, socklen_t* optlen) noexcept {
  uepoll::fd::Target f(fd);
  if (f.kernel()) return uepoll::capi::from_kernel(::getsockopt(fd, level, optname, optval, optlen));
  if (long r = socket_of(f)) return r;
  return f->getsockopt(level, optname, optval, optlen);
}

long setsockopt(int fd, int level, int optname, const void* optval, socklen_t optlen) noexcept {
  uepoll::fd::Target f(fd);
  if (f.kernel()) return uepoll::capi::from_kernel(::setsockopt(fd, level, optname, optval, optlen));
  if (long r = socket_of(f)) return r;
  return f->setsockopt(level, optname, optval, optlen);
}

long getsockname(int fd, struct sockaddr* addr, socklen_t* len) noexcept {
  uepoll::fd::Target f(fd);
  if (f.kernel()) return uepoll::capi::from_kernel(::getsockname(fd, addr, len));
  if (long r = socket_of(f)) return r;
  return f->getsockname(addr, len);
}

long getpeername(int fd, struct sockaddr* addr, socklen_t* len) noexcept {
  uepoll::fd::Target f(fd);
  if (f.kernel()) return uepoll::capi::from_kernel(::getpeername(fd, addr, len));
  if (long r = socket_of(f)) return r;
  return f->getpeername(addr, len);
}

}  // namespace uepoll::detail

extern "C" {

int uep_bind(int fd, const struct sockaddr* addr, socklen_t len) { return to_c(uepoll::detail::bind(fd, addr, len)); }
int uep_listen(int fd, int backlog) { return to_c(uepoll::detail::listen(fd, backlog)); }
int uep_accept(int fd, struct sockaddr* addr, socklen_t* len) { return to_c(uepoll::detail::accept4(fd, addr, len, 0)); }
int uep_accept4(int fd, struct sockaddr* addr, socklen_t* len, int flags) {
  return to_c(uepoll::detail::accept4(fd, addr, len, flags));
}
int uep_connect(int fd, const struct sockaddr* addr, socklen_t len) {
  return to_c(uepoll::detail::connect(fd, addr, len));
}
ssize_t uep_send(int fd, const void* buf, size_t len, int flags) {
  return to_c_ssize(uepoll::detail::send(fd, buf, len, flags));
}
ssize_t uep_recv(int fd, void* buf, size_t len, int flags) { return to_c_ssize(uepoll::detail::recv(fd, buf, len, flags)); }
ssize_t uep_sendto(int fd, const void* buf, size_t len, int flags, const struct sockaddr* addr, socklen_t alen) {
  if (uepoll::fd::Target::is_kernel(fd)) return ::sendto(fd, buf, len, flags, addr, alen);
  struct iovec iov = {const_cast<void*>(buf), len};
  struct msghdr m = {};
  m.msg_name = const_cast<struct sockaddr*>(addr);
  m.msg_namelen = addr ? alen : 0;
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  return to_c_ssize(uepoll::detail::sendmsg(fd, &m, flags));
}
ssize_t uep_recvfrom(int fd, void* buf, size_t len, int flags, struct sockaddr* addr, socklen_t* alen) {
  if (uepoll::fd::Target::is_kernel(fd)) return ::recvfrom(fd, buf, len, flags, addr, alen);
  return to_c_ssize(uepoll::detail::recvfrom(fd, buf, len, flags, addr, alen));
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
