// own_slot.h - uepoll's own descriptors whose number a program can take.
//
// uepoll's own kernel descriptors live at high numbers (core/own_fds.h).
// Where the soft RLIMIT_NOFILE equals the hard one they sit below it, so a
// program may dup2()/dup3() onto one of them, as it may onto any free
// number on Linux.  An OwnSlot holds an own descriptor whose users all
// reach it through the slot, so that own_vacate() can move it to another
// number and hand the old number over:
//
//   1. the mover duplicates the descriptor to a new parked number and
//      publishes it in the slot (fd_);
//   2. it waits until no use that may have read the old number is left (a
//      use that sleeps in the kernel on it is ended by the slot's kick,
//      which makes the sleeper go round and read the slot again);
//   3. it gives the old number up, still open on a duplicate: the
//      program's dup2 then replaces it with its file atomically (closed
//      first, the number could go to a descriptor uepoll makes meanwhile).
// Both numbers name one open file description, so a use that read either
// acts on the same object.  A kernel epoll that holds the descriptor keeps
// its registration (keyed by the old number, removed with the file's last
// close), so a slot holds only descriptors that are never the target of
// an EPOLL_CTL_MOD or DEL after they are made; one that must be is pinned
// (pin()) while it is, and a pinned slot is not moved (own_vacate: EBUSY).
//
// Uses are counted in two halves, as SRCU counts readers: a use takes the
// half named by gen_'s low bit, then reads fd_; the mover publishes fd_,
// then twice flips gen_ and waits for the half it retired to drain (a use
// that counted itself late in the other half may hold the old number), so
// a sleeper that goes round at once lands in the open half and cannot keep
// the mover waiting.
// Every access below is seq_cst: a use's increment then fd_ load, against
// the mover's fd_ store then its load of the count (Dekker).  A thread that
// holds a use does not move (own_vacate answers EBUSY at once): a signal
// handler's dup2 would otherwise wait for its own thread.
//
// The slots are found by number in a fixed registry (lock-free; a slot that
// finds it full is simply not movable).  Locks: none.  A mover waits for
// uses to drain (bounded: 5 s, then EBUSY and the old number stays
// uepoll's); close() waits for a mover of its slot to finish.
#pragma once

#include "core/lock_state.h"  // UEP_TLS_INITIAL_EXEC

#include <atomic>

namespace uepoll::core {

extern constinit thread_local int tls_own_uses UEP_TLS_INITIAL_EXEC;

class OwnSlot {
 public:
  // Ends a use that sleeps in the kernel on the descriptor (nullptr: no use
  // sleeps).  Called by the mover, from any thread, any number of times.
  using Kick = void (*)(void* ctx) noexcept;
  // Called by the mover once the new number `to` is published and before
  // `from` is given up: a kernel epoll that registered the descriptor by
  // number and must change or remove that registration later moves it to
  // the new number here (EPOLL_CTL_ADD of `to`, DEL of `from`).  From any
  // thread that holds no uepoll lock.
  using Moved = void (*)(void* ctx, int from, int to) noexcept;

  constexpr OwnSlot() noexcept = default;
  OwnSlot(const OwnSlot&) = delete;
  OwnSlot& operator=(const OwnSlot&) = delete;

  // Takes over own descriptor fd (already parked: core/own_fds.h) and
  // registers the slot.  fd < 0: the slot stays empty.  The slot must be
  // empty and no other thread may use it yet (one may peek: it sees the
  // number only once everything else is set).
  void open(int fd, Kick kick = nullptr, void* ctx = nullptr) noexcept;
  // Unregisters, waits for a move in progress, and closes the descriptor
  // (close_own).  No use may be in progress.  Empty: nothing.
  void close() noexcept;
  // A slot of its own, allocated (core/alloc.h) and opened on kernel
  // descriptor fd, parked here: nullptr (fd closed) without memory.
  static OwnSlot* make_on_heap(int fd) noexcept;
  // Closes and frees a slot make_on_heap() made; nullptr: nothing.
  static void free_on_heap(OwnSlot* s) noexcept;
  // The number now; -1 when empty.  For a check or a pinned slot only: a
  // system call on the descriptor goes through a Use.
  int peek() const noexcept { return fd_.load(std::memory_order_seq_cst); }
  bool empty() const noexcept { return peek() < 0; }
  // While pinned the number does not move (waits for a move in progress).
  // Pins count: each pin() is ended by one unpin().
  void pin() noexcept;
  void unpin() noexcept { pinned_.fetch_sub(1, std::memory_order_seq_cst); }
  // Sets (nullptr: clears) the Moved hook.  Preconditions: pinned by the
  // caller, so that no move is in progress (a mover reads the hook after
  // it found the slot unpinned: the pin's seq_cst pair orders the two).
  void set_moved(Moved fn, void* ctx) noexcept {
    moved_ = fn;
    moved_ctx_ = ctx;
  }

  // One use: the number to hand to the kernel, valid until the Use ends.
  class Use {
   public:
    explicit Use(OwnSlot& s) noexcept;
    ~Use();
    Use(const Use&) = delete;
    Use& operator=(const Use&) = delete;
    int fd() const noexcept { return fd_; }

   private:
    OwnSlot& s_;
    unsigned half_;
    int fd_;
  };

  // The preload's C code holds a use by hand (uep__own_slot_enter).
  int enter(unsigned* half) noexcept;
  void leave(unsigned half) noexcept;

  // A Kick for a slot whose sleepers wait on an eventfd: writes 1 to the
  // eventfd held by the OwnSlot `eventfd_slot` points to.
  static void write_one(void* eventfd_slot) noexcept;

 private:
  friend int own_vacate(int n) noexcept;
  friend void own_slots_fork_child() noexcept;
  std::atomic<int> fd_{-1};
  std::atomic<unsigned> gen_{0};
  std::atomic<unsigned> users_[2]{};
  std::atomic<bool> moving_{false};
  std::atomic<unsigned> pinned_{0};
  int reg_ = -1;  // index in the registry; owner only
  Kick kick_ = nullptr;
  void* ctx_ = nullptr;
  Moved moved_ = nullptr;  // set_moved, under a pin
  void* moved_ctx_ = nullptr;
};

// An own descriptor made at the first call that needs it (a file's lock
// descriptor, a socket's option twin): an OwnSlot allocated with it and
// freed with its owner, so that an owner that never needs one pays one
// pointer.  Two first calls may race: the loser's descriptor is closed.
class LazyOwnSlot {
 public:
  constexpr LazyOwnSlot() noexcept = default;
  LazyOwnSlot(const LazyOwnSlot&) = delete;
  LazyOwnSlot& operator=(const LazyOwnSlot&) = delete;
  ~LazyOwnSlot() { release(); }

  // The slot, made if need be around make(): a new kernel descriptor (not
  // yet parked) or -errno.  nullptr with the negative errno in *err when
  // make() fails or no memory is left (-ENOMEM).
  template <class Make>
  OwnSlot* get(Make&& make, long* err) noexcept {
    if (OwnSlot* s = slot_.load(std::memory_order_acquire)) return s;
    const int fd = make();
    if (fd < 0) {
      *err = fd;
      return nullptr;
    }
    return install(fd, err);
  }
  // The slot if made (its descriptor may be moving: use it through a Use
  // or a pin), else nullptr.
  OwnSlot* made() const noexcept { return slot_.load(std::memory_order_acquire); }
  // Closes the descriptor and frees the slot.  No use may be in progress.
  void release() noexcept;

 private:
  OwnSlot* install(int fd, long* err) noexcept;
  // Installed once by CAS (acq_rel); pairs with the acquire loads above,
  // so a slot seen is an open one.
  std::atomic<OwnSlot*> slot_{nullptr};
};

// Moves the own descriptor at number n elsewhere and gives n up, so that the
// program may install a file there: 0 with n still open on a duplicate
// that is no longer uepoll's (the caller's dup2/dup3 replaces it, or the
// caller closes it), or -EBUSY (n is not held by an
// OwnSlot, its slot is pinned, the caller holds a use or a uepoll lock (a
// signal handler that interrupted uepoll), no number is free, or the uses
// did not drain).
int own_vacate(int n) noexcept;
// After fork, in the child before any slot is closed: no mover, and no
// use of another thread, exists there.
void own_slots_fork_child() noexcept;

}  // namespace uepoll::core
