// mutex.cpp - the sleeping side of core::Mutex (see mutex.h): futex wait
// and wake on the lock word.  Locks: none (this is the lock).
#include "core/mutex.h"

#include <cerrno>
#include <climits>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace uepoll::core {

namespace {

// The futex word is the atomic's int (std::atomic<int> is lock-free and
// has int's size and alignment on every target uepoll builds for).
static_assert(sizeof(std::atomic<int>) == sizeof(int) && std::atomic<int>::is_always_lock_free);

int* futex_word(std::atomic<int>* w) noexcept { return reinterpret_cast<int*>(w); }

}  // namespace

void Mutex::lock_slow(int c) noexcept {
  // Mark the word "sleepers possible" (2) and sleep while it stays held;
  // whoever then finds it free takes it as 2, since others may still sleep.
  // acquire (both exchanges): as lock().
  // errno is kept: std::mutex never changed it, and callers (a C API call
  // on its way out, a signal handler) may hold a value still to be read.
  const int saved_errno = errno;
  if (c != 2) c = word_.exchange(2, std::memory_order_acquire);
  while (c != 0) {
    // EAGAIN (the word changed) and EINTR just retry the exchange.
    syscall(SYS_futex, futex_word(&word_), FUTEX_WAIT_PRIVATE, 2, nullptr, nullptr, 0);
    c = word_.exchange(2, std::memory_order_acquire);
  }
  errno = saved_errno;
}

void Mutex::wake_one() noexcept {
  const int saved_errno = errno;  // as lock_slow()
  syscall(SYS_futex, futex_word(&word_), FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
  errno = saved_errno;
}

}  // namespace uepoll::core
