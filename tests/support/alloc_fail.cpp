// alloc_fail.cpp - the allocation interposer of alloc_fail.h.  Every entry
// point goes to glibc's own allocator through its __libc_* names (never to
// the replaced symbols, so there is no recursion); the per-thread state is
// initial-exec TLS of the executable, which allocates nothing.
#include "alloc_fail.h"
#include "libc_alloc.h"

#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <new>

namespace {

thread_local long t_left = -1;  // allocations before the one that fails; -1 disarmed, -2 fired
thread_local bool t_fired = false;
thread_local unsigned long t_count = 0;

// Counts one allocation of this thread; true if it must fail.
bool must_fail() noexcept {
  if (t_left == -1) return false;  // disarmed
  ++t_count;
  if (t_left == 0) {
    t_fired = true;
    t_left = -2;  // fired: keep counting, fail no more
    return true;
  }
  if (t_left > 0) --t_left;
  return false;
}

void* aligned(std::size_t align, std::size_t size) noexcept {
  if (must_fail()) {
    errno = ENOMEM;
    return nullptr;
  }
  return __libc_memalign(align, size);
}

void* plain(std::size_t size) noexcept {
  if (must_fail()) {
    errno = ENOMEM;
    return nullptr;
  }
  return __libc_malloc(size);
}

void* new_or_throw(std::size_t size) {
  void* p = plain(size ? size : 1);
  if (!p) throw std::bad_alloc();
  return p;
}

void* new_aligned_or_throw(std::size_t size, std::align_val_t al) {
  void* p = aligned(static_cast<std::size_t>(al), size ? size : 1);
  if (!p) throw std::bad_alloc();
  return p;
}

}  // namespace

namespace uepoll_test::alloc_fail {

void arm(long k) noexcept {
  t_count = 0;
  t_fired = false;
  t_left = k;
}

bool disarm() noexcept {
  t_left = -1;
  return t_fired;
}

unsigned long count() noexcept { return t_count; }

}  // namespace uepoll_test::alloc_fail

// ---- C allocation functions ------------------------------------------------
extern "C" {

void* malloc(size_t size) { return plain(size); }

void* calloc(size_t n, size_t size) {
  if (must_fail()) {
    errno = ENOMEM;
    return nullptr;
  }
  return __libc_calloc(n, size);
}

void* realloc(void* p, size_t size) {
  if (must_fail()) {
    errno = ENOMEM;
    return nullptr;
  }
  return __libc_realloc(p, size);
}

void free(void* p) { __libc_free(p); }

void* aligned_alloc(size_t align, size_t size) { return aligned(align, size); }
void* memalign(size_t align, size_t size) { return aligned(align, size); }
void* valloc(size_t size) { return aligned(4096, size); }

int posix_memalign(void** out, size_t align, size_t size) {
  if (align < sizeof(void*) || (align & (align - 1)) != 0) return EINVAL;
  void* p = aligned(align, size);
  if (!p) return ENOMEM;
  *out = p;
  return 0;
}

}  // extern "C"

// ---- operator new / delete -------------------------------------------------
void* operator new(std::size_t size) { return new_or_throw(size); }
void* operator new[](std::size_t size) { return new_or_throw(size); }
void* operator new(std::size_t size, const std::nothrow_t&) noexcept { return plain(size ? size : 1); }
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept { return plain(size ? size : 1); }
void* operator new(std::size_t size, std::align_val_t al) { return new_aligned_or_throw(size, al); }
void* operator new[](std::size_t size, std::align_val_t al) { return new_aligned_or_throw(size, al); }
void* operator new(std::size_t size, std::align_val_t al, const std::nothrow_t&) noexcept {
  return aligned(static_cast<std::size_t>(al), size ? size : 1);
}
void* operator new[](std::size_t size, std::align_val_t al, const std::nothrow_t&) noexcept {
  return aligned(static_cast<std::size_t>(al), size ? size : 1);
}

void operator delete(void* p) noexcept { __libc_free(p); }
void operator delete[](void* p) noexcept { __libc_free(p); }
void operator delete(void* p, std::size_t) noexcept { __libc_free(p); }
void operator delete[](void* p, std::size_t) noexcept { __libc_free(p); }
void operator delete(void* p, std::align_val_t) noexcept { __libc_free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { __libc_free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { __libc_free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { __libc_free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { __libc_free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { __libc_free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { __libc_free(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { __libc_free(p); }
