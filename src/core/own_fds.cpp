// own_fds.cpp - uepoll's own kernel descriptors moved high and recorded
// (see own_fds.h).  Locks: none.
#include "core/own_fds.h"

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

namespace uepoll::core {

namespace {

// Bit n: number n is one of uepoll's own.  Relaxed: a number is marked by
// the thread that got it from the kernel before it publishes the number to
// any other thread (under its own synchronization); the preload asks about
// numbers a program names, which it cannot have got from uepoll.
constinit std::atomic<uint64_t> g_bits[kTopCap / 64] = {};
// Where park_high's walk starts (0: the top): every number from here to the
// top was taken when it was last tried.  Relaxed: only a hint, each F_DUPFD
// is atomic in the kernel.
constinit std::atomic<int> g_start{0};

// min(RLIMIT_NOFILE soft limit, kTopCap).
int top() noexcept {
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < static_cast<rlim_t>(kTopCap))
    return static_cast<int>(rl.rlim_cur);
  return kTopCap;
}

}  // namespace

void mark_own(int fd) noexcept {
  if (fd < 0 || fd >= kTopCap) return;
  g_bits[fd / 64].fetch_or(uint64_t{1} << (fd % 64), std::memory_order_relaxed);
}

void forget_own(int fd) noexcept {
  if (fd < 0 || fd >= kTopCap) return;
  g_bits[fd / 64].fetch_and(~(uint64_t{1} << (fd % 64)), std::memory_order_relaxed);
}

bool is_own(int fd) noexcept {
  if (fd < 0 || fd >= kTopCap) return false;
  return (g_bits[fd / 64].load(std::memory_order_relaxed) >> (fd % 64)) & 1;
}

int next_own(int from) noexcept {
  if (from < 0) from = 0;
  for (int w = from / 64; w < kTopCap / 64; ++w) {
    uint64_t b = g_bits[w].load(std::memory_order_relaxed);
    if (w == from / 64) b &= ~uint64_t{0} << (from % 64);
    if (b) return w * 64 + __builtin_ctzll(b);
  }
  return -1;
}

int park_high(int fd) noexcept {
  if (fd < 0) return fd;
  const int t = top();
  int c = g_start.load(std::memory_order_relaxed);
  if (c <= 0 || c >= t) c = t - 1;
  const int saved = errno;
  // F_DUPFD gives the lowest free number >= c: a hole left above c by a
  // closed own descriptor first, else c itself.  EMFILE (or a number past
  // a capped top) says everything from c up is taken: one lower.
  for (; c > fd; --c) {
    const int n = ::fcntl(fd, F_DUPFD_CLOEXEC, c);
    if (n >= 0 && n < t) {
      ::close(fd);
      mark_own(n);
      g_start.store(c, std::memory_order_relaxed);
      errno = saved;
      return n;
    }
    if (n >= 0) {
      ::close(n);
    } else if (errno == EINVAL && top() <= c) {  // the soft limit fell below c meanwhile
      c = top();
    } else if (errno != EMFILE) {
      break;
    }
  }
  errno = saved;
  mark_own(fd);
  return fd;
}

void close_own(int fd) noexcept {
  if (fd < 0) return;
  forget_own(fd);
  ::close(fd);
}

}  // namespace uepoll::core
