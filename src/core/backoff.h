// backoff.h - Backoff: the one bounded-spin policy of uepoll.  Every busy
// wait (SpinLock, the item seqlock reader, the topology lock, the fork gate)
// calls pause() once per failed check: cpu_relax() for the first kSpins
// rounds, then sched_yield() (a preempted holder on a small machine gets the
// CPU back), then sleeps of 50 us, so a waiter whose holder is descheduled
// for long stops burning a core.  Async-signal-safe (sched_yield, nanosleep).
#pragma once

#include "core/cpu_relax.h"

#include <sched.h>
#include <time.h>

namespace uepoll::core {

class Backoff {
 public:
  static constexpr unsigned kSpins = 128;
  static constexpr unsigned kYields = 64;

  void pause() noexcept {
    if (n_ < kSpins) {
      cpu_relax();
      ++n_;
    } else if (n_ < kSpins + kYields) {
      sched_yield();
      ++n_;
    } else {
      timespec ts{0, 50 * 1000};
      nanosleep(&ts, nullptr);
    }
  }

 private:
  unsigned n_ = 0;
};

}  // namespace uepoll::core
