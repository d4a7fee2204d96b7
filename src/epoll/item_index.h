// item_index.h - ItemIndex: one instance shard's index of its items by
// (file, fd), Linux's ep->rbr.  Open addressing with linear probing over an
// array of item pointers: 8 bytes a slot, no link inside the item, at most
// 4/5 full, grown by half (10 to 15 bytes per item in steady state, where a
// chained hash costs a bucket and a next pointer, 16 to 24).
//
// A slot holds an Item* (16-byte aligned, item.h) with the item's
// displacement in its low 4 bits: how many slots past its home slot it sits,
// 15 meaning "15 or more, recompute from the item".  Insertion is Robin
// Hood's: an entry displaced less than the one being placed gives up its
// slot and moves on, so along a key's probe path no entry is displaced less
// than its distance from the key's home.  A lookup therefore stops at the
// first entry displaced less than its probe distance (an absent key costs
// about what a present one does), and only compares keys of entries
// displaced exactly its distance (the only ones sharing its home); a
// removal shifts the following entries back by one until one sits at home
// (no tombstones), reading displacements, not items.
//
// Locks: none of its own.  Every member requires the owning shard's mutex
// (Instance::Shard), which is what the UEP_REQUIRES annotations there
// check.  Nothing here sleeps; reserve() allocates (core::raw_alloc), the
// rest never does.
#pragma once

#include "core/alloc.h"
#include "epoll/item.h"

#include <cstdint>

namespace uepoll::core {
class File;
}

namespace uepoll::epoll {

// The key's hash: the low 4 bits choose the shard (Instance::shard_for),
// the high 32 the home slot in the shard's index.
inline uint64_t item_key_hash(const core::File* f, int fd) noexcept {
  uint64_t h = reinterpret_cast<uintptr_t>(f) ^ (static_cast<uint64_t>(static_cast<uint32_t>(fd)) << 32);
  h ^= h >> 29;
  h *= 0xBF58476D1CE4E5B9ULL;
  h ^= h >> 32;
  return h;
}

class ItemIndex {
 public:
  ItemIndex() = default;
  ~ItemIndex() { core::raw_free(slots_); }
  ItemIndex(const ItemIndex&) = delete;
  ItemIndex& operator=(const ItemIndex&) = delete;

  // The item registered as (f, fd), whose hash is h, or nullptr.
  Item* find(uint64_t h, const core::File* f, int fd) const noexcept {
    if (count_ == 0) return nullptr;
    uint32_t i = home(h, cap_);
    for (uint32_t d = 0;; ++d) {
      const uintptr_t s = slots_[i];
      if (s == 0) return nullptr;  // the run ends: nothing is placed past an empty slot
      // Only an entry displaced exactly d slots shares our home slot.
      const uintptr_t sd = s & kDispMask;
      if (sd == (d < kDispMask ? d : kDispMask)) {
        Item* it = item_of(s);
        if (it->file == f && it->fd == fd) return it;
      }
      if (sd < kDispMask && sd < d) return nullptr;  // ours would have taken this slot
      i = next(i);
    }
  }
  // Makes room for one insert(): false only when the index is full and
  // could not grow (ENOMEM).  A failed growth with room left keeps going
  // fuller than 4/5, never without an empty slot.
  bool reserve() noexcept {
    // At most 4/5 full after the insert.
    if ((static_cast<uint64_t>(count_) + 1) * 5 <= static_cast<uint64_t>(cap_) * 4) return true;
    return reserve_grow();
  }
  // Preconditions: reserve() returned true since the last insert; no item
  // with the same key present.
  void insert(uint64_t h, Item* it) noexcept {
    place(slots_, cap_, h, it);
    ++count_;
  }
  // Removes it (hash h), if present.
  void erase(uint64_t h, Item* it) noexcept {
    if (count_ == 0) return;
    uint32_t i = home(h, cap_);
    for (;;) {
      const uintptr_t s = slots_[i];
      if (s == 0) return;  // not here
      if (item_of(s) == it) break;
      i = next(i);
    }
    --count_;
    if ((slots_[next(i)] & kDispMask) == 0)
      slots_[i] = 0;  // the next slot is empty or at home: nothing shifts back
    else
      close_gap(i);
  }
  uint32_t size() const noexcept { return count_; }

  // fn(item) for every item (fn must not change the index).
  template <class Fn>
  void for_each(Fn&& fn) const noexcept {
    for (uint32_t i = 0; i < cap_; ++i)
      if (slots_[i]) fn(item_of(slots_[i]));
  }
  // Empties the index, calling fn(item) for each item after taking it out
  // (fn must not use the index).
  template <class Fn>
  void drain(Fn&& fn) noexcept {
    for (uint32_t i = 0; i < cap_; ++i) {
      if (const uintptr_t s = slots_[i]) {
        slots_[i] = 0;
        --count_;
        fn(item_of(s));
      }
    }
  }

 private:
  static constexpr uintptr_t kDispMask = 15;  // low bits of a slot: the displacement
  static Item* item_of(uintptr_t s) noexcept { return reinterpret_cast<Item*>(s & ~kDispMask); }
  static uintptr_t slot_of(Item* it, uint32_t disp) noexcept {
    return reinterpret_cast<uintptr_t>(it) | (disp < kDispMask ? disp : kDispMask);
  }
  // Home slot of a hash in a table of cap slots (Lemire's multiply-shift
  // range reduction: any capacity, not only powers of two).
  static uint32_t home(uint64_t h, uint32_t cap) noexcept {
    return static_cast<uint32_t>(((h >> 32) * cap) >> 32);
  }
  uint32_t next(uint32_t i) const noexcept { return i + 1 == cap_ ? 0 : i + 1; }
  // Exact displacement of the (non-empty) slot i of a table of cap slots.
  static uint32_t displacement(const uintptr_t* slots, uint32_t cap, uint32_t i) noexcept {
    const uintptr_t s = slots[i];
    if ((s & kDispMask) < kDispMask) return static_cast<uint32_t>(s & kDispMask);
    return saturated_displacement(slots, cap, i);
  }
  static uint32_t saturated_displacement(const uintptr_t* slots, uint32_t cap, uint32_t i) noexcept;
  // Robin Hood placement of it (hash h); precondition: an empty slot exists.
  static void place(uintptr_t* slots, uint32_t cap, uint64_t h, Item* it) noexcept {
    uint32_t i = home(h, cap);
    uint32_t d = 0;  // exact displacement of `it` at slot i
    for (;;) {
      const uintptr_t s = slots[i];
      if (s == 0) {
        slots[i] = slot_of(it, d);
        return;
      }
      const uint32_t sd = displacement(slots, cap, i);
      if (sd < d) {  // the richer entry moves on
        slots[i] = slot_of(it, d);
        it = item_of(s);
        d = sd;
      }
      i = i + 1 == cap ? 0 : i + 1;
      ++d;
    }
  }
  bool reserve_grow() noexcept;
  bool grow(uint32_t cap) noexcept;
  // Empties slot `hole`, shifting the rest of its run back.
  void close_gap(uint32_t hole) noexcept;

  uintptr_t* slots_ = nullptr;  // cap_ slots, 0 = empty
  uint32_t cap_ = 0;
  uint32_t count_ = 0;
};

static_assert(alignof(Item) > 15, "ItemIndex keeps a displacement in the low 4 bits of an Item*");

}  // namespace uepoll::epoll
