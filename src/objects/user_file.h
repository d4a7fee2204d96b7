// user_file.h - UserFile: a file whose poll/read/write/release are the
// program's callbacks (uep_file_open; Linux: a driver's file_operations).
//
// The one rule that shapes it: user code never runs under a uepoll lock.
// Instances call File::poll() under their shard (6) and scan (9) mutexes,
// so UserFile::poll() does not call the user: it returns a cached mask, and
// the user's poll is called (refresh()) only where uepoll holds nothing:
// at open, in every uep_file_wake before the wakeup, and after every read
// or write callback (a wake of the file from inside its own callback is
// deferred to that point: CallbackFrame in user_file.cpp).  A readiness change outside read/write must therefore
// be announced by a wake (uepoll.h states it for users).
//
// The cache and its ordering.  state_ packs (sequence << 32 | mask).  A
// refresh loads state_ (acquire) *before* calling the user's poll, and
// publishes its mask with a CAS from exactly that value (acq_rel), else it
// polls again (so under concurrent refreshes the user's poll may be called
// more than once).  A published mask therefore comes from a poll made
// after every change that preceded an earlier publish: a thread that
// changed the object's state and then refreshed leaves, once its refresh
// returns, a cache that shows a poll made after its change (its own, or a
// later one that acquired its publish), and the wakeup that follows
// (under wq's lock) is seen by harvesters with at least that mask.  One
// atomic read-modify-write per refresh.
//
// Lifetimes (two counts):
//   File::refs_  descriptors + pins (calls in progress, wakes polling).
//                Its end is the file's close: epoll release, then the
//                user's release callback (on_release), exactly once.
//   holds_       the file (until dispose) + the user's handle.  The memory
//                is retired when both are gone, so a handle stays a valid
//                argument to uep_file_wake after the close (it then does
//                nothing: tryget fails once refs_ reached zero).
//
// Locks: wq() (11) only, to queue waiters and to wake; never held while
// user code runs.  poll() takes none (it is polled unpinned, like an
// eventfd: File::poll_unpinned_ok).
#pragma once

#include "core/file.h"

#include <uepoll/uepoll.h>

#include <atomic>
#include <cstdint>

namespace uepoll::objects {

class UserFile final : public core::File {
 public:
  // ops is copied; ops.poll is not null.  One file reference (the caller's,
  // handed to the descriptor table) and one hold for the handle.
  UserFile(const uep_file_ops& ops, void* ctx, int status_flags) noexcept;

  // The cached mask of the latest refresh; no lock, no user code.
  uint32_t poll(int depth) noexcept override;
  // The user's callbacks, called with no lock held; -EINVAL when absent.
  // EAGAIN on a blocking descriptor sleeps until a matching wake and calls
  // again; -EINTR if a signal handler runs.  Refreshes after every call.
  ssize_t read(void* buf, size_t count) noexcept override;
  ssize_t write(const void* buf, size_t count) noexcept override;

  // uep_file_wake: refresh, then wake wq() with `key` (0 = every waiter).
  // No lock may be held by the caller.  Does nothing after the close.
  void wake(uint32_t key) noexcept;
  // uep_file_unref: drops the handle's hold.
  void unref_handle() noexcept { drop_hold(); }
  // Calls the user's poll and publishes the result (see above).
  // Preconditions: the file is pinned (a reference, or the creator's).
  void refresh() noexcept;
  // Undoes a creation that was never installed: drops the creator's
  // reference and the handle's hold without calling release.
  void discard() noexcept {
    skip_release_ = true;
    put();
    drop_hold();
  }

 protected:
  void on_release() noexcept override;
  void dispose() noexcept override { drop_hold(); }

 private:
  long call_op(bool is_write, void* buf, size_t count) noexcept;
  void wake_queue(uint32_t key) noexcept;
  void drop_hold() noexcept;

  const uep_file_ops ops_;  // immutable
  void* const ctx_;         // immutable; the user's
  // (sequence << 32) | mask of the newest published refresh; CAS
  // (acq_rel) by refreshes after an acquire load, relaxed loads by poll()
  // (ordered by wq/ready locks).
  std::atomic<uint64_t> state_{0};
  // File + handle; acq_rel, the last drop retires the memory.
  std::atomic<int> holds_{2};
  bool skip_release_ = false;  // set before the last put by discard() only
};

}  // namespace uepoll::objects
