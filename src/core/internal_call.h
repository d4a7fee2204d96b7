// internal_call.h - a thread's libc calls made for uepoll itself (its fork
// handlers, its own threads) rather than for the program.
//
// Under the preload (libuepoll-preload.so links this library) libc's
// descriptor calls are interposed, and a call uepoll makes for its own
// kernel objects must reach the kernel: a kernel timer rebuilt in a forked
// child (objects/timerfd.cpp) made through the interposed timerfd_create
// would become a uepoll timerfd, registered with the very service the fork
// handler holds locked.  The interposers pass a call straight to the kernel
// while uep__internal_depth > 0 on the calling thread, as they do for
// calls made inside an interposer (preload/interpose.h).  Without the
// preload the counter is only counted.
//
// Locks: none (a thread-local counter).
#pragma once

#include <uepoll/export.h>

extern "C" {
// Depth of InternalCalls scopes on this thread.
UEP_EXPORT extern __thread int uep__internal_depth;
}

namespace uepoll::core {

class InternalCalls {
 public:
  InternalCalls() noexcept { ++uep__internal_depth; }
  ~InternalCalls() { --uep__internal_depth; }
  InternalCalls(const InternalCalls&) = delete;
  InternalCalls& operator=(const InternalCalls&) = delete;
};

}  // namespace uepoll::core
