// pipe_locks.cpp - the lock descriptors of a pipe's two ends (pipe.h,
// Pipe::lock_fds_; core/file.h, "locks"): the ends of one kernel pipe, so
// that flock and record locks taken through the read end conflict with
// those of the write end as on Linux, where both ends are one inode.
// Locks: none (system calls and one atomic word).
#include "objects/pipe.h"

#include "core/own_fds.h"

#include <cerrno>
#include <fcntl.h>
#include <unistd.h>

namespace uepoll::objects {

namespace {

int half(uint64_t v, int side) noexcept { return static_cast<int>((v >> (side ? 32 : 0)) & 0xffffffffu) - 1; }

}  // namespace

long Pipe::lock_fd(int side) noexcept {
  uint64_t v = lock_fds_.load(std::memory_order_acquire);
  if (!v) {
    int k[2];
    if (::pipe2(k, O_CLOEXEC) < 0) return -errno;
    k[0] = core::park_high(k[0]);
    k[1] = core::park_high(k[1]);
    const uint64_t mine = static_cast<uint64_t>(k[0] + 1) | static_cast<uint64_t>(k[1] + 1) << 32;
    if (lock_fds_.compare_exchange_strong(v, mine, std::memory_order_acq_rel, std::memory_order_acquire)) {
      v = mine;
    } else {  // the other end made one first: v is it
      core::close_own(k[0]);
      core::close_own(k[1]);
    }
  }
  // The calling end is open, so its half was not cleared.
  return half(v, side);
}

int Pipe::made_lock_fd(int side) const noexcept { return half(lock_fds_.load(std::memory_order_acquire), side); }

void Pipe::release_lock_fd(int side) noexcept {
  const uint64_t mask = 0xffffffffull << (side ? 32 : 0);
  const uint64_t v = lock_fds_.fetch_and(~mask, std::memory_order_acq_rel);
  const int fd = half(v, side);
  if (fd >= 0) core::close_own(fd);
}

}  // namespace uepoll::objects
