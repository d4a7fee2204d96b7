// watches.h - the process-wide registration limit, Linux's max_user_watches
// (ENOSPC past it).  The default is read from the kernel's own
// /proc/sys/fs/epoll/max_user_watches, so both limits agree by default.
//
// Each thread reserves credits from one global counter in batches of 64
// while far from the limit and one at a time near it, so that instances on
// different cores do not bounce one cache line (Linux uses a percpu_counter
// for the same reason); a thread's unused credits go back at thread exit.
// Exact for a single thread: the (limit+1)-th registration fails.
//
// Locks: none.
#pragma once

#include "core/tuning.h"

namespace uepoll::epoll::watches {

// Reserves one registration; false when the limit is reached (ENOSPC).
bool reserve() noexcept;
void unreserve() noexcept;
long in_use() noexcept;  // reserved globally (including unused thread credits)
long read_limit() noexcept;  // limit() the first time: reads the kernel's
inline long limit() noexcept {
  const long v = core::knobs().max_user_watches.load(std::memory_order_relaxed);
  return v >= 0 ? v : read_limit();
}
void set_limit(long n) noexcept;

}  // namespace uepoll::epoll::watches
