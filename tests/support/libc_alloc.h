// libc_alloc.h - glibc's own allocator entry points (__libc_malloc & co.),
// declared once for the two allocation interposers that replace malloc and
// must reach glibc's allocator without calling themselves:
// tests/support/alloc_fail.cpp (fails chosen allocations) and
// bench/malloc_count.cpp (counts them).  Shared by the tests and
// uepoll-bench, as forked_child.h is.  These are glibc's exported names for
// its allocator, not a documented API: glibc only.
//
// Declarations only; takes no lock.
#pragma once

#include <stddef.h>

extern "C" {
void* __libc_malloc(size_t);
void* __libc_calloc(size_t, size_t);
void* __libc_realloc(void*, size_t);
void* __libc_memalign(size_t, size_t);
void __libc_free(void*);
}
