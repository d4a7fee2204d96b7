// unit_common.h - shared helpers for the object unit tests: a test fixture
// parameterized by the call table (Linux or uepoll, tests/support/api.h), so
// that every scenario runs against the kernel object first -- the oracle --
// and then against uepoll's, with the same absolute expectations.  Also:
// readiness via poll(), an edge-triggered epoll helper, and SIGPIPE capture.
#pragma once

#include "support/api.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/epoll.h>
#include <time.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

namespace unit {

using uepoll_test::Api;

class ObjTest : public ::testing::TestWithParam<const Api*> {
 protected:
  const Api& api() const { return *GetParam(); }
  bool is_uepoll() const { return std::string(GetParam()->name) == "uepoll"; }
};

inline std::string api_name(const ::testing::TestParamInfo<const Api*>& info) { return info.param->name; }

#define UNIT_INSTANTIATE(Fixture)                                                                   \
  INSTANTIATE_TEST_SUITE_P(LinuxAndUepoll, Fixture,                                                 \
                           ::testing::Values(&uepoll_test::linux_api(), &uepoll_test::uepoll_api()), \
                           unit::api_name)

// Every bit a ->poll() can report, requested from poll(2).
constexpr short kAllPoll = POLLIN | POLLPRI | POLLOUT | POLLRDNORM | POLLRDBAND | POLLWRNORM | POLLWRBAND | POLLRDHUP;

// Current readiness of fd through the api's poll(), as EPOLL* bits.
inline uint32_t mask(const Api& a, int fd) {
  pollfd p{fd, kAllPoll, 0};
  int r = a.poll(&p, 1, 0);
  if (r < 0) return 0xffffffffu;
  return static_cast<uint16_t>(p.revents);
}

// errno of the last failed call, or 0 if r >= 0.
inline int err_of(long r) { return r < 0 ? errno : 0; }

// An epoll instance of the api, closed on destruction.
class Ep {
 public:
  explicit Ep(const Api& a) : a_(a), fd_(a.epoll_create1(0)) {}
  ~Ep() {
    if (fd_ >= 0) a_.close(fd_);
  }
  int fd() const { return fd_; }
  int add(int fd, uint32_t events, uint64_t data) {
    epoll_event ev{};
    ev.events = events;
    ev.data.u64 = data;
    return a_.epoll_ctl(fd_, EPOLL_CTL_ADD, fd, &ev);
  }
  std::vector<epoll_event> wait(int timeout_ms, int max = 16) {
    std::vector<epoll_event> evs(static_cast<size_t>(max));
    int n = a_.epoll_wait(fd_, evs.data(), max, timeout_ms);
    evs.resize(n < 0 ? 0 : static_cast<size_t>(n));
    return evs;
  }

 private:
  const Api& a_;
  int fd_;
};

// Blocks SIGPIPE in this thread for the guard's lifetime; pending() says
// whether a SIGPIPE was sent to this thread (and consumes it).
class SigpipeCatcher {
 public:
  SigpipeCatcher() {
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &s, &old_);
    take();  // start clean
  }
  ~SigpipeCatcher() {
    take();
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  bool take() {
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGPIPE);
    timespec zero{0, 0};
    return sigtimedwait(&s, nullptr, &zero) == SIGPIPE;
  }

 private:
  sigset_t old_;
};

inline void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

inline long long now_ms() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1000LL + t.tv_nsec / 1000000;
}

}  // namespace unit
