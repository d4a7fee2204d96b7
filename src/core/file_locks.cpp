// file_locks.cpp - a file's lock descriptor (file.h, "locks"): the kernel
// file that holds flock(2) and fcntl record locks for a uepoll open file
// description.  Locks: none (system calls only; called with no uepoll lock
// held).
#include "core/file.h"

#include "core/own_fds.h"

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

long File::lock_fd() noexcept {
  int fd = lock_fd_.load(std::memory_order_acquire);
  if (fd >= 0) return fd;
  const int made = make_lock_fd();
  if (made < 0) return made;
  const int mine = park_high(made);
  if (lock_fd_.compare_exchange_strong(fd, mine, std::memory_order_acq_rel, std::memory_order_acquire)) return mine;
  close_own(mine);  // another call made one first: fd is it
  return fd;
}

void File::close_posix_locks() noexcept {
  const int fd = made_lock_fd();
  if (fd < 0) return;
  struct flock all {};
  all.l_type = F_UNLCK;
  all.l_whence = SEEK_SET;
  const int e = errno;
  (void)::fcntl(fd, F_SETLK, &all);
  errno = e;
}

void File::release_lock_fd() noexcept {
  const int fd = lock_fd_.exchange(-1, std::memory_order_acq_rel);
  if (fd >= 0) close_own(fd);
}

}  // namespace uepoll::core
