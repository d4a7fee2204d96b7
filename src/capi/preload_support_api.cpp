// preload_support_api.cpp - uep__stream_state (capi/preload_support.h):
// what libuepoll-preload.so reads from a pipe end or a socket of a pair to
// turn it into a kernel one before fork(); uep__own_fd and
// uep__next_own_fd: uepoll's own kernel descriptors (core/own_fds.h).
//
// Locks: the end's wait-queue lock (6) to look for blocked callers, then,
// for a socket, its connection's leaf lock (8); never both at once.
#include "capi/preload_support.h"

#include "core/file.h"
#include "core/own_fds.h"
#include "fd/table.h"

#include <cerrno>
#include <cstdint>
#include <fcntl.h>

namespace {

using uepoll::core::File;
using uepoll::core::WaitEntry;

// True if something other than an epoll item waits on f: a thread asleep in
// a read or write of it, or in uep_poll/select over it.
bool has_blocked_caller(File* f) noexcept {
  f->wq().lock();
  const bool found = f->wq().find_locked([](WaitEntry* e) { return (e->flags & WaitEntry::kItem) == 0; }) != nullptr;
  f->wq().unlock();
  return found;
}

}  // namespace

extern "C" int uep__stream_state(int fd, struct uep__stream_state* out) {
  uepoll::fd::FileRef f(uepoll::fd::lookup(fd));
  if (!f) {
    errno = EBADF;
    return -1;
  }
  uepoll::core::StreamState ss;
  if (!f->stream_state(&ss)) {  // not a pipe end or a socket of a pair
    errno = EINVAL;
    return -1;
  }
  struct uep__stream_state st {};
  st.conn = reinterpret_cast<uintptr_t>(ss.conn);
  st.side = ss.side;
  st.shutdown = ss.shutdown;
  st.is_socket = ss.is_socket ? 1 : 0;
  st.blocked = has_blocked_caller(f.get()) ? 1 : 0;
  *out = st;
  return 0;
}

extern "C" void uep__set_fasync_fd(int fd, int shown) {
  uepoll::fd::FileRef f(uepoll::fd::lookup(fd));
  if (f && (f->status_flags() & O_ASYNC)) f->set_fasync_fd(shown);
}

extern "C" int uep__own_fd(int fd) { return uepoll::core::is_own(fd) ? 1 : 0; }
extern "C" int uep__next_own_fd(int from) { return uepoll::core::next_own(from); }
extern "C" int uep__park_fd_high(int fd) { return uepoll::core::park_high(fd); }
