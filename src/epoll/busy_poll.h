// busy_poll.h - an instance's busy-poll parameters (EPIOCSPARAMS) and the
// per-wait spin window (beyond Linux, issue 10).
//
// Owns: BusyPoll, the three values of Linux's struct epoll_params kept by
// each instance (relaxed atomics: each is a policy value read once per
// wait, guarding no data), and SpinWindow, one wait's deadline for
// spinning.  The spin itself is Instance::busy_wait (epoll/busy_poll.cpp).
// Locks: none.
#pragma once

#include <atomic>
#include <cstdint>
#include <ctime>

namespace uepoll::epoll {

// The process-wide default for new instances ("busy_poll_usecs" knob).
uint32_t default_busy_poll_usecs() noexcept;

struct BusyPoll {
  std::atomic<uint32_t> usecs{default_busy_poll_usecs()};
  std::atomic<uint16_t> budget{0};
  std::atomic<uint8_t> prefer{0};
};

// One wait call's spin budget: set when the wait first finds nothing ready,
// spent across the call's loop (a harvest that found nothing after all does
// not restart it).
struct SpinWindow {
  timespec end{};
  bool started = false;
};

}  // namespace uepoll::epoll
