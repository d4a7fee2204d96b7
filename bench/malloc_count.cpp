// malloc_count.cpp - counts heap allocations made anywhere in the process
// (uepoll, libstdc++, the benchmark itself) while a measured loop runs, so the
// readd scenario can report allocations per ADD/DEL pair independently of
// uepoll's own uep_debug_alloc_count().  It interposes malloc, calloc,
// realloc and the aligned allocators and forwards each to glibc's __libc_*
// entry point; the counter is one relaxed atomic, touched only while enabled.
// Sanitizer builds bring their own allocator, so there it compiles to a stub
// that reports itself unavailable.
#include "harness.h"
#include "support/libc_alloc.h"  // tests/support: glibc's __libc_* allocator

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define UEPOLL_BENCH_NO_MALLOC_HOOK 1
#endif
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#undef UEPOLL_BENCH_NO_MALLOC_HOOK
#define UEPOLL_BENCH_NO_MALLOC_HOOK 1
#endif
#endif

namespace {
std::atomic<bool> g_enabled{false};
std::atomic<uint64_t> g_allocs{0};

inline void note_alloc() {
  // Relaxed: the count is read after the measured threads are joined, which
  // orders it.
  if (g_enabled.load(std::memory_order_relaxed)) g_allocs.fetch_add(1, std::memory_order_relaxed);
}
}  // namespace

namespace uepoll_bench::malloc_count {
#ifdef UEPOLL_BENCH_NO_MALLOC_HOOK
bool available() { return false; }
#else
bool available() { return true; }
#endif
void enable(bool on) { g_enabled.store(on, std::memory_order_seq_cst); }
uint64_t allocations() { return g_allocs.load(std::memory_order_seq_cst); }
}  // namespace uepoll_bench::malloc_count

#ifndef UEPOLL_BENCH_NO_MALLOC_HOOK
extern "C" {
void* malloc(size_t n) {
  note_alloc();
  return __libc_malloc(n);
}
void* calloc(size_t n, size_t m) {
  note_alloc();
  return __libc_calloc(n, m);
}
void* realloc(void* p, size_t n) {
  note_alloc();
  return __libc_realloc(p, n);
}
void free(void* p) { __libc_free(p); }
void* memalign(size_t a, size_t n) {
  note_alloc();
  return __libc_memalign(a, n);
}
void* aligned_alloc(size_t a, size_t n) {
  note_alloc();
  return __libc_memalign(a, n);
}
int posix_memalign(void** out, size_t a, size_t n) {
  if (a < sizeof(void*) || (a & (a - 1)) != 0) return EINVAL;
  note_alloc();
  void* p = __libc_memalign(a, n);
  if (p == nullptr) return ENOMEM;
  *out = p;
  return 0;
}
}  // extern "C"
#endif
