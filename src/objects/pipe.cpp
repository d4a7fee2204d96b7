// pipe.cpp - Pipe, PipeReader, PipeWriter (see pipe.h).  Mirrors Linux
// fs/pipe.c (pipe_read, pipe_write, pipe_poll, pipe_release,
// create_pipe_files).  Locks: Pipe::mu_ (leaf, 14), each end's wq() (11) for
// wakeups and through core::block_on; never both wq locks at once, never a
// wake, an allocation or a copy of user memory with mu_ held.
#include "objects/pipe.h"

#include "core/alloc.h"
#include "core/backoff.h"
#include "core/block.h"
#include "core/call_flags.h"
#include "core/deferred.h"
#include "core/lock_state.h"
#include "core/lockdep.h"
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

void raise_sigpipe() noexcept {
  if (core::call_flags().no_sigpipe) return;  // send(..., MSG_NOSIGNAL)
  pthread_kill(pthread_self(), SIGPIPE);
}

int pipe_queued_bytes(Pipe* p) noexcept {
  int n = 0;
  p->mu_.lock();
  for (unsigned i = p->tail_; i != p->head_; ++i) n += static_cast<int>(p->slot_locked(i).len);
  p->mu_.unlock();
  return n;
}

// ---- Pipe ------------------------------------------------------------------

Pipe::~Pipe() {
  for (unsigned i = 0; i < ring_size_; ++i)
    if (bufs_[i].page) core::raw_free(bufs_[i].page);
  if (bufs_ != inline_bufs_) core::raw_free(bufs_);
  if (tmp_page_) core::raw_free(tmp_page_);
}

void Pipe::put() noexcept {
  if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) core::destroy(this);
}

// Preconditions: mu_ held.  Linux anon_pipe_buf_release: keep one page as
// tmp_page, hand the others back (freed by the caller after unlocking).
void Pipe::release_page_locked(Buf& b, char** to_free) noexcept {
  mu_.assert_held();
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
  f->wq().wake(key, nr_exclusive);
}

void Pipe::wake_writer(uint32_t key, int nr_exclusive) noexcept {
  core::reclaim::ReadGuard g;
  core::File* f = wr_.load(std::memory_order_acquire);
  if (!f) return;
  f->wq().wake(key, nr_exclusive);
}

namespace {
// f's owner signalled, with a reference held across the system call (a
// handler run on its return may close the end).
void fasync_end(const std::atomic<core::File*>& end, int reason) noexcept {
  core::File* f;
  {
    core::reclaim::ReadGuard g;
    f = end.load(std::memory_order_acquire);
    if (!f || !(f->status_flags() & O_ASYNC) || !f->tryget()) return;
  }
  f->kill_fasync(reason);
  f->put();
}
}  // namespace

void Pipe::fasync_reader(int reason) noexcept { fasync_end(rd_, reason); }
void Pipe::fasync_writer(int reason) noexcept { fasync_end(wr_, reason); }

// ---- read end ----------------------------------------------------------------

// What a read took out of the ring under mu_, copied to the caller after
// the lock is dropped: whole pages taken out of the ring (a read of more
// than a page), then bytes copied into `bounce` (everything, for a read of
// at most a page; else the part of a buffer the read did not finish).
// Room for `cap` buffers: the ring's size when the read began (a larger
// ring allocates its arrays outside the lock); a read that meets a ring
// grown since stops at cap buffers (a shorter count, nothing lost).
struct Pipe::ReadPlan {
  bool small = false;  // count <= kPipePage: everything goes through bounce
  unsigned cap = kPipeSlots;
  int npages = 0;
  char** pages = pages_in;
  uint32_t* off = off_in;
  uint32_t* len = len_in;
  uint32_t bounce_len = 0;
  int nfree = 0;
  char** to_free = to_free_in;  // pages released under the lock, freed after
  void* heap = nullptr;
  char* pages_in[kPipeSlots];
  uint32_t off_in[kPipeSlots];
  uint32_t len_in[kPipeSlots];
  char* to_free_in[kPipeSlots];
  char bounce[kPipePage];

  ReadPlan() = default;
  ReadPlan(const ReadPlan&) = delete;
  ReadPlan& operator=(const ReadPlan&) = delete;
  ~ReadPlan() { core::raw_free(heap); }
  // Outside every lock.  False when out of memory (the plan keeps its
  // inline room: the read takes fewer buffers).
  bool reserve(unsigned slots) noexcept {
    if (slots <= cap) return true;
    const size_t per = 2 * sizeof(char*) + 2 * sizeof(uint32_t);
    char* m = static_cast<char*>(core::raw_alloc(per * slots, alignof(char*)));
    if (!m) return false;
    core::raw_free(heap);
    heap = m;
    pages = reinterpret_cast<char**>(m);
    to_free = pages + slots;
    off = reinterpret_cast<uint32_t*>(to_free + slots);
    len = off + slots;
    cap = slots;
    return true;
  }
  bool room() const noexcept { return static_cast<unsigned>(npages) < cap && static_cast<unsigned>(nfree) < cap; }

  void reset() noexcept {
    npages = 0;
    nfree = 0;
    bounce_len = 0;
  }
  // Outside every lock: the copy to user memory.
  void copy_out(char* dst) const noexcept {
    for (int i = 0; i < npages; ++i) {
      std::memcpy(dst, pages[i] + off[i], len[i]);
      dst += len[i];
    }
    std::memcpy(dst, bounce, bounce_len);
  }
};

long Pipe::take_locked(size_t count, bool fault, ReadPlan* plan, bool* wake_writer) noexcept {
  mu_.assert_held();
  long ret = 0;
  size_t total = count;
  while (!empty_locked() && plan->room()) {
    Buf& b = slot_locked(tail_);
    size_t chars = b.len;
    if (chars > total) chars = total;
    if (fault) {  // Linux: copy_page_to_iter fails
      if (!ret) ret = -EFAULT;
      break;
    }
    const bool whole = chars == b.len || (b.flags & kPacket);
    if (plan->small || !whole) {
      std::memcpy(plan->bounce + plan->bounce_len, b.page + b.offset, chars);  // our memory: cannot fault
      plan->bounce_len += static_cast<uint32_t>(chars);
    } else {
      // The page leaves the ring with its data; copied out after unlocking.
      plan->pages[plan->npages] = b.page;
      plan->off[plan->npages] = b.offset;
      plan->len[plan->npages++] = static_cast<uint32_t>(chars);
      b.page = nullptr;
    }
    ret += static_cast<long>(chars);
    b.offset += static_cast<uint32_t>(chars);
    b.len -= static_cast<uint32_t>(chars);
    if (b.flags & kPacket) {  // a packet: the rest of it is dropped
      total = chars;
      b.len = 0;
    }
    if (!b.len) {
      *wake_writer |= full_locked();  // freed a slot of a full pipe
      if (b.page) {
        char* f = nullptr;
        release_page_locked(b, &f);
        if (f) plan->to_free[plan->nfree++] = f;
      } else {
        b.offset = b.len = 0;
        b.flags = 0;
      }
      ++tail_;
    }
    total -= chars;
    if (!total) break;
  }
  return ret;
}

void Pipe::recycle_pages(char** pages, int n) noexcept {
  if (n == 0) return;
  int first_free = 0;
  mu_.lock();
  if (!tmp_page_) {
    tmp_page_ = pages[0];
    first_free = 1;
  }
  mu_.unlock();
  for (int i = first_free; i < n; ++i) core::raw_free(pages[i]);
}

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
  // A signal handler that interrupted its own thread inside uepoll: as an
  // empty pipe (pipe.h); the thread may hold mu_ or our queue's lock.
  if (core::thread_in_uepoll()) return -EAGAIN;
  Pipe& p = *pipe_;
  char* dst = static_cast<char*>(buf);
  const bool fault = faulting_ptr(dst);
  bool wake_writer = false;
  bool still_data = false;
  int attempts = 0;
  Pipe::ReadPlan plan;
  plan.small = count <= kPipePage;
  // A resized ring may hold more buffers than the plan's inline room.
  const unsigned slots = p.slots_hint_.load(std::memory_order_relaxed);
  if (slots > kPipeSlots) (void)plan.reserve(slots);  // without it: fewer buffers per read
  // Preconditions of the op: wq() held (block_on); takes mu_ (leaf).  An
  // attempt that returns -EAGAIN consumed nothing.
  // While a splice out holds the readers off (pipe_splice.cpp), an attempt
  // returns Pipe::kHeld and the read backs off and tries again.
  core::Backoff backoff;
  long r = 0;
  for (bool again = false;; again = true) {
    if (again) backoff.pause();
    r = core::block_on(wq(), nonblocking(), EPOLLIN | EPOLLRDNORM | EPOLLHUP, [&]() -> long {
      plan.reset();
      p.mu_.lock();
      if (p.held_) {
        p.mu_.unlock();
        return Pipe::kHeld;
      }
      ++attempts;
      long ret = p.take_locked(count, fault, &plan, &wake_writer);
      if (ret == 0 && p.empty_locked()) ret = p.writers_ ? -EAGAIN : 0;
      still_data = !p.empty_locked();
      p.mu_.unlock();
      return ret;
    }, true, [&p]() noexcept { p.fasync_writer(POLL_OUT); });  // Linux pipe_read, before it sleeps
    if (r != Pipe::kHeld) break;
  }
  if (r > 0) {
    core::lockdep_assert_no_spin("a copy to user memory");
    plan.copy_out(dst);
  }
  p.recycle_pages(plan.pages, plan.npages);
  for (int i = 0; i < plan.nfree; ++i) core::raw_free(plan.to_free[i]);
  if (wake_writer) p.wake_writer(EPOLLOUT | EPOLLWRNORM);
  // Linux wake_next_reader: a reader that slept and left data behind.
  if (attempts > 1 && r > 0 && still_data) {
    wq().wake(EPOLLIN | EPOLLRDNORM);
  }
  p.fasync_writer(POLL_OUT);
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
    wq().wake(0, 0);
    p.wake_writer(0, 0);
    p.fasync_writer(POLL_OUT);
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
    p.mu_.lock();
    const bool writable = !p.full_locked() || !p.readers_;
    p.mu_.unlock();
    return writable ? 0 : -EAGAIN;
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
    p.mu_.lock();
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
    p.mu_.unlock();
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
  p.mu_.lock();
  p.writers_--;
  const bool wake = !p.readers_ != !p.writers_;
  p.wr_.store(nullptr, std::memory_order_release);
  p.mu_.unlock();
  if (wake) {
    p.wake_reader(0, 0);
    wq().wake(0, 0);
    p.fasync_reader(POLL_IN);
  }
  p.put();
}

// ---- creation ----------------------------------------------------------------

int make_pipe(int flags, int out[2]) noexcept {
  auto* p = core::create<Pipe>();
  if (!p) return -ENOMEM;
  // The cached page an empty pipe always holds (pipe.h, signal handlers).
  char* page = static_cast<char*>(core::raw_alloc(kPipePage));
  if (!page) {
    core::destroy(p);
    return -ENOMEM;
  }
  p->mu_.lock();
  p->tmp_page_ = page;
  p->mu_.unlock();
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
