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

#include <signal.h>
#include <sys/epoll.h>

extern "C" {
// Depth of InternalCalls scopes on this thread.
UEP_EXPORT extern __thread int uep__internal_depth;
// libc's epoll_pwait for uepoll's sleeps on its own kernel epoll
// descriptors, or null (then ::epoll_pwait).  The preload sets it, before
// it makes its first uepoll instance (whose shadow epoll is what sleeps
// here), to the function behind its epoll_pwait interposer, which would
// otherwise look each such sleep's descriptor up, find it is no uepoll
// one and count it as a program's call forwarded to the kernel.
UEP_EXPORT extern int (*uep__kernel_epoll_pwait)(int, struct epoll_event*, int, int, const sigset_t*);
// The same for epoll_pwait2 (a direct sleep with a deadline).
UEP_EXPORT extern int (*uep__kernel_epoll_pwait2)(int, struct epoll_event*, int, const struct timespec*,
                                                  const sigset_t*);
}

namespace uepoll::core {

// epoll_pwait on one of uepoll's own kernel epoll descriptors (a shadow
// epoll: KernelWatch::sleep_direct).  Relaxed: the pointer names libc code
// and publishes no data.
inline int kernel_epoll_pwait(int epfd, struct epoll_event* evs, int maxevents, int timeout,
                              const sigset_t* mask) noexcept {
  auto* const f = __atomic_load_n(&uep__kernel_epoll_pwait, __ATOMIC_RELAXED);
  return f ? f(epfd, evs, maxevents, timeout, mask) : ::epoll_pwait(epfd, evs, maxevents, timeout, mask);
}
// epoll_pwait2 on one of uepoll's own kernel epoll descriptors, as above.
inline int kernel_epoll_pwait2(int epfd, struct epoll_event* evs, int maxevents, const struct timespec* timeout,
                               const sigset_t* mask) noexcept {
  auto* const f = __atomic_load_n(&uep__kernel_epoll_pwait2, __ATOMIC_RELAXED);
  return f ? f(epfd, evs, maxevents, timeout, mask) : ::epoll_pwait2(epfd, evs, maxevents, timeout, mask);
}

class InternalCalls {
 public:
  InternalCalls() noexcept { ++uep__internal_depth; }
  ~InternalCalls() { --uep__internal_depth; }
  InternalCalls(const InternalCalls&) = delete;
  InternalCalls& operator=(const InternalCalls&) = delete;
};

}  // namespace uepoll::core
