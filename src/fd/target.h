// target.h - Target: the one place where a descriptor number is found to be
// a uepoll descriptor or the kernel's (Linux has one table; uepoll has its
// own range above the kernel's, fd/table.h).  The C API asks a Target
// and either forwards the call to the kernel or runs the pinned file's
// operation.  Locks: none (fd::lookup's, see table.h).
#pragma once

#include "fd/table.h"

namespace uepoll::fd {

class Target {
 public:
  // A number in uepoll's range pins its file (nullptr when nothing is open
  // there: EBADF); any other is the kernel's, left to the kernel.
  explicit Target(int fd) noexcept : fd_(fd), uepoll_(in_range(fd)) {
    if (uepoll_) file_ = FileRef(lookup(fd));
  }
  // The same choice without a pin, for calls that install or remove
  // descriptors themselves (close, dup, epoll_ctl's pairings): true for
  // the kernel's numbers.
  static bool is_kernel(int fd) noexcept { return !in_range(fd); }
  // True for two kernel numbers: the whole call is the kernel's.
  static bool both_kernel(int a, int b) noexcept { return !in_range(a) && !in_range(b); }
  // The kernel's descriptor: the call goes to the kernel.
  bool kernel() const noexcept { return !uepoll_; }
  // A uepoll number with nothing open there (Linux fdget fails: EBADF).
  bool closed() const noexcept { return uepoll_ && !file_; }
  // The pinned file of a uepoll descriptor, or nullptr.
  core::File* file() const noexcept { return file_.get(); }
  core::File* get() const noexcept { return file_.get(); }
  core::File* operator->() const noexcept { return file_.get(); }
  int fd() const noexcept { return fd_; }
  // Hands the pin to the caller.
  FileRef take() noexcept { return static_cast<FileRef&&>(file_); }

 private:
  int fd_;
  bool uepoll_;
  FileRef file_;
};

}  // namespace uepoll::fd
