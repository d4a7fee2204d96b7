// own_fds.cpp - uepoll's own kernel descriptors moved high and recorded
// (see own_fds.h).  Locks: none; the raise window (g_window) is a flag
// taken without waiting, except by fork and spawn (own_fds_hold).
#include "core/own_fds.h"

#include "core/internal_call.h"

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <fcntl.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

namespace uepoll::core {

namespace {

// Bit n: number n is one of uepoll's own.  Relaxed: a number is marked by
// the thread that got it from the kernel before it publishes the number to
// any other thread (under its own synchronization); the preload asks about
// numbers a program names, which it cannot have got from uepoll.
constinit std::atomic<uint64_t> g_bits[kTopCap / 64] = {};
// Where each walk starts (0: the top): every number from there to the top
// was taken when it was last tried.  Relaxed: only hints, each F_DUPFD is
// atomic in the kernel.
constinit std::atomic<int> g_start{0};       // below the soft limit
constinit std::atomic<int> g_start_high{0};  // above it
// The raise window (park_above): held by the one thread whose park has the
// soft limit raised, and across fork() (fork_prepare .. fork_parent/child)
// and the preload's posix_spawn, so that no child is made with the raised
// limit.  Acquire on taking pairs with the release on giving it back.
constinit std::atomic<bool> g_window{false};

struct Limits {
  int soft;   // min(soft limit, kTopCap)
  int top;    // min(hard limit, kTopCap): soft <= top
  rlim_t hard;
};

Limits limits() noexcept {
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return {kTopCap, kTopCap, RLIM_INFINITY};
  auto cap = [](rlim_t v) {
    return v == RLIM_INFINITY || v >= static_cast<rlim_t>(kTopCap) ? kTopCap : static_cast<int>(v);
  };
  return {cap(rl.rlim_cur), cap(rl.rlim_max), rl.rlim_max};
}

bool try_window() noexcept { return !g_window.exchange(true, std::memory_order_acquire); }
// A park waits a little for a fork or another park to leave the window,
// never without bound: it may run in a signal handler that interrupted
// the window's holder.
bool wait_window() noexcept {
  for (int i = 0; i < 256; ++i) {
    if (try_window()) return true;
    ::sched_yield();
  }
  return false;
}
void leave_window() noexcept { g_window.store(false, std::memory_order_release); }

// F_DUPFD_CLOEXEC walk down from hint (or top - 1) to above `floor`: the
// number fd now lives at (fd closed; kept open with `keep`: a duplicate),
// or -1 (fd untouched).  F_DUPFD gives
// the lowest free number >= c: a hole left above c by a closed own
// descriptor first, else c itself; EMFILE says everything from c up is
// taken: one lower.
int walk_down(int fd, int floor, int top, std::atomic<int>& hint, bool keep = false) noexcept {
  int c = hint.load(std::memory_order_relaxed);
  if (c <= floor || c >= top) c = top - 1;
  for (; c > floor; --c) {
    const int n = ::fcntl(fd, F_DUPFD_CLOEXEC, c);
    if (n >= 0 && n < top) {
      if (!keep) ::close(fd);
      hint.store(c, std::memory_order_relaxed);
      return n;
    }
    if (n >= 0) {
      ::close(n);
    } else if (errno != EMFILE) {
      break;  // EINVAL: the limit fell below c meanwhile
    }
  }
  return -1;
}

// Above the soft limit, where a program's dup2 gets EBADF and no
// allocation of its reaches: the soft limit raised to `top` for the walk,
// then put back (a value the program set meanwhile is kept).  -1 when the
// window is busy or prlimit is refused (a seccomp filter, say).
int park_above(int fd, const Limits& l) noexcept {
  if (!wait_window()) return -1;
  rlimit raised{static_cast<rlim_t>(l.top), l.hard};
  rlimit old{};
  if (::prlimit(0, RLIMIT_NOFILE, &raised, &old) != 0) {
    leave_window();
    return -1;
  }
  const int n = walk_down(fd, l.soft - 1, l.top, g_start_high);
  rlimit now{};
  if (::prlimit(0, RLIMIT_NOFILE, &old, &now) == 0 && (now.rlim_cur != raised.rlim_cur || now.rlim_max != raised.rlim_max))
    (void)::prlimit(0, RLIMIT_NOFILE, &now, nullptr);  // the program's own setrlimit in the window
  leave_window();
  return n;
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
  const int saved = errno;
  const Limits l = limits();
  int n = l.top > l.soft && fd < l.soft ? park_above(fd, l) : -1;
  if (n < 0) n = walk_down(fd, fd, l.soft, g_start);
  if (n < 0) n = fd;  // nothing free above fd: it stays
  mark_own(n);
  errno = saved;
  return n;
}

int dup_high(int fd) noexcept {
  const int saved = errno;
  const Limits l = limits();
  const int n = walk_down(fd, 0, l.soft, g_start, true);
  if (n >= 0) mark_own(n);
  errno = saved;
  return n;
}

void close_own(int fd) noexcept {
  if (fd < 0) return;
  forget_own(fd);
  ::close(fd);
}

void own_fds_hold() noexcept {
  // A window lasts a few system calls; a holder never waits for anything.
  for (unsigned i = 0; !try_window(); ++i) {
    if (i > 64) ::sched_yield();
  }
}

void own_fds_release() noexcept { leave_window(); }

long read_own_fdinfo(int fd, char* buf, size_t len) noexcept {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/self/fdinfo/%d", fd);
  InternalCalls own;
  const int p = ::open(path, O_RDONLY | O_CLOEXEC);
  size_t n = 0;
  long err = p < 0 ? -errno : 0;
  while (p >= 0 && n + 1 < len) {
    const ssize_t r = ::read(p, buf + n, len - 1 - n);
    if (r <= 0) {
      err = r < 0 ? -errno : 0;
      break;
    }
    n += static_cast<size_t>(r);
  }
  if (p >= 0) ::close(p);
  buf[n] = '\0';
  return n ? static_cast<long>(n) : err;
}

}  // namespace uepoll::core
