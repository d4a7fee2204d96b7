// alloc.cpp - counted, failure-injectable allocation (see alloc.h).
#include "core/alloc.h"

#include "core/lockdep.h"

#include <cstdlib>

namespace uepoll::core {

AllocStats& alloc_stats() noexcept {
  static AllocStats stats;
  return stats;
}

void* raw_alloc(std::size_t size, std::size_t align) noexcept {
  lockdep_assert_no_spin("core::raw_alloc");  // lock_order.h: no allocation under a SpinLock
  AllocStats& s = alloc_stats();
  long left = s.fail_after.load(std::memory_order_relaxed);
  while (left >= 0) {
    if (left == 0) {
      // Fire once, then go back to never failing.
      if (s.fail_after.compare_exchange_weak(left, -1, std::memory_order_relaxed)) return nullptr;
      continue;
    }
    if (s.fail_after.compare_exchange_weak(left, left - 1, std::memory_order_relaxed)) break;
  }
  s.count.fetch_add(1, std::memory_order_relaxed);
  if (align <= alignof(std::max_align_t)) return std::malloc(size);
  return std::aligned_alloc(align, (size + align - 1) / align * align);
}

void raw_free(void* p) noexcept { std::free(p); }

}  // namespace uepoll::core
