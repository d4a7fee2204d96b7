// edge.h - the C API's error edge: internal calls return a negative errno;
// the C functions return -1 and set errno, exactly once, here.
#pragma once

#include <cerrno>
#include <sys/types.h>

namespace uepoll::capi {

inline int to_c(long r) noexcept {
  if (r < 0) {
    errno = static_cast<int>(-r);
    return -1;
  }
  return static_cast<int>(r);
}

// A kernel call's result (-1 + errno) in the engine's form (-errno).
inline long from_kernel(long r) noexcept { return r < 0 ? -errno : r; }

inline ssize_t to_c_ssize(ssize_t r) noexcept {
  if (r < 0) {
    errno = static_cast<int>(-r);
    return -1;
  }
  return r;
}

}  // namespace uepoll::capi
