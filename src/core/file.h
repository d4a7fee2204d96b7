// file.h - File: a reference-counted open file description, the unit that
// descriptors point to, that epoll watches, and that dup() shares.
//
// Lifetime: `refs_` counts descriptor-table slots plus temporary pins taken
// by calls in progress (fd lookup, a harvest polling the file).  When it
// drops to zero, put() runs, in Linux's __fput order: (1) epoll release --
// every registration of this file in every instance is removed, silently
// (epoll/release.h); (2) on_release() -- the object's own teardown, e.g. a
// pipe end telling its peer it is gone; (3) the memory is retired through
// core/reclaim.h, because a lock-free fd lookup may still be looking at it.
//
// Locks: none of its own.  wq_ (level 6) is both the readiness wait queue
// and the object's state lock.  Objects call wq_.wake_locked(key) with the
// EPOLL* bits that changed, exactly where Linux calls wake_up_*_poll().
#pragma once

#include "core/reclaim.h"
#include "core/waitqueue.h"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <sys/types.h>

namespace uepoll::core {

// kUser: a user-defined file (uep_file_open, objects/user_file.h).
enum class FileKind : uint8_t { kEpoll, kEventFd, kPipeRead, kPipeWrite, kSocket, kTimer, kUser };

// Cache-line aligned: files of different threads never share a line (the
// reference count and the wait-queue lock are written on every call).
class alignas(64) File {
 public:
  explicit File(FileKind kind, int status_flags) noexcept;
  virtual ~File() = default;
  File(const File&) = delete;
  File& operator=(const File&) = delete;

  FileKind kind() const noexcept { return kind_; }
  bool is_epoll() const noexcept { return kind_ == FileKind::kEpoll; }
  uint64_t id() const noexcept { return id_; }
  WaitQueue& wq() noexcept UEP_RETURN_CAPABILITY(wq_) { return wq_; }

  // O_NONBLOCK (and other F_GETFL bits) of the open description.
  int status_flags() const noexcept { return status_flags_.load(std::memory_order_relaxed); }
  // O_NONBLOCK, or a send/recv with MSG_DONTWAIT in progress on this thread.
  bool nonblocking() const noexcept;
  // F_SETFL / FIONBIO (the caller computes Linux's new flag word).
  void set_status_flags(int flags) noexcept;
  // F_SETOWN / F_GETOWN (Linux's f_owner): recorded and reported only, no
  // SIGIO/SIGURG is ever sent.  0: none.
  int owner() const noexcept { return owner_.load(std::memory_order_relaxed); }
  void set_owner(int pid) noexcept { owner_.store(pid, std::memory_order_relaxed); }

  // True for kinds whose poll() reads only state that stays valid until the
  // memory itself is freed (an epoll instance, an eventfd): inside a
  // reclaim::ReadGuard they can be polled without a reference, even while
  // being released.  Pipes, sockets and timers free or close shared state
  // in on_release() and must be pinned with tryget() first.  A user file's
  // poll() reads only its cached mask, never user code (user_file.h), and
  // must not be pinned: a harvest's unpin could run its release callback
  // under the scan mutex.
  bool poll_unpinned_ok() const noexcept {
    return kind_ == FileKind::kEpoll || kind_ == FileKind::kEventFd || kind_ == FileKind::kUser;
  }

  // ---- references ---------------------------------------------------
  void get() noexcept { refs_.fetch_add(1, std::memory_order_relaxed); }
  // Takes a reference unless the count already reached zero (the file is
  // being released).  Callers that found the pointer without a reference
  // must be inside a reclaim::ReadGuard or hold a lock that keeps the
  // release from completing.
  bool tryget() noexcept;
  // Drops a reference; the last one releases the file (see above).  Must
  // not be called with any uepoll lock held.
  void put() noexcept;
  long refcount() const noexcept { return refs_.load(std::memory_order_relaxed); }
  // Drops a reference unless it is the last one; returns false (and drops
  // nothing) in that case, so that a caller holding locks can defer the
  // release until it has dropped them.
  bool put_unless_last() noexcept;

  // ---- operations (negative errno on failure) ------------------------
  // Current readiness (EPOLL* bits).  May take this file's wq lock; must be
  // called without it.  `depth` is the nesting depth of the caller
  // (instances use it to bound recursion).
  virtual uint32_t poll(int depth) noexcept = 0;
  virtual ssize_t read(void* buf, size_t count) noexcept;          // -EINVAL
  virtual ssize_t write(const void* buf, size_t count) noexcept;   // -EINVAL
  virtual int shutdown(int how) noexcept;                          // -ENOTSOCK

  // Number of epoll items currently queued on wq_.  Written only under
  // wq_'s lock (add_watcher_locked / remove_watcher_locked: a plain
  // load+store, no locked instruction); read without it by the release
  // fast path (after the last put's acq_rel) and by Instance::add (after an
  // acquiring read of watch_hold, see there).
  std::atomic<int> watchers{0};
  void add_watcher_locked() noexcept {
    watchers.store(watchers.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
  void remove_watcher_locked() noexcept {
    watchers.store(watchers.load(std::memory_order_relaxed) - 1, std::memory_order_relaxed);
  }

 private:
  std::atomic<int> owner_{0};  // next to watchers: fills the padding before wq_

 protected:
  // Object teardown after the last reference; no uepoll lock held.
  virtual void on_release() noexcept {}
  // Called last by put(): frees the memory after a grace period.  An
  // instance overrides it to wait for the items that still point at it.
  virtual void dispose() noexcept { retire_memory(); }
  // Hands the memory to core/reclaim.h (freed after a grace period).
  void retire_memory() noexcept;

 private:
  static void free_retired(reclaim::Retired* r) noexcept;

  WaitQueue wq_;
  std::atomic<long> refs_{1};
  std::atomic<int> status_flags_;
  const FileKind kind_;
  const uint64_t id_;
  reclaim::Retired retired_;
};

}  // namespace uepoll::core
