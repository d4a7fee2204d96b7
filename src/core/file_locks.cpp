// file_locks.cpp - a file's lock descriptor (file.h, "locks"): the kernel
// file that holds flock(2) and fcntl record locks for a uepoll open file
// description, in a lazily made OwnSlot (core/own_slot.h).  Locks: none
// (system calls only; called with no uepoll lock held).
#include "core/file.h"

#include "core/own_fds.h"
#include "core/own_slot.h"

#include <cerrno>
#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

namespace uepoll::core {

namespace {

// One end of a new kernel pipe (the other closed): an inode of its own
// open in one direction only.
int pipe_end(int side) noexcept {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) < 0) return -errno;
  ::close(p[!side]);
  return p[side];
}

}  // namespace

int File::make_lock_fd() noexcept {
  // Linux: anon_inode_getfile gives eventfds, epoll instances and timerfds
  // one inode (open O_RDWR); a socket's inode is its own.  A user file
  // answers as its fstat does (anon_inode()); one that is not anonymous
  // gets an inode of its own, open in its mode (a write lock needs a file
  // open for writing, a read lock one open for reading).
  int fd;
  if (anon_inode()) {
    fd = ::eventfd(0, EFD_CLOEXEC);
  } else {
    switch (status_flags() & O_ACCMODE) {
      case O_RDONLY:
        return pipe_end(0);
      case O_WRONLY:
        return pipe_end(1);
      default:
        fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        break;
    }
  }
  return fd < 0 ? -errno : fd;
}

OwnSlot* File::lock_slot(long* err) noexcept {
  return lock_.get([this] { return make_lock_fd(); }, err);
}

void File::keep_lock_fd() noexcept {
  OwnSlot* s = lock_.made();
  if (s && !lock_kept_.exchange(true, std::memory_order_relaxed)) s->pin();  // until the file's release
}

void File::close_posix_locks() noexcept {
  OwnSlot* s = made_lock_slot();
  if (!s) return;
  struct flock all {};
  all.l_type = F_UNLCK;
  all.l_whence = SEEK_SET;
  const int e = errno;
  OwnSlot::Use u(*s);
  (void)::fcntl(u.fd(), F_SETLK, &all);
  errno = e;
}

long File::lock_fdinfo(char* buf, size_t len) noexcept {
  if (len) buf[0] = '\0';
  OwnSlot* s = made_lock_slot();
  if (!s || len < 2) return 0;
  s->pin();  // the number stays while /proc reads it
  const long n = read_own_fdinfo(s->peek(), buf, len);
  s->unpin();
  return n;
}

void File::release_lock_fd() noexcept { lock_.release(); }

}  // namespace uepoll::core
