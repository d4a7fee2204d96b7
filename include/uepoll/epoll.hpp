// epoll.hpp - uepoll::Epoll, the owner of an epoll instance (uepoll, or a
// kernel one adopted through Epoll(Fd)): create, add / mod / del, wait,
// and the beyond-Linux members (disable, busy-poll parameters, batched
// ctl, registrations, kernel_fd; their C contracts are in uepoll.h).
// Header-only; takes no locks itself: each member is one engine entry
// point (detail/ops.hpp), which takes the instance's locks
// (src/core/lock_order.h).
// Part of the C++ API: <uepoll/uepoll.hpp> includes this header and states
// the contract of the whole API once (try_x/x naming, thread safety,
// blocking, allocation, descriptors, timeouts); this header may also be
// included on its own.
#pragma once

#include <uepoll/detail/ops.hpp>
#include <uepoll/fd.hpp>
#include <uepoll/result.hpp>
#include <uepoll/timeout.hpp>
#include <uepoll/uepoll.h>

#include <climits>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <ctime>
#include <span>
#include <system_error>
#include <vector>

namespace uepoll {

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

}  // namespace uepoll
