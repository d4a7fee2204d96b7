// socketpair_splice.cpp - sendfile and splice from a kernel descriptor into
// a uepoll socket pair (Linux do_sendfile -> splice_direct_to_actor,
// do_splice_from -> sock_splice_write).  The socket's own splice out is
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

long UnixSocket::splice_from_kernel(int in_fd, long long* pos, size_t len, bool) noexcept {
  if (len == 0) return 0;
  core::SpliceBounce bounce;
  if (!bounce.data()) return -ENOMEM;
  struct stat st;
  if (::fstat(in_fd, &st) < 0) return -errno;
  if (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode)) {
    // A kernel pipe or socket cannot give back what the socket does not
    // take: one read of at most one skb, which a writable socket takes whole.
    const size_t cap = skb_size_cap();
    const size_t want = len < cap ? len : cap;
    const ssize_t n = ::read(in_fd, bounce.data(), want);
    if (n <= 0) return n < 0 ? -errno : 0;
    return write(bounce.data(), static_cast<size_t>(n));
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

}  // namespace uepoll::objects
