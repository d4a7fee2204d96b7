// user_file.cpp - UserFile (see user_file.h).
// Locks: wq() (11) only, never while user code runs.  Blocking read/write
// sleep in core::block_on_unlocked with no lock held.
#include "objects/user_file.h"

#include "core/block.h"

#include <cerrno>
#include <sys/epoll.h>

namespace uepoll::objects {

namespace {

// What ends a blocked read or write (Linux: the keys a socket's or pipe's
// reader/writer is woken with); key 0 matches every entry.
constexpr uint32_t kReadWake = EPOLLIN | EPOLLRDNORM | EPOLLRDHUP | EPOLLHUP | EPOLLERR;
constexpr uint32_t kWriteWake = EPOLLOUT | EPOLLWRNORM | EPOLLHUP | EPOLLERR;

// A callback of one file running on this thread: its poll (in a refresh)
// or its read/write.  A uep_file_wake of that file from inside the
// callback lands here instead of recursing: the key is remembered, and the
// wake is made once the callback has returned and the file is refreshed
// (one poll instead of two, and never a wake before the state it reports).
struct CallbackFrame {
  const UserFile* file;
  CallbackFrame* up;
  bool pending = false;
  uint32_t key = 0;  // union of the pending keys; 0 with pending = wake all
};
thread_local CallbackFrame* t_frames = nullptr;

class FrameScope {
 public:
  explicit FrameScope(const UserFile* f) noexcept : fr_{f, t_frames} { t_frames = &fr_; }
  ~FrameScope() { t_frames = fr_.up; }
  FrameScope(const FrameScope&) = delete;
  FrameScope& operator=(const FrameScope&) = delete;
  const CallbackFrame& frame() const noexcept { return fr_; }

 private:
  CallbackFrame fr_;
};

}  // namespace

UserFile::UserFile(const uep_file_ops& ops, void* ctx, int status_flags) noexcept
    : core::File(core::FileKind::kUser, status_flags), ops_(ops), ctx_(ctx) {
  set_poll_unpinned();  // poll reads the cached mask only
}

uint32_t UserFile::poll(int) noexcept {
  // relaxed: callers that must see a refresh are ordered after it by the
  // wq lock of the wakeup that followed it (user_file.h).
  return static_cast<uint32_t>(state_.load(std::memory_order_relaxed));
}

void UserFile::refresh() noexcept {
  // acquire: the polls of the refreshes published before (and the state
  // changes made before them) happen before our poll; see user_file.h.
  uint64_t cur = state_.load(std::memory_order_acquire);
  bool pending = false;
  uint32_t key = 0;
  for (;;) {
    uint32_t mask;
    {
      FrameScope scope(this);
      mask = ops_.poll(ctx_);
      if (scope.frame().pending) {
        key = (pending && key == 0) || scope.frame().key == 0 ? 0 : key | scope.frame().key;
        pending = true;
      }
    }
    const uint64_t next = (((cur >> 32) + 1) << 32) | mask;
    // Published only over the value our poll was made after; another
    // refresh published meanwhile (its poll may predate our change): poll
    // again.  acq_rel on success (publish), acquire on failure (as above).
    if (state_.compare_exchange_strong(cur, next, std::memory_order_acq_rel, std::memory_order_acquire)) break;
  }
  if (pending) wake_queue(key);
}

void UserFile::wake_queue(uint32_t key) noexcept {
  wq().wake(key);  // Linux wake_up_poll(): nr_exclusive 1
}

void UserFile::wake(uint32_t key) noexcept {
  for (CallbackFrame* f = t_frames; f; f = f->up) {
    if (f->file != this) continue;
    // From inside one of this file's callbacks: deferred (CallbackFrame).
    // No pin: the callback's caller holds a reference until it makes the
    // wake (the common case of a write callback announcing its data, two
    // atomic read-modify-writes less).
    f->key = (f->pending && f->key == 0) || key == 0 ? 0 : f->key | key;
    f->pending = true;
    return;
  }
  if (!tryget()) return;  // closed: every waiter is gone
  refresh();
  wake_queue(key);
  put();  // may be the last reference: runs the release callback here
}

// Runs the read or write callback, then refreshes (the call may have
// changed readiness) and makes the wakes it asked for.
long UserFile::call_op(bool is_write, void* buf, size_t count) noexcept {
  ssize_t n;
  int err;
  bool pending;
  uint32_t key;
  {
    FrameScope scope(this);
    errno = 0;
    n = is_write ? ops_.write(ctx_, buf, count) : ops_.read(ctx_, buf, count);
    err = errno;  // before the poll below can change it
    pending = scope.frame().pending;
    key = scope.frame().key;
  }
  refresh();
  if (pending) wake_queue(key);
  if (n >= 0) return static_cast<size_t>(n) <= count ? n : -EIO;
  return err > 0 ? -err : -EIO;
}

ssize_t UserFile::read(void* buf, size_t count) noexcept {
  if (!ops_.read) return -EINVAL;  // Linux vfs_read: no ->read
  // Restarted after SA_RESTART handlers, as a pipe read (core/block.h).
  return core::block_on_unlocked(wq(), nonblocking(), kReadWake, nullptr, true,
                                 [&] { return call_op(false, buf, count); });
}

ssize_t UserFile::write(const void* buf, size_t count) noexcept {
  if (!ops_.write) return -EINVAL;  // Linux vfs_write: no ->write
  void* b = const_cast<void*>(buf);  // handed to ops_.write as const again
  return core::block_on_unlocked(wq(), nonblocking(), kWriteWake, nullptr, true,
                                 [&] { return call_op(true, b, count); });
}

void UserFile::on_release() noexcept {
  // Every item watching us is gone (File::put ran the epoll release), no
  // call is in progress and no wake can pin us again: the last callback.
  if (ops_.release && !skip_release_) ops_.release(ctx_);
}

void UserFile::drop_hold() noexcept {
  // acq_rel: the last drop sees every use made under the other hold.
  if (holds_.fetch_sub(1, std::memory_order_acq_rel) == 1) retire_memory();
}

}  // namespace uepoll::objects
