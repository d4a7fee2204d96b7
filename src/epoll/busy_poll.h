// busy_poll.h - an instance's busy-poll parameters (EPIOCSPARAMS) and the
// per-wait spin window (beyond Linux).
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
  // Adaptive window (see busy_poll.cpp): a wait spins for usecs >> shift;
  // a spin that ends without an event adds one to shift (up to kMaxShift:
  // half the window), one that finds an event takes one off (twice the
  // window); while shift > 0 every 64th wait (probe) spins the whole usecs
  // and clears shift if it finds an event.  Relaxed: heuristics, no data
  // guarded.  EPIOCSPARAMS resets both.
  std::atomic<uint8_t> shift{0};
  std::atomic<uint32_t> probe{0};
  static constexpr uint8_t kMaxShift = 12;
  void reset_adaptation() noexcept {
    shift.store(0, std::memory_order_relaxed);
    probe.store(0, std::memory_order_relaxed);
  }
  void spin_found_event(bool was_probe) noexcept {
    const uint8_t s = shift.load(std::memory_order_relaxed);
    if (s != 0) shift.store(was_probe ? 0 : static_cast<uint8_t>(s - 1), std::memory_order_relaxed);
  }
  void spin_missed() noexcept {
    const uint8_t s = shift.load(std::memory_order_relaxed);
    if (s < kMaxShift) shift.store(static_cast<uint8_t>(s + 1), std::memory_order_relaxed);
  }
};

// One wait call's spin budget: set when the wait first finds nothing ready,
// spent across the call's loop (a harvest that found nothing after all does
// not restart it).
struct SpinWindow {
  timespec end{};
  bool started = false;
  bool probe = false;  // this window is the whole usecs although shift > 0
};

}  // namespace uepoll::epoll
