// alloc_fail.h - test-only allocation failure injection for every
// allocation of the process: link tests/support/alloc_fail.cpp into a test
// executable and it replaces operator new/new[] (every variant: plain,
// nothrow, aligned, aligned nothrow) and malloc, calloc, realloc,
// aligned_alloc, posix_memalign, memalign, valloc and free, so the standard
// library's allocations (std::vector growth, std::string, fopen's buffer,
// pthread_create's bookkeeping) are counted and can fail too.  Not for
// sanitizer builds (ASan/TSan bring their own malloc).
//
// Counting and failing are per thread: only allocations made by the thread
// that armed, between arm() and disarm().
#pragma once

namespace uepoll_test::alloc_fail {

// From now on, the k-th allocation (0-based) made by this thread fails
// (malloc & co. return NULL with errno ENOMEM, throwing operator new throws
// std::bad_alloc); the ones before and after it succeed.
void arm(long k) noexcept;
// Stops counting.  True if the k-th allocation happened (and failed).
bool disarm() noexcept;
// Allocations this thread made since its last arm().
unsigned long count() noexcept;

}  // namespace uepoll_test::alloc_fail
