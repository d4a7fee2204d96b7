// objects.hpp - the owners of the I/O objects in the C++ API: EventFd,
// Pipe {read_end, write_end}, Socket and SocketPair {first, second}, and
// TimerFd with its Setting.  Header-only; takes no locks: each member is
// one engine entry point (detail/ops.hpp) on the object's descriptor.
// Part of the C++ API: <uepoll/uepoll.hpp> includes this header and states
// the contract of the whole API once (try_x/x naming, thread safety,
// blocking, allocation, descriptors, timeouts); this header may also be
// included on its own.
#pragma once

#include <uepoll/detail/ops.hpp>
#include <uepoll/fd.hpp>
#include <uepoll/fd_surface.hpp>  // Socket::shutdown is uepoll::shutdown
#include <uepoll/result.hpp>
#include <uepoll/uepoll.h>

#include <fcntl.h>  // O_NONBLOCK, O_CLOEXEC for Pipe::create

#include <chrono>
#include <cstdint>
#include <ctime>

namespace uepoll {

namespace detail {

// read(2) of the 8-byte counter of an eventfd or a timerfd: the value, or
// the error.  Contract: as EventFd::try_read / TimerFd::try_read.
inline Result<std::uint64_t> read_counter(int fd) noexcept {
  std::uint64_t v = 0;
  const long r = detail::read(fd, &v, sizeof v);
  if (r < 0) return errc_from(r);
  return v;
}

}  // namespace detail

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
  Result<std::uint64_t> try_read() const noexcept { return detail::read_counter(get()); }
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

  // socketpair(AF_UNIX, type, 0): type is SOCK_STREAM, SOCK_DGRAM or
  // SOCK_SEQPACKET, optionally or'ed with SOCK_NONBLOCK and SOCK_CLOEXEC.
  // Errors as Linux: EINVAL (bad flags), ESOCKTNOSUPPORT where Linux lacks
  // the type, EMFILE, ENOMEM.  Contract: thread-safe; never
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
  Result<std::uint64_t> try_read() const noexcept { return detail::read_counter(get()); }
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
