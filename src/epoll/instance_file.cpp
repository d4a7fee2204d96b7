// instance_file.cpp - an epoll instance's operations as a file beyond
// poll (Linux fs/eventpoll.c eventpoll_fops): the busy-poll ioctls
// (ep_eventpoll_ioctl / ep_eventpoll_bp_ioctl: EPIOCSPARAMS, EPIOCGPARAMS,
// the contract in uepoll.h "beyond Linux") and the fdinfo lines
// (ep_show_fdinfo), and the kernel descriptors a poll() over it sleeps on.
// Locks: wq() (11) for sleep_fds; the shard locks (6), one at a time, for the fdinfo rows; none for
// the ioctls (the parameters are relaxed atomics, busy_poll.h).
#include "core/user_memory.h"
#include "epoll/fdinfo.h"
#include "epoll/instance.h"
#include "epoll/kernel_watch.h"

#include <uepoll/uepoll.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <linux/capability.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace uepoll::epoll {

namespace {

constexpr uint16_t kNapiPollWeight = 64;  // NAPI_POLL_WEIGHT

// Linux capable(CAP_NET_ADMIN): the effective set.
bool has_net_admin() {
  __user_cap_header_struct hdr{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2]{};
  if (::syscall(SYS_capget, &hdr, data) != 0) return false;
  return (data[CAP_NET_ADMIN / 32].effective & (1u << (CAP_NET_ADMIN % 32))) != 0;
}

// Linux ep_eventpoll_bp_ioctl().
long params_ioctl(BusyPoll& bp, unsigned long req, void* arg) {
  struct epoll_params p;
  if (req == EPIOCSPARAMS) {
    if (!core::user_readable(arg, sizeof p)) return -EFAULT;  // copy_from_user
    std::memcpy(&p, arg, sizeof p);
    if (p.__pad) return -EINVAL;
    if (p.busy_poll_usecs > static_cast<uint32_t>(INT32_MAX)) return -EINVAL;
    if (p.prefer_busy_poll > 1) return -EINVAL;
    if (p.busy_poll_budget > kNapiPollWeight && !has_net_admin()) return -EPERM;
    bp.usecs.store(p.busy_poll_usecs, std::memory_order_relaxed);
    bp.budget.store(p.busy_poll_budget, std::memory_order_relaxed);
    bp.prefer.store(p.prefer_busy_poll, std::memory_order_relaxed);
    bp.reset_adaptation();
    return 0;
  }
  std::memset(&p, 0, sizeof p);
  p.busy_poll_usecs = bp.usecs.load(std::memory_order_relaxed);
  p.busy_poll_budget = bp.budget.load(std::memory_order_relaxed);
  p.prefer_busy_poll = bp.prefer.load(std::memory_order_relaxed);
  if (!core::user_readable(arg, sizeof p) || core::writable_prefix(arg, sizeof p) < sizeof p)
    return -EFAULT;  // copy_to_user
  std::memcpy(arg, &p, sizeof p);
  return 0;
}

}  // namespace

long Instance::ioctl(unsigned long request, void* arg) noexcept {
  if (request != EPIOCSPARAMS && request != EPIOCGPARAMS) return -EINVAL;  // ep_eventpoll_ioctl
  return params_ioctl(busy_poll(), request, arg);
}

void Instance::show_fdinfo(std::string& out) noexcept {
  try {
    for (const Registration& r : registrations(this)) {
      char buf[160];
      const int n = std::snprintf(buf, sizeof buf, "tfd: %8d events: %8x data: %16llx  pos:%lli ino:%lx sdev:%x\n",
                                  r.fd, r.events, static_cast<unsigned long long>(r.data), 0LL,
                                  static_cast<unsigned long>(r.target_id), 0u);
      if (n > 0) out.append(buf, static_cast<size_t>(n) < sizeof buf ? static_cast<size_t>(n) : sizeof buf - 1);
    }
  } catch (...) {  // out of memory: the lines that fitted
  }
  if (KernelWatch* kw = kernel_watch()) kw->show_fdinfo(out);  // the kernel descriptors' lines
}

int Instance::sleep_fds(struct pollfd* out) noexcept {
  int n = 0;
  wq().lock();
  if (KernelWatch* kw = kernel_watch()) n = kw->sleep_fds(out);
  wq().unlock();
  return n;
}

}  // namespace uepoll::epoll
