// item_cache.h - where items come from and go back to.
//
// With the "alloc_reuse" knob on (default), items are carved 64 at a time
// out of slabs and recycled through a per-thread cache, overflowing into a
// process-wide free list: steady-state ADD/DEL allocates nothing, for every
// item of every thread.  With it off, every item is a fresh malloc and
// every free a free().
//
// Locks: the global free list's mutex (a leaf, 15), only when a thread cache
// under- or overflows, and never with a SpinLock held: item_alloc must not
// be called under one; item_free may be called with any lock held (under a
// SpinLock it lets the cache run over its bound instead of spilling).
#pragma once

#include "epoll/item.h"

namespace uepoll::epoll {

// A zero-initialised item whose wait entry has its kind (kItem) and
// allocator mark set, or nullptr (ENOMEM, real or injected).
Item* item_alloc() noexcept;
void item_free(Item* it) noexcept;

}  // namespace uepoll::epoll
