// pipe_splice.cpp - splice and sendfile from a kernel descriptor into a
// uepoll pipe, and sendfile into a uepoll socket (Linux fs/splice.c splice_file_to_pipe, wait_for_space,
// do_splice_read; filemap_splice_read fills a buffer per page).  Locks:
// the write end's wq() (6) through core::block_on while waiting for room,
// Pipe::mu_ (leaf, 8) to count the free buffers; the copy goes through
// PipeWriter::write_impl (pipe.cpp), never with a lock held across the
// system calls on in_fd.
#include "objects/pipe.h"

#include "core/alloc.h"
#include "core/block.h"

#include <cerrno>
#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <unistd.h>

namespace uepoll::objects {

long pipe_splice_from_kernel(core::File* out, int in_fd, long long* pos, size_t len, bool nonblock) noexcept {
  auto* w = static_cast<PipeWriter*>(out);
  Pipe& p = *w->pipe();
  // Linux wait_for_space: no readers first, then room.
  const long room = core::block_on(w->wq(), nonblock, EPOLLOUT | EPOLLWRNORM, [&]() -> long {
    p.mu_.lock();
    const long r = !p.readers_ ? -EPIPE : p.full_locked() ? -EAGAIN : 0;
    p.mu_.unlock();
    return r;
  });
  if (room == -EPIPE) raise_sigpipe();
  if (room < 0) return room;
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
  constexpr size_t kChunk = 65536;
  char* bounce = static_cast<char*>(core::raw_alloc(len < kChunk ? len : kChunk));
  if (!bounce) return -ENOMEM;
  long moved = 0;
  long err = 0;
  while (static_cast<size_t>(moved) < len) {
    const size_t want = len - moved < kChunk ? len - moved : kChunk;
    const ssize_t n = seekable ? ::pread(in_fd, bounce, want, at + moved) : ::read(in_fd, bounce, want);
    if (n <= 0) {
      if (n < 0) err = -errno;
      break;
    }
    // A seekable source keeps what the pipe did not take; any other must
    // have every byte it gave written.
    const ssize_t put = w->write_impl(bounce, static_cast<size_t>(n), seekable);
    if (put > 0) moved += put;
    if (put < 0) {
      if (!moved) err = put;
      break;
    }
    if (put < n || static_cast<size_t>(n) < want) break;
  }
  core::raw_free(bounce);
  if (seekable && moved > 0) {
    if (pos)
      *pos = at + moved;
    else
      (void)::lseek(in_fd, at + moved, SEEK_SET);
  }
  return moved > 0 ? moved : err;
}

long file_send_from_kernel(core::File* out, int in_fd, long long* pos, size_t len) noexcept {
  long long at = pos ? *pos : static_cast<long long>(::lseek(in_fd, 0, SEEK_CUR));
  if (at < 0) return -EINVAL;
  if (len == 0) return 0;
  constexpr size_t kChunk = 65536;
  char* bounce = static_cast<char*>(core::raw_alloc(len < kChunk ? len : kChunk));
  if (!bounce) return -ENOMEM;
  long moved = 0;
  long err = 0;
  while (static_cast<size_t>(moved) < len) {
    const size_t want = len - moved < kChunk ? len - moved : kChunk;
    const ssize_t n = ::pread(in_fd, bounce, want, at + moved);
    if (n <= 0) {
      if (n < 0) err = -errno;
      break;
    }
    const ssize_t put = out->write(bounce, static_cast<size_t>(n));
    if (put > 0) moved += put;
    if (put < 0) {
      if (!moved) err = put;
      break;
    }
    if (put < n) break;
  }
  core::raw_free(bounce);
  if (moved > 0) {
    if (pos)
      *pos = at + moved;
    else
      (void)::lseek(in_fd, at + moved, SEEK_SET);
  }
  return moved > 0 ? moved : err;
}

}  // namespace uepoll::objects
