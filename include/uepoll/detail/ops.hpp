// detail/ops.hpp - the engine's entry points, shared by the C API and the
// C++ API: each function has the contract of the Linux call it names but
// returns the result, or a negative errno (-EBADF), and never touches errno.
// The C API (uepoll.h) converts at its edge to -1/errno; the C++ API
// (uepoll.hpp) to std::error_code.  Neither is built on the other.
//
// Kernel descriptors are forwarded to the kernel as in the C API.
// Thread-safe; see uepoll.h for blocking and allocation notes.
#pragma once

#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/types.h>
#include <time.h>
#include <stdint.h>

struct uep_ctl_cmd;

#include <uepoll/export.h>

struct uep_file;
struct uep_file_ops;

// Exported from a shared libuepoll: uepoll.hpp calls these from the user's code.
UEP_API_BEGIN
namespace uepoll::detail {

long epoll_create1(int flags) noexcept;
long epoll_ctl(int epfd, int op, int fd, struct epoll_event* event) noexcept;
// deadline semantics as epoll_pwait2: timeout nullptr = forever.
long epoll_pwait2(int epfd, struct epoll_event* events, int maxevents, const struct timespec* timeout,
                  const sigset_t* sigmask) noexcept;
// uep_epoll_kernel_fd.
long epoll_kernel_fd(int epfd) noexcept;
long epoll_pwait(int epfd, struct epoll_event* events, int maxevents, int timeout_ms,
                 const sigset_t* sigmask) noexcept;

long eventfd(unsigned int initval, int flags) noexcept;
long pipe2(int fds[2], int flags) noexcept;
long socketpair(int domain, int type, int protocol, int sv[2]) noexcept;
long shutdown(int fd, int how) noexcept;
long timerfd_create(int clockid, int flags) noexcept;
long timerfd_settime(int fd, int flags, const struct itimerspec* new_value, struct itimerspec* old_value) noexcept;
long timerfd_gettime(int fd, struct itimerspec* curr) noexcept;

long read(int fd, void* buf, size_t count) noexcept;
long write(int fd, const void* buf, size_t count) noexcept;
long close(int fd) noexcept;
long dup(int fd) noexcept;
long poll(struct pollfd* fds, nfds_t nfds, int timeout_ms) noexcept;
long ppoll(struct pollfd* fds, nfds_t nfds, const struct timespec* timeout, const sigset_t* sigmask) noexcept;

// The descriptor surface (src/capi/fd_surface_api.cpp, socket_api.cpp).
long fcntl(int fd, int cmd, unsigned long arg) noexcept;
long flock(int fd, int operation) noexcept;
long ioctl(int fd, unsigned long request, void* arg) noexcept;
long dup2(int oldfd, int newfd) noexcept;
long dup3(int oldfd, int newfd, int flags) noexcept;
long readv(int fd, const struct iovec* iov, int iovcnt) noexcept;
long writev(int fd, const struct iovec* iov, int iovcnt) noexcept;
long pread(int fd, void* buf, size_t count, off_t offset) noexcept;
long pwrite(int fd, const void* buf, size_t count, off_t offset) noexcept;
off_t lseek(int fd, off_t offset, int whence) noexcept;
long fstat(int fd, struct stat* st) noexcept;
long sendmsg(int fd, const struct msghdr* msg, int flags) noexcept;
long recvmsg(int fd, struct msghdr* msg, int flags) noexcept;
long send(int fd, const void* buf, size_t len, int flags) noexcept;
long recv(int fd, void* buf, size_t len, int flags) noexcept;
long getsockopt(int fd, int level, int optname, void* optval, socklen_t* optlen) noexcept;
long setsockopt(int fd, int level, int optname, const void* optval, socklen_t optlen) noexcept;
long getsockname(int fd, struct sockaddr* addr, socklen_t* len) noexcept;
long getpeername(int fd, struct sockaddr* addr, socklen_t* len) noexcept;
long bind(int fd, const struct sockaddr* addr, socklen_t len) noexcept;
long listen(int fd, int backlog) noexcept;
long accept4(int fd, struct sockaddr* addr, socklen_t* len, int flags) noexcept;
long connect(int fd, const struct sockaddr* addr, socklen_t len) noexcept;
long recvfrom(int fd, void* buf, size_t len, int flags, struct sockaddr* addr, socklen_t* alen) noexcept;

// User-defined files (uepoll.h: uep_file_open, uep_file_wake, uep_file_unref).
long file_open(const uep_file_ops* ops, void* ctx, int flags, uep_file** handle) noexcept;
void file_wake(uep_file* handle, uint32_t events) noexcept;
void file_unref(uep_file* handle) noexcept;

// Beyond Linux (issue 10; contracts in uepoll.h).
long epoll_ioctl(int fd, unsigned long req, void* arg) noexcept;  // EPIOC*; file-specific ioctl part
long epoll_ctl_batch(int epfd, struct uep_ctl_cmd* cmds, int ncmds) noexcept;
long fdinfo(int fd, char* buf, unsigned long len) noexcept;
struct EpollRegistration {
  int fd;
  uint32_t events;  // as fdinfo shows them (EPOLLERR|EPOLLHUP included)
  uint64_t data;
  uint64_t target_id;  // the target's uepoll file id (fdinfo "ino:")
};
// Fills out[0..min(n, count)) sorted by (target_id, fd); returns the count.
long epoll_registrations(int epfd, EpollRegistration* out, size_t n) noexcept;

}  // namespace uepoll::detail
UEP_API_END
