// item_index.cpp - the open-addressing index of an instance shard (see
// item_index.h).  Locks: none taken; the caller holds the shard mutex.
#include "epoll/item_index.h"

#include <cstring>

namespace uepoll::epoll {

namespace {
constexpr uint32_t kMinCap = 4;
// Beyond this a capacity grown by half no longer fits in 32 bits.
constexpr uint32_t kMaxGrowableCap = 0xA0000000u;
}  // namespace

uint32_t ItemIndex::saturated_displacement(const uintptr_t* slots, uint32_t cap, uint32_t i) noexcept {
  const Item* it = item_of(slots[i]);
  const uint32_t h = home(item_key_hash(it->file, it->fd), cap);
  return i >= h ? i - h : i + cap - h;
}

bool ItemIndex::grow(uint32_t cap) noexcept {
  auto* ns = static_cast<uintptr_t*>(core::raw_alloc(sizeof(uintptr_t) * cap));
  if (!ns) return false;
  std::memset(ns, 0, sizeof(uintptr_t) * cap);
  for (uint32_t i = 0; i < cap_; ++i) {
    if (const uintptr_t s = slots_[i]) {
      Item* it = item_of(s);
      place(ns, cap, item_key_hash(it->file, it->fd), it);
    }
  }
  core::raw_free(slots_);
  slots_ = ns;
  cap_ = cap;
  return true;
}

bool ItemIndex::reserve_grow() noexcept {
  if (cap_ < kMaxGrowableCap && grow(cap_ < kMinCap ? kMinCap : cap_ + cap_ / 2)) return true;
  return count_ + 1 < cap_;  // fuller, but an empty slot still ends every probe
}

void ItemIndex::close_gap(uint32_t hole) noexcept {
  // Robin Hood removal: every following entry not at home moves back one.
  for (uint32_t j = next(hole);; j = next(j)) {
    const uintptr_t s = slots_[j];
    if ((s & kDispMask) == 0) break;  // empty, or at home
    const uint32_t d = displacement(slots_, cap_, j);
    slots_[hole] = slot_of(item_of(s), d - 1);
    hole = j;
  }
  slots_[hole] = 0;
}

}  // namespace uepoll::epoll
