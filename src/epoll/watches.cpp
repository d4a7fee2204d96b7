// watches.cpp - registration limit with per-thread credit batches.
#include "epoll/watches.h"

#include "core/thread_exit.h"
#include "core/tuning.h"

#include <atomic>
#include <cerrno>
#include <cstdio>

namespace uepoll::epoll::watches {

namespace {

constexpr long kBatch = 64;

alignas(64) std::atomic<long> g_reserved{0};

// The kernel's limit, 1 << 22 when it cannot be read, or -1 when the file
// could not be opened for want of memory (fopen allocates): not cached then.
long read_kernel_limit() {
  long v = 0;
  if (FILE* f = std::fopen("/proc/sys/fs/epoll/max_user_watches", "r")) {
    if (std::fscanf(f, "%ld", &v) != 1) v = 0;
    std::fclose(f);
  } else if (errno == ENOMEM) {
    return -1;
  }
  return v > 0 ? v : (1L << 22);
}

// Trivially destructible (core/thread_exit.h): watches_thread_exit() gives
// the credits back when the thread exits.
struct Credits {
  long n = 0;
};
thread_local Credits tls_credits;

}  // namespace

void give_back_credits() noexcept {
  Credits& c = tls_credits;
  if (c.n) g_reserved.fetch_sub(c.n, std::memory_order_relaxed);
  c.n = 0;
}

long read_limit() noexcept {
  auto& k = core::knobs().max_user_watches;
  long v = k.load(std::memory_order_relaxed);
  if (v < 0) {
    long kernel = read_kernel_limit();
    if (kernel < 0) return 1L << 22;  // try again next time
    k.compare_exchange_strong(v, kernel, std::memory_order_relaxed);
    v = k.load(std::memory_order_relaxed);
  }
  return v;
}

void set_limit(long n) noexcept { core::knobs().max_user_watches.store(n, std::memory_order_relaxed); }

bool reserve() noexcept {
  Credits& c = tls_credits;
  const long max = limit();
  if (c.n > 0) {
    if (g_reserved.load(std::memory_order_relaxed) <= max) {
      --c.n;
      return true;
    }
    // The limit was lowered below what is reserved: give our credits back
    // and count exactly from here on.
    g_reserved.fetch_sub(c.n, std::memory_order_relaxed);
    c.n = 0;
  }
  long cur = g_reserved.load(std::memory_order_relaxed);
  for (;;) {
    long want = (cur + kBatch * 4 <= max) ? kBatch : 1;  // batch only far from the limit
    if (cur + want > max) return false;  // Linux: percpu_counter_compare(...) >= 0
    if (g_reserved.compare_exchange_weak(cur, cur + want, std::memory_order_relaxed)) {
      c.n += want - 1;
      if (c.n) core::thread_exit_arm();  // credits to give back at exit
      return true;
    }
  }
}

void unreserve() noexcept {
  Credits& c = tls_credits;
  if (++c.n > 2 * kBatch) {
    g_reserved.fetch_sub(c.n - kBatch, std::memory_order_relaxed);
    c.n = kBatch;
  }
}

long in_use() noexcept { return g_reserved.load(std::memory_order_relaxed); }

}  // namespace uepoll::epoll::watches

namespace uepoll::epoll {
void watches_thread_exit() noexcept { watches::give_back_credits(); }
}  // namespace uepoll::epoll
