// epoll_api.cpp - uep_epoll_*: Linux's argument checks, in Linux 6.18's
// order, then the instance.  Nothing else lives here.
//
// A kernel epfd (below UEP_FD_BASE) is forwarded to the kernel call, so a
// program can route every epoll call through uepoll.  A kernel descriptor
// as the target of a uepoll instance goes to the instance's kernel side
// (epoll/kernel_watch.h), which lets the kernel check and watch it.
//
// Locks: none here (the instance takes its own).
#include <uepoll/uepoll.h>
#include <uepoll/detail/ops.hpp>

#include "capi/ctl.h"
#include "capi/edge.h"
#include "core/reclaim.h"
#include "core/user_memory.h"
#include "core/waiter.h"
#include "epoll/instance.h"
#include "epoll/kernel_watch.h"
#include "fd/table.h"
#include "fd/target.h"

#include <cerrno>
#include <cstdint>
#include <fcntl.h>
#include <optional>
#include <sys/epoll.h>

using uepoll::capi::to_c;
using uepoll::epoll::Instance;
using uepoll::fd::FileRef;

namespace {

using uepoll::core::user_range_ok;
using uepoll::core::user_readable;

int create(int flags) {
  // Linux do_epoll_create(): only EPOLL_CLOEXEC is allowed.
  if (flags & ~EPOLL_CLOEXEC) return -EINVAL;
  Instance* ep = Instance::create(O_RDWR);
  if (!ep) return -ENOMEM;
  int fd = uepoll::fd::install(ep);
  if (fd < 0) ep->put();
  return static_cast<int>(uepoll::fd::cloexec_if(fd, flags & EPOLL_CLOEXEC));
}

// capi::ctl_on's body (ctl.h), inlined into ctl() below: one call less on
// every epoll_ctl.
[[gnu::always_inline]] inline int ctl_on_inline(uepoll::core::File* ep, int op, int fd,
                                                const struct epoll_event& ev) {
  const bool has_event = uepoll::capi::ctl_has_event(op);
  FileRef ref;
  uepoll::core::File* tf = nullptr;
  if (!uepoll::fd::Target::is_kernel(fd)) {
    if (op == EPOLL_CTL_ADD) {
      ref = FileRef(uepoll::fd::lookup_guarded(fd));  // the caller's guard
      tf = ref.get();
    } else {
      tf = uepoll::fd::peek(fd);  // see ctl.h: safe under the caller's guard
    }
    if (!tf) return -EBADF;
  } else {
    // A kernel file: the kernel answers for it (EBADF, EPERM, EPOLLEXCLUSIVE
    // misuse, EEXIST, ENOENT, ELOOP, ...) in Linux's order.
    if (fd < 0) return -EBADF;
    struct epoll_event copy = ev;  // the kernel call takes a non-const pointer
    struct epoll_event* evp = has_event ? &copy : nullptr;
    if (!ep->is_epoll()) return uepoll::epoll::KernelWatch::refuse(op, fd, evp);
    return uepoll::epoll::KernelWatch::ctl(static_cast<Instance*>(ep), op, fd, evp);
  }
  // EPOLLWAKEUP: Linux clears it silently without CAP_BLOCK_SUSPEND; it has
  // no effect on what is reported, so uepoll keeps it (unobservable).
  if (ep == tf || !ep->is_epoll()) return -EINVAL;
  if (has_event && (ev.events & EPOLLEXCLUSIVE)) {
    if (op == EPOLL_CTL_MOD) return -EINVAL;
    if (op == EPOLL_CTL_ADD &&
        (tf->is_epoll() || (ev.events & ~(uepoll::epoll::kExclusiveOkBits | uepoll::epoll::kRoundRobin))))
      return -EINVAL;
  }
  auto* inst = static_cast<Instance*>(ep);
  switch (op) {
    case EPOLL_CTL_ADD:
      return inst->add(tf, fd, ev.events, ev.data.u64);
    case EPOLL_CTL_DEL:
      return inst->del(tf, fd);
    case EPOLL_CTL_MOD:
      return inst->mod(tf, fd, ev.events, ev.data.u64);
    case UEP_EPOLL_CTL_DISABLE:  // beyond Linux (uepoll.h)
      return inst->disable(tf, fd);
    default:
      return -EINVAL;
  }
}


// Linux do_epoll_ctl() steps 1-7 (kernel-epoll-spec.md section 3), then the
// instance does steps 8-12.
int ctl(int epfd, int op, int fd, struct epoll_event* event) {
  struct epoll_event ev{};
  if (uepoll::capi::ctl_has_event(op)) {
    if (!user_readable(event, sizeof *event)) return -EFAULT;
    ev = *event;
  }
  // The instance is used under an epoch guard, without a reference (see
  // fd::peek); so is the target, referenced by ADD only (capi/ctl.h).
  uepoll::core::reclaim::ReadGuard guard;
  uepoll::core::File* ep = uepoll::fd::peek(epfd);
  if (!ep) return -EBADF;
  return ctl_on_inline(ep, op, fd, ev);
}

}  // namespace

// The steps after the instance lookup (shared with uep_epoll_ctl_batch).
int uepoll::capi::ctl_on(uepoll::core::File* ep, int op, int fd, const struct epoll_event& ev) {
  return ctl_on_inline(ep, op, fd, ev);
}

namespace {

// Linux >= 6.15 do_epoll_wait() + ep_check_params(): EBADF, EINVAL
// (maxevents), EFAULT (access_ok), EINVAL (not an epoll).
// Inlined, as wait_ms below, into its callers: no call frame between the
// C entry points and Instance::wait.
[[gnu::always_inline]] inline int wait(int epfd, struct epoll_event* events, int maxevents,
                                       const timespec* deadline, bool nonblocking, const sigset_t* sigmask) {
  // A call that cannot sleep uses the instance under an epoch guard without
  // a reference (fd::peek): threads polling one instance with timeout 0 do
  // not bounce its count.  A call that may sleep holds a reference instead
  // (a guard must not last across a sleep).
  std::optional<uepoll::core::reclaim::ReadGuard> guard;
  FileRef ref;
  uepoll::core::File* ep = nullptr;
  if (nonblocking) {
    guard.emplace();
    ep = uepoll::fd::peek(epfd);
  } else {
    // fd::lookup's body, inlined: a guard only for as long as the pin takes.
    uepoll::core::reclaim::ReadGuard pin;
    ref = FileRef(uepoll::fd::lookup_guarded(epfd));
    ep = ref.get();
  }
  if (!ep) return -EBADF;
  if (maxevents <= 0 || maxevents > uepoll::epoll::kMaxEvents) return -EINVAL;
  if (!user_range_ok(events, static_cast<size_t>(maxevents) * sizeof(struct epoll_event))) return -EFAULT;
  if (!ep->is_epoll()) return -EINVAL;
  return static_cast<Instance*>(ep)->wait(events, maxevents, deadline, nonblocking, sigmask);
}

[[gnu::always_inline]] inline int wait_ms(int epfd, struct epoll_event* events, int maxevents, int timeout,
                                          const sigset_t* sigmask) {
  // Linux ep_timeout_to_timespec(): negative = forever, 0 = poll once.
  timespec deadline{};
  const timespec* dp = nullptr;
  if (timeout > 0) {
    deadline = uepoll::core::deadline_after_ms(timeout);
    dp = &deadline;
  }
  return wait(epfd, events, maxevents, dp, timeout == 0, sigmask);
}

}  // namespace

namespace uepoll::detail {

long epoll_create1(int flags) noexcept { return create(flags); }

long epoll_ctl(int epfd, int op, int fd, struct epoll_event* event) noexcept {
  if (uepoll::fd::Target::is_kernel(epfd) && !uepoll::fd::Target::is_kernel(fd) && epfd >= 0) {
    // A kernel instance cannot see a uepoll file (the other way round goes
    // through uep_epoll_kernel_fd): Linux's checks up to "is an epoll",
    // then EPERM, as for a file without ->poll.
    if (op != EPOLL_CTL_DEL && !user_readable(event, sizeof *event)) return -EFAULT;
    if (::fcntl(epfd, F_GETFD) < 0) return -EBADF;
    FileRef tf(uepoll::fd::lookup(fd));
    if (!tf) return -EBADF;
    return uepoll::epoll::KernelWatch::is_kernel_epoll(epfd) ? -EPERM : -EINVAL;
  }
  if (uepoll::fd::Target::is_kernel(epfd)) {
    int r = ::epoll_ctl(epfd, op, fd, event);
    return r < 0 ? -errno : r;
  }
  return ctl(epfd, op, fd, event);
}

long epoll_pwait(int epfd, struct epoll_event* events, int maxevents, int timeout, const sigset_t* sigmask) noexcept {
  if (uepoll::fd::Target::is_kernel(epfd)) {
    int r = ::epoll_pwait(epfd, events, maxevents, timeout, sigmask);
    return r < 0 ? -errno : r;
  }
  // Linux set_user_sigmask() runs before do_epoll_wait(): a mask it cannot
  // read is EFAULT before any descriptor check (the kernel sigset is 8 bytes).
  if (sigmask && !user_readable(sigmask, 8)) return -EFAULT;
  return wait_ms(epfd, events, maxevents, timeout, sigmask);
}

long epoll_pwait2(int epfd, struct epoll_event* events, int maxevents, const struct timespec* timeout,
                  const sigset_t* sigmask) noexcept {
  if (uepoll::fd::Target::is_kernel(epfd)) {
    int r = ::epoll_pwait2(epfd, events, maxevents, timeout, sigmask);
    return r < 0 ? -errno : r;
  }
  timespec deadline{};
  const timespec* dp = nullptr;
  bool nonblocking = false;
  if (timeout) {
    // Linux: get_timespec64() (EFAULT), then poll_select_set_timeout() (EINVAL).
    if (!user_readable(timeout, sizeof *timeout)) return -EFAULT;
    timespec ts = *timeout;
    if (ts.tv_sec < 0 || ts.tv_nsec < 0 || ts.tv_nsec >= 1000000000L) return -EINVAL;
    if (ts.tv_sec == 0 && ts.tv_nsec == 0) {
      nonblocking = true;
    } else {
      deadline = uepoll::core::deadline_after(ts);
      dp = &deadline;
    }
  }
  if (sigmask && !user_readable(sigmask, 8)) return -EFAULT;  // set_user_sigmask()
  return wait(epfd, events, maxevents, dp, nonblocking, sigmask);
}

long epoll_kernel_fd(int epfd) noexcept {
  if (uepoll::fd::Target::is_kernel(epfd)) return epfd < 0 || ::fcntl(epfd, F_GETFD) < 0 ? -EBADF : -EINVAL;
  FileRef ep(uepoll::fd::lookup(epfd));  // a reference: on_release cannot run meanwhile
  if (!ep) return -EBADF;
  if (!ep->is_epoll()) return -EINVAL;
  return uepoll::epoll::KernelWatch::kernel_fd(static_cast<Instance*>(ep.get()));
}

}  // namespace uepoll::detail

extern "C" {

int uep_epoll_create(int size) {
  if (size <= 0) return to_c(-EINVAL);  // Linux: size is ignored but must be > 0
  return to_c(create(0));
}

int uep_epoll_create1(int flags) { return to_c(uepoll::detail::epoll_create1(flags)); }

int uep_epoll_ctl(int epfd, int op, int fd, struct epoll_event* event) {
  return to_c(uepoll::detail::epoll_ctl(epfd, op, fd, event));
}

int uep_epoll_wait(int epfd, struct epoll_event* events, int maxevents, int timeout) {
  return to_c(uepoll::detail::epoll_pwait(epfd, events, maxevents, timeout, nullptr));
}

int uep_epoll_pwait(int epfd, struct epoll_event* events, int maxevents, int timeout, const sigset_t* sigmask) {
  return to_c(uepoll::detail::epoll_pwait(epfd, events, maxevents, timeout, sigmask));
}

int uep_epoll_kernel_fd(int epfd) { return to_c(uepoll::detail::epoll_kernel_fd(epfd)); }

int uep_epoll_pwait2(int epfd, struct epoll_event* events, int maxevents, const struct timespec* timeout,
                     const sigset_t* sigmask) {
  return to_c(uepoll::detail::epoll_pwait2(epfd, events, maxevents, timeout, sigmask));
}

}  // extern "C"
