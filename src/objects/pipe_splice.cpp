// pipe_splice.cpp - splice, tee and vmsplice on a uepoll pipe (Linux
// fs/splice.c: splice_file_to_pipe, wait_for_space, splice_from_pipe_next,
// splice_pipe_to_pipe, link_pipe, vmsplice_to_pipe, vmsplice_to_user;
// filemap_splice_read fills a buffer per page).
//
// Out of the pipe, bytes are copied into the bounce buffer under mu_
// (peek_locked), with held_ set so that no read or other splice takes them
// meanwhile; the sink is written with no lock held; then what it took is
// consumed under mu_ (consume_locked) and held_ dropped.  So a sink that
// takes part (a full pipe, a non-blocking socket) leaves the rest queued,
// as Linux's pipe mutex does.
//
// Locks: Pipe::mu_ (leaf, 14), each end's wq() (11) through core::block_on
// and for wakeups; no lock held across a sink's write or a system call.
#include "objects/pipe.h"

#include "core/alloc.h"
#include "core/backoff.h"
#include "core/block.h"
#include "core/deferred.h"
#include "core/handover.h"
#include "core/user_memory.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <unistd.h>

namespace uepoll::objects {

namespace {

constexpr int kMaxFreed = core::kSpliceChunk / kPipePage + 2;

// vmsplice_to_user's sink: the caller's vector (pipe_to_user).
class IovSink final : public core::SpliceSink {
 public:
  IovSink(const struct iovec* iov, int n) noexcept : iov_(iov), n_(n) {}
  long wait_room(bool) noexcept override { return 0; }
  ssize_t push(const char* buf, size_t n) noexcept override {
    size_t done = 0;
    while (done < n && i_ < n_) {
      const size_t room = iov_[i_].iov_len - off_;
      const size_t c = n - done < room ? n - done : room;
      char* dst = static_cast<char*>(iov_[i_].iov_base) + off_;
      if (c && core::writable_prefix(dst, c) < c) return done ? static_cast<ssize_t>(done) : -EFAULT;
      std::memcpy(dst, buf + done, c);
      done += c;
      off_ += c;
      if (off_ == iov_[i_].iov_len) {
        ++i_;
        off_ = 0;
      }
    }
    return static_cast<ssize_t>(done);
  }
  const void* pipe_id() const noexcept override { return nullptr; }

 private:
  const struct iovec* iov_;
  int n_;
  int i_ = 0;
  size_t off_ = 0;
};

}  // namespace

// ---- the ring ----------------------------------------------------------------

size_t Pipe::peek_locked(char* dst, size_t n) const noexcept {
  mu_.assert_held();
  size_t got = 0;
  for (unsigned i = tail_; i != head_ && got < n; ++i) {
    const Buf& b = bufs_[i & (ring_size_ - 1)];
    const size_t c = b.len < n - got ? b.len : n - got;
    std::memcpy(dst + got, b.page + b.offset, c);  // our memory
    got += c;
    if (b.flags & kPacket) break;
  }
  return got;
}

void Pipe::consume_locked(size_t n, char** to_free, int* nfree, bool* wake_writer) noexcept {
  mu_.assert_held();
  while (n && !empty_locked()) {
    Buf& b = slot_locked(tail_);
    const size_t c = b.len < n ? b.len : n;
    b.offset += static_cast<uint32_t>(c);
    b.len -= static_cast<uint32_t>(c);
    n -= c;
    if (b.flags & kPacket) b.len = 0;  // the rest of a packet is dropped, as a read does
    if (b.len) break;
    *wake_writer |= full_locked();
    char* f = nullptr;
    release_page_locked(b, &f);
    if (f && *nfree < kMaxFreed) to_free[(*nfree)++] = f;
    else if (f) core::raw_free(f);  // not reached: a chunk spans at most kMaxFreed pages
    ++tail_;
  }
}

// ---- out of the pipe -----------------------------------------------------------

long PipeReader::wait_data(bool nonblock) noexcept {
  Pipe& p = *pipe_;
  return core::block_on(wq(), nonblock, EPOLLIN | EPOLLRDNORM | EPOLLHUP, [&]() -> long {
    core::SpinGuard g(p.mu_);
    const long r = !p.empty_locked() ? 1 : p.writers_ ? -EAGAIN : 0;
    return r;
  });
}

long PipeReader::splice_read(core::SpliceSink& to, size_t len, bool nonblock) noexcept {
  if (core::thread_in_uepoll()) return -EAGAIN;  // a handler inside uepoll: as read()
  Pipe& p = *pipe_;
  core::SpliceBounce bounce;
  if (!bounce.data()) return -ENOMEM;
  long moved = 0;
  core::Backoff backoff;
  while (static_cast<size_t>(moved) < len) {
    if (!moved) {
      // ipipe_prep, then opipe_prep (even when the first found no writers).
      const long w = wait_data(nonblock);
      if (w < 0) return w;
      if (const long e = to.wait_room(nonblock)) return e;
      if (w == 0) return 0;
    }
    const size_t want = len - moved < core::kSpliceChunk ? len - moved : core::kSpliceChunk;
    p.mu_.lock();
    if (core::leave_if_handed_over(wq().handed_over())) {  // the rest from the kernel pipe
      p.mu_.unlock();
      return moved ? moved : -EINTR;
    }
    if (p.held_) {
      p.mu_.unlock();
      backoff.pause();
      continue;
    }
    const size_t n = p.peek_locked(bounce.data(), want);
    p.held_ = n != 0;
    p.mu_.unlock();
    if (!n) {
      if (moved) break;  // emptied: what was moved is the answer
      continue;          // another reader was first: wait again
    }
    const ssize_t put = to.push(bounce.data(), n);
    char* to_free[kMaxFreed];
    int nfree = 0;
    bool wake_writer = false;
    p.mu_.lock();
    if (put > 0) p.consume_locked(static_cast<size_t>(put), to_free, &nfree, &wake_writer);
    p.held_ = false;
    p.mu_.unlock();
    for (int i = 0; i < nfree; ++i) core::raw_free(to_free[i]);
    if (wake_writer) p.wake_writer(EPOLLOUT | EPOLLWRNORM);
    if (put < 0) return moved ? moved : put;
    moved += put;
    if (static_cast<size_t>(put) < n) break;
  }
  return moved;
}

long PipeReader::tee(core::SpliceSink& to, size_t len, bool nonblock) noexcept {
  if (core::thread_in_uepoll()) return -EAGAIN;
  Pipe& p = *pipe_;
  // ipipe_prep, then opipe_prep.
  const long w = wait_data(nonblock);
  if (w < 0) return w;
  if (const long e = to.wait_room(nonblock)) return e;
  if (w == 0) return 0;
  core::SpliceBounce bounce;
  if (!bounce.data()) return -ENOMEM;
  const size_t want = len < core::kSpliceChunk ? len : core::kSpliceChunk;
  p.mu_.lock();
  if (core::leave_if_handed_over(wq().handed_over())) {  // made again on the kernel pipe
    p.mu_.unlock();
    return -EINTR;
  }
  const size_t n = p.peek_locked(bounce.data(), want);
  p.mu_.unlock();
  return n ? to.push(bounce.data(), n) : 0;
}

long PipeReader::vmsplice(const struct iovec* iov, int iovcnt, size_t total, bool nonblock) noexcept {
  IovSink sink(iov, iovcnt);
  return splice_read(sink, total, nonblock);
}

// ---- into the pipe ---------------------------------------------------------------

long PipeWriter::wait_room(bool nonblock) noexcept {
  Pipe& p = *pipe_;
  // Linux wait_for_space: no readers first, then room.
  const long r = core::block_on(wq(), nonblock, EPOLLOUT | EPOLLWRNORM, [&]() -> long {
    core::SpinGuard g(p.mu_);
    if (core::leave_if_handed_over(wq().handed_over())) return -EINTR;  // made again on the kernel pipe
    const long res = !p.readers_ ? -EPIPE : p.full_locked() ? -EAGAIN : 0;
    return res;
  });
  if (r == -EPIPE) raise_sigpipe();
  return r;
}

long PipeWriter::vmsplice(const struct iovec* iov, int iovcnt, size_t, bool nonblock) noexcept {
  if (const long e = wait_room(nonblock)) return e;
  long moved = 0;
  for (int i = 0; i < iovcnt; ++i) {
    if (!iov[i].iov_len) continue;
    const ssize_t put = write_impl(iov[i].iov_base, iov[i].iov_len, true);
    if (put < 0) return moved ? moved : put;
    moved += put;
    if (static_cast<size_t>(put) < iov[i].iov_len) break;
  }
  return moved;
}

long PipeWriter::splice_from_kernel(int in_fd, long long* pos, size_t len, bool nonblock) noexcept {
  Pipe& p = *pipe_;
  if (const long room = wait_room(nonblock)) return room;
  if (len == 0) return 0;  // do_splice_read: "if (unlikely(!len)) return 0"
  struct stat st;
  if (::fstat(in_fd, &st) < 0) return -errno;
  long long at = 0;
  bool seekable = S_ISREG(st.st_mode) || S_ISBLK(st.st_mode);
  if (seekable) {
    at = pos ? *pos : static_cast<long long>(::lseek(in_fd, 0, SEEK_CUR));
    if (at < 0) seekable = false;
  }
  p.mu_.lock();
  const size_t free_slots = p.ring_size_ - (p.head_ - p.tail_);
  p.mu_.unlock();
  // One buffer per page of the file (a buffer ends at a page boundary).
  size_t limit = free_slots * kPipePage;
  if (seekable) limit -= static_cast<size_t>(at % kPipePage);
  if (len > limit) len = limit;
  core::SpliceBounce bounce;
  if (!bounce.data()) return -ENOMEM;
  long moved = 0;
  long err = 0;
  while (static_cast<size_t>(moved) < len) {
    const size_t want = len - moved < core::kSpliceChunk ? len - moved : core::kSpliceChunk;
    const ssize_t n = seekable ? ::pread(in_fd, bounce.data(), want, at + moved) : ::read(in_fd, bounce.data(), want);
    if (n <= 0) {
      if (n < 0) err = -errno;
      break;
    }
    // A seekable source keeps what the pipe did not take; any other must
    // have every byte it gave written: those the write left for a pipe
    // handed over meanwhile go with the call to its caller
    // (core::keep_moved_bytes), which puts them into the kernel pipe.
    const ssize_t put = write_impl(bounce.data(), static_cast<size_t>(n), seekable);
    if (!seekable && put < n && core::call_moved()) {
      const size_t at = put > 0 ? static_cast<size_t>(put) : 0;
      core::keep_moved_bytes(bounce.release(), at, static_cast<size_t>(n) - at);
      moved += n;
      break;
    }
    if (put > 0) moved += put;
    if (put < 0) {
      if (!moved) err = put;
      break;
    }
    if (put < n || static_cast<size_t>(n) < want) break;
  }
  if (seekable && moved > 0) {
    if (pos)
      *pos = at + moved;
    else
      (void)::lseek(in_fd, at + moved, SEEK_SET);
  }
  return moved > 0 ? moved : err;
}

}  // namespace uepoll::objects
