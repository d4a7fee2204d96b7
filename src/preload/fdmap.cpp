// fdmap.cpp - placeholders and the kernel-number -> uepoll-descriptor map
// (see fdmap.h).  Locks: g_init (std::mutex) only to create the array and
// the /dev/null O_PATH descriptor the placeholders are duplicated from.
#include "preload/fdmap.h"

#include "capi/preload_support.h"
#include "preload/preload.h"
#include "preload/real.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <mutex>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

namespace uepoll::preload {

namespace {

using Slot = uep_pl_slot;  // preload.h: read by the inline uep_pl_map()

std::atomic_ref<int> slot_u(Slot& s) noexcept { return std::atomic_ref<int>(s.u); }
std::atomic_ref<unsigned char> slot_kind(Slot& s) noexcept { return std::atomic_ref<unsigned char>(s.kind); }
std::atomic_ref<unsigned char> slot_copy(Slot& s) noexcept { return std::atomic_ref<unsigned char>(s.fork_copy); }

// The array, published once with release (pairs with the acquire in
// uep_pl_map, kind and the other readers); its length is set before.
Slot* load_slots() noexcept { return __atomic_load_n(&uep_pl_slots_, __ATOMIC_ACQUIRE); }
uep__own_slot* g_base = nullptr;  // O_PATH /dev/null, CLOEXEC; movable (core/own_slot.h)
std::atomic<int> g_high{0};
std::mutex g_init;

Slot* slots() noexcept {
  Slot* s = load_slots();
  if (s) return s;
  std::lock_guard<std::mutex> g(g_init);
  s = __atomic_load_n(&uep_pl_slots_, __ATOMIC_RELAXED);
  if (s) return s;
  rlimit rl{};
  long n = 1L << 20;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_max != RLIM_INFINITY && static_cast<long>(rl.rlim_max) > n)
    n = static_cast<long>(rl.rlim_max);
  void* mem = mmap(nullptr, sizeof(Slot) * static_cast<size_t>(n), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (mem == MAP_FAILED) return nullptr;
  // At a high number, like uepoll's other own descriptors (core/own_fds.h).
  g_base = uep__own_slot_new(uep__park_fd_high(UEP_REAL(open)("/dev/null", O_PATH | O_CLOEXEC)));
  if (!g_base) {
    std::fprintf(stderr, "uepoll: cannot open /dev/null for descriptor placeholders\n");
    std::abort();
  }
  uep_pl_nslots_ = n;
  s = static_cast<Slot*>(mem);  // zero pages: every slot empty
  __atomic_store_n(&uep_pl_slots_, s, __ATOMIC_RELEASE);
  return s;
}

void publish(Slot* s, int n, int u, Kind k) noexcept {
  slot_kind(s[n]).store(static_cast<unsigned char>(k), std::memory_order_relaxed);
  slot_copy(s[n]).store(0, std::memory_order_relaxed);
  slot_u(s[n]).store(u, std::memory_order_release);  // pairs with uep_pl_map()'s acquire
  int h = g_high.load(std::memory_order_relaxed);
  while (h < n + 1 && !g_high.compare_exchange_weak(h, n + 1, std::memory_order_relaxed)) {
  }
}

}  // namespace

int map(int n) noexcept { return uep_pl_map(n); }

Kind kind(int n) noexcept {
  Slot* s = load_slots();
  if (!s || n < 0 || n >= uep_pl_nslots_) return Kind::kNone;
  return static_cast<Kind>(slot_kind(s[n]).load(std::memory_order_relaxed));
}

// A duplicate of the placeholder source: F_DUPFD_CLOEXEC from `min`, or
// at exactly `at` (dup3) when at >= 0.  The number, or -errno.
static int dup_base(int min, int at) noexcept {
  unsigned half;
  const int base = uep__own_slot_enter(g_base, &half);  // a movable own descriptor
  const int n = at >= 0 ? UEP_REAL(dup3)(base, at, O_CLOEXEC) : UEP_REAL(fcntl)(base, F_DUPFD_CLOEXEC, min);
  const int e = errno;
  uep__own_slot_leave(g_base, half);
  return n < 0 ? -e : n;
}

int bind_new(int u, Kind k, int min) noexcept {
  Slot* s = slots();
  if (!s) return -ENOMEM;
  const int n = dup_base(min, -1);
  if (n < 0) return n;
  if (n >= uep_pl_nslots_) {
    UEP_REAL(close)(n);
    return -EMFILE;
  }
  publish(s, n, u, k);
  return n;
}

int bind_at(int n, int u, Kind k) noexcept {
  Slot* s = slots();
  if (!s) return -ENOMEM;
  if (n < 0 || n >= uep_pl_nslots_) return -EBADF;
  if (const int r = dup_base(0, n); r < 0) return r;
  const int old = slot_u(s[n]).exchange(0, std::memory_order_acq_rel);
  publish(s, n, u, k);
  return old;
}

int unbind(int n) noexcept {
  Slot* s = load_slots();
  if (!s || n < 0 || n >= uep_pl_nslots_) return 0;
  slot_copy(s[n]).store(0, std::memory_order_relaxed);
  return slot_u(s[n]).exchange(0, std::memory_order_acq_rel);
}

int mark_fork_copy(int n) noexcept {
  Slot* s = load_slots();
  if (!s || n < 0 || n >= uep_pl_nslots_ || !slot_u(s[n]).load(std::memory_order_relaxed)) return 0;
  slot_copy(s[n]).store(1, std::memory_order_relaxed);
  __atomic_store_n(&uep_pl_fork_copies_, 1, __ATOMIC_RELAXED);
  return 1;
}

bool take_fork_copy(int n) noexcept {
  Slot* s = load_slots();
  if (!s || n < 0 || n >= uep_pl_nslots_) return false;
  return slot_copy(s[n]).exchange(0, std::memory_order_relaxed) != 0;
}

int high_water() noexcept { return g_high.load(std::memory_order_relaxed); }

void* resolve_optional(const char* name) noexcept { return dlsym(RTLD_NEXT, name); }

void* resolve(const char* name) noexcept {
  void* p = dlsym(RTLD_NEXT, name);
  if (!p) {
    std::fprintf(stderr, "uepoll: libc has no %s\n", name);
    std::abort();
  }
  return p;
}

}  // namespace uepoll::preload

// ---- the C side (preload.h) --------------------------------------------------

extern "C" {
uep_pl_slot* uep_pl_slots_ = nullptr;
long uep_pl_nslots_ = 0;
int uep_pl_fork_copies_ = 0;
int uep_pl_mark_fork_copy(int n) { return uepoll::preload::mark_fork_copy(n); }
int uep_pl_take_fork_copy(int n) { return uepoll::preload::take_fork_copy(n) ? 1 : 0; }
int uep_pl_kind(int n) { return static_cast<int>(uepoll::preload::kind(n)); }
int uep_pl_bind_new(int u, int k, int min) {
  return uepoll::preload::bind_new(u, static_cast<uepoll::preload::Kind>(k), min);
}
int uep_pl_bind_at(int n, int u, int k) { return uepoll::preload::bind_at(n, u, static_cast<uepoll::preload::Kind>(k)); }
int uep_pl_unbind(int n) { return uepoll::preload::unbind(n); }
int uep_pl_high_water(void) { return uepoll::preload::high_water(); }
void* uep_pl_resolve(const char* name) { return uepoll::preload::resolve(name); }
void* uep_pl_resolve_optional(const char* name) { return uepoll::preload::resolve_optional(name); }
}
