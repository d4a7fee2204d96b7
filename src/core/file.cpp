// file.cpp - File references and the release sequence (see file.h).
// Locks: none directly; release calls into epoll/release.h which takes
// instance shard, wait-queue and ready locks.
#include "core/file.h"

#include "core/alloc.h"
#include "core/call_flags.h"
#include "core/lock_state.h"
#include "core/lockdep.h"
#include "epoll/release.h"

#include <cerrno>
#include <fcntl.h>

namespace uepoll::core {

namespace {
std::atomic<uint64_t> g_next_file_id{1};
}

File::File(FileKind kind, int status_flags) noexcept
    : status_flags_(status_flags),
      kind_(kind),
      id_(g_next_file_id.fetch_add(1, std::memory_order_relaxed)) {}

bool File::nonblocking() const noexcept {
  return (status_flags() & O_NONBLOCK) != 0 || call_flags().dontwait;  // MSG_DONTWAIT
}

void File::set_status_flags(int flags) noexcept { status_flags_.store(flags, std::memory_order_relaxed); }

// put()'s last reference: the release.
void File::release_last() noexcept {
  // Not re-entered by a signal handler of this thread (the release touches
  // per-thread caches): handlers meanwhile queue their work (core/deferred.h).
  NoReentry section;
  // lock_order.h "Releases": never under a SpinLock; may run under scan
  // mutexes (9), which the checker then leaves out of its comparisons.
  lockdep_assert_no_spin("the release of a file");
  lockdep_release_begin();
  epoll::release_file(this);  // Linux: eventpoll_release() in __fput()
  on_release();
  release_lock_fd();
  dispose();
  lockdep_release_end();
}

bool File::put_unless_last() noexcept {
  long r = refs_.load(std::memory_order_relaxed);
  while (r > 1) {
    if (refs_.compare_exchange_weak(r, r - 1, std::memory_order_acq_rel, std::memory_order_relaxed))
      return true;
  }
  return false;
}

void File::retire_memory() noexcept {
  retired_.free_fn = &File::free_retired;
  retired_.object = this;
  reclaim::retire(&retired_);
}

void File::free_retired(reclaim::Retired* r) noexcept {
  destroy(static_cast<File*>(r->object));
}

}  // namespace uepoll::core
