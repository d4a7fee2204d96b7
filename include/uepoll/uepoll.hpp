// uepoll.hpp - the C++20 API of uepoll: RAII owners and free functions over
// the same engine as the C API (uepoll/detail/ops.hpp), not a wrapper around
// the C functions.  Header-only; link uepoll::uepoll.  This header is the
// umbrella: it includes the whole API (the headers under Contents, below)
// and states, once, the contract they all follow.  Owns no locks: every
// call goes straight to one engine entry point, which returns a result or a
// negative errno; these headers turn the latter into std::error_code
// (std::system_category, comparable with std::errc) and never read or
// write errno.
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
// allocate in these headers (the engine may, e.g. an epoll item on add); the
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
// Contents, one header each (all under uepoll/; each may also be included
// on its own, and brings in what it needs):
//   result.hpp      Result<T> / Result<void>
//   timeout.hpp     Timeout and `forever`
//   fd.hpp          BorrowedFd; Fd (any descriptor); Owner, the base of
//                   the typed owners
//   fd_surface.hpp  the free functions read, write (over std::span
//                   buffers), poll, shutdown, set_nonblocking, set_cloexec,
//                   dup_to
//   epoll.hpp       the typed owner Epoll
//   objects.hpp     the typed owners EventFd, TimerFd, Socket; the
//                   aggregates Pipe {read_end, write_end} and SocketPair
//                   {first, second}
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

#include <uepoll/result.hpp>
#include <uepoll/timeout.hpp>
#include <uepoll/fd.hpp>
#include <uepoll/fd_surface.hpp>
#include <uepoll/epoll.hpp>
#include <uepoll/objects.hpp>

// What this header included when it held the whole API, kept so that every
// program built against it still compiles unchanged.
#include <fcntl.h>

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
