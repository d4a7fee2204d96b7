// tuning.h - the run-time switches behind include/uepoll/tuning.h.  Each
// scaling mechanism can be turned off so that one build measures it on and
// off (docs/design.md section 6).  Read with relaxed loads on every call: a knob is a
// policy choice, it guards no data.
#pragma once

#include <atomic>

namespace uepoll::core {

struct Knobs {
  std::atomic<bool> rcu_ctl{true};               // DEL, lookups and flat ADD take no topology lock
  std::atomic<bool> lockless_nested_poll{true};  // nested poll takes no global mutex
  std::atomic<bool> exclusive_autoremove{true};  // a wakeup removes its waiter's entry
  std::atomic<bool> alloc_reuse{true};           // items from slabs and per-thread caches
  std::atomic<bool> parallel_nested_add{true};   // leaf ADD into a watched instance: lock shared
  std::atomic<bool> concurrent_ctl{true};        // beyond Linux
  std::atomic<bool> burst_wake_chain{true};      // beyond Linux: Instance::kicked_
  std::atomic<long> max_user_watches{-1};        // -1: not read yet
  std::atomic<long> busy_poll_usecs{0};          // beyond Linux: new instances' EPIOCSPARAMS default
};

// Constant-initialised (every member's constructor is constexpr), so
// usable from any static initialiser; inline so that a hot path's knob
// read is one load, not a call.
namespace detail {
extern constinit Knobs g_knobs;
}
inline Knobs& knobs() noexcept { return detail::g_knobs; }

inline bool knob(const std::atomic<bool>& k) noexcept { return k.load(std::memory_order_relaxed); }

}  // namespace uepoll::core
