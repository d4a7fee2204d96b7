// pipe.cpp - the ring's shared helpers, the read end (PipeReader) and
// make_pipe (see pipe.h); the write end is pipe_write.cpp.  Mirrors Linux
// fs/pipe.c (pipe_read, pipe_poll, pipe_release, create_pipe_files).
// Locks: Pipe::mu_ (leaf, 14), each end's wq() (11) for wakeups and through
// core::block_on; never both wq locks at once, never a wake, an allocation
// or a copy of user memory with mu_ held.
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
  core::SpinGuard g(p->mu_);
  for (unsigned i = p->tail_; i != p->head_; ++i) n += static_cast<int>(p->slot_locked(i).len);
  return n;
}

// ---- Pipe ------------------------------------------------------------------

Pipe::~Pipe() {
  for (unsigned i = 0; i < ring_size_; ++i)
    if (bufs_[i].page) core::raw_free(bufs_[i].page);
  if (bufs_ != inline_bufs_) core::raw_free(bufs_);
  if (tmp_page_) core::raw_free(tmp_page_);
  free_lock_fds();
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
  {
    core::SpinGuard g(mu_);
    if (!tmp_page_) {
      tmp_page_ = pages[0];
      first_free = 1;
    }
  }
  for (int i = first_free; i < n; ++i) core::raw_free(pages[i]);
}

PipeReader::PipeReader(Pipe* p, int status_flags) noexcept
    : core::File(core::FileKind::kPipeRead, status_flags), pipe_(p) {}

uint32_t PipeReader::poll(int) noexcept {
  Pipe& p = *pipe_;
  core::SpinGuard g(p.mu_);
  p.poll_usage_ = true;  // Linux pipe_poll: WRITE_ONCE(pipe->poll_usage, true)
  uint32_t mask = 0;
  if (!p.empty_locked()) mask |= EPOLLIN | EPOLLRDNORM;
  // Linux: !pipe->writers && filp->f_pipe != pipe->w_counter; f_pipe is 0
  // for pipe(2) ends and w_counter 1, so: no writers.
  if (!p.writers_) mask |= EPOLLHUP;
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
      if (core::leave_if_handed_over(wq().handed_over())) {  // read again from the kernel pipe
        p.mu_.unlock();
        return -EINTR;
      }
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
  p.release_lock_fd(0);  // its locks go with the end (Linux __fput)
  bool wake;
  {
    core::SpinGuard g(p.mu_);
    p.readers_--;
    wake = !p.readers_ != !p.writers_;
    p.rd_.store(nullptr, std::memory_order_release);
  }
  if (wake) {
    // Linux pipe_release: wake_up_interruptible_all(&pipe->rd_wait) and
    // (&pipe->wr_wait): key 0, every waiter.
    wq().wake(0, 0);
    p.wake_writer(0, 0);
    p.fasync_writer(POLL_OUT);
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
  {
    core::SpinGuard g(p->mu_);
    p->tmp_page_ = page;
  }
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
