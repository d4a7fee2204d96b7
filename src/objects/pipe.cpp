// pipe.cpp - Pipe, PipeReader, PipeWriter (see pipe.h).  Mirrors Linux
// fs/pipe.c (pipe_read, pipe_write, pipe_poll, pipe_release,
// create_pipe_files).  Locks: Pipe::mu_ (leaf), each end's wq() (6) for
// wakeups and through core::block_on; never both wq locks at once, never a
// wake with mu_ held.
#include "objects/pipe.h"

#include "core/alloc.h"
#include "core/block.h"
#include "core/reclaim.h"
#include "fd/table.h"
#include "objects/user_ptr.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/epoll.h>

namespace uepoll::objects {

void raise_sigpipe() noexcept { pthread_kill(pthread_self(), SIGPIPE); }

// ---- Pipe ------------------------------------------------------------------

Pipe::~Pipe() {
  for (Buf& b : bufs_)
    if (b.page) core::raw_free(b.page);
  if (tmp_page_) core::raw_free(tmp_page_);
}

void Pipe::put() noexcept {
  if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) core::destroy(this);
}

// Preconditions: mu_ held.  Linux anon_pipe_buf_release: keep one page as
// tmp_page, hand the others back (freed by the caller after unlocking).
void Pipe::release_page_locked(Buf& b, char** to_free) noexcept {
  if (!tmp_page_) {
    tmp_page_ = b.page;
  } else {
    *to_free = b.page;
  }
  b.page = nullptr;
  b.offset = b.len = 0;
  b.flags = 0;
}

void Pipe::wake_reader(uint32_t key, int nr_exclusive) noexcept {
  core::reclaim::ReadGuard g;
  core::File* f = rd_.load(std::memory_order_acquire);
  if (!f) return;
  f->wq().lock();
  f->wq().wake_locked(key, nr_exclusive);
  f->wq().unlock();
}

void Pipe::wake_writer(uint32_t key, int nr_exclusive) noexcept {
  core::reclaim::ReadGuard g;
  core::File* f = wr_.load(std::memory_order_acquire);
  if (!f) return;
  f->wq().lock();
  f->wq().wake_locked(key, nr_exclusive);
  f->wq().unlock();
}

// ---- read end ----------------------------------------------------------------

PipeReader::PipeReader(Pipe* p, int status_flags) noexcept
    : core::File(core::FileKind::kPipeRead, status_flags), pipe_(p) {}

uint32_t PipeReader::poll(int) noexcept {
  Pipe& p = *pipe_;
  p.mu_.lock();
  p.poll_usage_ = true;  // Linux pipe_poll: WRITE_ONCE(pipe->poll_usage, true)
  uint32_t mask = 0;
  if (!p.empty_locked()) mask |= EPOLLIN | EPOLLRDNORM;
  // Linux: !pipe->writers && filp->f_pipe != pipe->w_counter; f_pipe is 0
  // for pipe(2) ends and w_counter 1, so: no writers.
  if (!p.writers_) mask |= EPOLLHUP;
  p.mu_.unlock();
  return mask;
}

ssize_t PipeReader::read(void* buf, size_t count) noexcept {
  if (count == 0) return 0;  // Linux: "Null read succeeds."
  Pipe& p = *pipe_;
  char* dst = static_cast<char*>(buf);
  bool wake_writer = false;
  bool still_data = false;
  int attempts = 0;
  // Pages handed back by the successful attempt, freed after every lock is
  // dropped (an attempt that returns -EAGAIN consumed nothing).
  char* to_free[kPipeSlots];
  int nfree = 0;
  // Preconditions of the op: wq() held (block_on); takes mu_ (leaf).
  const long r = core::block_on(wq(), nonblocking(), EPOLLIN | EPOLLRDNORM | EPOLLHUP, [&]() -> long {
    ++attempts;
    long ret = 0;
    size_t total = count;
    p.mu_.lock();
    while (!p.empty_locked()) {
      Pipe::Buf& b = p.slot_locked(p.tail_);
      size_t chars = b.len;
      if (chars > total) chars = total;
      if (faulting_ptr(dst)) {  // Linux: copy_page_to_iter fails
        if (!ret) ret = -EFAULT;
        break;
      }
      std::memcpy(dst + ret, b.page + b.offset, chars);
      ret += static_cast<long>(chars);
      b.offset += static_cast<uint32_t>(chars);
      b.len -= static_cast<uint32_t>(chars);
      if (b.flags & Pipe::kPacket) {  // a packet: the rest of it is dropped
        total = chars;
        b.len = 0;
      }
      if (!b.len) {
        wake_writer |= p.full_locked();  // freed a slot of a full pipe
        char* f = nullptr;
        p.release_page_locked(b, &f);
        if (f) to_free[nfree++] = f;
        ++p.tail_;
      }
      total -= chars;
      if (!total) break;
    }
    if (ret == 0 && p.empty_locked()) {
      ret = p.writers_ ? -EAGAIN : 0;
    }
    still_data = !p.empty_locked();
    p.mu_.unlock();
    return ret;
  });
  for (int i = 0; i < nfree; ++i) core::raw_free(to_free[i]);
  if (wake_writer) p.wake_writer(EPOLLOUT | EPOLLWRNORM);
  // Linux wake_next_reader: a reader that slept and left data behind.
  if (attempts > 1 && r > 0 && still_data) {
    wq().lock();
    wq().wake_locked(EPOLLIN | EPOLLRDNORM);
    wq().unlock();
  }
  return r;
}

void PipeReader::on_release() noexcept {
  Pipe& p = *pipe_;
  p.mu_.lock();
  p.readers_--;
  const bool wake = !p.readers_ != !p.writers_;
  p.rd_.store(nullptr, std::memory_order_release);
  p.mu_.unlock();
  if (wake) {
    // Linux pipe_release: wake_up_interruptible_all(&pipe->rd_wait) and
    // (&pipe->wr_wait): key 0, every waiter.
    wq().lock();
    wq().wake_locked(0, 0);
    wq().unlock();
    p.wake_writer(0, 0);
  }
  p.put();
}

// ---- write end ---------------------------------------------------------------

PipeWriter::PipeWriter(Pipe* p, int status_flags) noexcept
    : core::File(core::FileKind::kPipeWrite, status_flags), pipe_(p) {}

uint32_t PipeWriter::poll(int) noexcept {
  Pipe& p = *pipe_;
  p.mu_.lock();
  p.poll_usage_ = true;
  uint32_t mask = 0;
  if (!p.full_locked()) mask |= EPOLLOUT | EPOLLWRNORM;
  // "Most Unices do not set EPOLLERR for FIFOs but on Linux they behave
  // exactly like pipes for poll()."
  if (!p.readers_) mask |= EPOLLERR;
  p.mu_.unlock();
  return mask;
}

ssize_t PipeWriter::write(const void* buf, size_t count) noexcept {
  Pipe& p = *pipe_;
  if (count == 0) return 0;            // "Null write succeeds."
  const char* src = static_cast<const char*>(buf);
  size_t left = count;
  long ret = 0;
  bool sigpipe = false;
  bool wake_next_writer = false;
  const bool packet = (status_flags() & O_DIRECT) != 0;
  const bool nonblock = nonblocking();

  p.mu_.lock();
  bool was_empty = false;
  if (!p.readers_) {
    sigpipe = true;
    ret = -EPIPE;
    goto out;
  }
  if (faulting_ptr(src)) {  // Linux copies and fails with EFAULT; uepoll fails early
    ret = -EFAULT;
    goto out;
  }
  // Merge the sub-page remainder into the last buffer if it fits (Linux:
  // "That naturally merges small writes, but it also page-aligns the rest
  // of the writes for large writes spanning multiple pages").
  was_empty = p.empty_locked();
  {
    const size_t chars = left & (kPipePage - 1);
    if (chars && !was_empty) {
      Pipe::Buf& b = p.slot_locked(p.head_ - 1);
      const size_t offset = b.offset + b.len;
      if ((b.flags & Pipe::kCanMerge) && offset + chars <= kPipePage) {
        std::memcpy(b.page + offset, src, chars);
        b.len += static_cast<uint32_t>(chars);
        ret += static_cast<long>(chars);
        src += chars;
        left -= chars;
        if (!left) goto out;
      }
    }
  }
  for (;;) {
    if (!p.readers_) {
      sigpipe = true;
      if (!ret) ret = -EPIPE;
      break;
    }
    if (!p.full_locked()) {
      char* page = p.tmp_page_;
      if (!page) {
        page = static_cast<char*>(core::raw_alloc(kPipePage));
        if (!page) {
          if (!ret) ret = -ENOMEM;
          break;
        }
      }
      p.tmp_page_ = nullptr;
      Pipe::Buf& b = p.slot_locked(p.head_);
      ++p.head_;
      b.page = page;
      b.offset = 0;
      const size_t copied = left < kPipePage ? left : kPipePage;
      std::memcpy(page, src, copied);
      b.len = static_cast<uint32_t>(copied);
      b.flags = packet ? Pipe::kPacket : Pipe::kCanMerge;
      ret += static_cast<long>(copied);
      src += copied;
      left -= copied;
      if (!left) break;
    }
    if (!p.full_locked()) continue;
    if (nonblock) {
      if (!ret) ret = -EAGAIN;
      break;
    }
    // Wait for a free slot (Linux: wake readers if the pipe was empty, then
    // wait_event_interruptible_exclusive(pipe->wr_wait, pipe_writable())).
    p.mu_.unlock();
    if (was_empty) p.wake_reader(EPOLLIN | EPOLLRDNORM);
    const long w = core::block_on(wq(), false, EPOLLOUT | EPOLLWRNORM, [&]() -> long {
      p.mu_.lock();
      const bool writable = !p.full_locked() || !p.readers_;
      p.mu_.unlock();
      return writable ? 0 : -EAGAIN;
    });
    p.mu_.lock();
    if (w < 0) {  // a signal handler ran
      if (!ret) ret = w;
      break;
    }
    was_empty = p.empty_locked();
    wake_next_writer = true;
  }
out:
  if (p.full_locked()) wake_next_writer = false;
  const bool wake_readers = ret != -EPIPE && ret != -EFAULT && (was_empty || p.poll_usage_);
  p.mu_.unlock();
  // Linux: "Epoll nonsensically wants a wakeup whether the pipe was already
  // empty or not." (every write, even one that returns EAGAIN).
  if (wake_readers) p.wake_reader(EPOLLIN | EPOLLRDNORM);
  if (wake_next_writer) {
    wq().lock();
    wq().wake_locked(EPOLLOUT | EPOLLWRNORM);
    wq().unlock();
  }
  if (sigpipe) raise_sigpipe();
  return ret;
}

void PipeWriter::on_release() noexcept {
  Pipe& p = *pipe_;
  p.mu_.lock();
  p.writers_--;
  const bool wake = !p.readers_ != !p.writers_;
  p.wr_.store(nullptr, std::memory_order_release);
  p.mu_.unlock();
  if (wake) {
    p.wake_reader(0, 0);
    wq().lock();
    wq().wake_locked(0, 0);
    wq().unlock();
  }
  p.put();
}

// ---- creation ----------------------------------------------------------------

int make_pipe(int flags, int out[2]) noexcept {
  auto* p = core::create<Pipe>();
  if (!p) return -ENOMEM;
  auto* r = core::create<PipeReader>(p, O_RDONLY | (flags & O_NONBLOCK));
  if (!r) {
    core::destroy(p);
    return -ENOMEM;
  }
  auto* w = core::create<PipeWriter>(p, O_WRONLY | (flags & (O_NONBLOCK | O_DIRECT)));
  if (!w) {
    p->refs_.store(1, std::memory_order_relaxed);
    r->put();  // releases the reader and the ring
    return -ENOMEM;
  }
  p->rd_.store(r, std::memory_order_release);
  p->wr_.store(w, std::memory_order_release);
  const int err = fd::install_pair(r, w, out);
  if (err < 0) {
    r->put();
    w->put();
    return err;
  }
  return 0;
}

}  // namespace uepoll::objects
