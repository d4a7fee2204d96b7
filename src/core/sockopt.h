// sockopt.h - copying an int socket option out the way Linux's
// sock_getsockopt does (len = min(len, sizeof(int)), EFAULT, EINVAL for a
// negative length).  Shared by the objects that answer getsockopt.
// No locks.
#pragma once

#include "core/user_memory.h"

#include <cerrno>
#include <cstring>
#include <sys/socket.h>

namespace uepoll::core {

inline long put_int_opt(int value, void* optval, socklen_t* optlen) noexcept {
  if (!user_readable(optlen, sizeof *optlen)) return -EFAULT;
  if (static_cast<int>(*optlen) < 0) return -EINVAL;
  socklen_t n = *optlen < sizeof(int) ? *optlen : sizeof(int);
  if (n && !user_readable(optval, n)) return -EFAULT;
  std::memcpy(optval, &value, n);
  *optlen = n;
  return 0;
}

}  // namespace uepoll::core
