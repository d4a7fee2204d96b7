// deferred_puts.h - DeferredPuts: file references dropped by a harvest or a
// readiness scan (instance_wait.cpp, instance_poll.cpp) after its scan
// mutex is released.
//
// Locks: none of its own.  put() is called with the scan mutex (9) held and
// no SpinLock; a reference that turns out to be the last one is kept and
// dropped by the destructor, which runs after the scan mutex's guard (it is
// declared first): a release takes shard locks (6), which a thread holding
// a scan mutex must not take in general (core/lock_order.h, "Releases").
#pragma once

#include "core/file.h"

namespace uepoll::epoll {

class DeferredPuts {
 public:
  DeferredPuts() = default;
  DeferredPuts(const DeferredPuts&) = delete;
  DeferredPuts& operator=(const DeferredPuts&) = delete;
  void put(core::File* f) noexcept {
    if (!f || f->put_unless_last()) return;
    if (n_ < kMax)
      files_[n_++] = f;
    else
      f->put();  // safe, only unusual: see lock_order.h on releases
  }
  ~DeferredPuts() {
    for (int i = 0; i < n_; ++i) files_[i]->put();
  }

 private:
  static constexpr int kMax = 16;
  core::File* files_[kMax];
  int n_ = 0;
};

}  // namespace uepoll::epoll
