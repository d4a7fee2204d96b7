// tests/cxx/support.h - shared helpers for the C++ API tests: a Factory that
// creates the same owners either from uepoll (the C++ API's own try_create)
// or from real Linux descriptors adopted into the same owner types (the
// engine forwards kernel descriptors to the kernel), so one test body runs
// against both; and is_open(), which tells whether a raw descriptor is still
// open in whichever table it lives in.
#pragma once

#include <uepoll/uepoll.hpp>

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <span>
#include <string>

namespace cxxtest {

enum class Backend { Linux, Uepoll };

inline std::string backend_name(const ::testing::TestParamInfo<Backend>& info) {
  return info.param == Backend::Linux ? "Linux" : "Uepoll";
}

// -1/errno -> error_code, for the Linux side.
inline std::error_code last_error() { return std::error_code(errno, std::system_category()); }

// True iff `fd` is an open descriptor: a uepoll one (uep_is_uepoll_fd) or a
// kernel one (fcntl F_GETFD).
inline bool is_open(int fd) {
  if (fd >= UEP_FD_BASE) return uep_is_uepoll_fd(fd) == 1;
  return fd >= 0 && ::fcntl(fd, F_GETFD) != -1;
}

struct Factory {
  Backend backend;

  uepoll::Result<uepoll::Epoll> epoll(int flags = 0) const {
    if (backend == Backend::Uepoll) return uepoll::Epoll::try_create(flags);
    const int fd = ::epoll_create1(flags);
    if (fd < 0) return last_error();
    return uepoll::Epoll(uepoll::Fd(fd));
  }
  uepoll::Result<uepoll::EventFd> eventfd(unsigned int init = 0, int flags = 0) const {
    if (backend == Backend::Uepoll) return uepoll::EventFd::try_create(init, flags);
    const int fd = ::eventfd(init, flags);
    if (fd < 0) return last_error();
    return uepoll::EventFd(uepoll::Fd(fd));
  }
  uepoll::Result<uepoll::Pipe> pipe(int flags = 0) const {
    if (backend == Backend::Uepoll) return uepoll::Pipe::try_create(flags);
    int fds[2];
    if (::pipe2(fds, flags) < 0) return last_error();
    return uepoll::Pipe{uepoll::Fd(fds[0]), uepoll::Fd(fds[1])};
  }
  uepoll::Result<uepoll::SocketPair> socketpair(int domain, int type, int protocol) const {
    if (backend == Backend::Uepoll) return uepoll::SocketPair::try_create(domain, type, protocol);
    int sv[2];
    if (::socketpair(domain, type, protocol, sv) < 0) return last_error();
    return uepoll::SocketPair{uepoll::Socket(uepoll::Fd(sv[0])), uepoll::Socket(uepoll::Fd(sv[1]))};
  }
  uepoll::Result<uepoll::SocketPair> socketpair(int type = SOCK_STREAM) const {
    return socketpair(AF_UNIX, type, 0);
  }
  uepoll::Result<uepoll::TimerFd> timerfd(int clockid = CLOCK_MONOTONIC, int flags = 0) const {
    if (backend == Backend::Uepoll) return uepoll::TimerFd::try_create(clockid, flags);
    const int fd = ::timerfd_create(clockid, flags);
    if (fd < 0) return last_error();
    return uepoll::TimerFd(uepoll::Fd(fd));
  }
};

// A test fixture parameterised by backend.
class BothBackends : public ::testing::TestWithParam<Backend> {
 protected:
  Factory make{GetParam()};
  bool uepoll_side() const { return GetParam() == Backend::Uepoll; }
};

// epoll_event is packed on x86-64: gtest's EXPECT_EQ binds references, so
// read its fields by value through these.
inline std::uint64_t u64(const epoll_event& e) { return e.data.u64; }
inline std::uint32_t events(const epoll_event& e) { return e.events; }

// Byte-span helpers.
inline std::span<const std::byte> bytes(const std::string& s) { return std::as_bytes(std::span(s.data(), s.size())); }
template <std::size_t N>
std::span<std::byte> buffer(std::array<std::byte, N>& a) {
  return std::span<std::byte>(a);
}
inline std::string str(std::span<const std::byte> b) {
  return std::string(reinterpret_cast<const char*>(b.data()), b.size());
}

}  // namespace cxxtest

// Compares with an error_code in the system category (what the API
// returns), so a failure prints both codes' messages.
#define EXPECT_ERRC(result, errc_value) \
  EXPECT_EQ((result).error(), std::error_code(static_cast<int>(errc_value), std::system_category()))
#define ASSERT_OK(result) ASSERT_TRUE((result).has_value()) << (result).error().message()
#define EXPECT_OK(result) EXPECT_TRUE((result).has_value()) << (result).error().message()
