// preload_support_api.cpp - uep__stream_state (capi/preload_support.h):
// what libuepoll-preload.so reads from a pipe end or a socket of a pair to
// turn it into a kernel one before fork(); uep__own_fd and
// uep__next_own_fd: uepoll's own kernel descriptors (core/own_fds.h),
// and the movable ones of the preload (core/own_slot.h);
// uep__file_id: a descriptor's open file description, for kcmp;
// uep__lock_fdinfo: the locks held through it, for a conversion to carry;
// uep__sleepers and uep__hand_over: the calls asleep on a file, and the
// mark that sends them back to the preload (core/handover.h);
// uep__kernel_form: a file's kernel form, for the kernel interfaces;
// uep__epoll_registrations: an instance's registrations, and
// uep__carry_sockopts: a socket's options, for the fork conversion to move
// them; uep__eventfd_take_for_move: an eventfd's count, for the kernel
// eventfd the preload makes of it;
// uep__set_scm_hooks: the preload's numbering of passed descriptors
// (objects/unix_scm.h).
//
// Locks: a file's wait-queue lock (11) to look for or wake its sleepers
// (uep__sleepers, uep__hand_over, uep__eventfd_take_for_move); a socket's connection leaf lock (14)
// for its state (uep__stream_state); never both at once.  An
// instance's shard locks (6), one at a time, for its registrations.
#include "capi/preload_support.h"

#include "core/file.h"
#include "core/fork.h"
#include "core/own_fds.h"
#include "core/own_slot.h"
#include "core/waiter.h"
#include "epoll/fdinfo.h"
#include "epoll/instance.h"
#include "fd/table.h"
#include "objects/eventfd.h"
#include "objects/unix_scm.h"

#include <atomic>
#include <new>

#include <cerrno>
#include <cstdint>
#include <fcntl.h>

namespace {

using uepoll::core::File;
using uepoll::core::WaitEntry;

// What other than an epoll item waits on f (a thread asleep in a read or
// write of it, or in uep_poll/select over it): *fixed, a call that cannot
// be made again elsewhere; *movable, one that can (core/handover.h).
void blocked_callers(File* f, int* fixed, int* movable) noexcept {
  *fixed = *movable = 0;
  f->wq().lock();
  (void)f->wq().find_locked([&](WaitEntry* e) {
    if (e->flags & WaitEntry::kItem) return false;
    const bool m = (e->flags & WaitEntry::kWaiter) && reinterpret_cast<uepoll::core::WaiterEntry*>(e)->movable;
    *(m ? movable : fixed) = 1;
    return *fixed != 0;
  });
  f->wq().unlock();
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
  st.sock_type = ss.sock_type;
  st.msgs = ss.msgs;
  *out = st;
  return 0;
}

extern "C" int uep__sleepers(int fd, int* fixed, int* movable) {
  uepoll::fd::FileRef f(uepoll::fd::lookup(fd));
  if (!f) {
    errno = EBADF;
    return -1;
  }
  blocked_callers(f.get(), fixed, movable);
  return 0;
}

extern "C" int uep__hand_over(int fd, int on) {
  uepoll::fd::FileRef f(uepoll::fd::lookup(fd));
  if (!f) {
    errno = EBADF;
    return -1;
  }
  f->wq().lock();
  f->wq().set_handed_over_locked(on != 0);
  if (on) f->wq().wake_waiters_locked();
  f->wq().unlock();
  return 0;
}

extern "C" int uep__eventfd_take_for_move(int fd, unsigned long long* count, int* semaphore) {
  uepoll::fd::FileRef f(uepoll::fd::lookup(fd));
  if (!f || f->kind() != uepoll::core::FileKind::kEventFd) {
    errno = f ? EINVAL : EBADF;
    return -1;
  }
  auto* e = static_cast<uepoll::objects::EventFd*>(f.get());
  uint64_t c = 0;
  if (const long r = e->take_for_move(&c); r < 0) {
    errno = static_cast<int>(-r);
    return -1;
  }
  *count = c;
  *semaphore = e->semaphore() ? 1 : 0;
  return 0;
}

extern "C" void uep__carry_sockopts(int fd, int kfd) {
  uepoll::fd::FileRef f(uepoll::fd::lookup(fd));
  if (f) f->carry_options(kfd);
}

extern "C" int uep__kernel_form(int fd) {
  uepoll::fd::FileRef f(uepoll::fd::lookup(fd));
  const int k = f ? f->kernel_form() : -EBADF;
  if (k < 0) {
    errno = -k;
    return -1;
  }
  return k;
}

extern "C" void uep__set_fasync_fd(int fd, int shown) {
  uepoll::fd::FileRef f(uepoll::fd::lookup(fd));
  if (f && (f->status_flags() & O_ASYNC)) f->set_fasync_fd(shown);
}

extern "C" long uep__lock_fdinfo(int fd, char* buf, unsigned long len) {
  uepoll::fd::FileRef f(uepoll::fd::lookup(fd));
  const long n = f ? f->lock_fdinfo(buf, len) : -EBADF;
  if (n < 0) {
    errno = static_cast<int>(-n);
    return -1;
  }
  return n;
}

extern "C" unsigned long long uep__file_id(int fd) {
  uepoll::fd::FileRef f(uepoll::fd::lookup(fd));
  return reinterpret_cast<uintptr_t>(f.get());
}

extern "C" long uep__epoll_registrations(int epfd, struct uep__registration* out, long n) {
  uepoll::fd::FileRef f(uepoll::fd::lookup(epfd));
  if (!f || !f->is_epoll()) {
    errno = f ? EINVAL : EBADF;
    return -1;
  }
  try {
    const auto rows = uepoll::epoll::registrations(static_cast<uepoll::epoll::Instance*>(f.get()));
    for (size_t i = 0; i < rows.size() && static_cast<long>(i) < n; ++i)
      out[i] = uep__registration{rows[i].fd, rows[i].events, static_cast<unsigned long long>(rows[i].data)};
    return static_cast<long>(rows.size());
  } catch (...) {  // out of memory
    errno = ENOMEM;
    return -1;
  }
}

extern "C" int uep__own_fd(int fd) { return uepoll::core::is_own(fd) ? 1 : 0; }
extern "C" int uep__next_own_fd(int from) { return uepoll::core::next_own(from); }
extern "C" int uep__park_fd_high(int fd) { return uepoll::core::park_high(fd); }
extern "C" void uep__own_fds_hold(void) { uepoll::core::own_fds_hold(); }
extern "C" void uep__own_fds_release(void) { uepoll::core::own_fds_release(); }

struct uep__own_slot {
  uepoll::core::OwnSlot slot;
};
extern "C" uep__own_slot* uep__own_slot_new(int fd) {
  if (fd < 0) return nullptr;
  auto* s = new (std::nothrow) uep__own_slot;
  if (!s) {
    uepoll::core::close_own(fd);
    return nullptr;
  }
  s->slot.open(fd);
  return s;
}
extern "C" int uep__own_slot_enter(uep__own_slot* s, unsigned* half) { return s->slot.enter(half); }
extern "C" void uep__own_slot_leave(uep__own_slot* s, unsigned half) { s->slot.leave(half); }
extern "C" int uep__own_vacate(int n) {
  const int r = uepoll::core::own_vacate(n);
  if (r < 0) errno = -r;
  return r < 0 ? -1 : 0;
}
extern "C" unsigned long long uep__thread_sleeps(void) { return uepoll::core::thread_sleeps(); }

namespace {
// The preload's hooks; relaxed: set once by its constructor, before the
// program runs a thread.
std::atomic<int (*)(int, int)> g_show{nullptr};

int show_adapter(int u, int kind) {
  using uepoll::core::FileKind;
  int k = UEP__SCM_OTHER;
  switch (static_cast<FileKind>(kind)) {
    case FileKind::kEpoll: k = UEP__SCM_EPOLL; break;
    case FileKind::kEventFd: k = UEP__SCM_EVENTFD; break;
    case FileKind::kPipeRead:
    case FileKind::kPipeWrite: k = UEP__SCM_PIPE; break;
    case FileKind::kSocket: k = UEP__SCM_SOCKET; break;
    case FileKind::kTimer: k = UEP__SCM_TIMER; break;
    case FileKind::kUser: break;
  }
  return g_show.load(std::memory_order_relaxed)(u, k);
}
}  // namespace

extern "C" void uep__set_scm_hooks(int (*resolve)(int n), int (*show)(int u, int kind)) {
  g_show.store(show, std::memory_order_relaxed);
  uepoll::objects::set_scm_resolve_hook(resolve);
  uepoll::objects::set_scm_install_hook(show ? &show_adapter : nullptr);
}

extern "C" void uep__install_fork_handlers(void) { uepoll::core::install_fork_handlers(); }
