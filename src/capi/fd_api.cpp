// fd_api.cpp - uep_read, uep_write, uep_close, uep_dup, uep_poll,
// uep_shutdown, uep_is_uepoll_fd: descriptor calls that dispatch to the
// file's operations, or forward to the kernel for kernel descriptors.
//
// poll() over a mix of uepoll and kernel descriptors: one WaiterEntry per
// uepoll file on that file's wait queue, and one ppoll over the kernel
// descriptors plus the thread's waiter eventfd, so one sleep covers both.
//
// Locks: each file's wait-queue lock (6), one at a time, to (un)queue the
// poll entries.  Never sleeps with a lock held.
#include <uepoll/uepoll.h>
#include <uepoll/detail/ops.hpp>

#include "capi/edge.h"
#include "capi/rw_check.h"
#include "core/deferred.h"
#include "core/lock_state.h"
#include "core/user_memory.h"
#include "core/waiter.h"
#include "epoll/instance.h"
#include "epoll/kernel_watch.h"
#include "fd/table.h"

#include <cerrno>
#include <climits>
#include <cstdint>
#include <memory>
#include <new>
#include <optional>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>
#include <vector>

using uepoll::capi::to_c;
using uepoll::capi::to_c_ssize;
using uepoll::fd::FileRef;

namespace {

using uepoll::core::user_range_ok;
using uepoll::core::user_readable;

using uepoll::capi::kMaxRwCount;
using uepoll::capi::rw_mode_check;

// Linux do_sys_poll(): more entries than RLIMIT_NOFILE is EINVAL before
// anything is read.
bool too_many_fds(nfds_t nfds) {
  rlimit rl{};
  return getrlimit(RLIMIT_NOFILE, &rl) == 0 && nfds > rl.rlim_cur;
}

// True when a readable pollfd array names a uepoll descriptor (otherwise the
// whole call goes to the kernel, which also makes its pointer checks).
bool any_uepoll_fd(const struct pollfd* fds, nfds_t nfds) {
  if (!nfds || reinterpret_cast<uintptr_t>(fds) < 4096 || !user_range_ok(fds, nfds * sizeof(struct pollfd)))
    return false;
  for (nfds_t i = 0; i < nfds; ++i)
    if (fds[i].fd >= 0 && uepoll::fd::in_range(fds[i].fd)) return true;
  return false;
}

struct PollSlot {
  uepoll::core::WaiterEntry entry;
  uepoll::core::File* file = nullptr;  // referenced while the call runs
  bool queued = false;
};

// deadline: absolute CLOCK_MONOTONIC, nullptr = forever; `nonblock`: a zero
// timeout; sigmask (ppoll): the mask in force while sleeping.
int do_poll(struct pollfd* fds, nfds_t nfds, const timespec* deadline, bool nonblock, const sigset_t* sigmask) {
  if (too_many_fds(nfds)) return -EINVAL;
  if (nfds && !user_range_ok(fds, nfds * sizeof(struct pollfd))) return -EFAULT;
  if (nfds && reinterpret_cast<uintptr_t>(fds) < 4096) return -EFAULT;

  // Every allocation up front, before any file is looked up: out of memory
  // is ENOMEM with nothing done (the push_backs below stay within capacity).
  std::vector<PollSlot> slots;
  // Kernel descriptors first, then the kernel sides of instances (at most
  // two per descriptor in all: the capacity below).
  std::vector<struct pollfd> kfds;
  std::vector<nfds_t> kindex;        // kfds[i] came from fds[kindex[i]]
  try {
    slots.resize(nfds);
    kfds.reserve(2 * nfds);
    kindex.reserve(2 * nfds);
  } catch (const std::bad_alloc&) {
    return -ENOMEM;
  }
  for (nfds_t i = 0; i < nfds; ++i) {
    const int fd = fds[i].fd;
    if (fd >= 0 && uepoll::fd::in_range(fd)) {
      slots[i].file = uepoll::fd::lookup(fd);  // nullptr -> POLLNVAL
    } else if (fd >= 0) {
      kfds.push_back({fd, fds[i].events, 0});
      kindex.push_back(i);
    }
  }
  const size_t n_kernel = kfds.size();
  // An instance with kernel descriptors: also sleep on its kernel side (its
  // readiness itself comes from Instance::poll).  Collected again on every
  // round: an instance may gain its kernel side (or hub) while we sleep,
  // and then kicks us (KernelWatch::kick_sleepers) once we are queued on it.
  auto collect_sides = [&] {
    kfds.resize(n_kernel);
    kindex.resize(n_kernel);
    for (nfds_t i = 0; i < nfds; ++i) {
      if (!slots[i].file || !slots[i].file->is_epoll()) continue;
      // Read under the queue's lock: kick_sleepers publishes, then takes
      // it to kick us, so either we see the new side or we are kicked
      // after our prepare().
      auto* ep = static_cast<uepoll::epoll::Instance*>(slots[i].file);
      struct pollfd side[2];
      int n = 0;
      ep->wq().lock();
      if (auto* kw = ep->kernel_watch()) n = kw->sleep_fds(side);
      ep->wq().unlock();
      for (int k = 0; k < n; ++k) {
        kfds.push_back(side[k]);
        kindex.push_back(nfds);  // no fds[] entry of its own
      }
    }
  };
  struct Cleanup {
    std::vector<PollSlot>& s;
    ~Cleanup() {
      for (PollSlot& p : s) {
        if (!p.file) continue;
        if (p.queued) {
          p.file->wq().lock();
          if (p.entry.entry.queued()) p.file->wq().remove_locked(&p.entry.entry);
          p.file->wq().unlock();
        }
        p.file->put();
      }
    }
  } cleanup{slots};

  const timespec* dp = deadline;
  uepoll::core::ThreadWaiter* w = nullptr;
  std::optional<uepoll::core::SignalBlock> blocked;
  for (;;) {
    if (w) w->prepare();
    collect_sides();  // after prepare: a kick from now on is not lost
    int count = 0;
    for (nfds_t i = 0; i < nfds; ++i) {
      const int fd = fds[i].fd;
      short rev = 0;
      if (fd < 0) {
        rev = 0;
      } else if (uepoll::fd::in_range(fd)) {
        if (!slots[i].file) {
          rev = POLLNVAL;
        } else {
          const uint32_t want = static_cast<uint16_t>(fds[i].events) | POLLERR | POLLHUP;
          rev = static_cast<short>(slots[i].file->poll(0) & want);
        }
      } else {
        continue;  // filled in from the kernel below
      }
      fds[i].revents = rev;
      if (rev) ++count;
    }
    if (!kfds.empty()) {
      // The kernel descriptors' state right now (timeout 0).
      int r = ::poll(kfds.data(), kfds.size(), 0);
      if (r < 0) return -errno;
      for (size_t k = 0; k < kfds.size(); ++k) {
        if (kindex[k] == nfds) continue;  // an instance's kernel side
        fds[kindex[k]].revents = kfds[k].revents;
        if (kfds[k].revents) ++count;
      }
    }
    if (count > 0) return count;
    // Linux do_poll: nothing ready and a signal pending that the mask
    // unblocks is EINTR with the handler run, even with no time to wait.
    if (nonblock || (dp && uepoll::core::deadline_passed(*dp)))
      return sigmask ? uepoll::core::deliver_unblocked(sigmask) : 0;

    if (!w) {
      int err = 0;
      w = uepoll::core::ThreadWaiter::self(&err);
      if (!w) return -err;
      blocked.emplace();
      w->prepare();
      for (nfds_t i = 0; i < nfds; ++i) {
        PollSlot& p = slots[i];
        if (!p.file) continue;
        p.entry.waiter = w;
        p.entry.mask = static_cast<uint16_t>(fds[i].events) | POLLERR | POLLHUP;
        p.file->wq().lock();
        p.file->wq().add_locked(&p.entry.entry);
        p.file->wq().unlock();
        p.queued = true;
      }
      continue;  // re-check now that we are queued
    }
    int s;
    if (kfds.empty()) {
      s = w->sleep(dp, sigmask ? sigmask : &blocked->saved());
    } else {
      // Sleep on the kernel descriptors and our waiter at once.
      s = w->sleep_with(kfds.data(), kfds.size(), dp, sigmask ? sigmask : &blocked->saved());
    }
    if (s == -EINTR) return -EINTR;
  }
}

}  // namespace

namespace uepoll::detail {

long read(int fd, void* buf, size_t count) noexcept {
  if (!uepoll::fd::in_range(fd)) {
    ssize_t r = ::read(fd, buf, count);
    return r < 0 ? -errno : r;
  }
  FileRef f(uepoll::fd::lookup(fd));
  if (!f) return -EBADF;
  if (long r = rw_mode_check(f.get(), false)) return r;
  if (!user_range_ok(buf, count)) return -EFAULT;
  if (count > kMaxRwCount) count = kMaxRwCount;
  return f->read(buf, count);
}

long write(int fd, const void* buf, size_t count) noexcept {
  if (!uepoll::fd::in_range(fd)) {
    ssize_t r = ::write(fd, buf, count);
    return r < 0 ? -errno : r;
  }
  FileRef f(uepoll::fd::lookup(fd));
  if (!f) return -EBADF;
  if (long r = rw_mode_check(f.get(), true)) return r;
  if (!user_range_ok(buf, count)) return -EFAULT;
  if (count > kMaxRwCount) count = kMaxRwCount;
  return f->write(buf, count);
}

namespace {

// A signal handler's close while its own thread is inside uepoll: the slot
// is cleared lock-free now; the index and the table's reference (whose last
// put runs the release) go at that thread's last lock release.  -EINTR
// (the descriptor still open) when the per-thread queue is full.
void deferred_close(uepoll::core::File*, uint32_t fd, const char*, uint32_t) noexcept {
  uepoll::fd::release_index(static_cast<int>(fd));
}

long close_in_handler(int fd) noexcept {
  using namespace uepoll::core;
  if (!defer_has_room(&deferred_close, nullptr, 0, 0)) return -EINTR;  // as a close interrupted early
  File* f = uepoll::fd::remove_slot(fd);
  if (!f) return -EBADF;
  if (!defer_to_release(&deferred_close, f, static_cast<uint32_t>(fd), nullptr, 0)) {
    // A nested handler took the last slot: the descriptor is closed, its
    // index and the file stay allocated (never a deadlock).
    return 0;
  }
  return 0;
}

}  // namespace

long close(int fd) noexcept {
  if (!uepoll::fd::in_range(fd)) return ::close(fd) < 0 ? -errno : 0;
  if (uepoll::core::thread_in_uepoll()) return close_in_handler(fd);
  uepoll::core::File* f = uepoll::fd::remove(fd);
  if (!f) return -EBADF;
  f->put();
  return 0;
}

long dup(int oldfd) noexcept {
  if (!uepoll::fd::in_range(oldfd)) {
    int r = ::dup(oldfd);
    return r < 0 ? -errno : r;
  }
  uepoll::core::File* f = uepoll::fd::lookup(oldfd);
  if (!f) return -EBADF;
  int fd = uepoll::fd::install(f);  // the lookup's reference moves to the new slot
  if (fd < 0) f->put();
  return fd;
}

long poll(struct pollfd* fds, nfds_t nfds, int timeout) noexcept {
  if (too_many_fds(nfds)) return -EINVAL;
  if (!any_uepoll_fd(fds, nfds)) {
    int r = ::poll(fds, nfds, timeout);
    return r < 0 ? -errno : r;
  }
  timespec deadline{};
  if (timeout > 0) deadline = uepoll::core::deadline_after_ms(timeout);
  return do_poll(fds, nfds, timeout > 0 ? &deadline : nullptr, timeout == 0, nullptr);
}

long ppoll(struct pollfd* fds, nfds_t nfds, const struct timespec* tmo, const sigset_t* sigmask) noexcept {
  // Linux ppoll: the timeout is copied (EFAULT) and checked (EINVAL), then
  // the mask (EFAULT), then do_sys_poll as poll().
  if (tmo && !user_readable(tmo, sizeof *tmo)) return -EFAULT;
  if (tmo && (tmo->tv_sec < 0 || static_cast<unsigned long>(tmo->tv_nsec) >= 1000000000UL)) return -EINVAL;
  if (sigmask && !user_readable(sigmask, 8)) return -EFAULT;
  if (too_many_fds(nfds)) return -EINVAL;
  if (!any_uepoll_fd(fds, nfds)) {
    int r = ::ppoll(fds, nfds, tmo, sigmask);
    return r < 0 ? -errno : r;
  }
  const bool nonblock = tmo && tmo->tv_sec == 0 && tmo->tv_nsec == 0;
  timespec deadline{};
  if (tmo) deadline = uepoll::core::deadline_after(*tmo);
  return do_poll(fds, nfds, tmo ? &deadline : nullptr, nonblock, sigmask);
}

long shutdown(int sockfd, int how) noexcept {
  if (!uepoll::fd::in_range(sockfd)) return ::shutdown(sockfd, how) < 0 ? -errno : 0;
  FileRef f(uepoll::fd::lookup(sockfd));
  if (!f) return -EBADF;
  return f->shutdown(how);
}

}  // namespace uepoll::detail

extern "C" {

ssize_t uep_read(int fd, void* buf, size_t count) { return to_c_ssize(uepoll::detail::read(fd, buf, count)); }
ssize_t uep_write(int fd, const void* buf, size_t count) { return to_c_ssize(uepoll::detail::write(fd, buf, count)); }
int uep_close(int fd) { return to_c(uepoll::detail::close(fd)); }
int uep_dup(int oldfd) { return to_c(uepoll::detail::dup(oldfd)); }
int uep_poll(struct pollfd* fds, nfds_t nfds, int timeout) { return to_c(uepoll::detail::poll(fds, nfds, timeout)); }
int uep_shutdown(int sockfd, int how) { return to_c(uepoll::detail::shutdown(sockfd, how)); }

int uep_is_uepoll_fd(int fd) {
  if (!uepoll::fd::in_range(fd)) return 0;
  FileRef f(uepoll::fd::lookup(fd));
  return f ? 1 : 0;
}

}  // extern "C"
