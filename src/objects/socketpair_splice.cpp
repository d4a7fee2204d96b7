// socketpair_splice.cpp - sendfile and splice from a kernel descriptor into
// a uepoll socket pair (Linux do_sendfile -> splice_direct_to_actor,
// do_splice_from -> splice_to_socket).  The socket's own splice out is
// UnixSocket::splice_read (socketpair.cpp).
//
// Locks: none of its own (the connection's, inside write()); no lock held
// across the system calls on the kernel descriptor.
#include "objects/socketpair.h"

#include "core/handover.h"
#include "core/splice.h"

#include <cerrno>
#include <fcntl.h>
#include <sys/ioctl.h>
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
  if (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode)) {
    // Another kernel file that cannot give back what the socket does not
    // take (sendfile from a socket or a device): one read of at most one
    // skb, which a writable socket takes whole (Linux's internal pipe
    // drops what the socket did not take); what a pair handed over
    // meanwhile did not take goes with the call to its caller
    // (core::keep_moved_bytes), as the pipe's does.
    const size_t want = len < cap ? len : cap;
    const ssize_t n = ::read(in_fd, bounce.data(), want);
    if (n <= 0) return n < 0 ? -errno : 0;
    const ssize_t put = write(bounce.data(), static_cast<size_t>(n));
    if (put < n && core::call_moved()) {
      const size_t at = put > 0 ? static_cast<size_t>(put) : 0;
      core::keep_moved_bytes(bounce.release(), at, static_cast<size_t>(n) - at);
      return n;
    }
    return put;
  }
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
  int scratch[2];
  if (::pipe2(scratch, O_CLOEXEC) < 0) return -errno;
  long r = ::tee(in_fd, scratch[1], len, nonblock ? SPLICE_F_NONBLOCK : 0);
  if (r < 0) r = -errno;
  if (r > 0) {
    const ssize_t n = ::read(scratch[0], bounce, static_cast<size_t>(r));
    r = n < 0 ? -errno : n ? write(bounce, static_cast<size_t>(n)) : 0;
  }
  ::close(scratch[0]);
  ::close(scratch[1]);
  for (long eaten = 0; r > 0 && eaten < r;) {
    int queued = 0;  // never a read that waits: another reader may have taken them
    if (::ioctl(in_fd, FIONREAD, &queued) < 0 || queued <= 0) break;
    const size_t want = static_cast<size_t>(r - eaten < queued ? r - eaten : queued);
    const ssize_t n = ::read(in_fd, bounce, want);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    eaten += n;
  }
  return r;
}

}  // namespace uepoll::objects
