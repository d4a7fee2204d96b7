// item.h - Item: one registration of (file, fd) in one instance, Linux's
// struct epitem with its eppoll_entry folded in.
//
// uepoll files have exactly one wait queue each, so an item needs exactly
// one wait entry; it is embedded here rather than allocated beside the item
// (Linux allocates an eppoll_entry per queue).  Recycling the item therefore
// recycles the wait entry too: a per-thread cache of whole items
// (epoll/item_cache.h) serves both.
//
// Fields and their guards:
//   wait            the target file's WaitQueue lock; wait.flags has kItem
//                   (its kind: the queue calls epoll::item_wake) and
//                   kFromSlab, both set once by item_alloc
//   ep, file, fd    immutable while the item exists.  `file` is not a
//                   reference (Linux: an epitem does not pin its file); it
//                   stays valid while the item is registered, because the
//                   file's release removes its items before freeing.
//   rdlink          ep->ready_lock_: on the ready list or a scan's private
//                   list when rdlink.next != nullptr
//   ovf_next        ep->ready_lock_: kOvfInactive when not on the overflow
//                   list (a harvest in progress, Linux's ovflist)
//   events, data    written under the shard lock inside the seqlock `seq`
//                   (MOD), read by harvesters through the seqlock.  `events`
//                   is also read alone by the wake callback (relaxed: a
//                   stale mask only decides whether one wakeup is queued,
//                   exactly Linux's lockless read paired with smp_mb() in
//                   ep_modify, which MOD's re-poll reproduces) and cleared to
//                   EP_PRIVATE_BITS by a harvester's CAS (EPOLLONESHOT).
//   refs            1 for the registration, 1 while on the overflow list,
//                   1 while a file release removes it; the last unref frees
//                   it.  So at most 3 (one overflow list, one release per
//                   item: each is taken once, under a lock that excludes a
//                   second), and a byte holds it.  A scan holding the item
//                   sets kInHand in qstate instead: a DEL meanwhile leaves
//                   the registration's reference for the scan to drop.
//   qstate          see below
//   registered      ep->ready_lock_ (set true before publication, false by
//                   the remover under its shard lock, and under ready_lock_
//                   unless qstate shows the item is on no list and in no
//                   scan's hands: then nobody else can reach it)
//
// Where the bytes go (x86-64 and aarch64: 80, Linux's epitem + eppoll_entry
// are 128 + 64 in their slabs): the wait entry's two links and flags (17),
// refs, qstate, registered (3) and fd (4) in the rest of its first 24 bytes,
// ep and file (16), rdlink (16), ovf_next (8), data (8), events and seq
// (8).  The instance's index (epoll/item_index.h) adds 10-15 bytes per item;
// the item carries no hash link.  Whether the item is still on its
// file's queue is wait.queued(), under the queue's lock (no flag of its own).
#pragma once

#include "core/backoff.h"
#include "core/waitqueue.h"

#include <atomic>
#include <cstdint>

namespace uepoll::core {
class File;
}

namespace uepoll::epoll {

class Instance;

struct ListLink {
  ListLink* prev = nullptr;
  ListLink* next = nullptr;
};

struct alignas(16) Item {  // 16: item_index.h keeps 4 bits in the low bits of an Item*
  // First member, and the next four fields live in its tail padding (see
  // core::WaitEntry): WaitEntry* <-> Item*.
  [[no_unique_address]] core::WaitEntry wait;
  // Preconditions: the last reference is dropped with acq_rel (item_unref).
  std::atomic<uint8_t> refs{0};
  // Where the item sits, written under ep->ready_lock_ (release), read
  // without it by DEL (acquire) to skip that lock when the item is nowhere.
  // Every transition between two nonzero states sets the new bit before
  // clearing the old one, so a reader never sees a passing 0.
  enum : uint8_t { kLinked = 1, kInHand = 2, kOnOvf = 4 };
  std::atomic<uint8_t> qstate{0};
  // ep->ready_lock_ for writes, except that a remover who finds qstate == 0
  // is the only one who can look at the item, and writes it alone.
  std::atomic<bool> registered{false};
  int fd = -1;
  Instance* ep = nullptr;
  core::File* file = nullptr;
  ListLink rdlink;
  Item* ovf_next = nullptr;
  std::atomic<uint64_t> data{0};
  std::atomic<uint32_t> events{0};
  std::atomic<uint32_t> seq{0};

  // wait.flags owner bit: the memory is a slab slot of item_cache, not a
  // malloc of its own (immutable; which allocator takes it back).
  static constexpr uint8_t kFromSlab = core::WaitEntry::kOwnerBit;
  bool from_slab() const noexcept { return (wait.flags & kFromSlab) != 0; }

  static Item* from_wait(core::WaitEntry* e) noexcept { return reinterpret_cast<Item*>(e); }
  static Item* from_rdlink(ListLink* l) noexcept {
    return reinterpret_cast<Item*>(reinterpret_cast<char*>(l) - offsetof(Item, rdlink));
  }
  bool linked() const noexcept { return rdlink.next != nullptr; }
  // Preconditions: ep->ready_lock_ held.
  void set_state_locked(uint8_t bit, bool on) noexcept {
    const uint8_t s = qstate.load(std::memory_order_relaxed);
    // release: pairs with the acquire load in Instance::detach_locked.
    qstate.store(on ? (s | bit) : (s & ~bit), std::memory_order_release);
  }

  // Consistent snapshot of (events, data); see the seqlock note above.
  // A reader that finds a write in progress backs off (core/backoff.h): the
  // writer may have been preempted inside its few stores.
  void read_event(uint32_t* ev, uint64_t* d) const noexcept {
    core::Backoff backoff;
    for (;;) {
      // acquire: pairs with the release store that ends a MOD's write.
      uint32_t s1 = seq.load(std::memory_order_acquire);
      if (s1 & 1) {
        backoff.pause();
        continue;
      }
      *ev = events.load(std::memory_order_relaxed);
      *d = data.load(std::memory_order_relaxed);
      std::atomic_thread_fence(std::memory_order_acquire);
      if (seq.load(std::memory_order_relaxed) == s1) return;
    }
  }
  // Preconditions: the item's shard lock is held (writers are serialized).
  void write_event(uint32_t ev, uint64_t d) noexcept {
    uint32_t s = seq.load(std::memory_order_relaxed);
    seq.store(s + 1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
    events.store(ev, std::memory_order_relaxed);
    data.store(d, std::memory_order_relaxed);
    // release: pairs with the acquire load of seq in read_event().
    seq.store(s + 2, std::memory_order_release);
  }
};

// Linux: BUILD_BUG_ON(sizeof(struct epitem) > 128).  Ours
// also contains the wait entry, which Linux keeps in a separate 64-byte
// eppoll_entry, and no index link (item_index.h): 80 bytes, which with the
// index's 10-15 keeps a registration under 96 (less than Linux's epitem alone).
static_assert(sizeof(Item) == 80, "an item (with its wait entry) is 80 bytes: see 'Where the bytes go'");
static_assert(offsetof(Item, wait) == 0);
static_assert(offsetof(Item, fd) + sizeof(int) == 24, "refs, qstate, registered, fd live in the entry's tail padding");

inline Item* const kOvfInactive = reinterpret_cast<Item*>(static_cast<uintptr_t>(-1));  // EP_UNACTIVE_PTR

}  // namespace uepoll::epoll
