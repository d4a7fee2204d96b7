// cpu_relax.h - cpu_relax(): the CPU's spin-wait hint, portable.
//
// x86: `pause` (lets the sibling hyper-thread run, avoids the memory-order
// machine clear when the awaited line changes); aarch64: `yield`; any
// other architecture: a compiler barrier only (correct, just less polite).
// Used by every busy-wait in uepoll (core/spinlock.h, the item seqlock).
#pragma once

namespace uepoll::core {

inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__) || defined(__arm__)
  __asm__ __volatile__("yield" ::: "memory");
#else
  __asm__ __volatile__("" ::: "memory");
#endif
}

}  // namespace uepoll::core
