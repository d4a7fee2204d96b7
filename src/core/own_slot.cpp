// own_slot.cpp - movable own descriptors and the move itself (see
// own_slot.h).  Locks: none; the registry is an array of atomic pointers.
#include "core/own_slot.h"

#include "core/alloc.h"
#include "core/own_fds.h"

#include <cerrno>
#include <cstdint>
#include <ctime>
#include <sched.h>
#include <unistd.h>

namespace uepoll::core {

constinit thread_local int tls_own_uses UEP_TLS_INITIAL_EXEC = 0;

namespace {

// Every open slot, at the first free index.  A few slots a thread that
// sleeps, a few more for the preload: a full registry leaves the slot
// unmovable, nothing worse.
constexpr int kRegistry = 4096;
constinit std::atomic<OwnSlot*> g_reg[kRegistry] = {};
// Where open() starts looking (relaxed: a hint), so that a registry that
// holds many slots is not scanned from its start at each open.
constinit std::atomic<unsigned> g_hint{0};
// Movers between their registry lookup and marking the slot moving: close()
// waits for none, so that the slot a mover found is not freed under it.
constinit std::atomic<int> g_finders{0};

// The moving mark's holder waits no longer than this for uses to drain.
constexpr long kDrainNs = 5'000'000'000L;

long elapsed_ns(const timespec& since) noexcept {
  timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (now.tv_sec - since.tv_sec) * 1'000'000'000L + (now.tv_nsec - since.tv_nsec);
}

void pause_briefly(unsigned round) noexcept {
  if (round < 16) {
    ::sched_yield();
    return;
  }
  const timespec t{0, 200'000};  // 0.2 ms
  ::nanosleep(&t, nullptr);
}

}  // namespace

void OwnSlot::open(int fd, Kick kick, void* ctx) noexcept {
  kick_ = kick;
  ctx_ = ctx;
  users_[0].store(0, std::memory_order_relaxed);  // no use of an empty slot exists
  users_[1].store(0, std::memory_order_relaxed);
  fd_.store(fd, std::memory_order_seq_cst);
  if (fd < 0) return;
  const unsigned start = g_hint.load(std::memory_order_relaxed);
  for (unsigned k = 0; k < kRegistry; ++k) {
    const unsigned i = (start + k) % kRegistry;
    OwnSlot* none = nullptr;
    if (g_reg[i].load(std::memory_order_relaxed) == nullptr &&
        g_reg[i].compare_exchange_strong(none, this, std::memory_order_seq_cst)) {
      reg_ = static_cast<int>(i);
      g_hint.store((i + 1) % kRegistry, std::memory_order_relaxed);
      return;
    }
  }
}

void OwnSlot::close() noexcept {
  if (reg_ >= 0) {
    g_reg[reg_].store(nullptr, std::memory_order_seq_cst);
    reg_ = -1;
  }
  // A mover that found the slot before it left the registry finishes first
  // (the stores above and the loads here against its moving_ exchange and
  // registry check: seq_cst).
  for (unsigned i = 0; moving_.load(std::memory_order_seq_cst) || g_finders.load(std::memory_order_seq_cst) > 0; ++i)
    pause_briefly(i);
  close_own(fd_.exchange(-1, std::memory_order_seq_cst));
}

void OwnSlot::pin() noexcept {
  pinned_.fetch_add(1, std::memory_order_seq_cst);
  for (unsigned i = 0; moving_.load(std::memory_order_seq_cst); ++i) pause_briefly(i);
}

int OwnSlot::enter(unsigned* half) noexcept {
  ++tls_own_uses;  // before the count: a handler's move sees it (own_vacate)
  std::atomic_signal_fence(std::memory_order_seq_cst);
  const unsigned h = gen_.load(std::memory_order_seq_cst) & 1;
  users_[h].fetch_add(1, std::memory_order_seq_cst);
  *half = h;
  return fd_.load(std::memory_order_seq_cst);
}

void OwnSlot::leave(unsigned half) noexcept {
  users_[half].fetch_sub(1, std::memory_order_seq_cst);
  std::atomic_signal_fence(std::memory_order_seq_cst);
  --tls_own_uses;
}

OwnSlot::Use::Use(OwnSlot& s) noexcept : s_(s) { fd_ = s.enter(&half_); }
OwnSlot::Use::~Use() { s_.leave(half_); }

void OwnSlot::write_one(void* eventfd_slot) noexcept {
  Use u(*static_cast<OwnSlot*>(eventfd_slot));
  const uint64_t one = 1;
  ssize_t r = ::write(u.fd(), &one, sizeof one);
  (void)r;  // EAGAIN only if the counter is near overflow: still readable
}

OwnSlot* OwnSlot::make_on_heap(int fd) noexcept {
  OwnSlot* s = create<OwnSlot>();  // counted, and failed on demand (alloc.h)
  if (!s) {
    ::close(fd);
    return nullptr;
  }
  s->open(park_high(fd));
  return s;
}

void OwnSlot::free_on_heap(OwnSlot* s) noexcept {
  if (!s) return;
  s->close();
  destroy(s);
}

OwnSlot* LazyOwnSlot::install(int fd, long* err) noexcept {
  OwnSlot* mine = OwnSlot::make_on_heap(fd);
  if (!mine) {
    *err = -ENOMEM;
    return nullptr;
  }
  OwnSlot* seen = nullptr;
  if (slot_.compare_exchange_strong(seen, mine, std::memory_order_acq_rel, std::memory_order_acquire)) return mine;
  OwnSlot::free_on_heap(mine);  // another first call made one: seen is it
  return seen;
}

void LazyOwnSlot::release() noexcept { OwnSlot::free_on_heap(slot_.exchange(nullptr, std::memory_order_acq_rel)); }

int own_vacate(int n) noexcept {
  // A kick or Moved hook takes uepoll locks: not in a handler that
  // interrupted a holder.
  if (n < 0 || tls_own_uses > 0 || thread_in_uepoll()) return -EBUSY;
  const int saved = errno;
  g_finders.fetch_add(1, std::memory_order_seq_cst);
  OwnSlot* s = nullptr;
  int at = -1;  // s's index in the registry (reg_ is its owner's alone)
  for (int i = 0; i < kRegistry; ++i) {
    OwnSlot* c = g_reg[i].load(std::memory_order_seq_cst);
    if (c && c->fd_.load(std::memory_order_seq_cst) == n) {
      s = c;
      at = i;
      break;
    }
  }
  // Marked moving, still registered, not pinned, still at n: ours to move.
  if (s && s->moving_.exchange(true, std::memory_order_seq_cst)) s = nullptr;
  if (s && (g_reg[at].load(std::memory_order_seq_cst) != s || s->pinned_.load(std::memory_order_seq_cst) != 0 ||
            s->fd_.load(std::memory_order_seq_cst) != n)) {
    s->moving_.store(false, std::memory_order_seq_cst);
    s = nullptr;
  }
  g_finders.fetch_sub(1, std::memory_order_seq_cst);
  if (!s) return -EBUSY;

  int r = -EBUSY;
  const int m = dup_high(n);
  if (m >= 0) {
    s->fd_.store(m, std::memory_order_seq_cst);
    if (s->moved_) s->moved_(s->moved_ctx_, n, m);
    timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    bool drained = true;
    // Two flips, each waiting for the half it retires, as synchronize_srcu:
    // a use counted in the half the first flip leaves open may still hold
    // n (it read the generation before an earlier move's flip and counted
    // itself after that move's wait), so that half drains too.
    for (int phase = 0; phase < 2 && drained; ++phase) {
      const unsigned old = s->gen_.fetch_add(1, std::memory_order_seq_cst) & 1;
      for (unsigned i = 0; s->users_[old].load(std::memory_order_seq_cst) != 0; ++i) {
        if (elapsed_ns(start) > kDrainNs) {
          drained = false;  // n stays open and uepoll's: both numbers name the file
          break;
        }
        if (s->kick_) s->kick_(s->ctx_);
        pause_briefly(i);
      }
    }
    if (drained) {
      // n stays open, no longer uepoll's, for the caller's dup2/dup3 to
      // replace atomically: a close here would let another thread's new
      // descriptor (park_high) take the number first.
      forget_own(n);
      r = 0;
    }
  }
  s->moving_.store(false, std::memory_order_seq_cst);
  errno = saved;
  return r;
}

void own_slots_fork_child() noexcept {
  g_finders.store(0, std::memory_order_relaxed);
  for (auto& e : g_reg) {
    OwnSlot* s = e.load(std::memory_order_relaxed);
    if (!s) continue;
    // The parent's other threads, mid-use at the fork, do not exist here.
    s->moving_.store(false, std::memory_order_relaxed);
    s->users_[0].store(0, std::memory_order_relaxed);
    s->users_[1].store(0, std::memory_order_relaxed);
  }
}

}  // namespace uepoll::core
