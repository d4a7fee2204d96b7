// ioctl_api.cpp - uep_ioctl, issue 10's stand-in: only the epoll ioctls
// (uepoll::detail::epoll_ioctl in capi/beyond_api.cpp).  Issue 9's uep_ioctl
// (FIONBIO / FIONREAD and the other VFS-level requests) replaces this file
// at merge and calls epoll_ioctl for the requests it does not answer itself.
// Locks: none.
#include <uepoll/uepoll.h>
#include <uepoll/detail/ops.hpp>

#include "capi/edge.h"

extern "C" int uep_ioctl(int fd, unsigned long request, void* arg) {
  return uepoll::capi::to_c(uepoll::detail::epoll_ioctl(fd, request, arg));
}
