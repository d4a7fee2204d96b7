// eventfd.h - EventFd: the uepoll eventfd object (Linux fs/eventfd.c).
//
// Owns: a 64-bit counter and the EFD_SEMAPHORE mode.  The counter is a
// lock-free atomic changed by compare-and-swap (Linux guards ctx->count
// with ctx->wqh.lock): a signal handler may write it while its own thread
// holds any uepoll lock (async-signal-safety, core/deferred.h).  A change
// is followed by the wakeup, which takes the queue lock after the CAS; a
// sleeper checks the counter and queues itself under that lock, and a poll
// made after its wait entry was queued reads it after (Linux eventfd_poll's
// READ_ONCE), so either the new count is seen or the wakeup comes.  Two
// writers' wakeups may come in either order; each is one EPOLLIN edge.
//
// In a handler that interrupted its own thread inside uepoll, the wakeup
// is queued until that thread releases its last lock, and a call that
// would sleep fails with -EAGAIN instead (a handler cannot wait for its own
// thread); -EAGAIN too when the per-thread queue is full.
//
// Wakeups mirror Linux exactly (they are observable through EPOLLET):
//   * every successful write wakes with EPOLLIN, even when the counter was
//     already nonzero or the value written was 0 (eventfd_write);
//   * every successful read wakes with EPOLLOUT (eventfd_read);
//   * release wakes with EPOLLHUP (eventfd_release; nobody can be listening
//     by then in uepoll, kept for fidelity).
// Locks taken: only wq() (11), to wake.  Blocking read/write sleep through
// core::block_on, never holding a lock.
#pragma once

#include "core/file.h"

#include <atomic>
#include <cstdint>

namespace uepoll::objects {

class EventFd final : public core::File {
 public:
  // status_flags: O_RDWR | (flags & O_NONBLOCK), as anon_inode_getfd sets.
  EventFd(uint64_t initval, bool semaphore, int status_flags) noexcept;

  uint32_t poll(int depth) noexcept override;
  // count < 8: -EINVAL.  Counter 0: -EAGAIN (O_NONBLOCK) or sleeps until a
  // write; -EINTR if a signal handler runs.  buf == nullptr: -EFAULT after
  // the counter was consumed (Linux: put_user fails after the read).
  ssize_t read(void* buf, size_t count) noexcept override;
  // count != 8: -EINVAL; buf == nullptr: -EFAULT; value ULLONG_MAX: -EINVAL;
  // would reach ULLONG_MAX: -EAGAIN or sleeps until a read.
  ssize_t write(const void* buf, size_t count) noexcept override;

  // eventfd-count (a relaxed snapshot, as Linux prints it), -id, -semaphore.
  void show_fdinfo(std::string& out) noexcept override;
  uint64_t count_snapshot() const noexcept {
    const uint64_t c = count_.load(std::memory_order_relaxed);
    return c == kMoved ? 0 : c;
  }
  bool semaphore() const noexcept { return semaphore_; }
  // The count, taken for the kernel eventfd this one becomes (the preload
  // hands it to a kernel interface): from here every read and write of it
  // is made again by its caller on what the number shows (core/handover.h),
  // or fails with EBADF where it cannot be; poll sees nothing.  -EBADF if
  // it was taken before.
  long take_for_move(uint64_t* count) noexcept;

 protected:
  void on_release() noexcept override;

 private:
  // -EAGAIN or sizeof(uint64_t); lock-free.
  long take(uint64_t* ucnt) noexcept;
  long add(uint64_t v) noexcept;
  // A read or write of a moved eventfd: -EINTR with uep__moved set for a
  // caller that makes it again, else -EBADF.
  static long moved() noexcept;
  // Wakes wq() with key now, or queues the wakeup (in a handler).
  bool wake_after(uint32_t key, bool in_handler) noexcept;

  // Lock-free (compare-and-swap); poll() loads it relaxed.  kMoved once
  // taken for a move: a count never reaches it (writes stop below it).
  static constexpr uint64_t kMoved = ~uint64_t{0};
  std::atomic<uint64_t> count_;
  const bool semaphore_;  // immutable
};

// Creates an eventfd and installs it.  flags must already be validated
// (EFD_SEMAPHORE | EFD_NONBLOCK | EFD_CLOEXEC).  Returns the descriptor,
// -ENOMEM, or -EMFILE.  Thread-safe; allocates one File.
int make_eventfd(unsigned int initval, int flags) noexcept;

}  // namespace uepoll::objects
