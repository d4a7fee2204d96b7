// splice_api.cpp - uep_splice, uep_sendfile, uep_copy_file_range: Linux
// 6.18's argument checks in its order (fs/splice.c SYSCALL splice,
// __do_splice, do_splice; fs/read_write.c do_sendfile, copy_file_range),
// then objects/pipe_splice.cpp for what uepoll moves: a kernel descriptor
// into a uepoll pipe (splice, sendfile) or, for sendfile, into a uepoll
// socket.  Two kernel descriptors go to the kernel.  Locks: none here.
#include <uepoll/uepoll.h>

#include "capi/edge.h"
#include "core/user_memory.h"
#include "fd/table.h"
#include "objects/pipe.h"

#include <cerrno>
#include <cstdint>
#include <type_traits>
#include <fcntl.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

using uepoll::capi::from_kernel;
using uepoll::capi::to_c_ssize;
using uepoll::core::FileKind;
using uepoll::fd::FileRef;

namespace {

static_assert(std::is_same_v<int64_t, loff_t>, "uepoll.h declares loff_t offsets as int64_t");

constexpr unsigned kSpliceAll = SPLICE_F_MOVE | SPLICE_F_NONBLOCK | SPLICE_F_MORE | SPLICE_F_GIFT;

// One side of the call: a kernel descriptor (its F_GETFL and fstat) or a
// uepoll file (referenced).
struct Side {
  int fd = -1;
  FileRef file;
  int flags = 0;       // status flags
  mode_t type = 0;     // S_IFMT of a kernel descriptor
  bool is_pipe = false;

  // Linux fdget: -EBADF when not open.
  long open(int n) {
    fd = n;
    if (uepoll::fd::in_range(n)) {
      file = FileRef(uepoll::fd::lookup(n));
      if (!file) return -EBADF;
      flags = file->status_flags();
      is_pipe = file->kind() == FileKind::kPipeRead || file->kind() == FileKind::kPipeWrite;
      return 0;
    }
    flags = n < 0 ? -1 : ::fcntl(n, F_GETFL);
    if (flags < 0) return -EBADF;
    struct stat st;
    if (::fstat(n, &st) == 0) type = st.st_mode & S_IFMT;
    is_pipe = S_ISFIFO(type);
    return 0;
  }
  bool readable() const { return (flags & O_ACCMODE) != O_WRONLY; }   // FMODE_READ
  bool writable() const { return (flags & O_ACCMODE) != O_RDONLY; }   // FMODE_WRITE
  // FMODE_PREAD: a kernel file that can be read at an offset.
  bool preadable() const { return !file && ::lseek(fd, 0, SEEK_CUR) >= 0; }
  // Has ->splice_read: every kernel file with a type (anonymous inodes, as
  // eventfd or epoll, have none).
  bool kernel_source() const { return !file && type != 0; }
};

const void* pipe_of(const uepoll::core::File* f) {
  if (f->kind() == FileKind::kPipeRead) return static_cast<const uepoll::objects::PipeReader*>(f)->pipe();
  return static_cast<const uepoll::objects::PipeWriter*>(f)->pipe();
}

long do_splice(int fd_in, loff_t* off_in, int fd_out, loff_t* off_out, size_t len, unsigned flags) {
  if (!uepoll::fd::in_range(fd_in) && !uepoll::fd::in_range(fd_out))
    return from_kernel(::splice(fd_in, off_in, fd_out, off_out, len, flags));
  if (len == 0) return 0;
  if (flags & ~kSpliceAll) return -EINVAL;
  Side in, out;
  if (long e = in.open(fd_in)) return e;
  if (long e = out.open(fd_out)) return e;
  // __do_splice: offsets on pipes, then the copies of the offsets.
  if (in.is_pipe && off_in) return -ESPIPE;
  if (out.is_pipe && off_out) return -ESPIPE;
  if (off_in && !uepoll::core::user_readable(off_in, sizeof *off_in)) return -EFAULT;
  if (off_out && !uepoll::core::user_readable(off_out, sizeof *off_out)) return -EFAULT;
  // do_splice.
  if (!in.readable() || !out.writable()) return -EBADF;
  if (!in.is_pipe && !out.is_pipe) return -EINVAL;
  if (in.is_pipe && out.is_pipe && in.file && out.file && pipe_of(in.file.get()) == pipe_of(out.file.get()))
    return -EINVAL;  // "Splicing to self would be fun, but..."
  if (!out.file || out.file->kind() != FileKind::kPipeWrite || in.file) return -EOPNOTSUPP;  // not moved by uepoll
  bool nonblock = (flags & SPLICE_F_NONBLOCK) || (out.flags & O_NONBLOCK);
  if (in.is_pipe) {
    nonblock |= (in.flags & O_NONBLOCK) != 0;  // splice_pipe_to_pipe
    return uepoll::objects::pipe_splice_from_kernel(out.file.get(), fd_in, nullptr, len, nonblock);
  }
  if (off_in && !in.preadable()) return -EINVAL;
  if (!in.kernel_source()) return -EINVAL;  // no ->splice_read
  long long pos = off_in ? *off_in : 0;
  const long r = uepoll::objects::pipe_splice_from_kernel(out.file.get(), fd_in, off_in ? &pos : nullptr, len, nonblock);
  if (off_in && r > 0) *off_in = pos;
  return r;
}

long do_sendfile(int out_fd, int in_fd, off_t* offset, size_t count) {
  if (!uepoll::fd::in_range(out_fd) && !uepoll::fd::in_range(in_fd))
    return from_kernel(::sendfile(out_fd, in_fd, offset, count));
  if (offset && !uepoll::core::user_readable(offset, sizeof *offset)) return -EFAULT;
  Side in, out;
  if (long e = in.open(in_fd)) return e;
  if (!in.readable()) return -EBADF;
  if (offset && !in.preadable()) return -ESPIPE;
  if (offset && *offset < 0) return -EINVAL;  // rw_verify_area
  if (long e = out.open(out_fd)) return e;
  if (!out.writable()) return -EBADF;
  if (in.file || !in.kernel_source()) return -EINVAL;  // no ->splice_read
  long long pos = offset ? *offset : 0;
  long r;
  if (out.file->kind() == FileKind::kPipeWrite) {
    r = uepoll::objects::pipe_splice_from_kernel(out.file.get(), in_fd, offset ? &pos : nullptr, count,
                                                 (out.flags & O_NONBLOCK) != 0);
  } else if (out.file->kind() == FileKind::kSocket) {
    r = uepoll::objects::file_send_from_kernel(out.file.get(), in_fd, offset ? &pos : nullptr, count);
  } else {
    return -EINVAL;
  }
  if (offset && r > 0) *offset = static_cast<off_t>(pos);
  return r;
}

long do_copy_file_range(int fd_in, loff_t* off_in, int fd_out, loff_t* off_out, size_t len, unsigned flags) {
  if (!uepoll::fd::in_range(fd_in) && !uepoll::fd::in_range(fd_out))
    return from_kernel(::copy_file_range(fd_in, off_in, fd_out, off_out, len, flags));
  Side in, out;
  if (long e = in.open(fd_in)) return e;
  if (long e = out.open(fd_out)) return e;
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
ssize_t uep_sendfile(int out_fd, int in_fd, off_t* offset, size_t count) {
  return to_c_ssize(do_sendfile(out_fd, in_fd, offset, count));
}
ssize_t uep_copy_file_range(int fd_in, int64_t* off_in, int fd_out, int64_t* off_out, size_t len,
                            unsigned int flags) {
  return to_c_ssize(do_copy_file_range(fd_in, off_in, fd_out, off_out, len, flags));
}

}  // extern "C"
