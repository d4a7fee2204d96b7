// rw_check.h - the length clamp Linux's vfs_read()/vfs_write() apply,
// shared by read/write (fd_api.cpp), readv/writev (fd_surface_api.cpp) and
// vmsplice (splice_api.cpp), and import_iovec's checks; the mode checks
// are the file's (core::File::rw_check).  No locks.
#pragma once

#include "core/user_memory.h"

#include <cerrno>
#include <climits>
#include <cstddef>
#include <sys/types.h>
#include <sys/uio.h>

namespace uepoll::capi {

// Linux MAX_RW_COUNT: reads and writes are clamped to INT_MAX & PAGE_MASK.
inline constexpr size_t kMaxRwCount = static_cast<size_t>(INT_MAX) & ~static_cast<size_t>(4095);

// Linux import_iovec: more than UIO_MAXIOV (1024) segments or a negative
// length is EINVAL, an unreadable array EFAULT; the total is clamped to
// MAX_RW_COUNT.
inline long check_iov(const struct iovec* iov, long iovcnt, size_t* total) noexcept {
  if (iovcnt < 0 || iovcnt > 1024) return -EINVAL;
  if (iovcnt && !core::user_readable(iov, sizeof *iov * static_cast<size_t>(iovcnt))) return -EFAULT;
  size_t sum = 0;
  for (long i = 0; i < iovcnt; ++i) {
    if (static_cast<ssize_t>(iov[i].iov_len) < 0) return -EINVAL;
    sum += iov[i].iov_len;
    if (sum > kMaxRwCount) sum = kMaxRwCount;
  }
  *total = sum;
  return 0;
}

}  // namespace uepoll::capi
