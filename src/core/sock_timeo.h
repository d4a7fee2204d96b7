// sock_timeo.h - SO_RCVTIMEO / SO_SNDTIMEO as Linux's net/core/sock.c keeps
// them (sock_set_timeout, sock_get_timeout), for the uepoll sockets that
// sleep in their own calls: the AF_UNIX pairs (objects/unix_sockopt.h) and
// provider sockets (objects/user_file_table.h).
//
// A timeout is kept as nanoseconds: 0 none (Linux MAX_SCHEDULE_TIMEOUT, set
// by {0, 0}), -1 an immediate one (a negative tv_sec: Linux stores 0
// jiffies, so a blocking call gives EAGAIN at once), else the interval.
// Both the _OLD (struct timeval) and _NEW (struct __kernel_sock_timeval)
// names take two 64-bit fields on the 64-bit targets uepoll builds for.
//
// No locks; the values are single atomics read relaxed (a value, nothing
// published with it).
#pragma once

#include "core/user_memory.h"
#include "core/waiter.h"

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <sys/socket.h>

namespace uepoll::core {

// True for the four names of the two timeouts; *rcv says which.
inline bool is_sock_timeo(int name, bool* rcv) noexcept {
  switch (name) {
    case SO_RCVTIMEO_OLD:
#ifdef SO_RCVTIMEO_NEW
    case SO_RCVTIMEO_NEW:
#endif
      *rcv = true;
      return true;
    case SO_SNDTIMEO_OLD:
#ifdef SO_SNDTIMEO_NEW
    case SO_SNDTIMEO_NEW:
#endif
      *rcv = false;
      return true;
    default:
      return false;
  }
}

struct SockTimeval {
  int64_t sec;
  int64_t usec;
};
static_assert(sizeof(struct timeval) == sizeof(SockTimeval), "a 64-bit struct timeval");

// sock_set_timeout: -EINVAL for less than a timeval's room, -EFAULT,
// -EDOM for tv_usec outside [0, 1e6); else 0 with the value in *ns.
inline long sock_timeo_parse(const void* val, socklen_t len, int64_t* ns) noexcept {
  SockTimeval tv;
  if (len < sizeof tv) return -EINVAL;
  if (!user_readable(val, sizeof tv)) return -EFAULT;
  std::memcpy(&tv, val, sizeof tv);
  if (tv.usec < 0 || tv.usec >= 1000000) return -EDOM;
  if (tv.sec < 0)
    *ns = -1;
  else if ((tv.sec == 0 && tv.usec == 0) || tv.sec >= INT64_MAX / 1000000000 - 1)
    *ns = 0;  // none (Linux: MAX_SCHEDULE_TIMEOUT, also for an interval past it)
  else
    *ns = tv.sec * 1000000000 + tv.usec * 1000;
  return 0;
}

// sock_get_timeout: {0, 0} for none or an immediate timeout, else the
// interval; min(len, sizeof(timeval)) bytes copied and the length put back.
inline long sock_timeo_put(int64_t ns, void* val, socklen_t* len) noexcept {
  if (!user_readable(len, sizeof *len)) return -EFAULT;
  if (static_cast<int>(*len) < 0) return -EINVAL;
  SockTimeval tv = {0, 0};
  if (ns > 0) tv = {ns / 1000000000, ns % 1000000000 / 1000};
  const socklen_t n = *len < sizeof tv ? *len : static_cast<socklen_t>(sizeof tv);
  if (n && !user_readable(val, n)) return -EFAULT;
  std::memcpy(val, &tv, n);
  *len = n;
  return 0;
}

// The absolute deadline (core::deadline_after) of a call that starts now
// under timeout ns, in *out; nullptr for none.
inline const timespec* sock_timeo_deadline(int64_t ns, timespec* out) noexcept {
  if (ns == 0) return nullptr;
  timespec rel = {0, 0};
  if (ns > 0) rel = {static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
  *out = deadline_after(rel);
  return out;
}

}  // namespace uepoll::core
