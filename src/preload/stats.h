// stats.h - the preload's counters, written at exit to $UEPOLL_STATS (owned
// by src/preload/).  Every counter counts only when UEPOLL_STATS names a
// file (preload.h uep_pl_stats_enabled); the counters are allocated at
// load then, never otherwise.  Relaxed atomics: each is an independent
// count, read only at exit.  No locks.
#pragma once

#include "preload/fdmap.h"

#include <atomic>
#include <cstdint>

namespace uepoll::preload {

struct Stats {
  std::atomic<uint64_t> created[static_cast<int>(Kind::kCount)];  // uepoll objects made, by kind
  std::atomic<uint64_t> registrations[static_cast<int>(Kind::kCount)];  // EPOLL_CTL_ADD ok, by target kind (kNone: kernel)
  std::atomic<uint64_t> ctl_calls{0};
  std::atomic<uint64_t> waits{0};         // epoll_wait/pwait/pwait2 on uepoll instances
  std::atomic<uint64_t> wakeups{0};       // of those, waits that returned events
  std::atomic<uint64_t> events{0};        // events returned by them
  std::atomic<uint64_t> uepoll_calls{0};  // other interposed calls served by uepoll
  std::atomic<uint64_t> forwarded{0};     // interposed calls passed to the kernel
  std::atomic<uint64_t> refused{0};       // calls refused with a warning
  std::atomic<uint64_t> converted{0};     // pipes/pairs made kernel ones before fork
  std::atomic<uint64_t> eventfds_kernel{0};  // eventfds made kernel ones (handed to the kernel, spawn)
};

Stats& stats() noexcept;
inline void count(std::atomic<uint64_t>& c, uint64_t n = 1) noexcept { c.fetch_add(n, std::memory_order_relaxed); }

// Prints "uepoll: MESSAGE" on stderr once per distinct message.
void warn_once(const char* message) noexcept;

}  // namespace uepoll::preload
