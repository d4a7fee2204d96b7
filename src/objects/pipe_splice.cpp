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
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

namespace uepoll::objects {

namespace {

constexpr int kMaxFreed = core::kSpliceChunk / kPipePage + 2;

// Receives the n bytes a MSG_PEEK of stream socket fd saw, never waiting
// (another reader may have taken them: then fewer).
void take_peeked(int fd, size_t n, char* buf) {
  while (n) {
    const ssize_t got = ::recv(fd, buf, n, MSG_DONTWAIT);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return;
    n -= static_cast<size_t>(got);
  }
}

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
  return n ? core::tee_push(to, bounce.data(), n) : 0;
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

// The take after wait_room.  Linux holds the pipe's lock from its wait for
// room to the move; here another writer can fill the pipe in between, and
// a call that must not give -EAGAIN (blocking, nothing moved yet) waits
// for room again.
ssize_t PipeWriter::take_what_fits(const void* buf, size_t n, bool wait_again) noexcept {
  ssize_t put = write_impl(buf, n, true);
  while (put == -EAGAIN && wait_again) {
    if (const long e = wait_room(false)) return e;
    put = write_impl(buf, n, true);
  }
  return put;
}

// vmsplice_to_pipe: waits for room, then takes what fits.
long PipeWriter::vmsplice(const struct iovec* iov, int iovcnt, size_t, bool nonblock) noexcept {
  if (const long e = wait_room(nonblock)) return e;
  long moved = 0;
  for (int i = 0; i < iovcnt; ++i) {
    if (!iov[i].iov_len) continue;
    const ssize_t put = take_what_fits(iov[i].iov_base, iov[i].iov_len, !moved && !nonblock);
    if (put < 0) return moved ? moved : put;
    moved += put;
    if (static_cast<size_t>(put) < iov[i].iov_len) break;
  }
  return moved;
}

// splice_pipe_to_pipe with a kernel pipe as the source: the source is
// waited for first (ipipe_prep, inside peek_kernel_pipe), then room here
// (opipe_prep); what this pipe took is then consumed from the kernel pipe,
// and the rest stays there.  So a pipe filled by another writer meanwhile,
// or handed over to the kernel (core/handover.h), loses nothing; a
// blocking call that found it filled waits for room again, as Linux's
// retry does.  Later rounds, up to len, never wait.
long PipeWriter::splice_from_kernel_pipe(int in_fd, size_t len, bool nonblock) noexcept {
  core::SpliceBounce bounce;
  if (!bounce.data()) return -ENOMEM;
  long moved = 0;
  while (static_cast<size_t>(moved) < len) {
    const long n = core::peek_kernel_pipe(in_fd, bounce.data(), len - static_cast<size_t>(moved), nonblock || moved);
    if (n < 0) return moved ? moved : n;
    if (!moved)
      if (const long e = wait_room(nonblock)) return e;
    if (n == 0) break;
    const ssize_t put = take_what_fits(bounce.data(), static_cast<size_t>(n), !moved && !nonblock);
    if (put < 0) return moved ? moved : put;
    core::consume_kernel_pipe(in_fd, static_cast<size_t>(put), bounce.data());
    moved += put;
    if (put < n) break;
  }
  return moved;
}

long PipeWriter::splice_from_kernel(int in_fd, long long* pos, size_t len, bool nonblock) noexcept {
  struct stat st;
  if (::fstat(in_fd, &st) < 0) return -errno;
  if (S_ISFIFO(st.st_mode)) return splice_from_kernel_pipe(in_fd, len, nonblock);
  KernelSource src{in_fd, S_ISREG(st.st_mode) || S_ISBLK(st.st_mode), false, 0};
  if (S_ISSOCK(st.st_mode)) {
    int type = 0, domain = 0;
    socklen_t tl = sizeof type, dl = sizeof domain;
    src.stream = ::getsockopt(in_fd, SOL_SOCKET, SO_TYPE, &type, &tl) == 0 && type == SOCK_STREAM;
    // unix_stream_splice_read honours SPLICE_F_NONBLOCK (tcp_splice_read
    // waits as the socket's own O_NONBLOCK says).
    if (src.stream && nonblock && ::getsockopt(in_fd, SOL_SOCKET, SO_DOMAIN, &domain, &dl) == 0 && domain == AF_UNIX)
      src.peek_flags = MSG_DONTWAIT;
  }
  core::SpliceBounce bounce;
  if (!bounce.data()) return -ENOMEM;
  for (;;) {
    if (const long room = wait_room(nonblock)) return room;
    if (len == 0) return 0;  // do_splice_read: "if (unlikely(!len)) return 0"
    bool raced = false;
    const long r = splice_from_kernel_file(src, pos, len, bounce, &raced);
    // Another writer filled the pipe after the wait for room, before
    // anything moved: a blocking call waits again (Linux holds the pipe's
    // lock across both).
    if (!raced || nonblock) return r;
  }
}

// One round of splice_from_kernel for any source but a pipe.  A regular
// file or block device is read with pread (nothing read is lost: it is
// read again), a stream socket is looked at with MSG_PEEK and only what
// the pipe took is received; both write what fits.  Any other source
// (a datagram socket, a device) is read with read() and what it gave is
// written whole, waiting for room.  *raced: the pipe was full before
// anything moved (-EAGAIN).
long PipeWriter::splice_from_kernel_file(KernelSource src, long long* pos, size_t len, core::SpliceBounce& bounce,
                                         bool* raced) noexcept {
  Pipe& p = *pipe_;
  long long at = 0;
  if (src.seekable) {
    at = pos ? *pos : static_cast<long long>(::lseek(src.fd, 0, SEEK_CUR));
    if (at < 0) src.seekable = false;
  }
  p.mu_.lock();
  const size_t free_slots = p.ring_size_ - (p.head_ - p.tail_);
  p.mu_.unlock();
  if (!free_slots) {
    *raced = true;
    return -EAGAIN;
  }
  // One buffer per page of the file (a buffer ends at a page boundary).
  const size_t limit = free_slots * kPipePage - (src.seekable ? static_cast<size_t>(at % kPipePage) : 0);
  if (len > limit) len = limit;
  const bool keeps = src.seekable || src.stream;  // what the pipe did not take stays in the source
  long moved = 0;
  long err = 0;
  while (static_cast<size_t>(moved) < len) {
    const size_t want = len - moved < core::kSpliceChunk ? len - moved : core::kSpliceChunk;
    const ssize_t n = src.seekable ? ::pread(src.fd, bounce.data(), want, at + moved)
                      : src.stream ? ::recv(src.fd, bounce.data(), want, MSG_PEEK | src.peek_flags)
                                   : ::read(src.fd, bounce.data(), want);
    if (n <= 0) {
      if (n < 0) err = -errno;
      break;
    }
    ssize_t put = write_impl(bounce.data(), static_cast<size_t>(n), keeps);
    // A source that cannot give back must have every byte it gave
    // written: a signal does not end the wait for room (its handler runs),
    // and those the write left for a pipe handed over meanwhile go with
    // the call to its caller (SpliceBounce::keep_unwritten), which puts
    // them into the kernel pipe.
    if (!keeps) {
      ssize_t in = put > 0 ? put : 0;
      while (in < n && (put > 0 || put == -EINTR) && !core::call_moved()) {
        put = write_impl(bounce.data() + in, static_cast<size_t>(n - in), false);
        if (put > 0) in += put;
      }
      if (in) put = in;
    }
    if (!keeps && bounce.keep_unwritten(put, static_cast<size_t>(n))) {
      moved += n;
      break;
    }
    if (src.stream && put > 0) take_peeked(src.fd, static_cast<size_t>(put), bounce.data());
    if (put > 0) moved += put;
    if (put < 0) {
      if (!moved) err = put;
      *raced = keeps && !moved && put == -EAGAIN;  // nothing taken from the source
      break;
    }
    if (put < n || static_cast<size_t>(n) < want) break;
  }
  if (src.seekable && moved > 0) {
    if (pos)
      *pos = at + moved;
    else
      (void)::lseek(src.fd, at + moved, SEEK_SET);
  }
  return moved > 0 ? moved : err;
}

}  // namespace uepoll::objects
