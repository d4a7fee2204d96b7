// socketpair_splice.cpp - sendfile and splice from a kernel descriptor into
// a uepoll socket pair (Linux do_sendfile -> splice_direct_to_actor,
// do_splice_from -> splice_to_socket).  The socket's own splice out is
// UnixSocket::splice_read (socketpair.cpp).
//
// Locks: none of its own (the connection's, inside write()); no lock held
// across the system calls on the kernel descriptor.
#include "objects/socketpair.h"

#include "core/splice.h"

#include <cerrno>
#include <sys/stat.h>
#include <unistd.h>

namespace uepoll::objects {

long UnixSocket::splice_from_kernel(int in_fd, long long* pos, size_t len, bool nonblock) noexcept {
  if (len == 0) return 0;
  core::SpliceBounce bounce;
  if (!bounce.data()) return -ENOMEM;
  struct stat st;
  if (::fstat(in_fd, &st) < 0) return -errno;
  const size_t cap = skb_size_cap();
  if (S_ISFIFO(st.st_mode)) return splice_from_kernel_pipe(in_fd, len < cap ? len : cap, nonblock, bounce.data());
  // Else a regular file or a block device: sendfile takes no other source
  // for a socket (splice_direct_to_actor), splice only a pipe.
  const long long at = pos ? *pos : static_cast<long long>(::lseek(in_fd, 0, SEEK_CUR));
  if (at < 0) return -EINVAL;
  long moved = 0;
  long err = 0;
  while (static_cast<size_t>(moved) < len) {
    const size_t want = len - moved < core::kSpliceChunk ? len - moved : core::kSpliceChunk;
    const ssize_t n = ::pread(in_fd, bounce.data(), want, at + moved);
    if (n <= 0) {
      if (n < 0) err = -errno;
      break;
    }
    const ssize_t put = write(bounce.data(), static_cast<size_t>(n));
    if (put > 0) moved += put;
    if (put < 0) {
      if (!moved) err = put;
      break;
    }
    if (put < n) break;
  }
  if (moved > 0) {
    if (pos)
      *pos = at + moved;
    else
      (void)::lseek(in_fd, at + moved, SEEK_SET);
  }
  return moved > 0 ? moved : err;
}

// splice_to_socket: the pipe's bytes are looked at with tee (waiting for
// some unless nonblock, as Linux waits for the pipe first), written as
// this socket's write() takes them (its O_NONBLOCK, SO_SNDTIMEO, SIGPIPE),
// and only what it took is consumed.  So a full socket, a signal or a
// hand-over to the kernel (core/handover.h) leaves the rest in the pipe,
// as Linux's pipe lock does.  A second reader of the same kernel pipe
// between the tee and the consuming read would make the two differ: Linux
// holds the pipe across both, uepoll cannot lock a kernel pipe.
long UnixSocket::splice_from_kernel_pipe(int in_fd, size_t len, bool nonblock, char* bounce) noexcept {
  const long n = core::peek_kernel_pipe(in_fd, bounce, len, nonblock);
  if (n <= 0) return n;
  const ssize_t put = write(bounce, static_cast<size_t>(n));
  if (put > 0) core::consume_kernel_pipe(in_fd, static_cast<size_t>(put), bounce);
  return put;
}

}  // namespace uepoll::objects
