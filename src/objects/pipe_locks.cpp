// pipe_locks.cpp - the lock descriptors of a pipe's two ends (pipe.h,
// Pipe::lock_fds_; core/file.h, "locks"): the ends of one kernel pipe, so
// that flock and record locks taken through the read end conflict with
// those of the write end as on Linux, where both ends are one inode.  Each
// end's descriptor is in an OwnSlot (core/own_slot.h).
// Locks: none (system calls and atomics).
#include "objects/pipe.h"

#include "core/alloc.h"
#include "core/own_fds.h"

#include <cerrno>
#include <fcntl.h>
#include <unistd.h>

namespace uepoll::objects {

struct Pipe::LockFds {
  core::OwnSlot end[2];
  std::atomic<bool> kept{false};  // keep_lock_fds pinned both (once)
};

core::OwnSlot* Pipe::lock_slot(int side, long* err) noexcept {
  LockFds* l = lock_fds_.load(std::memory_order_acquire);
  if (!l) {
    int k[2];
    if (::pipe2(k, O_CLOEXEC) < 0) {
      *err = -errno;
      return nullptr;
    }
    LockFds* mine = core::create<LockFds>();
    if (!mine) {
      ::close(k[0]);
      ::close(k[1]);
      *err = -ENOMEM;
      return nullptr;
    }
    mine->end[0].open(core::park_high(k[0]));
    mine->end[1].open(core::park_high(k[1]));
    if (lock_fds_.compare_exchange_strong(l, mine, std::memory_order_acq_rel, std::memory_order_acquire)) {
      l = mine;
    } else {  // the other end made one first: l is it
      mine->end[0].close();
      mine->end[1].close();
      core::destroy(mine);
    }
  }
  // The calling end is open, so its side was not closed.
  return &l->end[side];
}

core::OwnSlot* Pipe::made_lock_slot(int side) const noexcept {
  LockFds* l = lock_fds_.load(std::memory_order_acquire);
  return l && !l->end[side].empty() ? &l->end[side] : nullptr;
}

void Pipe::keep_lock_fds() noexcept {
  LockFds* l = lock_fds_.load(std::memory_order_acquire);
  if (!l || l->kept.exchange(true, std::memory_order_relaxed)) return;
  // Until the sides close: a pin of a side closed meanwhile pins nothing.
  l->end[0].pin();
  l->end[1].pin();
}

void Pipe::release_lock_fd(int side) noexcept {
  if (LockFds* l = lock_fds_.load(std::memory_order_acquire)) l->end[side].close();
}

void Pipe::free_lock_fds() noexcept {
  LockFds* l = lock_fds_.exchange(nullptr, std::memory_order_acq_rel);
  if (!l) return;
  l->end[0].close();
  l->end[1].close();
  core::destroy(l);
}

}  // namespace uepoll::objects
