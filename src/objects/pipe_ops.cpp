// pipe_ops.cpp - the operations both pipe ends share beyond read/write
// (Linux fs/pipe.c pipe_ioctl, pipefifo_fops, pipe_fcntl; fs/fcntl.c
// setfl for O_DIRECT and fasync): FIONREAD, fstat, F_GETPIPE_SZ /
// F_SETPIPE_SZ (pipe_size.cpp), and what the preload's fork conversion reads.
// Locks: the ring's mu_ (leaf, 14) for FIONREAD.
#include "core/user_memory.h"
#include "objects/pipe.h"

#include <cerrno>
#include <cstdint>
#include <fcntl.h>
#include <sys/ioctl.h>

namespace uepoll::objects {

namespace {

long pipe_ioctl(Pipe* p, unsigned long request, void* arg) noexcept {
  if (request != FIONREAD) return -ENOTTY;  // pipe_ioctl
  const int value = pipe_queued_bytes(p);
  if (!core::user_readable(arg, sizeof(int))) return -EFAULT;  // put_user
  *static_cast<int*>(arg) = value;
  return 0;
}

long pipe_fstat(Pipe* p, struct stat* st) noexcept {
  if (long r = core::stat_template(core::StatKind::kFifo, st)) return r;
  // Both ends share one inode, as in Linux: the ring's address.
  st->st_ino = core::kInoBase + (reinterpret_cast<uintptr_t>(p) >> 6);
  return 0;
}

}  // namespace

long PipeReader::ioctl(unsigned long request, void* arg) noexcept { return pipe_ioctl(pipe_, request, arg); }
long PipeWriter::ioctl(unsigned long request, void* arg) noexcept { return pipe_ioctl(pipe_, request, arg); }
long PipeReader::fstat(struct stat* st) noexcept { return pipe_fstat(pipe_, st); }
long PipeWriter::fstat(struct stat* st) noexcept { return pipe_fstat(pipe_, st); }
long PipeReader::pipe_size(int cmd, unsigned long arg) noexcept { return pipe_size_fcntl(this, cmd, arg); }
long PipeWriter::pipe_size(int cmd, unsigned long arg) noexcept { return pipe_size_fcntl(this, cmd, arg); }

bool PipeReader::stream_state(core::StreamState* out) noexcept {
  *out = {pipe_, 0, 0, false};
  return true;
}
bool PipeWriter::stream_state(core::StreamState* out) noexcept {
  *out = {pipe_, 1, 0, false};
  return true;
}

}  // namespace uepoll::objects
