// beyond_api.cpp - the C edge of the extensions beyond Linux (uepoll.h
// "beyond Linux"): the C++ API's entry to the epoll ioctls (EPIOCSPARAMS /
// EPIOCGPARAMS, the instance's own, epoll/instance_file.cpp),
// uep_epoll_ctl_batch and uep_fdinfo.  Argument checks in Linux 6.18's
// order where Linux has the call.
//
// Locks: none here; ctl_on and the instance take their own.
#include <uepoll/uepoll.h>
#include <uepoll/detail/ops.hpp>

#include "capi/ctl.h"
#include "capi/edge.h"
#include "core/reclaim.h"
#include "core/user_memory.h"
#include "epoll/fdinfo.h"
#include "epoll/instance.h"
#include "fd/table.h"
#include "fd/target.h"

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <sys/ioctl.h>
#include <unistd.h>

using uepoll::capi::to_c;

namespace {

// The longest prefix (at most Instance::kMaxRun) of cmds[0..n) whose
// commands are MOD, DEL or DISABLE of a uepoll file that pass ctl_on's
// checks (capi/epoll_api.cpp, ctl_on_inline: the target is open, is not
// the instance, a MOD has no EPOLLEXCLUSIVE), resolved into out[].  The
// command that ends it, if any, goes through ctl_on, which gives its
// error at its turn.  Preconditions: inside the batch's ReadGuard.
int gather_run(uepoll::core::File* ep, const struct uep_ctl_cmd* cmds, int n,
               uepoll::epoll::Instance::CtlCmd* out) noexcept {
  int m = 0;
  while (m < n && m < uepoll::epoll::Instance::kMaxRun) {
    const struct uep_ctl_cmd& c = cmds[m];
    if (c.op != EPOLL_CTL_MOD && c.op != EPOLL_CTL_DEL && c.op != UEP_EPOLL_CTL_DISABLE) break;
    if (!uepoll::fd::in_range(c.fd)) break;
    uepoll::core::File* tf = uepoll::fd::peek(c.fd);  // see capi/ctl.h: no reference needed
    if (!tf || tf == ep) break;
    if (c.op == EPOLL_CTL_MOD && (c.event.events & EPOLLEXCLUSIVE)) break;
    out[m] = uepoll::epoll::Instance::CtlCmd{c.op, c.fd, tf, c.event.events, c.event.data.u64};
    ++m;
  }
  return m;
}

}  // namespace

namespace uepoll::detail {

// The file-specific part of ioctl(2) (Linux vfs_ioctl -> f_op->unlocked_ioctl)
// for uepoll descriptors, and the whole call for kernel ones: the C++ API's
// Epoll::set_busy_poll/busy_poll.  The requests the VFS answers for every
// file (FIONBIO, FIOCLEX, ...) are uep_ioctl's (capi/fd_surface_api.cpp),
// which hands the rest to the file's ioctl.  0 or -errno.
long epoll_ioctl(int fd, unsigned long req, void* arg) noexcept {
  uepoll::fd::Target f(fd);
  if (f.kernel()) {
    int r = ::ioctl(fd, req, arg);
    return r < 0 ? -errno : r;
  }
  if (f.closed()) return -EBADF;
  if (!f->is_epoll()) return -ENOTTY;  // no unlocked_ioctl, or -ENOIOCTLCMD
  return f->ioctl(req, arg);  // Instance::ioctl
}

long epoll_ctl_batch(int epfd, struct uep_ctl_cmd* cmds, int ncmds) noexcept {
  if (ncmds < 0 || ncmds > UEP_CTL_BATCH_MAX) return -EINVAL;
  const size_t bytes = sizeof(struct uep_ctl_cmd) * static_cast<size_t>(ncmds);
  if (ncmds > 0 && (!uepoll::core::user_readable(cmds, bytes) || uepoll::core::writable_prefix(cmds, bytes) < bytes))
    return -EFAULT;
  if (uepoll::fd::Target::is_kernel(epfd)) {  // a kernel instance: one epoll_ctl(2) each
    if (::fcntl(epfd, F_GETFD) < 0) return -EBADF;
    for (int i = 0; i < ncmds; ++i) {
      struct epoll_event ev = cmds[i].event;
      const int r = ::epoll_ctl(epfd, cmds[i].op, cmds[i].fd, &ev);
      cmds[i].result = r < 0 ? -errno : 0;
      if (r < 0) return i + 1;
    }
    return ncmds;
  }
  // One epoch guard and one lookup of the instance for the whole batch, and
  // under it no reference on MOD/DEL/DISABLE targets (capi/ctl.h).
  uepoll::core::reclaim::ReadGuard guard;
  uepoll::core::File* ep = uepoll::fd::peek(epfd);
  if (!ep) return -EBADF;
  if (!ep->is_epoll()) return -EINVAL;
  auto* inst = static_cast<uepoll::epoll::Instance*>(ep);
  for (int i = 0; i < ncmds;) {
    // A run of MOD, DEL and DISABLE commands on uepoll targets shares its
    // locking (Instance::ctl_run); the rest go one by one.
    uepoll::epoll::Instance::CtlCmd run[uepoll::epoll::Instance::kMaxRun];
    const int m = gather_run(ep, cmds + i, ncmds - i, run);
    if (m > 0) {
      int res[uepoll::epoll::Instance::kMaxRun];
      const int done = inst->ctl_run(run, m, res);
      for (int k = 0; k < done; ++k) cmds[i + k].result = res[k];
      if (res[done - 1] < 0) return i + done;
      i += m;
      continue;
    }
    const struct epoll_event ev = cmds[i].event;
    const int r = uepoll::capi::ctl_on(ep, cmds[i].op, cmds[i].fd, ev);
    cmds[i].result = r;
    if (r < 0) return i + 1;
    ++i;
  }
  return ncmds;
}

long fdinfo(int fd, char* buf, unsigned long len) noexcept {
  std::string text;
  uepoll::fd::Target f(fd);
  if (f.kernel()) {
    char path[64];
    std::snprintf(path, sizeof path, "/proc/self/fdinfo/%d", fd);
    FILE* f = fd >= 0 ? std::fopen(path, "re") : nullptr;
    if (!f) return -EBADF;
    char chunk[512];
    size_t n;
    while ((n = std::fread(chunk, 1, sizeof chunk, f)) > 0) text.append(chunk, n);
    std::fclose(f);
  } else {
    if (f.closed()) return -EBADF;
    text = uepoll::epoll::fdinfo_text(f.get(), uepoll::fd::get_cloexec(fd));
  }
  if (buf && len) {
    const size_t n = text.size() < len - 1 ? text.size() : len - 1;
    std::memcpy(buf, text.data(), n);
    buf[n] = '\0';
  }
  return static_cast<long>(text.size());
}

long epoll_registrations(int epfd, EpollRegistration* out, size_t n) noexcept {
  uepoll::fd::FileRef f(uepoll::fd::lookup(epfd));
  if (!f) return -EBADF;
  if (!f->is_epoll()) return -EINVAL;
  const auto rows = uepoll::epoll::registrations(static_cast<uepoll::epoll::Instance*>(f.get()));
  for (size_t i = 0; i < rows.size() && i < n; ++i)
    out[i] = EpollRegistration{rows[i].fd, rows[i].events, rows[i].data, rows[i].target_id};
  return static_cast<long>(rows.size());
}

}  // namespace uepoll::detail

extern "C" {

int uep_epoll_ctl_batch(int epfd, struct uep_ctl_cmd* cmds, int ncmds) {
  return to_c(uepoll::detail::epoll_ctl_batch(epfd, cmds, ncmds));
}

long uep_fdinfo(int fd, char* buf, unsigned long len) {
  const long r = uepoll::detail::fdinfo(fd, buf, len);
  if (r < 0) {
    errno = static_cast<int>(-r);
    return -1;
  }
  return r;
}

}  // extern "C"
