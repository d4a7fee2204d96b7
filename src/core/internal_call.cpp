// internal_call.cpp - the thread-local depth of uepoll's own libc calls
// and the preload's libc epoll_pwait and epoll_pwait2 for uepoll's own sleeps (see
// internal_call.h), and the preload's marks of calls it can make again
// with the bytes a moved call kept (core/handover.h).  Locks: none.
#include "core/internal_call.h"

#include "core/handover.h"

#include "core/alloc.h"

extern "C" {
UEP_EXPORT __thread int uep__internal_depth = 0;
UEP_EXPORT __thread int uep__movable = 0;
UEP_EXPORT __thread int uep__moved = 0;
UEP_EXPORT __thread struct timespec uep__moved_left = {-1, 0};
UEP_EXPORT int (*uep__kernel_epoll_pwait)(int, struct epoll_event*, int, int, const sigset_t*) = nullptr;
UEP_EXPORT int (*uep__kernel_epoll_pwait2)(int, struct epoll_event*, int, const struct timespec*,
                                           const sigset_t*) = nullptr;
}

namespace uepoll::core {
namespace {

struct KeptBytes {
  char* buf = nullptr;
  size_t off = 0;
  size_t n = 0;
};
thread_local KeptBytes kept;

}  // namespace

void keep_moved_bytes(char* buf, size_t off, size_t n) noexcept {
  raw_free(kept.buf);
  kept = KeptBytes{buf, off, n};
}

void take_moved_bytes(char** buf, size_t* off, size_t* n) noexcept {
  *buf = kept.buf;
  *off = kept.off;
  *n = kept.n;
  kept = KeptBytes{};
}

}  // namespace uepoll::core
