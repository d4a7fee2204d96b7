// rw_check.h - the checks Linux's vfs_read()/vfs_write() make before
// touching a buffer, shared by read/write (fd_api.cpp) and readv/writev/
// pread/pwrite (fd_surface_api.cpp).  No locks.
#pragma once

#include "core/file.h"

#include <cerrno>
#include <climits>
#include <cstddef>

namespace uepoll::capi {

// Linux MAX_RW_COUNT: reads and writes are clamped to INT_MAX & PAGE_MASK.
inline constexpr size_t kMaxRwCount = static_cast<size_t>(INT_MAX) & ~static_cast<size_t>(4095);

// A file not open for that direction is EBADF (a pipe's other end), a file
// without the operation is EINVAL (an epoll instance; a timerfd has no
// write).  0 when the call may proceed.
inline long rw_mode_check(const core::File* f, bool write) noexcept {
  using core::FileKind;
  switch (f->kind()) {
    case FileKind::kEpoll:
      return -EINVAL;
    case FileKind::kPipeRead:
      return write ? -EBADF : 0;
    case FileKind::kPipeWrite:
      return write ? 0 : -EBADF;
    case FileKind::kTimer:
      return write ? -EINVAL : 0;
    case FileKind::kEventFd:
    case FileKind::kSocket:
    case FileKind::kUser:  // a missing callback is EINVAL (objects/user_file.h)
      return 0;
  }
  return 0;
}

}  // namespace uepoll::capi
