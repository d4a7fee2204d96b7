// uepoll.hpp - the C++20 API of uepoll: RAII owners and free functions over
// the same engine as the C API (uepoll/detail/ops.hpp), not a wrapper around
// the C functions.  Header-only; link uepoll::uepoll.  Owns no locks: every
// call goes straight to one engine entry point, which returns a result or a
// negative errno; this header turns the latter into std::error_code
// (std::system_category, comparable with std::errc) and never reads or
// writes errno.
//
// Naming convention (Seastar's): every operation comes as a pair
//   try_x(...)  noexcept, returns Result<T> (an expected-like value/error);
//   x(...)      the same call, returns T and throws std::system_error
//               carrying the same error_code on failure.
// Result<T>::value() throws std::system_error too, so try_x(...).value()
// and x(...) behave the same.
//
// Thread safety, once for the whole API: every call is exactly as
// thread-safe as the Linux call it mirrors (the engine is thread-safe).
// The I/O members of an owner (add/mod/del/wait, read/write, settime, ...)
// are const: they never change which descriptor the owner holds, so any
// number of threads may call them on one owner at once (e.g. one thread
// blocked in wait() while another add()s).  The members that change the
// owner (move, reset, release, take, close, destruction) are not
// synchronised: running one while another thread uses the same owner is a
// data race, as with any std:: handle type.  Blocking:
// only waits, poll, and read/write on descriptors opened without the
// *_NONBLOCK flag block; they return std::errc::interrupted when a signal
// handler runs in the calling thread.  Allocation: the try_ calls never
// allocate in this header (the engine may, e.g. an epoll item on add); the
// throwing calls allocate only to build the std::system_error.
//
// Descriptors: owners hold plain ints, uepoll descriptors (>= UEP_FD_BASE)
// or kernel descriptors alike: the engine forwards kernel descriptors to
// the kernel, as the C API does.  An owner closes its descriptor on
// destruction and is move-only.  BorrowedFd is a non-owning view that every
// owner and every int converts to; calls taking "the descriptor to watch"
// take a BorrowedFd.
//
// Timeouts: Timeout is any std::chrono::duration (converted to nanoseconds,
// rounded up, saturating), or uepoll::forever (also std::nullopt /
// an empty std::optional<duration>).  A zero or negative duration means
// "do not block", as for std::condition_variable::wait_for.
//
// Contents: Result<T> / Result<void>; Timeout and `forever`; BorrowedFd;
// Fd (any descriptor); the typed owners Epoll, EventFd, TimerFd, Socket;
// the aggregates Pipe {read_end, write_end} and SocketPair {first, second};
// the free functions read, write, poll, shutdown over std::span buffers.
// Errors are Linux's, in Linux's order of detection, exactly as the C API
// reports them (both are edges of the same engine).
// A program's own objects as descriptors: uepoll::UserFile, in
// <uepoll/user_file.hpp> (which includes this header).
//
// Example (compiled by tests/cxx/header_check.cpp, which keeps a copy):
//
//   #include <uepoll/uepoll.hpp>
//   using namespace std::chrono_literals;
//
//   uepoll::Epoll ep = uepoll::Epoll::create();          // throws on error
//   uepoll::EventFd ev = uepoll::EventFd::create(0, EFD_NONBLOCK);
//   ep.add(ev, EPOLLIN, 42);                             // data.u64 = 42
//   std::thread t([&] { ev.write(1); });                 // wakes the wait
//   std::array<epoll_event, 8> buf;
//   for (const epoll_event& e : ep.wait(buf, 1s))        // the filled prefix
//     if (e.data.u64 == 42) std::printf("%lu\n", (unsigned long)ev.read());
//   t.join();
//
//   // The same without exceptions:
//   uepoll::Result<std::span<epoll_event>> w = ep.try_wait(buf, 0ms);
//   if (!w && w.error() == std::errc::interrupted) { /* retry */ }
//   else if (!w) std::fprintf(stderr, "%s\n", w.error().message().c_str());
//   else for (const epoll_event& e : *w) (void)e;
#pragma once

#include <uepoll/detail/ops.hpp>
#include <uepoll/uepoll.h>

#include <fcntl.h>  // O_NONBLOCK, O_CLOEXEC for Pipe::create

#include <cassert>
#include <chrono>
#include <climits>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <ctime>
#include <limits>
#include <optional>
#include <span>
#include <system_error>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace uepoll {

// ===========================================================================
// Result<T>: a value or a std::error_code (std::expected is C++23).
// ===========================================================================

namespace detail {

// Negative errno from the engine -> std::error_code in the system category.
inline std::error_code errc_from(long negative_errno) noexcept {
  return std::error_code(static_cast<int>(-negative_errno), std::system_category());
}

}  // namespace detail

template <class T>
class [[nodiscard]] Result {
  static_assert(!std::is_reference_v<T>, "Result<T&> is not supported");
  static_assert(!std::is_same_v<std::remove_cv_t<T>, std::error_code>, "Result<std::error_code> is ambiguous");

 public:
  using value_type = T;

  // A value.  Contract: noexcept iff T's move is; never allocates itself.
  Result(const T& v) noexcept(std::is_nothrow_copy_constructible_v<T>) : v_(std::in_place_index<0>, v) {}
  Result(T&& v) noexcept(std::is_nothrow_move_constructible_v<T>) : v_(std::in_place_index<0>, std::move(v)) {}
  // An error; a default (zero) error_code is a precondition violation.
  Result(std::error_code ec) noexcept : v_(std::in_place_index<1>, ec) { assert(ec); }

  // Contract (all observers): not thread-safe against a concurrent move or
  // assignment of *this; never block; never allocate, except value(), which
  // allocates the std::system_error it throws on error.
  bool has_value() const noexcept { return v_.index() == 0; }
  explicit operator bool() const noexcept { return has_value(); }

  // The value; throws std::system_error(error()) if this holds an error.
  T& value() & {
    check();
    return *std::get_if<0>(&v_);
  }
  const T& value() const& {
    check();
    return *std::get_if<0>(&v_);
  }
  T&& value() && {
    check();
    return std::move(*std::get_if<0>(&v_));
  }

  // The value, or `other` converted to T if this holds an error.
  template <class U>
  T value_or(U&& other) const& {
    return has_value() ? *std::get_if<0>(&v_) : static_cast<T>(std::forward<U>(other));
  }
  template <class U>
  T value_or(U&& other) && {
    return has_value() ? std::move(*std::get_if<0>(&v_)) : static_cast<T>(std::forward<U>(other));
  }

  // The error, or a default (false) error_code if this holds a value.
  std::error_code error() const noexcept {
    const std::error_code* ec = std::get_if<1>(&v_);
    return ec ? *ec : std::error_code();
  }

  // Unchecked access: precondition has_value() (asserted in debug builds).
  T& operator*() & noexcept { return *get(); }
  const T& operator*() const& noexcept { return *get(); }
  T&& operator*() && noexcept { return std::move(*get()); }
  T* operator->() noexcept { return get(); }
  const T* operator->() const noexcept { return get(); }

 private:
  void check() const {
    if (!has_value()) throw std::system_error(*std::get_if<1>(&v_));
  }
  T* get() noexcept {
    assert(has_value());
    return std::get_if<0>(&v_);
  }
  const T* get() const noexcept {
    assert(has_value());
    return std::get_if<0>(&v_);
  }

  std::variant<T, std::error_code> v_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  // Success.
  Result() noexcept = default;
  // An error; a default (zero) error_code is a precondition violation.
  Result(std::error_code ec) noexcept : ec_(ec) { assert(ec); }

  // Contract: as Result<T>'s observers.
  bool has_value() const noexcept { return !ec_; }
  explicit operator bool() const noexcept { return has_value(); }
  // Throws std::system_error(error()) if this holds an error.
  void value() const {
    if (ec_) throw std::system_error(ec_);
  }
  std::error_code error() const noexcept { return ec_; }

 private:
  std::error_code ec_;
};

namespace detail {

// Engine result (>= 0 or -errno) -> Result<T>, T constructed from the count.
template <class T>
Result<T> result_of(long r) noexcept {
  if (r < 0) return errc_from(r);
  return static_cast<T>(r);
}
inline Result<void> void_result_of(long r) noexcept {
  if (r < 0) return errc_from(r);
  return {};
}
template <class T>
T value_or_throw(Result<T>&& r) {
  return std::move(r).value();
}
inline void value_or_throw(Result<void>&& r) { r.value(); }

}  // namespace detail

// ===========================================================================
// Timeouts
// ===========================================================================

// Tag type of `forever`: wait with no timeout.
struct Forever {
  explicit constexpr Forever(int) noexcept {}
};
inline constexpr Forever forever{0};

// A relative timeout: forever, or a non-negative number of nanoseconds.
// Implicit from any std::chrono::duration (rounded up to whole nanoseconds;
// negative or NaN clamps to zero; too large for nanoseconds saturates at
// nanoseconds::max(), about 292 years), from `forever`, std::nullopt, and
// std::optional<duration> (empty = forever).
class Timeout {
 public:
  constexpr Timeout(Forever) noexcept {}
  constexpr Timeout(std::nullopt_t) noexcept {}
  template <class Rep, class Period>
  constexpr Timeout(std::chrono::duration<Rep, Period> d) noexcept : ns_(to_ns(d)) {}
  template <class Rep, class Period>
  constexpr Timeout(const std::optional<std::chrono::duration<Rep, Period>>& d) noexcept {
    if (d) ns_ = to_ns(*d);
  }

  // Contract (all members): thread-compatible value type; noexcept; never
  // block; never allocate.
  constexpr bool is_forever() const noexcept { return !ns_.has_value(); }
  // Precondition: !is_forever().
  constexpr std::chrono::nanoseconds duration() const noexcept { return *ns_; }

  // As a timespec for epoll_pwait2 (nullptr means forever).
  const struct timespec* as_timespec(struct timespec& storage) const noexcept {
    if (!ns_) return nullptr;
    storage.tv_sec = static_cast<time_t>(ns_->count() / 1'000'000'000);
    storage.tv_nsec = static_cast<long>(ns_->count() % 1'000'000'000);
    return &storage;
  }
  // As milliseconds for poll: -1 forever; rounded up; clamped to INT_MAX.
  constexpr int as_poll_ms() const noexcept {
    if (!ns_) return -1;
    const std::chrono::milliseconds ms = std::chrono::ceil<std::chrono::milliseconds>(*ns_);
    return ms.count() > INT_MAX ? INT_MAX : static_cast<int>(ms.count());
  }

 private:
  template <class Rep, class Period>
  static constexpr std::chrono::nanoseconds to_ns(std::chrono::duration<Rep, Period> d) noexcept {
    using std::chrono::nanoseconds;
    // Compare in long double nanoseconds so no conversion can overflow.
    const std::chrono::duration<long double, std::nano> wide(d);
    if (!(wide.count() > 0)) return nanoseconds::zero();  // zero, negative, NaN
    if (wide.count() >= static_cast<long double>(nanoseconds::max().count())) return nanoseconds::max();
    if constexpr (std::is_floating_point_v<Rep>) {
      const long double c = wide.count();
      auto n = static_cast<nanoseconds::rep>(c);
      if (static_cast<long double>(n) < c) ++n;
      return nanoseconds(n);
    } else {
      return std::chrono::ceil<nanoseconds>(d);
    }
  }

  std::optional<std::chrono::nanoseconds> ns_;
};

// ===========================================================================
// Descriptors: BorrowedFd (non-owning) and Fd (owning)
// ===========================================================================

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

// ===========================================================================
// Free functions mirroring read / write / poll / shutdown
// ===========================================================================

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

// ===========================================================================
// Epoll
// ===========================================================================

// An epoll instance (uepoll, or a kernel one adopted through Epoll(Fd)).
class Epoll : public Owner<Epoll> {
 public:
  // Empty.
  Epoll() noexcept = default;
  // Adopts `fd`, which should be an epoll instance (not checked: calls on
  // anything else fail with EINVAL as Linux's do).
  explicit Epoll(Fd fd) noexcept : Owner(std::move(fd)) {}

  // epoll_create1(flags): flags is 0 or EPOLL_CLOEXEC.  Errors: EINVAL
  // (other flags), EMFILE (uepoll table full), ENOMEM.  Contract:
  // thread-safe; never blocks; allocates the instance.
  static Result<Epoll> try_create(int flags = 0) noexcept {
    const long r = detail::epoll_create1(flags);
    if (r < 0) return detail::errc_from(r);
    return Epoll(Fd(static_cast<int>(r)));
  }
  // As try_create(); throws std::system_error on failure.
  static Epoll create(int flags = 0) { return detail::value_or_throw(try_create(flags)); }

  // epoll_ctl(EPOLL_CTL_ADD): watch `fd` for `events` (EPOLLIN, EPOLLET,
  // ...; EPOLLERR|EPOLLHUP are always added), reporting `data`.  Errors in
  // Linux's order: EBADF (this or fd not open), EPERM (fd not pollable),
  // EINVAL (fd is this instance, this is not an epoll, bad EPOLLEXCLUSIVE
  // combination), ELOOP (fd is an epoll whose addition would make a cycle
  // or nest deeper than 5), EEXIST (already watched), ENOSPC
  // (max_user_watches), ENOMEM.  Contract: thread-safe; never blocks (takes
  // the instance's mutex); allocates one item.
  Result<void> try_add(BorrowedFd fd, std::uint32_t events, std::uint64_t data = 0) const noexcept {
    return ctl_u64(EPOLL_CTL_ADD, fd, events, data);
  }
  Result<void> try_add(BorrowedFd fd, std::uint32_t events, void* data) const noexcept {
    return ctl_ptr(EPOLL_CTL_ADD, fd, events, data);
  }
  // Integer data of any type (so that a literal 0 is not ambiguous).
  template <std::integral I>
  Result<void> try_add(BorrowedFd fd, std::uint32_t events, I data) const noexcept {
    return ctl_u64(EPOLL_CTL_ADD, fd, events, static_cast<std::uint64_t>(data));
  }
  // As try_add(); throw std::system_error on failure.
  void add(BorrowedFd fd, std::uint32_t events, std::uint64_t data = 0) const {
    detail::value_or_throw(try_add(fd, events, data));
  }
  void add(BorrowedFd fd, std::uint32_t events, void* data) const { detail::value_or_throw(try_add(fd, events, data)); }
  template <std::integral I>
  void add(BorrowedFd fd, std::uint32_t events, I data) const {
    detail::value_or_throw(try_add(fd, events, data));
  }

  // epoll_ctl(EPOLL_CTL_MOD): replace the events and data of a watched fd.
  // Errors in Linux's order: EBADF, EPERM, EINVAL (fd is this instance;
  // EPOLLEXCLUSIVE requested or set on the item), ENOENT (not watched),
  // ENOMEM.  Contract: thread-safe; never blocks; never allocates.
  Result<void> try_mod(BorrowedFd fd, std::uint32_t events, std::uint64_t data = 0) const noexcept {
    return ctl_u64(EPOLL_CTL_MOD, fd, events, data);
  }
  Result<void> try_mod(BorrowedFd fd, std::uint32_t events, void* data) const noexcept {
    return ctl_ptr(EPOLL_CTL_MOD, fd, events, data);
  }
  template <std::integral I>
  Result<void> try_mod(BorrowedFd fd, std::uint32_t events, I data) const noexcept {
    return ctl_u64(EPOLL_CTL_MOD, fd, events, static_cast<std::uint64_t>(data));
  }
  // As try_mod(); throw std::system_error on failure.
  void mod(BorrowedFd fd, std::uint32_t events, std::uint64_t data = 0) const {
    detail::value_or_throw(try_mod(fd, events, data));
  }
  void mod(BorrowedFd fd, std::uint32_t events, void* data) const { detail::value_or_throw(try_mod(fd, events, data)); }
  template <std::integral I>
  void mod(BorrowedFd fd, std::uint32_t events, I data) const {
    detail::value_or_throw(try_mod(fd, events, data));
  }

  // epoll_ctl(EPOLL_CTL_DEL): stop watching fd.  Errors in Linux's order:
  // EBADF, EPERM, EINVAL (fd is this instance, this is not an epoll),
  // ENOENT (not watched).  Contract: thread-safe; never blocks; never
  // allocates (the item is reclaimed later).
  Result<void> try_del(BorrowedFd fd) const noexcept {
    return detail::void_result_of(detail::epoll_ctl(get(), EPOLL_CTL_DEL, fd.get(), nullptr));
  }
  // As try_del(); throws std::system_error on failure.
  void del(BorrowedFd fd) const { detail::value_or_throw(try_del(fd)); }

  // ---- beyond Linux (issue 10; contracts in uepoll.h) -----------------
  // UEP_EPOLL_CTL_DISABLE on an EPOLLONESHOT item: success means no wait in
  // any thread will return its event; errors EBUSY (an event was handed
  // out since it was armed), EINVAL (not ONESHOT), ENOENT, and DEL's.
  Result<void> try_disable(BorrowedFd fd) const noexcept {
    return detail::void_result_of(detail::epoll_ctl(get(), UEP_EPOLL_CTL_DISABLE, fd.get(), nullptr));
  }
  void disable(BorrowedFd fd) const { detail::value_or_throw(try_disable(fd)); }

  // EPIOCSPARAMS / EPIOCGPARAMS: busy-poll parameters (uepoll.h).
  Result<void> try_set_busy_poll(const struct epoll_params& p) const noexcept {
    struct epoll_params copy = p;
    return detail::void_result_of(detail::epoll_ioctl(get(), EPIOCSPARAMS, &copy));
  }
  void set_busy_poll(const struct epoll_params& p) const { detail::value_or_throw(try_set_busy_poll(p)); }
  Result<struct epoll_params> try_busy_poll() const noexcept {
    struct epoll_params p {};
    const long r = detail::epoll_ioctl(get(), EPIOCGPARAMS, &p);
    if (r < 0) return detail::errc_from(r);
    return p;
  }
  struct epoll_params busy_poll() const { return detail::value_or_throw(try_busy_poll()); }

  // uep_epoll_ctl_batch: runs cmds in order (each result 0 or -errno),
  // stops at the first failure; returns how many ran.
  Result<std::size_t> try_ctl_batch(std::span<struct uep_ctl_cmd> cmds) const noexcept {
    if (cmds.size() > static_cast<std::size_t>(UEP_CTL_BATCH_MAX)) return std::make_error_code(std::errc::invalid_argument);
    return detail::result_of<std::size_t>(detail::epoll_ctl_batch(get(), cmds.data(), static_cast<int>(cmds.size())));
  }
  std::size_t ctl_batch(std::span<struct uep_ctl_cmd> cmds) const { return detail::value_or_throw(try_ctl_batch(cmds)); }

  // The registrations fdinfo shows, as a list sorted by (target_id, fd).
  // uepoll instances only (EINVAL for a kernel one).  Allocates the vector.
  using Registration = detail::EpollRegistration;
  Result<std::vector<Registration>> try_registrations() const {
    std::vector<Registration> v;
    for (;;) {
      const long n = detail::epoll_registrations(get(), v.data(), v.size());
      if (n < 0) return detail::errc_from(n);
      if (static_cast<std::size_t>(n) <= v.size()) {
        v.resize(static_cast<std::size_t>(n));
        return v;
      }
      v.resize(static_cast<std::size_t>(n) + 8);
    }
  }
  std::vector<Registration> registrations() const { return detail::value_or_throw(try_registrations()); }

  // epoll_pwait2: waits until at least one watched fd is ready, the timeout
  // passes, or a signal handler runs; fills a prefix of `out` and returns
  // that prefix (empty on timeout).  `sigmask`, if not null, is the signal
  // mask in force during the wait (atomically, as epoll_pwait).  Errors in
  // Linux's order: EBADF (not open), EINVAL (out is empty or longer than
  // EP_MAX_EVENTS; this is not an epoll), EINTR (a handler ran, never
  // restarted).  Contract: thread-safe (concurrent waiters are woken one
  // per event, FIFO, as Linux's exclusive wait); blocks up to `timeout`
  // (default forever; zero never blocks); never allocates.
  Result<std::span<struct epoll_event>> try_wait(std::span<struct epoll_event> out, Timeout timeout = forever,
                                                 const sigset_t* sigmask = nullptr) const noexcept {
    struct timespec ts;
    const int maxevents = out.size() > static_cast<std::size_t>(INT_MAX) ? INT_MAX : static_cast<int>(out.size());
    const long r = detail::epoll_pwait2(get(), out.data(), maxevents, timeout.as_timespec(ts), sigmask);
    if (r < 0) return detail::errc_from(r);
    return out.first(static_cast<std::size_t>(r));
  }
  // uep_epoll_kernel_fd: a kernel descriptor that polls readable whenever
  // try_wait(out, 0) would return events, for embedding this instance in a
  // kernel event loop (libuv, Asio, a kernel epoll).  Owned by the
  // instance: never close it; valid while the instance is open.  See
  // uepoll.h for the exact guarantee.  Errors: EBADF, EINVAL (not a uepoll
  // instance), EMFILE/ENFILE/ENOMEM, ELOOP.  Contract: thread-safe; never
  // blocks; the first call creates the descriptor.
  Result<int> try_kernel_fd() const noexcept {
    const long r = detail::epoll_kernel_fd(get());
    if (r < 0) return detail::errc_from(r);
    return static_cast<int>(r);
  }
  // As try_kernel_fd(); throws std::system_error on failure.
  int kernel_fd() const { return detail::value_or_throw(try_kernel_fd()); }

  // As try_wait(); throws std::system_error on failure (including EINTR).
  std::span<struct epoll_event> wait(std::span<struct epoll_event> out, Timeout timeout = forever,
                                     const sigset_t* sigmask = nullptr) const {
    return detail::value_or_throw(try_wait(out, timeout, sigmask));
  }

 private:
  Result<void> ctl_u64(int op, BorrowedFd fd, std::uint32_t events, std::uint64_t data) const noexcept {
    struct epoll_event ev {};
    ev.events = events;
    ev.data.u64 = data;
    return detail::void_result_of(detail::epoll_ctl(get(), op, fd.get(), &ev));
  }
  Result<void> ctl_ptr(int op, BorrowedFd fd, std::uint32_t events, void* data) const noexcept {
    struct epoll_event ev {};
    ev.events = events;
    ev.data.ptr = data;
    return detail::void_result_of(detail::epoll_ctl(get(), op, fd.get(), &ev));
  }
};

// ===========================================================================
// EventFd
// ===========================================================================

class EventFd : public Owner<EventFd> {
 public:
  EventFd() noexcept = default;
  // Adopts `fd`, which should be an eventfd (not checked).
  explicit EventFd(Fd fd) noexcept : Owner(std::move(fd)) {}

  // eventfd(initval, flags): flags from EFD_CLOEXEC, EFD_NONBLOCK,
  // EFD_SEMAPHORE.  Errors: EINVAL (other flags), EMFILE, ENOMEM.
  // Contract: thread-safe; never blocks; allocates the object.
  static Result<EventFd> try_create(unsigned int initval = 0, int flags = 0) noexcept {
    const long r = detail::eventfd(initval, flags);
    if (r < 0) return detail::errc_from(r);
    return EventFd(Fd(static_cast<int>(r)));
  }
  // As try_create(); throws std::system_error on failure.
  static EventFd create(unsigned int initval = 0, int flags = 0) {
    return detail::value_or_throw(try_create(initval, flags));
  }

  // Reads the counter (and resets it; or takes 1 in EFD_SEMAPHORE mode).
  // Errors: EAGAIN (counter 0 and EFD_NONBLOCK), EBADF, EINTR.  Contract:
  // thread-safe; blocks while the counter is 0 unless EFD_NONBLOCK; never
  // allocates.
  Result<std::uint64_t> try_read() const noexcept {
    std::uint64_t v = 0;
    const long r = detail::read(get(), &v, sizeof v);
    if (r < 0) return detail::errc_from(r);
    return v;
  }
  // As try_read(); throws std::system_error on failure.
  std::uint64_t read() const { return detail::value_or_throw(try_read()); }

  // Adds `value` to the counter.  Errors: EINVAL (value is
  // 0xffffffffffffffff), EAGAIN (would overflow and EFD_NONBLOCK), EBADF,
  // EINTR.  Contract: thread-safe; blocks while the addition would overflow
  // unless EFD_NONBLOCK; never allocates.
  Result<void> try_write(std::uint64_t value) const noexcept {
    const long r = detail::write(get(), &value, sizeof value);
    return detail::void_result_of(r < 0 ? r : 0);
  }
  // As try_write(); throws std::system_error on failure.
  void write(std::uint64_t value) const { detail::value_or_throw(try_write(value)); }
};

// ===========================================================================
// Pipe
// ===========================================================================

// The two ends of a pipe: read_end and write_end.
struct Pipe {
  Fd read_end;
  Fd write_end;

  // pipe2(flags): flags from O_CLOEXEC, O_NONBLOCK, O_DIRECT (as Linux).
  // Errors: EINVAL (other flags), EMFILE (both ends need a slot: on EMFILE
  // nothing is left open), ENOMEM.  Contract: thread-safe; never blocks;
  // allocates the pipe.
  static Result<Pipe> try_create(int flags = 0) noexcept {
    int fds[2] = {-1, -1};
    const long r = detail::pipe2(fds, flags);
    if (r < 0) return detail::errc_from(r);
    return Pipe{Fd(fds[0]), Fd(fds[1])};
  }
  // As try_create(); throws std::system_error on failure.
  static Pipe create(int flags = 0) { return detail::value_or_throw(try_create(flags)); }
};

// ===========================================================================
// Socket, SocketPair
// ===========================================================================

// One end of a connected socket pair.
class Socket : public Owner<Socket> {
 public:
  Socket() noexcept = default;
  // Adopts `fd`, which should be a socket (not checked).
  explicit Socket(Fd fd) noexcept : Owner(std::move(fd)) {}

  // shutdown(how): SHUT_RD, SHUT_WR or SHUT_RDWR.  Errors: EBADF, EINVAL
  // (bad how), ENOTCONN.  Contract: thread-safe; never blocks; never
  // allocates.
  Result<void> try_shutdown(int how) const noexcept { return uepoll::try_shutdown(*this, how); }
  // As try_shutdown(); throws std::system_error on failure.
  void shutdown(int how) const { uepoll::shutdown(*this, how); }
};

// A connected AF_UNIX socket pair: first and second.
struct SocketPair {
  Socket first;
  Socket second;

  // socketpair(AF_UNIX, type, 0): type is SOCK_STREAM, optionally or'ed
  // with SOCK_NONBLOCK and SOCK_CLOEXEC.  Errors as Linux: EINVAL (bad
  // flags), EOPNOTSUPP / ESOCKTNOSUPPORT / EPROTONOSUPPORT where uepoll or
  // Linux lacks the type, EMFILE, ENOMEM.  Contract: thread-safe; never
  // blocks; allocates the pair.
  static Result<SocketPair> try_create(int type = SOCK_STREAM) noexcept { return try_create(AF_UNIX, type, 0); }
  // socketpair(domain, type, protocol) in full; errors as Linux (e.g.
  // EAFNOSUPPORT for a domain without socket pairs).
  static Result<SocketPair> try_create(int domain, int type, int protocol) noexcept {
    int sv[2] = {-1, -1};
    const long r = detail::socketpair(domain, type, protocol, sv);
    if (r < 0) return detail::errc_from(r);
    return SocketPair{Socket(Fd(sv[0])), Socket(Fd(sv[1]))};
  }
  // As try_create(); throw std::system_error on failure.
  static SocketPair create(int type = SOCK_STREAM) { return detail::value_or_throw(try_create(type)); }
  static SocketPair create(int domain, int type, int protocol) {
    return detail::value_or_throw(try_create(domain, type, protocol));
  }
};

// ===========================================================================
// TimerFd
// ===========================================================================

class TimerFd : public Owner<TimerFd> {
 public:
  // A timer setting: time to the next expiry (zero = disarmed) and the
  // period (zero = one-shot).  With TFD_TIMER_ABSTIME, `initial` passed to
  // settime() is the expiry time on the timer's clock, since its epoch.
  struct Setting {
    std::chrono::nanoseconds initial{0};
    std::chrono::nanoseconds interval{0};
    friend bool operator==(const Setting&, const Setting&) = default;
  };

  TimerFd() noexcept = default;
  // Adopts `fd`, which should be a timerfd (not checked).
  explicit TimerFd(Fd fd) noexcept : Owner(std::move(fd)) {}

  // timerfd_create(clockid, flags): clock CLOCK_MONOTONIC, CLOCK_REALTIME,
  // CLOCK_BOOTTIME...; flags from TFD_NONBLOCK, TFD_CLOEXEC.  Errors:
  // EINVAL (bad clock or flags), EPERM (alarm clocks without privilege),
  // EMFILE, ENOMEM.  Contract: thread-safe; never blocks; allocates.
  static Result<TimerFd> try_create(int clockid = CLOCK_MONOTONIC, int flags = 0) noexcept {
    const long r = detail::timerfd_create(clockid, flags);
    if (r < 0) return detail::errc_from(r);
    return TimerFd(Fd(static_cast<int>(r)));
  }
  // As try_create(); throws std::system_error on failure.
  static TimerFd create(int clockid = CLOCK_MONOTONIC, int flags = 0) {
    return detail::value_or_throw(try_create(clockid, flags));
  }

  // timerfd_settime: arms (initial > 0) or disarms (initial == 0) the
  // timer, with period `interval`; flags 0, TFD_TIMER_ABSTIME (initial is
  // absolute) or TFD_TIMER_ABSTIME|TFD_TIMER_CANCEL_ON_SET.  Returns the
  // previous setting.  Errors: EINVAL (negative or out-of-range durations,
  // bad flags), EBADF.  Contract: thread-safe; never blocks; never
  // allocates.
  Result<Setting> try_settime(std::chrono::nanoseconds initial, std::chrono::nanoseconds interval = {},
                              int flags = 0) const noexcept {
    struct itimerspec nv {}, ov {};
    nv.it_value = to_timespec(initial);
    nv.it_interval = to_timespec(interval);
    const long r = detail::timerfd_settime(get(), flags, &nv, &ov);
    if (r < 0) return detail::errc_from(r);
    return from_itimerspec(ov);
  }
  // As try_settime(); throws std::system_error on failure.
  Setting settime(std::chrono::nanoseconds initial, std::chrono::nanoseconds interval = {}, int flags = 0) const {
    return detail::value_or_throw(try_settime(initial, interval, flags));
  }

  // Disarms the timer (try_settime(0ns)); returns the previous setting.
  // Contract: as try_settime().
  Result<Setting> try_disarm() const noexcept { return try_settime(std::chrono::nanoseconds::zero()); }
  // As try_disarm(); throws std::system_error on failure.
  Setting disarm() const { return detail::value_or_throw(try_disarm()); }

  // timerfd_gettime: time left to the next expiry (always relative) and the
  // period.  Errors: EBADF, EINVAL (not a timerfd).  Contract: thread-safe;
  // never blocks; never allocates.
  Result<Setting> try_gettime() const noexcept {
    struct itimerspec cur {};
    const long r = detail::timerfd_gettime(get(), &cur);
    if (r < 0) return detail::errc_from(r);
    return from_itimerspec(cur);
  }
  // As try_gettime(); throws std::system_error on failure.
  Setting gettime() const { return detail::value_or_throw(try_gettime()); }

  // Reads and resets the number of expirations since the last read.
  // Errors: EAGAIN (none and TFD_NONBLOCK), ECANCELED (CANCEL_ON_SET and
  // the clock was set), EBADF, EINTR.  Contract: thread-safe; blocks until
  // an expiry unless TFD_NONBLOCK; never allocates.
  Result<std::uint64_t> try_read() const noexcept {
    std::uint64_t v = 0;
    const long r = detail::read(get(), &v, sizeof v);
    if (r < 0) return detail::errc_from(r);
    return v;
  }
  // As try_read(); throws std::system_error on failure.
  std::uint64_t read() const { return detail::value_or_throw(try_read()); }

 private:
  // Floor division, so a negative duration gives tv_sec < 0 (EINVAL).
  static struct timespec to_timespec(std::chrono::nanoseconds d) noexcept {
    const auto s = std::chrono::floor<std::chrono::seconds>(d);
    struct timespec ts {};
    ts.tv_sec = static_cast<time_t>(s.count());
    ts.tv_nsec = static_cast<long>((d - s).count());
    return ts;
  }
  static std::chrono::nanoseconds from_timespec(const struct timespec& ts) noexcept {
    return std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec);
  }
  static Setting from_itimerspec(const struct itimerspec& its) noexcept {
    return Setting{from_timespec(its.it_value), from_timespec(its.it_interval)};
  }
};

}  // namespace uepoll
