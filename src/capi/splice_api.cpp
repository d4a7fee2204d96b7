// splice_api.cpp - uep_splice, uep_tee, uep_vmsplice, uep_sendfile,
// uep_copy_file_range: Linux 6.18's argument checks in its order
// (fs/splice.c SYSCALL splice, __do_splice, do_splice, do_tee, vmsplice;
// fs/read_write.c do_sendfile, copy_file_range), then the files' splice
// operations (core::File::splice_read, splice_from_kernel, tee, vmsplice,
// splice_sink; a kernel descriptor on the other side is a
// core::KernelSink).  Two kernel descriptors go to the kernel.  Also
// uep__put_moved_bytes, the preload's end of a splice that left a file
// being handed over (core/handover.h).  Locks: none here.
#include <uepoll/uepoll.h>

#include "capi/edge.h"
#include "capi/preload_support.h"
#include "capi/rw_check.h"
#include "core/alloc.h"
#include "core/handover.h"
#include "core/splice.h"
#include "core/user_memory.h"
#include "fd/target.h"

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <csignal>
#include <ctime>
#include <fcntl.h>
#include <poll.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

using uepoll::capi::from_kernel;
using uepoll::capi::to_c_ssize;
using uepoll::core::KernelSink;
using uepoll::core::SpliceSink;
using uepoll::fd::Target;

namespace {

static_assert(std::is_same_v<int64_t, loff_t>, "uepoll.h declares loff_t offsets as int64_t");

constexpr unsigned kSpliceAll = SPLICE_F_MOVE | SPLICE_F_NONBLOCK | SPLICE_F_MORE | SPLICE_F_GIFT;

// One side of the call: a kernel descriptor (its F_GETFL and fstat) or a
// pinned uepoll file.
struct Side {
  explicit Side(int n) : t(n) {}
  Target t;
  int flags = 0;    // status flags
  mode_t type = 0;  // S_IFMT of a kernel descriptor
  bool is_pipe = false;
  // Linux fdget: false (EBADF) when not open.
  bool open() {
    if (core_file()) {
      flags = t->status_flags();
      is_pipe = t->is_pipe();
      return true;
    }
    if (t.closed() || t.fd() < 0) return false;
    flags = ::fcntl(t.fd(), F_GETFL);
    if (flags < 0) return false;
    struct stat st;
    if (::fstat(t.fd(), &st) == 0) type = st.st_mode & S_IFMT;
    is_pipe = S_ISFIFO(type);
    return true;
  }
  uepoll::core::File* core_file() const { return t.file(); }
  bool readable() const { return (flags & O_ACCMODE) != O_WRONLY; }  // FMODE_READ
  bool writable() const { return (flags & O_ACCMODE) != O_RDONLY; }  // FMODE_WRITE
  // FMODE_PREAD / FMODE_PWRITE: a kernel file with a position.
  bool positioned() const { return !core_file() && ::lseek(t.fd(), 0, SEEK_CUR) >= 0; }
  // Has ->splice_read / ->splice_write: every kernel file with a type
  // (anonymous inodes, as eventfd or epoll, have neither).
  bool kernel_spliceable() const { return !core_file() && type != 0; }
};

bool copy_off(const loff_t* user, long long* out) {
  if (!uepoll::core::user_readable(user, sizeof *user)) return false;
  std::memcpy(out, user, sizeof *out);
  return true;
}

// A pipe (uepoll's or the kernel's) as one splice's destination, noting a
// push that found it full.
// Linux holds the pipe's lock from its wait for room to the move
// (splice_file_to_pipe), or goes round again (splice_pipe_to_pipe), so a
// blocking splice never fails for want of room; uepoll waits for room and
// pushes later, and another writer may fill the pipe in between.
class FullNotingSink final : public SpliceSink {
 public:
  explicit FullNotingSink(SpliceSink& to) noexcept : to_(to) {}
  long wait_room(bool nonblock) noexcept override { return to_.wait_room(nonblock); }
  ssize_t push(const char* buf, size_t n) noexcept override {
    const ssize_t r = to_.push(buf, n);
    full_ |= r == -EAGAIN;
    return r;
  }
  const void* pipe_id() const noexcept override { return to_.pipe_id(); }
  bool found_full() const noexcept { return full_; }

 private:
  SpliceSink& to_;
  bool full_ = false;
};

// Moves up to len bytes from `in` (at *in_pos when set) to `out` (at
// *out_pos when set): the source file's splice_read into the destination,
// or a kernel source into the destination file.  A blocking splice into a
// pipe that moved nothing because the pipe was full at the push (it had
// room at the wait) is made again: a splice_read consumes only what its
// sink took, and waits for room first.
long move(Side& in, long long* in_pos, Side& out, long long* out_pos, size_t len, bool nonblock) {
  if (in.core_file()) {
    KernelSink ks(out.t.fd(), out_pos, out.is_pipe, nullptr, &in.core_file()->wq());
    SpliceSink* sink = out.core_file() ? out.core_file()->splice_sink() : &ks;
    if (!sink || (!out.core_file() && !out.kernel_spliceable())) return -EINVAL;  // no ->splice_write
    for (;;) {
      FullNotingSink to(*sink);
      const long r = in.core_file()->splice_read(to, len, nonblock);
      if (r != -EAGAIN || nonblock || !to.found_full() || !out.is_pipe) return r;
    }
  }
  if (!in.kernel_spliceable()) return -EINVAL;  // no ->splice_read
  return out.core_file()->splice_from_kernel(in.t.fd(), in_pos, len, nonblock);
}

long do_splice(int fd_in, loff_t* off_in, int fd_out, loff_t* off_out, size_t len, unsigned flags) {
  if (Target::both_kernel(fd_in, fd_out)) return from_kernel(::splice(fd_in, off_in, fd_out, off_out, len, flags));
  if (len == 0) return 0;
  if (flags & ~kSpliceAll) return -EINVAL;
  Side in(fd_in), out(fd_out);
  if (!in.open() || !out.open()) return -EBADF;
  // __do_splice: offsets on pipes, then the copies of the offsets.
  if (in.is_pipe && off_in) return -ESPIPE;
  if (out.is_pipe && off_out) return -ESPIPE;
  long long pin = 0, pout = 0;
  if (off_out && !copy_off(off_out, &pout)) return -EFAULT;
  if (off_in && !copy_off(off_in, &pin)) return -EFAULT;
  // do_splice.
  if (!in.readable() || !out.writable()) return -EBADF;
  bool nonblock = (flags & SPLICE_F_NONBLOCK) != 0;
  if (in.is_pipe && out.is_pipe) {
    if (in.core_file() && out.core_file() && in.core_file()->pipe_id() == out.core_file()->pipe_id())
      return -EINVAL;  // "Splicing to self would be fun, but..."
    nonblock |= ((in.flags | out.flags) & O_NONBLOCK) != 0;
  } else if (in.is_pipe) {
    if (off_out && !out.positioned()) return -EINVAL;
    if (out.flags & O_APPEND) return -EINVAL;
    if (off_out && pout < 0) return -EINVAL;  // rw_verify_area
    nonblock |= (in.flags & O_NONBLOCK) != 0;
  } else if (out.is_pipe) {
    if (off_in && !in.positioned()) return -EINVAL;
    if (off_in && pin < 0) return -EINVAL;
    nonblock |= (out.flags & O_NONBLOCK) != 0;
  } else {
    return -EINVAL;
  }
  const long r = move(in, off_in ? &pin : nullptr, out, off_out ? &pout : nullptr, len, nonblock);
  if (r >= 0 && off_out) std::memcpy(off_out, &pout, sizeof pout);
  if (r >= 0 && off_in) std::memcpy(off_in, &pin, sizeof pin);
  return r;
}

long do_tee(int fd_in, int fd_out, size_t len, unsigned flags) {
  if (Target::both_kernel(fd_in, fd_out)) return from_kernel(::tee(fd_in, fd_out, len, flags));
  if (flags & ~kSpliceAll) return -EINVAL;
  if (len == 0) return 0;
  Side in(fd_in), out(fd_out);
  if (!in.open() || !out.open()) return -EBADF;
  if (!in.readable() || !out.writable()) return -EBADF;
  if (!in.is_pipe || !out.is_pipe) return -EINVAL;
  if (in.core_file() && out.core_file() && in.core_file()->pipe_id() == out.core_file()->pipe_id()) return -EINVAL;
  const bool nonblock = (flags & SPLICE_F_NONBLOCK) || ((in.flags | out.flags) & O_NONBLOCK);
  KernelSink ks(fd_out, nullptr, true, nullptr, in.core_file() ? &in.core_file()->wq() : nullptr);
  SpliceSink* sink = out.core_file() ? out.core_file()->splice_sink() : &ks;
  if (in.core_file()) return in.core_file()->tee(*sink, len, nonblock);
  return uepoll::core::tee_kernel_pipe(fd_in, *sink, len, nonblock);
}

long do_vmsplice(int fd, const struct iovec* iov, unsigned long nr_segs, unsigned flags) {
  if (uepoll::fd::Target::is_kernel(fd)) return from_kernel(::vmsplice(fd, iov, nr_segs, flags));
  if (flags & ~kSpliceAll) return -EINVAL;
  Target t(fd);
  if (!t.file()) return -EBADF;
  // vmsplice_type: FMODE_WRITE moves into the pipe, else FMODE_READ out.
  const int mode = t->status_flags() & O_ACCMODE;
  if (mode != O_WRONLY && mode != O_RDWR && mode != O_RDONLY) return -EBADF;
  size_t total = 0;
  if (const long e = uepoll::capi::check_iov(iov, nr_segs > 1024 ? -1L : static_cast<long>(nr_segs), &total))
    return e;
  if (total == 0) return 0;
  if (!t->is_pipe()) return -EBADF;  // get_pipe_info
  // SPLICE_F_GIFT: the pages are copied; nothing to give.
  return t->vmsplice(iov, static_cast<int>(nr_segs), total, (flags & SPLICE_F_NONBLOCK) != 0);
}

long do_sendfile(int out_fd, int in_fd, off_t* offset, size_t count) {
  if (Target::both_kernel(out_fd, in_fd)) return from_kernel(::sendfile(out_fd, in_fd, offset, count));
  off_t off = 0;
  if (offset && !uepoll::core::user_readable(offset, sizeof *offset)) return -EFAULT;
  if (offset) std::memcpy(&off, offset, sizeof off);
  Side in(in_fd);
  if (!in.open() || !in.readable()) return -EBADF;
  if (offset && !in.positioned()) return -ESPIPE;
  if (offset && off < 0) return -EINVAL;  // rw_verify_area
  if (count > uepoll::capi::kMaxRwCount) count = uepoll::capi::kMaxRwCount;
  Side out(out_fd);
  if (!out.open() || !out.writable()) return -EBADF;
  // do_splice_direct (not a pipe: O_APPEND is EINVAL) or splice_file_to_pipe.
  if (!out.is_pipe && (out.flags & O_APPEND)) return -EINVAL;
  if (in.is_pipe) return -EINVAL;  // a pipe has no ->splice_read
  // splice_direct_to_actor: only a regular file or a block device.
  if (!out.is_pipe && (in.core_file() || (!S_ISREG(in.type) && !S_ISBLK(in.type)))) return -EINVAL;
  if (count == 0 && !out.is_pipe) return 0;
  long long pos = off;
  const bool nonblock = out.is_pipe && (out.flags & O_NONBLOCK);
  const long r = move(in, offset ? &pos : nullptr, out, nullptr, count, nonblock);
  if (offset && r > 0) *offset = static_cast<off_t>(pos);
  return r;
}

long do_copy_file_range(int fd_in, loff_t* off_in, int fd_out, loff_t* off_out, size_t len, unsigned flags) {
  if (Target::both_kernel(fd_in, fd_out))
    return from_kernel(::copy_file_range(fd_in, off_in, fd_out, off_out, len, flags));
  Side in(fd_in), out(fd_out);
  if (!in.open() || !out.open()) return -EBADF;
  if (off_in && !uepoll::core::user_readable(off_in, sizeof *off_in)) return -EFAULT;
  if (off_out && !uepoll::core::user_readable(off_out, sizeof *off_out)) return -EFAULT;
  // vfs_copy_file_range: flags, then generic_file_rw_checks: a directory,
  // then "not a regular file" (every uepoll file).
  if (flags) return -EINVAL;
  if (S_ISDIR(in.type) || S_ISDIR(out.type)) return -EISDIR;
  return -EINVAL;
}

}  // namespace

extern "C" {

ssize_t uep_splice(int fd_in, int64_t* off_in, int fd_out, int64_t* off_out, size_t len, unsigned int flags) {
  return to_c_ssize(do_splice(fd_in, off_in, fd_out, off_out, len, flags));
}
ssize_t uep_tee(int fd_in, int fd_out, size_t len, unsigned int flags) {
  return to_c_ssize(do_tee(fd_in, fd_out, len, flags));
}
ssize_t uep_vmsplice(int fd, const struct iovec* iov, size_t nr_segs, unsigned int flags) {
  return to_c_ssize(do_vmsplice(fd, iov, nr_segs, flags));
}
ssize_t uep_sendfile(int out_fd, int in_fd, off_t* offset, size_t count) {
  return to_c_ssize(do_sendfile(out_fd, in_fd, offset, count));
}
ssize_t uep_copy_file_range(int fd_in, int64_t* off_in, int fd_out, int64_t* off_out, size_t len,
                            unsigned int flags) {
  return to_c_ssize(do_copy_file_range(fd_in, off_in, fd_out, off_out, len, flags));
}

// The source no longer has the kept bytes: they are written whole,
// waiting for room whatever O_NONBLOCK says.  A destination without
// readers drops them with no SIGPIPE (Linux had them in the pipe before
// its reader left; its next write raises the signal).
long uep__put_moved_bytes(int fd) {
  char* buf = nullptr;
  size_t off = 0, n = 0;
  uepoll::core::take_moved_bytes(&buf, &off, &n);
  if (!buf) return 0;
  sigset_t pipe_only, saved, pending;
  sigemptyset(&pipe_only);
  sigaddset(&pipe_only, SIGPIPE);
  sigemptyset(&pending);
  (void)sigpending(&pending);
  const bool was_pending = sigismember(&pending, SIGPIPE) == 1;
  (void)pthread_sigmask(SIG_BLOCK, &pipe_only, &saved);
  size_t done = 0;
  int err = 0;
  while (done < n) {
    const ssize_t r = uep_write(fd, buf + off + done, n - done);
    if (r > 0) {
      done += static_cast<size_t>(r);
    } else if (r < 0 && errno == EAGAIN) {
      struct pollfd p = {fd, POLLOUT, 0};
      (void)uep_poll(&p, 1, -1);
    } else if (r == 0 || errno != EINTR) {
      err = r == 0 ? EIO : errno;
      break;
    }
  }
  if (err == EPIPE && !was_pending) {
    const struct timespec zero = {0, 0};
    (void)sigtimedwait(&pipe_only, nullptr, &zero);
  }
  (void)pthread_sigmask(SIG_SETMASK, &saved, nullptr);
  uepoll::core::raw_free(buf);
  if (err) {
    errno = err;
    return -1;
  }
  return static_cast<long>(done);
}

}  // extern "C"
