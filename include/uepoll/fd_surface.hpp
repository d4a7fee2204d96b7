// fd_surface.hpp - the free functions of the C++ API that mirror Linux's
// descriptor calls on any descriptor (uepoll or kernel, as a BorrowedFd):
// read and write over std::span buffers, poll, shutdown, set_nonblocking
// and set_cloexec (fcntl), dup_to (dup3); each as try_x() and x().
// Header-only; takes no locks: each call is one engine entry point
// (detail/ops.hpp).
// Part of the C++ API: <uepoll/uepoll.hpp> includes this header and states
// the contract of the whole API once (try_x/x naming, thread safety,
// blocking, allocation, descriptors, timeouts); this header may also be
// included on its own.
#pragma once

#include <uepoll/detail/ops.hpp>
#include <uepoll/fd.hpp>
#include <uepoll/result.hpp>
#include <uepoll/timeout.hpp>

#include <fcntl.h>  // O_NONBLOCK, F_GETFL/F_SETFL, F_SETFD, FD_CLOEXEC

#include <cstddef>
#include <span>

namespace uepoll {

// read(2): reads up to buf.size() bytes; returns the count (0 = end of
// file).  Errors as Linux for the object: EAGAIN (O_NONBLOCK, nothing
// ready), EBADF, EINVAL (eventfd/timerfd buffer < 8 bytes), EINTR.
// Contract: thread-safe; blocks unless the descriptor is non-blocking;
// never allocates.
inline Result<std::size_t> try_read(BorrowedFd fd, std::span<std::byte> buf) noexcept {
  return detail::result_of<std::size_t>(detail::read(fd.get(), buf.data(), buf.size()));
}
// As try_read(); throws std::system_error on failure.
inline std::size_t read(BorrowedFd fd, std::span<std::byte> buf) {
  return detail::value_or_throw(try_read(fd, buf));
}

// fcntl(F_SETFL) of O_NONBLOCK alone (the other status flags kept), on a
// uepoll or kernel descriptor.  Errors: EBADF.  Contract: thread-safe;
// never blocks; never allocates.
inline Result<void> try_set_nonblocking(BorrowedFd fd, bool on) noexcept {
  const long fl = detail::fcntl(fd.get(), F_GETFL, 0);
  if (fl < 0) return detail::errc_from(fl);
  const unsigned long nfl = on ? (static_cast<unsigned long>(fl) | O_NONBLOCK) : (static_cast<unsigned long>(fl) & ~static_cast<unsigned long>(O_NONBLOCK));
  return detail::void_result_of(detail::fcntl(fd.get(), F_SETFL, nfl));
}
// As try_set_nonblocking(); throws std::system_error on failure.
inline void set_nonblocking(BorrowedFd fd, bool on) { detail::value_or_throw(try_set_nonblocking(fd, on)); }

// fcntl(F_SETFD, FD_CLOEXEC or 0).  Errors: EBADF.  Contract: as above.
inline Result<void> try_set_cloexec(BorrowedFd fd, bool on) noexcept {
  return detail::void_result_of(detail::fcntl(fd.get(), F_SETFD, on ? FD_CLOEXEC : 0));
}
// As try_set_cloexec(); throws std::system_error on failure.
inline void set_cloexec(BorrowedFd fd, bool on) { detail::value_or_throw(try_set_cloexec(fd, on)); }

// dup3(2): makes `newfd` (same range as fd: uepoll or kernel) refer to fd's
// object, atomically replacing what was open there; flags 0 or O_CLOEXEC.
// Returns newfd, owned.  Errors: EINVAL (same descriptor, bad flags),
// EBADF (fd not open, newfd out of range or in the other range).
// Contract: thread-safe; never blocks; the engine may allocate a table chunk.
inline Result<Fd> try_dup_to(BorrowedFd fd, int newfd, int flags = 0) noexcept {
  const long r = detail::dup3(fd.get(), newfd, flags);
  if (r < 0) return detail::errc_from(r);
  return Fd(static_cast<int>(r));
}
// As try_dup_to(); throws std::system_error on failure.
inline Fd dup_to(BorrowedFd fd, int newfd, int flags = 0) { return detail::value_or_throw(try_dup_to(fd, newfd, flags)); }

// write(2): writes up to buf.size() bytes; returns the count.  Errors as
// Linux for the object: EAGAIN, EBADF, EPIPE (no reader / peer shut down;
// SIGPIPE is raised as Linux does), EINVAL (eventfd buffer < 8 or value
// 0xffffffffffffffff), EINTR.  Contract: thread-safe; blocks unless the
// descriptor is non-blocking; never allocates.
inline Result<std::size_t> try_write(BorrowedFd fd, std::span<const std::byte> buf) noexcept {
  return detail::result_of<std::size_t>(detail::write(fd.get(), buf.data(), buf.size()));
}
// As try_write(); throws std::system_error on failure.
inline std::size_t write(BorrowedFd fd, std::span<const std::byte> buf) {
  return detail::value_or_throw(try_write(fd, buf));
}

// poll(2) over uepoll and kernel descriptors: fills each revents, returns
// the number of entries with nonzero revents (0 on timeout).  The timeout
// is rounded up to whole milliseconds (clamped to INT_MAX ms).  Errors:
// EINVAL (fds.size() over RLIMIT_NOFILE), EINTR, ENOMEM.  Contract:
// thread-safe; blocks until an event or the timeout; the engine may
// allocate wait entries.
inline Result<std::size_t> try_poll(std::span<struct pollfd> fds, Timeout timeout) noexcept {
  return detail::result_of<std::size_t>(
      detail::poll(fds.data(), static_cast<nfds_t>(fds.size()), timeout.as_poll_ms()));
}
// As try_poll(); throws std::system_error on failure.
inline std::size_t poll(std::span<struct pollfd> fds, Timeout timeout) {
  return detail::value_or_throw(try_poll(fds, timeout));
}

// shutdown(2) of a socket: how is SHUT_RD, SHUT_WR or SHUT_RDWR.  Errors:
// EBADF, ENOTSOCK, EINVAL (bad how), ENOTCONN.  Contract: thread-safe;
// never blocks; never allocates.
inline Result<void> try_shutdown(BorrowedFd fd, int how) noexcept {
  return detail::void_result_of(detail::shutdown(fd.get(), how));
}
// As try_shutdown(); throws std::system_error on failure.
inline void shutdown(BorrowedFd fd, int how) { detail::value_or_throw(try_shutdown(fd, how)); }

}  // namespace uepoll
