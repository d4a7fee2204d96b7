// pipe_write.cpp - the write end of a pipe, PipeWriter (see pipe.h): poll,
// write (from a thread and from a signal handler), release.  Mirrors Linux
// fs/pipe.c (pipe_write, pipe_poll, pipe_release).  Locks: Pipe::mu_ (leaf,
// 14), the write end's wq() (11) through core::block_on and for wakeups;
// never both wq locks at once, never a wake, an allocation or a copy of
// user memory with mu_ held.
#include "objects/pipe.h"

#include "core/alloc.h"
#include "core/block.h"
#include "core/deferred.h"
#include "core/lock_state.h"
#include "core/reclaim.h"
#include "objects/user_ptr.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <signal.h>
#include <sys/epoll.h>

namespace uepoll::objects {

// ---- write end ---------------------------------------------------------------

PipeWriter::PipeWriter(Pipe* p, int status_flags) noexcept
    : core::File(core::FileKind::kPipeWrite, status_flags), pipe_(p) {}

uint32_t PipeWriter::poll(int) noexcept {
  Pipe& p = *pipe_;
  core::SpinGuard g(p.mu_);
  p.poll_usage_ = true;
  uint32_t mask = 0;
  if (!p.full_locked()) mask |= EPOLLOUT | EPOLLWRNORM;
  // "Most Unices do not set EPOLLERR for FIFOs but on Linux they behave
  // exactly like pipes for poll()."
  if (!p.readers_) mask |= EPOLLERR;
  return mask;
}

// One write call: where it stands (Linux pipe_write's locals).
struct PipeWriter::Call {
  const char* src;
  size_t left;
  long ret = 0;
  bool packet;
  bool nonblock;
  bool sigpipe = false;
  bool was_empty = false;
  bool wake_next_writer = false;
  char* spare = nullptr;  // a page of ours; holds src[0..staged) when staged
  size_t staged = 0;
  size_t bounce_len = 0;  // src[0..bounce_len) is in bounce (until src moves)
  char bounce[kPipePage];

  void advance(size_t n) noexcept {
    ret += static_cast<long>(n);
    src += n;
    left -= n;
    bounce_len = 0;
  }
};

ssize_t PipeWriter::write(const void* buf, size_t count) noexcept {
  if (count == 0) return 0;  // "Null write succeeds."
  if (core::thread_in_uepoll()) return write_from_handler(buf, count);
  return write_impl(buf, count, nonblocking());
}

bool Pipe::merge_locked(const char* data, size_t n) noexcept {
  mu_.assert_held();
  if (empty_locked()) return false;
  Buf& b = slot_locked(head_ - 1);
  const size_t offset = b.offset + b.len;
  if (!(b.flags & kCanMerge) || offset + n > kPipePage) return false;
  std::memcpy(b.page + offset, data, n);
  b.len += static_cast<uint32_t>(n);
  return true;
}

void Pipe::push_page_locked(char* page, size_t n, bool packet) noexcept {
  mu_.assert_held();
  Buf& b = slot_locked(head_);
  ++head_;
  b.page = page;
  b.offset = 0;
  b.len = static_cast<uint32_t>(n);
  b.flags = packet ? kPacket : kCanMerge;
}

bool PipeWriter::fill_locked(Call& c) noexcept {
  pipe_->mu_.assert_held();
  while (!pipe_->full_locked()) {
    const size_t n = c.left < kPipePage ? c.left : kPipePage;
    if (!c.spare) c.spare = pipe_->take_tmp_page_locked();
    if (c.spare && c.staged != n && c.bounce_len == n) {
      std::memcpy(c.spare, c.bounce, n);  // our own memory: cannot fault
      c.staged = n;
    }
    if (c.spare && c.staged == n) {
      pipe_->push_page_locked(c.spare, n, c.packet);
      c.spare = nullptr;
      c.staged = 0;
      c.advance(n);
      if (!c.left) return true;
      continue;
    }
    // Stage the next page with the lock dropped: the allocation and the
    // copy from user memory (lock_order.h: neither under a SpinLock).
    pipe_->mu_.unlock();
    if (!c.spare) c.spare = static_cast<char*>(core::raw_alloc(kPipePage));
    if (c.spare) {
      std::memcpy(c.spare, c.src, n);
      c.staged = n;
    }
    pipe_->mu_.lock();
    // A hand-over that began meanwhile: this page is not written here.
    if (core::leave_if_handed_over(wq().handed_over())) {
      if (!c.ret) c.ret = -EINTR;
      return true;
    }
    // While the lock was dropped, readers may have emptied the pipe and
    // gone to sleep: this write must then wake them as a write into an
    // empty pipe does (Linux keeps pipe->mutex across its allocation, so
    // its was_empty cannot go stale).
    if (pipe_->empty_locked()) c.was_empty = true;
    if (!c.spare) {
      if (!c.ret) c.ret = -ENOMEM;
      return true;
    }
    if (!pipe_->readers_) return false;  // the caller reports EPIPE
  }
  return false;
}

bool PipeWriter::wait_writable_locked(Call& c) noexcept {
  pipe_->mu_.assert_held();
  // Wait for a free slot (Linux: wake readers if the pipe was empty, then
  // wait_event_interruptible_exclusive(pipe->wr_wait, pipe_writable())).
  pipe_->mu_.unlock();
  if (c.was_empty) pipe_->wake_reader(EPOLLIN | EPOLLRDNORM);
  pipe_->fasync_reader(POLL_IN);
  const long w = core::block_on(wq(), false, EPOLLOUT | EPOLLWRNORM, [&]() -> long {
    Pipe& p = *pipe_;
    core::SpinGuard g(p.mu_);
    return !p.full_locked() || !p.readers_ ? 0 : -EAGAIN;
  }, c.ret == 0);  // after a partial write, any handler ends it (Linux pipe_write)
  pipe_->mu_.lock();
  if (w < 0) {  // a signal handler ran
    if (!c.ret) c.ret = w;
    return false;
  }
  c.was_empty = pipe_->empty_locked();
  c.wake_next_writer = true;
  return true;
}

ssize_t PipeWriter::write_impl(const void* buf, size_t count, bool nonblock) noexcept {
  Call c;
  c.src = static_cast<const char*>(buf);
  c.left = count;
  c.packet = (status_flags() & O_DIRECT) != 0;
  c.nonblock = nonblock;
  const bool fault = faulting_ptr(c.src);  // Linux copies and fails with EFAULT; uepoll fails early
  // The sub-page remainder a merge would take (Linux: "That naturally merges
  // small writes..."), staged in our own memory before taking the lock.
  const size_t chars = c.left & (kPipePage - 1);
  if (!fault && chars) {
    std::memcpy(c.bounce, c.src, chars);
    c.bounce_len = chars;
  }

  pipe_->mu_.lock();
  if (core::leave_if_handed_over(wq().handed_over())) {
    pipe_->mu_.unlock();
    return -EINTR;  // made again on the kernel pipe (core/handover.h)
  }
  if (!pipe_->readers_) {
    c.sigpipe = true;
    c.ret = -EPIPE;
  } else if (fault) {
    c.ret = -EFAULT;
  } else {
    c.was_empty = pipe_->empty_locked();
    if (chars && pipe_->merge_locked(c.bounce, chars)) c.advance(chars);
    while (c.left) {
      if (!pipe_->readers_) {
        c.sigpipe = true;
        if (!c.ret) c.ret = -EPIPE;
        break;
      }
      if (fill_locked(c)) break;
      if (!pipe_->readers_) continue;  // reported above
      if (c.nonblock) {
        if (!c.ret) c.ret = -EAGAIN;
        break;
      }
      if (!wait_writable_locked(c)) break;
    }
  }
  if (pipe_->full_locked()) c.wake_next_writer = false;
  const bool wake_readers = c.ret != -EPIPE && c.ret != -EFAULT && (c.was_empty || pipe_->poll_usage_);
  if (c.spare && !pipe_->tmp_page_) {
    pipe_->tmp_page_ = c.spare;
    c.spare = nullptr;
  }
  pipe_->mu_.unlock();
  if (c.spare) core::raw_free(c.spare);
  // Linux: "Epoll nonsensically wants a wakeup whether the pipe was already
  // empty or not." (every write, even one that returns EAGAIN).
  if (wake_readers) pipe_->wake_reader(EPOLLIN | EPOLLRDNORM);
  if (c.wake_next_writer) {
    wq().wake(EPOLLOUT | EPOLLWRNORM);
  }
  pipe_->fasync_reader(POLL_IN);  // Linux pipe_write: after every write, whatever its result
  if (c.sigpipe) raise_sigpipe();
  return c.ret;
}

namespace {
// The handler's copy of its data (a signal stack may be too small for a
// page); handlers that call uepoll do not nest (core/deferred.h).
thread_local char tls_handler_bounce[kPipePage];
}  // namespace

ssize_t PipeWriter::write_from_handler(const void* buf, size_t count) noexcept {
  Pipe& p = *pipe_;
  if (count > kPipePage) return -EAGAIN;  // PIPE_BUF: larger writes cannot be atomic here
  if (faulting_ptr(buf)) return -EFAULT;
  if (p.mu_.held_by_me()) {
    // The interrupted code is inside this pipe: queue the whole write.
    get();  // the entry's reference
    if (!core::defer_to_release(&PipeWriter::deferred_write, this, 0, buf, static_cast<uint32_t>(count))) {
      put();  // not the last: the caller's descriptor lookup holds one
      return -EAGAIN;
    }
    return static_cast<ssize_t>(count);
  }
  // Our thread does not hold mu_; whoever does takes nothing under it and
  // releases it.  The wakeup is queued: the thread may hold the reader's
  // queue lock.
  core::File* rd = nullptr;
  {
    core::reclaim::ReadGuard g;
    rd = p.rd_.load(std::memory_order_acquire);
    if (rd && !rd->tryget()) rd = nullptr;
  }
  if (rd && !core::defer_has_room(&core::deferred_wake, rd, EPOLLIN | EPOLLRDNORM, 0)) {
    core::put_in_handler(rd);
    return -EAGAIN;
  }
  std::memcpy(tls_handler_bounce, buf, count);
  long ret;
  bool wake = false;
  {
    core::SignalFrame frame;
    core::SpinGuard g(p.mu_);
    const bool was_empty = p.empty_locked();
    if (!p.readers_) {
      ret = -EPIPE;
    } else if (p.merge_locked(tls_handler_bounce, count)) {
      ret = static_cast<long>(count);
    } else if (!p.full_locked() && p.tmp_page_) {
      char* page = p.take_tmp_page_locked();
      std::memcpy(page, tls_handler_bounce, count);
      p.push_page_locked(page, count, (status_flags() & O_DIRECT) != 0);
      ret = static_cast<long>(count);
    } else {
      ret = -EAGAIN;  // no room, or a page would have to be allocated
    }
    wake = ret != -EPIPE && (was_empty || p.poll_usage_);  // as write_impl
  }
  if (rd && (!wake || !core::defer_to_release(&core::deferred_wake, rd, EPOLLIN | EPOLLRDNORM, nullptr, 0)))
    core::put_in_handler(rd);
  if (ret == -EPIPE) raise_sigpipe();
  return ret;
}

void PipeWriter::deferred_write(core::File* f, uint32_t, const char* data, uint32_t len) noexcept {
  // At the interrupted code's last release; the result has been reported.
  (void)static_cast<PipeWriter*>(f)->write_impl(data, len, true);
}

void PipeWriter::on_release() noexcept {
  Pipe& p = *pipe_;
  p.release_lock_fd(1);  // its locks go with the end (Linux __fput)
  bool wake;
  {
    core::SpinGuard g(p.mu_);
    p.writers_--;
    wake = !p.readers_ != !p.writers_;
    p.wr_.store(nullptr, std::memory_order_release);
  }
  if (wake) {
    p.wake_reader(0, 0);
    wq().wake(0, 0);
    p.fasync_reader(POLL_IN);
  }
  p.put();
}

}  // namespace uepoll::objects
