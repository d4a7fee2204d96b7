// splice.cpp - KernelSink and SpliceBounce (see splice.h).  Locks: the
// source's wait queue lock (a leaf) around a movable wait's entry, never
// across a system call; system calls on the sink's kernel descriptor (and
// sigaction reads after a handler, core/sig_restart.h).
#include "core/splice.h"

#include "core/alloc.h"
#include "core/handover.h"
#include "core/sig_restart.h"
#include "core/waiter.h"
#include "core/waitqueue.h"

#include <cerrno>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/uio.h>
#include <fcntl.h>
#include <unistd.h>

namespace uepoll::core {

SpliceBounce::SpliceBounce() noexcept : buf_(static_cast<char*>(raw_alloc(kSpliceChunk))) {}
SpliceBounce::~SpliceBounce() { raw_free(buf_); }

bool SpliceBounce::keep_unwritten(ssize_t put, size_t n) noexcept {
  if ((put >= 0 && static_cast<size_t>(put) >= n) || !call_moved()) return false;
  const size_t at = put > 0 ? static_cast<size_t>(put) : 0;
  keep_moved_bytes(buf_, at, n - at);
  buf_ = nullptr;
  return true;
}

// Linux wait_for_space: -ERESTARTSYS after a handler, so the call restarts
// after SA_RESTART handlers.  poll() cannot say which handler ran: EINTR
// if any handler the thread's mask lets through lacks SA_RESTART, as
// ThreadWaiter's sleeps answer (core/sig_restart.h).  Nothing has moved
// yet, so going round is the restart.
long KernelSink::wait_room(bool nonblock) noexcept {
  if (!is_pipe_) return 0;
  // Without a waiter (out of descriptors) the poll below still waits.
  if (!nonblock && source_ && movable_call() && ThreadWaiter::self(nullptr)) return wait_room_movable();
  struct pollfd p = {fd_, POLLOUT, 0};
  for (;;) {
    const int r = ::poll(&p, 1, nonblock ? 0 : -1);
    if (r > 0) return 0;  // room, or POLLERR: the write reports EPIPE
    if (r == 0) return -EAGAIN;
    if (errno != EINTR) return -errno;
    if (!unblocked_handlers_restart()) return -EINTR;
  }
}

// The same wait, also queued (any event) on the source's wait queue,
// whose hand-over to the kernel wakes it (core/handover.h): the thread's
// waiter sleeps on its eventfd and the kernel pipe at once, every signal
// blocked between the checks and the sleep.
long KernelSink::wait_room_movable() noexcept {
  int err = 0;
  ThreadWaiter* w = ThreadWaiter::self(&err);
  if (!w) return -err;
  ScopedEntry lease(w);
  WaiterEntry& we = lease.get();
  we.movable = true;
  SignalBlock blocked;
  const sigset_t let = let_through(&blocked.saved());
  for (;;) {
    w->prepare();
    source_->lock();
    const bool moved = source_->handed_over();
    if (!moved) source_->add_locked(&we.entry);
    source_->unlock();
    if (moved) {
      note_moved(timespec{-1, 0});
      return -EINTR;
    }
    struct pollfd p = {fd_, POLLOUT, 0};
    const int ready = ::poll(&p, 1, 0);  // after queueing: a hand-over from now on kicks
    const int s = ready == 0 ? w->sleep_with(&p, 1, nullptr, &blocked.saved()) : 0;
    source_->lock();
    if (we.entry.queued()) source_->remove_locked(&we.entry);
    source_->unlock();
    if (ready > 0) return 0;  // room, or POLLERR: the write reports EPIPE
    if (ready < 0) return -errno;
    if (s == -EINTR && !handlers_restart(&let, true)) return -EINTR;
    if (s < 0 && s != -EINTR) return s;
  }
}

ssize_t KernelSink::push(const char* buf, size_t n) noexcept {
  if (is_pipe_) {
    // Linux moves what fits into a pipe and does not wait for more room.
    struct iovec v = {const_cast<char*>(buf), n};
    const ssize_t r = ::pwritev2(fd_, &v, 1, -1, RWF_NOWAIT);
    if (r >= 0 || (errno != EOPNOTSUPP && errno != EINVAL)) return r < 0 ? -errno : r;
    // A kernel without RWF_NOWAIT on pipes: at most the free room.
    int queued = 0;
    const int size = ::fcntl(fd_, F_GETPIPE_SZ);
    if (size > 0 && ::ioctl(fd_, FIONREAD, &queued) == 0 && static_cast<size_t>(size - queued) < n)
      n = static_cast<size_t>(size - queued);
    if (n == 0) return -EAGAIN;
  }
  const ssize_t r = pos_ ? ::pwrite(fd_, buf, n, *pos_) : ::write(fd_, buf, n);
  if (r < 0) return -errno;
  if (pos_) *pos_ += r;
  return r;
}

long peek_kernel_pipe(int fd, char* buf, size_t len, bool nonblock) noexcept {
  int scratch[2];
  if (::pipe2(scratch, O_CLOEXEC) < 0) return -errno;
  long r = ::tee(fd, scratch[1], len < kSpliceChunk ? len : kSpliceChunk, nonblock ? SPLICE_F_NONBLOCK : 0);
  if (r < 0) r = -errno;
  if (r > 0) {
    const ssize_t n = ::read(scratch[0], buf, static_cast<size_t>(r));
    r = n < 0 ? -errno : n;
  }
  ::close(scratch[0]);
  ::close(scratch[1]);
  return r;
}

void consume_kernel_pipe(int fd, size_t n, char* buf) noexcept {
  for (size_t eaten = 0; eaten < n;) {
    int queued = 0;  // FIONREAD first: a read of an emptied pipe would wait
    if (::ioctl(fd, FIONREAD, &queued) < 0 || queued <= 0) return;
    size_t want = n - eaten < static_cast<size_t>(queued) ? n - eaten : static_cast<size_t>(queued);
    if (want > kSpliceChunk) want = kSpliceChunk;
    const ssize_t got = ::read(fd, buf, want);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return;
    eaten += static_cast<size_t>(got);
  }
}

long tee_kernel_pipe(int fd, SpliceSink& to, size_t len, bool nonblock) noexcept {
  SpliceBounce bounce;
  if (!bounce.data()) return -ENOMEM;
  const long r = peek_kernel_pipe(fd, bounce.data(), len, nonblock);
  if (r < 0) return r;
  if (const long e = to.wait_room(nonblock)) return e;
  return r ? tee_push(to, bounce.data(), static_cast<size_t>(r)) : 0;
}

long tee_push(SpliceSink& to, const char* buf, size_t n) noexcept {
  const long put = to.push(buf, n);
  return put == -EAGAIN ? 0 : put;
}

}  // namespace uepoll::core
