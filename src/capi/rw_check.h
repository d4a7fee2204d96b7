// rw_check.h - the length clamp Linux's vfs_read()/vfs_write() apply,
// shared by read/write (fd_api.cpp) and readv/writev (fd_surface_api.cpp);
// the mode checks are the file's (core::File::rw_check).  No locks.
#pragma once

#include <climits>
#include <cstddef>

namespace uepoll::capi {

// Linux MAX_RW_COUNT: reads and writes are clamped to INT_MAX & PAGE_MASK.
inline constexpr size_t kMaxRwCount = static_cast<size_t>(INT_MAX) & ~static_cast<size_t>(4095);

}  // namespace uepoll::capi
