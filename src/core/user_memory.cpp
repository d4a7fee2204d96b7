// user_memory.cpp - writable-prefix probe with a per-thread cache.
#include "core/user_memory.h"

#include <cstdint>
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

// Checks one piece that lies within a page.
bool probe(uintptr_t a, std::size_t n) {
  unsigned char tmp[kPage];
  iovec local{tmp, n};
  iovec remote{reinterpret_cast<void*>(a), n};
  const pid_t self = getpid();
  if (process_vm_readv(self, &local, 1, &remote, 1, 0) != static_cast<ssize_t>(n)) return false;
  // Write back what was there: the kernel's copy faults on a read-only page.
  return process_vm_writev(self, &local, 1, &remote, 1, 0) == static_cast<ssize_t>(n);
}

}  // namespace

std::size_t writable_prefix(void* p, std::size_t len) noexcept {
  const auto a = reinterpret_cast<uintptr_t>(p);
  if (len == 0) return 0;
  if (a < kPage) return 0;  // the first page is never mapped
  Cache& c = tls_cache;
  for (const Range& r : c.r)
    if (a >= r.begin && a + len <= r.end) return len;
  std::size_t ok = 0;
  while (ok < len) {
    uintptr_t cur = a + ok;
    std::size_t in_page = kPage - (cur % kPage);
    std::size_t n = in_page < len - ok ? in_page : len - ok;
    if (!probe(cur, n)) break;
    ok += n;
  }
  if (ok == len) {
    c.r[c.next] = Range{a, a + len};
    c.next = (c.next + 1) % 4;
  }
  return ok;
}

}  // namespace uepoll::core
