// alloc.h - every heap allocation uepoll makes for its objects goes through
// here: it is counted (uep_debug_alloc_count) and can be made to fail
// (the "fail_alloc_after" knob) so that tests can check that ENOMEM leaves
// state untouched.  Thread-safe; never blocks.
#pragma once

#include <atomic>
#include <cstddef>
#include <new>
#include <utility>

namespace uepoll::core {

struct AllocStats {
  std::atomic<unsigned long long> count{0};
  // Remaining successful allocations before one fails; -1 = never fail.
  std::atomic<long> fail_after{-1};
};
AllocStats& alloc_stats() noexcept;

// Raw allocation; nullptr on (injected or real) failure.  `align` above
// the malloc guarantee (16) uses aligned_alloc: objects with cache-line
// aligned members (instance shards, files) must get real alignment.
void* raw_alloc(std::size_t size, std::size_t align = alignof(std::max_align_t)) noexcept;
void raw_free(void* p) noexcept;

template <class T, class... Args>
T* create(Args&&... args) noexcept {
  void* p = raw_alloc(sizeof(T), alignof(T));
  if (!p) return nullptr;
  return new (p) T(std::forward<Args>(args)...);
}

template <class T>
void destroy(T* p) noexcept {
  if (!p) return;
  p->~T();
  raw_free(p);
}

}  // namespace uepoll::core
