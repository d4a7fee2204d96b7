// internal_call.cpp - the thread-local depth of uepoll's own libc calls
// and the preload's libc epoll_pwait and epoll_pwait2 for uepoll's own sleeps (see
// internal_call.h), and the preload's marks of calls it can make again
// (core/handover.h).  Locks: none.
#include "core/internal_call.h"

#include "core/handover.h"

extern "C" {
UEP_EXPORT __thread int uep__internal_depth = 0;
UEP_EXPORT __thread int uep__movable = 0;
UEP_EXPORT __thread int uep__moved = 0;
UEP_EXPORT __thread struct timespec uep__moved_left = {-1, 0};
UEP_EXPORT int (*uep__kernel_epoll_pwait)(int, struct epoll_event*, int, int, const sigset_t*) = nullptr;
UEP_EXPORT int (*uep__kernel_epoll_pwait2)(int, struct epoll_event*, int, const struct timespec*,
                                           const sigset_t*) = nullptr;
}
