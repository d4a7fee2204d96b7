// threads_waiter.h - what threads_test.cpp and threads_interrupt_test.cpp share:
// Waiter, a thread blocked in epoll_wait whose constructor returns once it
// sleeps, and kSettleUs, the time a waiter is given to block or to show a
// wrong wakeup.  Takes no lock of its own.
#pragma once

#include "harness.h"

#include <atomic>
#include <string>
#include <thread>

namespace conf_threads {

inline constexpr int kSettleUs = 60 * 1000;

// A thread blocked in epoll_wait(ep, 1, timeout); the constructor returns
// once the thread sleeps; `result()` joins it.
struct Waiter {
  Waiter(const conf::Api& api, int ep, int timeout_ms)
      : th([this, &api, ep, timeout_ms] {
          tid.store(static_cast<pid_t>(gettid()));
          n = api.epoll_wait(ep, &ev, 1, timeout_ms);
          err = errno;
          done.store(true);
        }) {
    conf::wait_until_sleeping(tid);
  }
  ~Waiter() {
    if (th.joinable()) th.join();
  }
  bool finished() const { return done.load(); }
  std::string result() {
    th.join();
    if (n < 0) return "-1 " + conf::errno_name(err);
    if (n == 0) return "0 (timed out)";
    return "1 [" + conf::mask_str(ev.events) + ":" + std::to_string(ev.data.u64) + "]";
  }
  struct epoll_event ev {};
  int n = -2;
  int err = 0;
  std::atomic<bool> done{false};
  std::atomic<pid_t> tid{0};
  std::thread th;
};

}  // namespace conf_threads
