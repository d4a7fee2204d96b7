// fd_surface_api.cpp - the rest of the descriptor surface on uepoll
// descriptors: uep_fcntl, uep_ioctl, uep_dup2, uep_dup3, uep_readv,
// uep_writev, uep_pread, uep_pwrite, uep_lseek, uep_fstat, uep_ppoll,
// uep_select, uep_pselect.  Each mirrors what Linux 6.18 does for the object
// type (fs/fcntl.c setfl/do_fcntl, fs/ioctl.c do_vfs_ioctl, fs/file.c
// do_dup2/ksys_dup3, fs/read_write.c, fs/stat.c), checks in Linux's order;
// what depends on the kind of file is the file's operation (core/file.h);
// kernel descriptors go to the kernel.  (Sockets' calls: socket_api.cpp.)
//
// Locks: none of its own; the fd table's mutex (fd::install_at, cloexec),
// a file's wait-queue lock to store its status flags (store_flags), and,
// inside the objects' operations, their wait-queue and leaf locks.
#include <uepoll/uepoll.h>
#include <uepoll/detail/ops.hpp>

#include "capi/edge.h"
#include "capi/rw_check.h"
#include "core/block.h"
#include "core/user_memory.h"
#include "fd/table.h"
#include "fd/target.h"

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <climits>
#include <csignal>
#include <cstdarg>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

using uepoll::capi::to_c;
using uepoll::capi::to_c_ssize;
using uepoll::core::File;
using uepoll::fd::FileRef;

namespace {

using uepoll::core::user_range_ok;
using uepoll::core::user_readable;

// Linux include/linux/fcntl.h SETFL_MASK (O_NDELAY == O_NONBLOCK).
constexpr int kSetflMask = O_APPEND | O_NONBLOCK | O_DIRECT | O_NOATIME | O_ASYNC;
constexpr int kSeekMax = 4;       // SEEK_MAX (SEEK_HOLE)

// Stores a file's new status flags (F_SETFL, FIONBIO, FIOASYNC), after
// the file's own hook, under its wait-queue lock, the lock a hand-over to
// the kernel is marked under (core/handover.h): a movable change made
// after the mark leaves (-EINTR) for the preload to make again on the
// kernel object; one made before is what the conversion reads after
// marking.
long store_flags(File* f, int fd, int old, int next) {
  if (long r = f->setfl_hook(old, next)) return r;
  uepoll::core::WaitQueue& q = f->wq();
  q.lock();
  const bool moving = uepoll::core::leave_if_handed_over(q.handed_over());
  if (!moving) {
    if ((next ^ old) & O_ASYNC) f->set_fasync_fd((next & O_ASYNC) ? fd : -1);
    f->set_status_flags(next);
  }
  q.unlock();
  return moving ? -EINTR : 0;
}

// Linux setfl(): the bits of SETFL_MASK change, the rest stay.  O_DIRECT
// needs ->direct_IO or a pipe (EINVAL otherwise); O_ASYNC is kept only by
// files with ->fasync (pipes and sockets: fasync_helper records fd, the
// si_fd of the signals File::kill_fasync sends); O_NOATIME needs the
// inode's owner (anonymous inodes belong to root); then the file's own hook.
long setfl(File* f, int fd, int arg) {
  const int old = f->status_flags();
  if ((arg & O_NOATIME) && !(old & O_NOATIME) && f->anon_inode() && geteuid() != 0) return -EPERM;
  if ((arg & O_DIRECT) && !f->direct_io()) return -EINVAL;
  if (!f->has_fasync()) arg &= ~O_ASYNC;
  return store_flags(f, fd, old, (arg & kSetflMask) | (old & ~kSetflMask));
}

// Linux f_setown: a negative pid is a process group; a pid or group that
// does not exist is ESRCH; INT_MIN (no group) EINVAL.
long setown(File* f, long arg) {
  const int who = static_cast<int>(arg);
  if (who == INT_MIN) return -EINVAL;
  if (who && ::kill(who, 0) < 0 && errno == ESRCH) return -ESRCH;
  f->set_owner(who);
  return 0;
}

// F_SETOWN_EX / F_GETOWN_EX (Linux f_setown_ex / f_getown_ex).
long owner_ex(File* f, int cmd, unsigned long arg) {
  auto* p = reinterpret_cast<f_owner_ex*>(arg);
  if (cmd == F_GETOWN_EX) {
    if (!uepoll::core::user_range_ok(p, sizeof *p)) return -EFAULT;
    const int o = f->owner();
    p->type = f->owner_is_thread() ? F_OWNER_TID : o < 0 ? F_OWNER_PGRP : F_OWNER_PID;
    p->pid = o < 0 ? -o : o;
    return 0;
  }
  if (!user_readable(p, sizeof *p)) return -EFAULT;
  // The type as the int the caller wrote: any value may arrive, and a load
  // of an out-of-range enum would be undefined.
  int type;
  pid_t pid;
  std::memcpy(&type, reinterpret_cast<const char*>(p) + offsetof(f_owner_ex, type), sizeof type);
  std::memcpy(&pid, reinterpret_cast<const char*>(p) + offsetof(f_owner_ex, pid), sizeof pid);
  if (type != F_OWNER_TID && type != F_OWNER_PID && type != F_OWNER_PGRP) return -EINVAL;
  if (pid) {
    const long r = type == F_OWNER_TID ? ::syscall(SYS_tgkill, ::getpid(), pid, 0)
                                       : ::kill(type == F_OWNER_PGRP ? -pid : pid, 0);
    if (r < 0 && errno == ESRCH) return -ESRCH;
  }
  if (type == F_OWNER_TID) f->set_owner_thread(pid);
  else f->set_owner(type == F_OWNER_PGRP ? -pid : pid);
  return 0;
}

long dupfd(File* f, unsigned long arg, bool cloexec) {
  // Linux f_dupfd: from >= RLIMIT_NOFILE -> EINVAL.  Here the limit is the
  // table's: the lowest free uepoll descriptor at or above `arg`.
  const long limit = UEP_FD_BASE + uepoll::fd::max_fds();
  if (arg >= static_cast<unsigned long>(limit)) return -EINVAL;
  const long from = static_cast<long>(arg) < UEP_FD_BASE ? 0 : static_cast<long>(arg) - UEP_FD_BASE;
  f->get();
  const int fd = uepoll::fd::install_from(f, from);
  if (fd < 0) {
    f->put();
    return fd;
  }
  return uepoll::fd::cloexec_if(fd, cloexec);
}

// call(k) on f's lock descriptor k (core/file.h, "locks"), made if need
// be, with the kernel's result.  Pinned, not counted as a use: a blocking
// lock may wait for long, and a move meanwhile answers EBUSY at once.
template <class Call>
long on_lock_fd(File* f, Call call) noexcept {
  long err = 0;
  uepoll::core::OwnSlot* s = f->lock_slot(&err);
  if (!s) return err;
  s->pin();
  const int r = call(s->peek());
  const int e = errno;
  s->unpin();
  errno = e;
  return uepoll::capi::from_kernel(r);
}

}  // namespace

namespace uepoll::detail {

long fcntl(int fd, int cmd, unsigned long arg) noexcept {
  uepoll::fd::Target f(fd);
  if (f.kernel()) return uepoll::capi::from_kernel(::fcntl(fd, cmd, arg));
  if (f.closed()) return -EBADF;
  switch (cmd) {
    case F_DUPFD:
    case F_DUPFD_CLOEXEC:
      return dupfd(f.get(), arg, cmd == F_DUPFD_CLOEXEC);
    case F_GETFD:
      return uepoll::fd::get_cloexec(fd) ? FD_CLOEXEC : 0;
    case F_SETFD:
      return uepoll::fd::set_cloexec(fd, (arg & FD_CLOEXEC) != 0);
    case F_GETFL:
      return f->status_flags();
    case F_SETFL:
      return setfl(f.get(), fd, static_cast<int>(arg));
    case F_GETPIPE_SZ:
    case F_SETPIPE_SZ:
      return f->pipe_size(cmd, arg);  // -EBADF on anything but a pipe
    case F_SETOWN:  // Linux accepts an owner on any file; only fasync files signal it
      return setown(f.get(), static_cast<long>(arg));
    case F_GETOWN:
      return f->owner();
    case F_SETOWN_EX:
    case F_GETOWN_EX:
      return owner_ex(f.get(), cmd, arg);
    case F_SETSIG:  // Linux valid_signal(): 0 .. the kernel's _NSIG (64; glibc's _NSIG is 65)
      if (arg > 64) return -EINVAL;
      f->set_sigio_signal(static_cast<int>(arg));
      return 0;
    case F_GETSIG:
      return f->sigio_signal();
    case F_GETLK:
    case F_SETLK:
    case F_SETLKW:
    case F_OFD_GETLK:
    case F_OFD_SETLK:
    case F_OFD_SETLKW: {
      // The kernel keeps them, on the file's lock descriptor (core/file.h).
      // A record lock set there keeps the descriptor at its number, pinned
      // before this call's pin ends, so that no move closes it in between.
      const bool record = cmd == F_SETLK || cmd == F_SETLKW;
      return on_lock_fd(f.get(), [&](int k) {
        const int r = ::fcntl(k, cmd, arg);
        if (r == 0 && record) f->keep_lock_fd();
        return r;
      });
    }
    default:
      // Leases, notify, seals: not on uepoll files.
      return -EINVAL;
  }
}

long flock(int fd, int operation) noexcept {
  uepoll::fd::Target f(fd);
  if (f.kernel()) return uepoll::capi::from_kernel(::flock(fd, operation));
  // Linux checks the operation before the descriptor (EINVAL, else EBADF;
  // LOCK_MAND: 0): the kernel's answer for a number with no file.
  if (f.closed()) return uepoll::capi::from_kernel(::flock(-1, operation));
  return on_lock_fd(f.get(), [operation](int k) { return ::flock(k, operation); });
}

long ioctl(int fd, unsigned long request, void* arg) noexcept {
  uepoll::fd::Target f(fd);
  if (f.kernel()) return uepoll::capi::from_kernel(::ioctl(fd, request, arg));
  if (f.closed()) return -EBADF;
  // Linux do_vfs_ioctl: the generic requests first, for every file.
  switch (request) {
    case FIOCLEX:
      return uepoll::fd::set_cloexec(fd, true);
    case FIONCLEX:
      return uepoll::fd::set_cloexec(fd, false);
    case FIONBIO:
    case FIOASYNC: {
      if (!user_readable(arg, sizeof(int))) return -EFAULT;
      const int on = *static_cast<const int*>(arg);
      const int bit = request == FIONBIO ? O_NONBLOCK : O_ASYNC;
      if (request == FIOASYNC && !f->has_fasync()) return 0;  // no ->fasync: nothing to change
      const int old = f->status_flags();
      return store_flags(f.get(), fd, old, on ? (old | bit) : (old & ~bit));
    }
    default:
      break;
  }
  return f->ioctl(request, arg);  // f_op->unlocked_ioctl (-ENOTTY without)
}

long dup3(int oldfd, int newfd, int flags) noexcept {
  // Linux ksys_dup3: flags, oldfd == newfd, newfd's range (EBADF), oldfd.
  if (flags & ~O_CLOEXEC) return -EINVAL;
  if (oldfd == newfd) return -EINVAL;
  const bool old_u = !uepoll::fd::Target::is_kernel(oldfd), new_u = !uepoll::fd::Target::is_kernel(newfd);
  if (!old_u && !new_u) {
    int r = ::dup3(oldfd, newfd, flags);
    return r < 0 ? -errno : r;
  }
  // One side in each world: a uepoll file cannot sit at a kernel number nor
  // a kernel file in uepoll's table (docs/linux-deviations.md): newfd is
  // "out of range" for the file, EBADF as for newfd >= RLIMIT_NOFILE.
  if (!new_u || newfd - UEP_FD_BASE >= uepoll::fd::max_fds()) return -EBADF;
  if (!old_u) return -EBADF;
  File* f = uepoll::fd::lookup(oldfd);  // this reference moves into newfd
  if (!f) return -EBADF;
  File* old = nullptr;
  const int r = uepoll::fd::install_at(newfd, f, (flags & O_CLOEXEC) != 0, &old);
  if (r < 0) {
    f->put();
    return r;
  }
  if (old) {  // Linux do_dup2: filp_close of what was there
    old->close_posix_locks();
    old->put();
  }
  return newfd;
}

long dup2(int oldfd, int newfd) noexcept {
  if (oldfd == newfd) {
    // Linux ksys_dup2: oldfd must be open; returns it.
    if (uepoll::fd::Target::is_kernel(oldfd)) {
      int r = ::dup2(oldfd, newfd);
      return r < 0 ? -errno : r;
    }
    FileRef f(uepoll::fd::lookup(oldfd));
    return f ? newfd : -EBADF;
  }
  return dup3(oldfd, newfd, 0);
}

long readv(int fd, const struct iovec* iov, int iovcnt) noexcept {
  uepoll::fd::Target f(fd);
  if (f.kernel()) return uepoll::capi::from_kernel(::readv(fd, iov, iovcnt));
  if (f.closed()) return -EBADF;
  if (long r = f->rw_check(false)) return r;
  size_t total = 0;
  if (long r = uepoll::capi::check_iov(iov, iovcnt, &total)) return r;
  if (total == 0) return 0;
  return f->read_iter(iov, iovcnt, total);
}

long writev(int fd, const struct iovec* iov, int iovcnt) noexcept {
  uepoll::fd::Target f(fd);
  if (f.kernel()) return uepoll::capi::from_kernel(::writev(fd, iov, iovcnt));
  if (f.closed()) return -EBADF;
  if (long r = f->rw_check(true)) return r;
  size_t total = 0;
  if (long r = uepoll::capi::check_iov(iov, iovcnt, &total)) return r;
  if (total == 0) return 0;
  return f->write_iter(iov, iovcnt, total);
}

long pread(int fd, void* buf, size_t count, off_t offset) noexcept {
  if (uepoll::fd::Target::is_kernel(fd)) return uepoll::capi::from_kernel(::pread(fd, buf, count, offset));
  // Linux ksys_pread64: a negative offset is EINVAL before the descriptor;
  // no uepoll file has FMODE_PREAD: ESPIPE.
  if (offset < 0) return -EINVAL;
  FileRef f(uepoll::fd::lookup(fd));
  return f ? -ESPIPE : -EBADF;
}

long pwrite(int fd, const void* buf, size_t count, off_t offset) noexcept {
  if (uepoll::fd::Target::is_kernel(fd)) return uepoll::capi::from_kernel(::pwrite(fd, buf, count, offset));
  if (offset < 0) return -EINVAL;
  FileRef f(uepoll::fd::lookup(fd));
  return f ? -ESPIPE : -EBADF;
}

off_t lseek(int fd, off_t offset, int whence) noexcept {
  uepoll::fd::Target f(fd);
  if (f.kernel()) return uepoll::capi::from_kernel(::lseek(fd, offset, whence));
  if (f.closed()) return -EBADF;
  if (whence < 0 || whence > kSeekMax) return -EINVAL;
  // Pipes and sockets: no_llseek; anonymous inodes: noop_llseek (position 0).
  return f->anon_inode() ? 0 : -ESPIPE;
}

long fstat(int fd, struct stat* st) noexcept {
  uepoll::fd::Target f(fd);
  if (f.kernel()) return uepoll::capi::from_kernel(::fstat(fd, st));
  if (f.closed()) return -EBADF;
  if (!user_readable(st, sizeof *st)) return -EFAULT;  // cp_new_stat's copy_to_user
  struct stat tmp;
  if (long r = f->fstat(&tmp)) return r;
  *st = tmp;
  return 0;
}

}  // namespace uepoll::detail

extern "C" {

int uep_fcntl(int fd, int cmd, ...) {
  va_list ap;
  va_start(ap, cmd);
  const unsigned long arg = va_arg(ap, unsigned long);  // every command passes at most one word
  va_end(ap);
  return to_c(uepoll::detail::fcntl(fd, cmd, arg));
}

int uep_flock(int fd, int operation) { return to_c(uepoll::detail::flock(fd, operation)); }

int uep_ioctl(int fd, unsigned long request, ...) {
  va_list ap;
  va_start(ap, request);
  void* arg = va_arg(ap, void*);
  va_end(ap);
  return to_c(uepoll::detail::ioctl(fd, request, arg));
}

int uep_dup2(int oldfd, int newfd) { return to_c(uepoll::detail::dup2(oldfd, newfd)); }
int uep_dup3(int oldfd, int newfd, int flags) { return to_c(uepoll::detail::dup3(oldfd, newfd, flags)); }
ssize_t uep_readv(int fd, const struct iovec* iov, int iovcnt) { return to_c_ssize(uepoll::detail::readv(fd, iov, iovcnt)); }
ssize_t uep_writev(int fd, const struct iovec* iov, int iovcnt) {
  return to_c_ssize(uepoll::detail::writev(fd, iov, iovcnt));
}
ssize_t uep_pread(int fd, void* buf, size_t count, off_t offset) {
  return to_c_ssize(uepoll::detail::pread(fd, buf, count, offset));
}
ssize_t uep_pwrite(int fd, const void* buf, size_t count, off_t offset) {
  return to_c_ssize(uepoll::detail::pwrite(fd, buf, count, offset));
}
off_t uep_lseek(int fd, off_t offset, int whence) {
  const off_t r = uepoll::detail::lseek(fd, offset, whence);
  if (r < 0) {
    errno = static_cast<int>(-r);
    return -1;
  }
  return r;
}
int uep_fstat(int fd, struct stat* st) { return to_c(uepoll::detail::fstat(fd, st)); }
int uep_ppoll(struct pollfd* fds, nfds_t nfds, const struct timespec* tmo, const sigset_t* sigmask) {
  return to_c(uepoll::detail::ppoll(fds, nfds, tmo, sigmask));
}

// select/pselect: an fd_set holds descriptors below FD_SETSIZE (1024), so it
// can never name a uepoll descriptor: these are the kernel's calls, for
// kernel descriptors only (uepoll.h).
int uep_select(int nfds, fd_set* r, fd_set* w, fd_set* e, struct timeval* tmo) { return ::select(nfds, r, w, e, tmo); }
int uep_pselect(int nfds, fd_set* r, fd_set* w, fd_set* e, const struct timespec* tmo, const sigset_t* mask) {
  return ::pselect(nfds, r, w, e, tmo, mask);
}

}  // extern "C"
