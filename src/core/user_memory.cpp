// user_memory.cpp - writable-prefix probe with a per-thread cache.
//
// The probe copies each page of the range out and back in through the
// kernel, so that an unreadable or read-only page gives EFAULT instead of
// SIGSEGV.  Three ways, tried in this order, the first that works being
// remembered process-wide (a refusal is never retried):
//   1. process_vm_readv + process_vm_writev on our own pid (2 calls/page);
//   2. when those are refused (EPERM/ENOSYS from a seccomp filter or a
//      kernel without CONFIG_CROSS_MEMORY_ATTACH, or any errno a filter
//      returns): a kernel pipe made for the probe: write(pipe, page) is
//      copy_from_user, read(pipe, page) writes the same bytes back with
//      copy_to_user (4 more calls per probe: pipe2 and two closes);
//   3. when pipes cannot be made either (EMFILE/ENFILE, a filter): no probe,
//      the range counts as writable (a bad buffer then faults in the copy,
//      as any library call would; docs/linux-deviations.md).
// A refusal is told from a real fault by probing a buffer known to be
// good (a local array): if that fails too, the call is refused.
// NULL and the first page are rejected before any probe, in every mode.
//
// Locks: none.  The mode is one relaxed atomic (a stale read only repeats a
// refused call once more, which fails the same way).
#include "core/user_memory.h"

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <fcntl.h>
#include <sys/uio.h>
#include <unistd.h>

namespace uepoll::core {

namespace {

constexpr std::size_t kPage = 4096;

struct Range {
  uintptr_t begin = 0;
  uintptr_t end = 0;
};
struct Cache {
  Range r[4];
  unsigned next = 0;
};
thread_local Cache tls_cache;

enum Mode : int { kProcessVm = 0, kPipe = 1, kNoProbe = 2 };
std::atomic<int> g_mode{kProcessVm};  // only ever increases

// One piece within a page through process_vm_*: 1 ok, 0 fault, -1 refused.
int probe_vm_once(uintptr_t a, std::size_t n) {
  unsigned char tmp[kPage];
  iovec local{tmp, n};
  iovec remote{reinterpret_cast<void*>(a), n};
  const pid_t self = getpid();
  if (process_vm_readv(self, &local, 1, &remote, 1, 0) != static_cast<ssize_t>(n)) return 0;
  // Write back what was there: the kernel's copy faults on a read-only page.
  return process_vm_writev(self, &local, 1, &remote, 1, 0) == static_cast<ssize_t>(n) ? 1 : 0;
}

// Whether process_vm_* work at all: the same copy on a buffer that is
// certainly readable and writable.
bool vm_calls_work() {
  unsigned char good[64] = {};
  return probe_vm_once(reinterpret_cast<uintptr_t>(good), sizeof good) == 1;
}

// One piece within a page through a kernel pipe.  1 ok, 0 fault.
int probe_pipe_once(const int p[2], uintptr_t a, std::size_t n) {
  auto* where = reinterpret_cast<unsigned char*>(a);
  if (::write(p[1], where, n) != static_cast<ssize_t>(n)) return 0;  // unreadable
  // The pipe holds the page's bytes; reading them back into the page is
  // the copy_to_user that faults on a read-only page.
  if (::read(p[0], where, n) == static_cast<ssize_t>(n)) return 1;
  unsigned char drain[kPage];
  ssize_t r = ::read(p[0], drain, n);  // a failed copy_to_user left them queued
  (void)r;
  return 0;
}

}  // namespace

std::size_t writable_prefix(void* p, std::size_t len) noexcept {
  const auto a = reinterpret_cast<uintptr_t>(p);
  if (len == 0) return 0;
  if (a < kPage) return 0;  // the first page is never mapped
  Cache& c = tls_cache;
  for (const Range& r : c.r)
    if (a >= r.begin && a + len <= r.end) return len;

  int mode = g_mode.load(std::memory_order_relaxed);
  int pfd[2] = {-1, -1};
  if (mode == kPipe && ::pipe2(pfd, O_CLOEXEC | O_NONBLOCK) < 0) {
    const int e = errno;
    // Out of descriptors is transient; anything else is a refusal.
    if (e != EMFILE && e != ENFILE) g_mode.store(mode = kNoProbe, std::memory_order_relaxed);
    return len;  // cannot check: counts as writable (not cached)
  }
  if (mode == kNoProbe) return len;

  std::size_t ok = 0;
  while (ok < len) {
    uintptr_t cur = a + ok;
    std::size_t in_page = kPage - (cur % kPage);
    std::size_t n = in_page < len - ok ? in_page : len - ok;
    int r = mode == kProcessVm ? probe_vm_once(cur, n) : probe_pipe_once(pfd, cur, n);
    if (r == 0 && mode == kProcessVm && !vm_calls_work()) {
      // Refused (seccomp, ENOSYS...): switch to the pipe for good and
      // re-check this whole range that way.
      g_mode.store(kPipe, std::memory_order_relaxed);
      return writable_prefix(p, len);
    }
    if (r != 1) break;
    ok += n;
  }
  if (pfd[0] >= 0) {
    ::close(pfd[0]);
    ::close(pfd[1]);
  }
  if (ok == len) {
    c.r[c.next] = Range{a, a + len};
    c.next = (c.next + 1) % 4;
  }
  return ok;
}

}  // namespace uepoll::core
