// objects_detail.cpp - uepoll::detail entry points for the object calls
// (eventfd, pipe2, socketpair, shutdown is in fd_api.cpp, timerfd_*).
// The argument checks live with each object's C entry point in
// objects_api.cpp; these forward to them and return a negative errno.
#include <uepoll/detail/ops.hpp>
#include <uepoll/uepoll.h>

#include <cerrno>

namespace uepoll::detail {

namespace {
long result(long r) noexcept { return r < 0 ? -errno : r; }
}  // namespace

long eventfd(unsigned int initval, int flags) noexcept { return result(::uep_eventfd(initval, flags)); }
long pipe2(int fds[2], int flags) noexcept { return result(::uep_pipe2(fds, flags)); }
long socketpair(int domain, int type, int protocol, int sv[2]) noexcept {
  return result(::uep_socketpair(domain, type, protocol, sv));
}
long timerfd_create(int clockid, int flags) noexcept { return result(::uep_timerfd_create(clockid, flags)); }
long timerfd_settime(int fd, int flags, const struct itimerspec* nv, struct itimerspec* ov) noexcept {
  return result(::uep_timerfd_settime(fd, flags, nv, ov));
}
long timerfd_gettime(int fd, struct itimerspec* curr) noexcept { return result(::uep_timerfd_gettime(fd, curr)); }

}  // namespace uepoll::detail
