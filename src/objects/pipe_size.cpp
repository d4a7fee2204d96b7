// pipe_size.cpp - the size of a pipe's ring: F_GETPIPE_SZ / F_SETPIPE_SZ
// (Linux fs/pipe.c pipe_fcntl, pipe_set_size, round_pipe_size,
// pipe_resize_ring).  Locks: Pipe::mu_ (leaf, 14) to read the size and to
// swap the ring; the new ring is allocated and the old one freed with no
// lock held; the writers are woken after mu_ is released.
#include "objects/pipe.h"

#include "core/alloc.h"
#include "core/lock_state.h"

#include <cerrno>
#include <cstdlib>
#include <fcntl.h>
#include <linux/capability.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace uepoll::objects {

namespace {

// Linux round_pipe_size: at least a page, a power of two; 0 past 2^31.
unsigned long round_pipe_size(unsigned int size) noexcept {
  if (size > (1U << 31)) return 0;
  if (size < kPipePage) return kPipePage;
  unsigned long r = kPipePage;
  while (r < size) r <<= 1;
  return r;
}

// /proc/sys/fs/pipe-max-size, read at each call as Linux reads its sysctl
// (1 MiB, Linux's default, when it cannot be read).
unsigned long pipe_max_size() noexcept {
  unsigned long v = 1048576;
  const int fd = ::open("/proc/sys/fs/pipe-max-size", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return v;
  char buf[32];
  const ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n > 0) {
    buf[n] = 0;
    char* end = nullptr;
    const unsigned long parsed = std::strtoul(buf, &end, 10);
    if (end != buf) v = parsed;
  }
  return v;
}

// capable(CAP_SYS_RESOURCE): the effective set of the calling thread.
bool cap_sys_resource() noexcept {
  __user_cap_header_struct hdr{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2]{};
  if (::syscall(SYS_capget, &hdr, data) != 0) return false;
  return (data[CAP_SYS_RESOURCE / 32].effective >> (CAP_SYS_RESOURCE % 32)) & 1;
}

}  // namespace

long pipe_size_fcntl(core::File* end, int cmd, unsigned long arg) noexcept {
  Pipe* p = nullptr;
  if (end->kind() == core::FileKind::kPipeRead) p = static_cast<PipeReader*>(end)->pipe();
  if (end->kind() == core::FileKind::kPipeWrite) p = static_cast<PipeWriter*>(end)->pipe();
  if (!p) return -EBADF;  // Linux get_pipe_info(): not a pipe
  if (p->mu_.held_by_me()) return -EBUSY;  // a handler inside this pipe (pipe.h)
  p->mu_.lock();
  const unsigned cur = p->ring_size_;
  p->mu_.unlock();
  if (cmd == F_GETPIPE_SZ) return static_cast<long>(cur) * kPipePage;
  // Linux pipe_set_size(pipe, (unsigned int)arg).
  const unsigned long size = round_pipe_size(static_cast<unsigned int>(arg));
  const unsigned long nr_slots = size / kPipePage;
  if (!nr_slots) return -EINVAL;
  if (nr_slots > cur && size > pipe_max_size() && !cap_sys_resource()) return -EPERM;
  if (core::thread_in_uepoll()) return -EBUSY;  // no allocation in such a handler
  const int r = p->resize(static_cast<unsigned>(nr_slots));
  return r < 0 ? r : static_cast<long>(size);
}

int Pipe::resize(unsigned nr_slots) noexcept {
  Buf* fresh = inline_bufs_;
  if (nr_slots != kPipeSlots) {
    fresh = static_cast<Buf*>(core::raw_alloc(sizeof(Buf) * nr_slots, alignof(Buf)));
    if (!fresh) return -ENOMEM;
  }
  Buf* old = nullptr;
  mu_.lock();
  const unsigned n = head_ - tail_;
  // Back to the default size while on the inline ring: nothing to move.
  if (n > nr_slots || (fresh == inline_bufs_ && bufs_ == inline_bufs_)) {
    const bool busy = n > nr_slots;
    mu_.unlock();
    if (fresh != inline_bufs_) core::raw_free(fresh);
    return busy ? -EBUSY : 0;  // same ring: nothing to move
  }
  // In order from the tail; the source is never `fresh` (excluded above).
  for (unsigned i = 0; i < n; ++i) fresh[i] = slot_locked(tail_ + i);
  for (unsigned i = n; i < nr_slots; ++i) fresh[i] = Buf{};
  if (bufs_ != inline_bufs_) old = bufs_;
  bufs_ = fresh;
  ring_size_ = nr_slots;
  slots_hint_.store(nr_slots, std::memory_order_relaxed);
  tail_ = 0;
  head_ = n;
  mu_.unlock();
  if (old) core::raw_free(old);
  wake_writer(0);  // Linux: wake_up_interruptible(&pipe->wr_wait)
  return 0;
}

}  // namespace uepoll::objects
