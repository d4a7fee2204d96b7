// poll.cpp - the engine of poll()/ppoll() over uepoll and kernel
// descriptors (Linux fs/select.c do_sys_poll / do_poll), see poll.h.
//
// One WaiterEntry per uepoll file on that file's wait queue, and one ppoll
// over the kernel descriptors (and the kernel sides files name through
// File::sleep_fds) plus the thread's waiter eventfd, so one sleep covers
// both.
//
// A call the preload can make again leaves when one of its files is handed
// over to the kernel (core/handover.h).
//
// Locks: each file's wait-queue lock (11), one at a time, to (un)queue the
// poll entries.  Never sleeps with a lock held.
#include "fd/poll.h"

#include "core/handover.h"
#include "core/user_memory.h"
#include "core/waiter.h"
#include "fd/table.h"

#include <cerrno>
#include <cstdint>
#include <new>
#include <optional>
#include <poll.h>
#include <sys/resource.h>
#include <vector>

namespace uepoll::fd {

using core::user_range_ok;

// Linux do_sys_poll(): more entries than RLIMIT_NOFILE is EINVAL before
// anything is read.
bool too_many_fds(nfds_t nfds) noexcept {
  rlimit rl{};
  return getrlimit(RLIMIT_NOFILE, &rl) == 0 && nfds > rl.rlim_cur;
}

// True when a readable pollfd array names a uepoll descriptor (otherwise the
// whole call goes to the kernel, which also makes its pointer checks).
bool any_uepoll_fd(const struct pollfd* fds, nfds_t nfds) noexcept {
  if (!nfds || reinterpret_cast<uintptr_t>(fds) < 4096 || !user_range_ok(fds, nfds * sizeof(struct pollfd)))
    return false;
  for (nfds_t i = 0; i < nfds; ++i)
    if (fds[i].fd >= 0 && in_range(fds[i].fd)) return true;
  return false;
}

namespace {

struct PollSlot {
  core::WaiterEntry entry;
  core::File* file = nullptr;  // referenced while the call runs
  bool queued = false;
};

// One poll() call: the uepoll files it looked up (one slot per entry) and
// the kernel descriptors it passes to ppoll.
class PollCall {
 public:
  PollCall(struct pollfd* fds, nfds_t nfds) noexcept : fds_(fds), nfds_(nfds) {}
  PollCall(const PollCall&) = delete;
  PollCall& operator=(const PollCall&) = delete;
  ~PollCall() {
    for (PollSlot& p : slots_) {
      if (!p.file) continue;
      if (p.queued) {
        p.file->wq().lock();
        if (p.entry.entry.queued()) p.file->wq().remove_locked(&p.entry.entry);
        p.file->wq().unlock();
      }
      p.file->put();
    }
  }

  // Every allocation up front, before any file is looked up: out of memory
  // is ENOMEM with nothing done (the push_backs later stay within capacity:
  // kernel descriptors first, then at most two kernel sides per entry).
  long setup() noexcept {
    try {
      slots_.resize(nfds_);
      kfds_.reserve(2 * nfds_);
      kindex_.reserve(2 * nfds_);
    } catch (const std::bad_alloc&) {
      return -ENOMEM;
    }
    for (nfds_t i = 0; i < nfds_; ++i) {
      const int fd = fds_[i].fd;
      if (fd >= 0 && in_range(fd)) {
        slots_[i].file = lookup(fd);  // nullptr -> POLLNVAL
      } else if (fd >= 0) {
        kfds_.push_back({fd, fds_[i].events, 0});
        kindex_.push_back(i);
      }
    }
    n_kernel_ = kfds_.size();
    return 0;
  }

  // The kernel sides files name (File::sleep_fds: an instance with kernel
  // descriptors; its readiness itself comes from its poll).  Collected
  // again on every round, after prepare(): a file may gain its side while
  // we sleep, and then kicks us (KernelWatch::kick_sleepers) once we are
  // queued on it.
  void collect_sides() noexcept {
    kfds_.resize(n_kernel_);
    kindex_.resize(n_kernel_);
    for (nfds_t i = 0; i < nfds_; ++i) {
      if (!slots_[i].file) continue;
      struct pollfd side[2];
      const int n = slots_[i].file->sleep_fds(side);
      for (int k = 0; k < n; ++k) {
        kfds_.push_back(side[k]);
        kindex_.push_back(nfds_);  // no fds[] entry of its own
      }
    }
  }

  // Fills every revents; returns the count of ready entries or -errno.
  long scan() noexcept {
    long count = 0;
    for (nfds_t i = 0; i < nfds_; ++i) {
      const int fd = fds_[i].fd;
      short rev = 0;
      if (fd >= 0 && !in_range(fd)) continue;  // filled in from the kernel below
      if (fd >= 0) {
        if (!slots_[i].file) {
          rev = POLLNVAL;
        } else {
          const uint32_t want = static_cast<uint16_t>(fds_[i].events) | POLLERR | POLLHUP;
          rev = static_cast<short>(slots_[i].file->poll(0) & want);
        }
      }
      fds_[i].revents = rev;
      if (rev) ++count;
    }
    if (!kfds_.empty()) {
      // The kernel descriptors' state right now (timeout 0).
      if (::poll(kfds_.data(), kfds_.size(), 0) < 0) return -errno;
      for (size_t k = 0; k < kfds_.size(); ++k) {
        if (kindex_[k] == nfds_) continue;  // a file's kernel side
        fds_[kindex_[k]].revents = kfds_[k].revents;
        if (kfds_[k].revents) ++count;
      }
    }
    return count;
  }

  // True when one of the files is handed over to the kernel
  // (core/handover.h).
  bool any_handed_over() const noexcept {
    for (const PollSlot& p : slots_)
      if (p.file && p.file->wq().handed_over()) return true;
    return false;
  }

  // Queues one entry per uepoll file, waking w for its events.
  void queue(core::ThreadWaiter* w) noexcept {
    const bool movable = core::movable_call();
    for (nfds_t i = 0; i < nfds_; ++i) {
      PollSlot& p = slots_[i];
      if (!p.file) continue;
      p.entry.waiter = w;
      p.entry.movable = movable;
      p.entry.mask = static_cast<uint16_t>(fds_[i].events) | POLLERR | POLLHUP;
      p.file->wq().lock();
      p.file->wq().add_locked(&p.entry.entry);
      p.file->wq().unlock();
      p.queued = true;
    }
  }

  // Sleeps on the waiter and the kernel descriptors at once.
  int sleep(core::ThreadWaiter* w, const timespec* deadline, const sigset_t* mask) noexcept {
    if (kfds_.empty()) return w->sleep(deadline, mask);
    return w->sleep_with(kfds_.data(), kfds_.size(), deadline, mask);
  }

 private:
  struct pollfd* const fds_;
  const nfds_t nfds_;
  std::vector<PollSlot> slots_;
  std::vector<struct pollfd> kfds_;
  std::vector<nfds_t> kindex_;  // kfds_[i] came from fds_[kindex_[i]]
  size_t n_kernel_ = 0;
};

}  // namespace

long do_poll(struct pollfd* fds, nfds_t nfds, const timespec* deadline, bool nonblock, const sigset_t* sigmask) noexcept {
  if (too_many_fds(nfds)) return -EINVAL;
  if (nfds && !user_range_ok(fds, nfds * sizeof(struct pollfd))) return -EFAULT;
  if (nfds && reinterpret_cast<uintptr_t>(fds) < 4096) return -EFAULT;
  PollCall call(fds, nfds);
  if (long r = call.setup()) return r;
  core::ThreadWaiter* w = nullptr;
  core::ThreadWaiter::Hold hold;  // begun with the waiter
  std::optional<core::SignalBlock> blocked;
  for (;;) {
    if (w) w->prepare();
    call.collect_sides();  // after prepare: a kick from now on is not lost
    const long count = call.scan();
    if (count != 0) return count;
    // Linux do_poll: nothing ready and a signal pending that the mask
    // unblocks is EINTR with the handler run, even with no time to wait.
    if (nonblock || (deadline && core::deadline_passed(*deadline)))
      return sigmask ? core::deliver_unblocked(sigmask) : 0;
    if (!w) {
      int err = 0;
      w = core::ThreadWaiter::self(&err);
      if (!w) return -err;
      hold.begin(w);
      blocked.emplace();
      w->prepare();
      call.queue(w);
      continue;  // re-check now that we are queued
    }
    // A file handed over to the kernel: the caller polls again there, with
    // the time left.
    if (core::movable_call() && call.any_handed_over()) {
      core::note_moved(deadline ? core::time_left(*deadline) : timespec{-1, 0});
      return -EINTR;
    }
    if (call.sleep(w, deadline, sigmask ? sigmask : &blocked->saved()) == -EINTR) return -EINTR;
  }
}

}  // namespace uepoll::fd
