// tests/install/consumer.cpp - a C++ program built against an *installed*
// uepoll by tests/install/check.sh (when the installed tree has
// uepoll/uepoll.hpp).
//
// Checks: the installed C++ header (and the detail/ headers it includes)
// compiles with -std=c++20 -Wall -Wextra -Werror, its inline code links
// against the installed library (the engine entry points it calls are
// exported), and a round trip works: an eventfd added edge-triggered to an
// instance is reported once, with its data, after a write; errors come back
// as std::error_code (EEXIST on a second add) and as std::system_error from
// the throwing call.  The C header is used from C++ as well (extern "C").
// Exits 0 and prints "consumer (C++): ok"; exits 1 with a message otherwise.
#include <uepoll/uepoll.h>
#include <uepoll/uepoll.hpp>

#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <system_error>

#define CHECK(cond)                                                      \
  do {                                                                   \
    if (!(cond)) {                                                       \
      std::fprintf(stderr, "consumer.cpp:%d: check failed: %s\n", __LINE__, #cond); \
      return 1;                                                          \
    }                                                                    \
  } while (0)

int main() {
  using namespace std::chrono_literals;
  try {
    uepoll::Epoll ep = uepoll::Epoll::create(EPOLL_CLOEXEC);
    uepoll::EventFd ev = uepoll::EventFd::create(0, EFD_NONBLOCK);
    CHECK(ep.get() >= UEP_FD_BASE && ev.get() >= UEP_FD_BASE);
    CHECK(uep_is_uepoll_fd(ev.get()) == 1);

    ep.add(ev, EPOLLIN | EPOLLET, std::uint64_t{42});
    std::array<epoll_event, 4> buf{};
    CHECK(ep.wait(buf, 0ms).empty());

    ev.write(3);
    auto got = ep.wait(buf, 1s);
    CHECK(got.size() == 1);
    CHECK(got[0].events == EPOLLIN);
    CHECK(got[0].data.u64 == 42);
    CHECK(ep.wait(buf, 0ms).empty());  // edge-triggered: reported once
    CHECK(ev.read() == 3);

    // Errors: a Result carrying std::errc::file_exists, and the throwing form.
    auto again = ep.try_add(ev, EPOLLIN);
    CHECK(!again && again.error() == std::errc::file_exists);
    bool threw = false;
    try {
      ep.add(ev, EPOLLIN);
    } catch (const std::system_error& e) {
      threw = e.code() == std::errc::file_exists;
    }
    CHECK(threw);

    // The C API on the same descriptors.
    epoll_event out[2];
    CHECK(uep_epoll_wait(ep.get(), out, 2, 0) == 0);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "consumer.cpp: unexpected exception: %s\n", e.what());
    return 1;
  }
  std::puts("consumer (C++): ok");
  return 0;
}
