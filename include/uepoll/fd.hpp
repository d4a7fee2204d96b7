// fd.hpp - descriptor ownership in the C++ API: BorrowedFd (a non-owning
// descriptor number), Fd (owns one uepoll or kernel descriptor, closes it
// on destruction, move-only) and Owner<Self>, the base of the typed owners
// (Epoll in epoll.hpp; EventFd, TimerFd, Socket in objects.hpp).
// Header-only; takes no locks: close and dup go straight to one engine
// entry point each (detail/ops.hpp).
// Part of the C++ API: <uepoll/uepoll.hpp> includes this header and states
// the contract of the whole API once (try_x/x naming, thread safety,
// blocking, allocation, descriptors, timeouts); this header may also be
// included on its own.
#pragma once

#include <uepoll/detail/ops.hpp>
#include <uepoll/result.hpp>
#include <uepoll/uepoll.h>

#include <utility>

namespace uepoll {

class Fd;

// A non-owning descriptor number.  Implicit from int, Fd and every owner.
// Contract (all members): trivially thread-compatible; noexcept; never
// block; never allocate.
class BorrowedFd {
 public:
  constexpr BorrowedFd(int fd) noexcept : fd_(fd) {}
  constexpr int get() const noexcept { return fd_; }

 private:
  int fd_;
};

// An owned descriptor (uepoll or kernel): closes it on destruction.
// Move-only; a moved-from Fd is empty (get() == -1).
class Fd {
 public:
  // Empty.
  constexpr Fd() noexcept = default;
  // Adopts `fd` (may be -1 for empty).  Contract: noexcept; never blocks;
  // never allocates.
  constexpr explicit Fd(int fd) noexcept : fd_(fd) {}

  // Takes other's descriptor; other becomes empty.  Contract: noexcept;
  // never blocks; never allocates.
  Fd(Fd&& other) noexcept : fd_(other.release()) {}
  // Closes the current descriptor (ignoring errors), then adopts other's;
  // self-move is a no-op.  Contract: noexcept; never blocks; never
  // allocates.
  Fd& operator=(Fd&& other) noexcept {
    if (this != &other) reset(other.release());
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  // Closes the descriptor, ignoring errors (use try_close() to see them).
  // Contract: never allocates; blocks only as close(2) may on a kernel
  // descriptor (closing a uepoll descriptor never blocks).
  ~Fd() { reset(); }

  // The descriptor, or -1 if empty.  Contract: noexcept; never blocks.
  constexpr int get() const noexcept { return fd_; }
  // True iff not empty.
  constexpr explicit operator bool() const noexcept { return fd_ >= 0; }
  operator BorrowedFd() const noexcept { return BorrowedFd(fd_); }

  // Gives up ownership without closing; *this becomes empty.
  // Contract: noexcept; never blocks; never allocates.
  [[nodiscard]] int release() noexcept { return std::exchange(fd_, -1); }

  // Closes the current descriptor (if any, errors ignored) and adopts `fd`.
  // Contract: not thread-safe on *this; never blocks (closing a uepoll
  // descriptor never blocks; a kernel one as close(2)); never allocates.
  void reset(int fd = -1) noexcept {
    const int old = std::exchange(fd_, fd);
    if (old >= 0 && old != fd) (void)detail::close(old);
  }

  // Closes the descriptor and reports close's result; *this becomes empty
  // whatever the result (as close(2): the descriptor is gone either way).
  // Errors: EBADF if the descriptor was already closed behind our back
  // (or *this is empty); EIO etc. for kernel descriptors as close(2).
  // Contract: not thread-safe on *this; never allocates; blocks only as
  // close(2) may on a kernel descriptor (a uepoll one never blocks).
  Result<void> try_close() noexcept { return detail::void_result_of(detail::close(std::exchange(fd_, -1))); }
  // As try_close(); throws std::system_error on failure.
  void close() { detail::value_or_throw(try_close()); }

  // A new descriptor for the same open object (dup(2)), lowest free number
  // in the same range (uepoll or kernel).  Errors: EBADF (empty or not open),
  // EMFILE (table full), ENOMEM.  Contract: thread-safe; never blocks; the
  // engine allocates a table slot.
  Result<Fd> try_dup() const noexcept {
    const long r = detail::dup(fd_);
    if (r < 0) return detail::errc_from(r);
    return Fd(static_cast<int>(r));
  }
  // As try_dup(); throws std::system_error on failure.
  Fd dup() const { return detail::value_or_throw(try_dup()); }

 private:
  int fd_ = -1;
};

// Common members of the typed owners (Epoll, EventFd, TimerFd, Socket):
// each owns exactly one Fd.  Self makes each owner's base a distinct type,
// so an owner can never be assigned from another kind of owner.
template <class Self>
class Owner {
 public:
  // Contract (all members): as Fd's members of the same name.
  constexpr int get() const noexcept { return fd_.get(); }
  constexpr explicit operator bool() const noexcept { return static_cast<bool>(fd_); }
  operator BorrowedFd() const noexcept { return BorrowedFd(fd_.get()); }
  // The owned descriptor, e.g. for fd().try_dup().
  const Fd& fd() const noexcept { return fd_; }
  [[nodiscard]] int release() noexcept { return fd_.release(); }
  // Gives up the descriptor as a generic Fd; *this becomes empty.
  [[nodiscard]] Fd take() noexcept { return std::move(fd_); }
  void reset() noexcept { fd_.reset(); }
  Result<void> try_close() noexcept { return fd_.try_close(); }
  void close() { fd_.close(); }

 protected:
  Owner() noexcept = default;
  explicit Owner(Fd fd) noexcept : fd_(std::move(fd)) {}
  Owner(Owner&&) noexcept = default;
  Owner& operator=(Owner&&) noexcept = default;
  ~Owner() = default;

  Fd fd_;
};

}  // namespace uepoll
