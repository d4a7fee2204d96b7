// fd_api.cpp - uep_read, uep_write, uep_close, uep_dup, uep_poll,
// uep_ppoll, uep_shutdown, uep_is_uepoll_fd: descriptor calls that
// dispatch to the file's operations (poll's engine: fd/poll.h), or forward
// to the kernel for kernel descriptors.
//
// Locks: none of its own (the table's and the files', inside the calls).
#include <uepoll/uepoll.h>
#include <uepoll/detail/ops.hpp>

#include "capi/edge.h"
#include "capi/rw_check.h"
#include "core/deferred.h"
#include "core/lock_state.h"
#include "core/user_memory.h"
#include "core/vclock.h"
#include "core/waiter.h"
#include "fd/poll.h"
#include "fd/table.h"
#include "fd/target.h"

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

}  // namespace

namespace uepoll::detail {

long read(int fd, void* buf, size_t count) noexcept {
  uepoll::fd::Target f(fd);
  if (f.kernel()) {
    ssize_t r = ::read(fd, buf, count);
    return r < 0 ? -errno : r;
  }
  if (f.closed()) return -EBADF;
  if (long r = f->rw_check(false)) return r;
  if (!user_range_ok(buf, count)) return -EFAULT;
  if (count > kMaxRwCount) count = kMaxRwCount;
  return f->read(buf, count);
}

long write(int fd, const void* buf, size_t count) noexcept {
  uepoll::fd::Target f(fd);
  if (f.kernel()) {
    ssize_t r = ::write(fd, buf, count);
    return r < 0 ? -errno : r;
  }
  if (f.closed()) return -EBADF;
  if (long r = f->rw_check(true)) return r;
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
  if (uepoll::fd::Target::is_kernel(fd)) return ::close(fd) < 0 ? -errno : 0;
  if (uepoll::core::thread_in_uepoll()) return close_in_handler(fd);
  uepoll::core::File* f = uepoll::fd::remove(fd);
  if (!f) return -EBADF;
  f->close_posix_locks();  // Linux filp_close: locks_remove_posix
  f->put();
  return 0;
}

long dup(int oldfd) noexcept {
  if (uepoll::fd::Target::is_kernel(oldfd)) {
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
  if (uepoll::fd::too_many_fds(nfds)) return -EINVAL;
  // Only kernel descriptors: the kernel's poll, unless a timeout must run on
  // the virtual clock (then a uepoll wait over the kernel descriptors).
  if (!uepoll::fd::any_uepoll_fd(fds, nfds) && (timeout == 0 || !uepoll::core::vclock::on())) {
    int r = ::poll(fds, nfds, timeout);
    return r < 0 ? -errno : r;
  }
  timespec deadline{};
  if (timeout > 0) deadline = uepoll::core::deadline_after_ms(timeout);
  return uepoll::fd::do_poll(fds, nfds, timeout > 0 ? &deadline : nullptr, timeout == 0, nullptr);
}

long ppoll(struct pollfd* fds, nfds_t nfds, const struct timespec* tmo, const sigset_t* sigmask) noexcept {
  // Linux ppoll: the timeout is copied (EFAULT) and checked (EINVAL), then
  // the mask (EFAULT), then do_sys_poll as poll().
  if (tmo && !user_readable(tmo, sizeof *tmo)) return -EFAULT;
  if (tmo && (tmo->tv_sec < 0 || static_cast<unsigned long>(tmo->tv_nsec) >= 1000000000UL)) return -EINVAL;
  if (sigmask && !user_readable(sigmask, 8)) return -EFAULT;
  if (uepoll::fd::too_many_fds(nfds)) return -EINVAL;
  const bool nonblock = tmo && tmo->tv_sec == 0 && tmo->tv_nsec == 0;
  if (!uepoll::fd::any_uepoll_fd(fds, nfds) && (nonblock || !uepoll::core::vclock::on())) {
    int r = ::ppoll(fds, nfds, tmo, sigmask);
    return r < 0 ? -errno : r;
  }
  timespec deadline{};
  if (tmo) deadline = uepoll::core::deadline_after(*tmo);
  return uepoll::fd::do_poll(fds, nfds, tmo ? &deadline : nullptr, nonblock, sigmask);
}

long shutdown(int sockfd, int how) noexcept {
  uepoll::fd::Target f(sockfd);
  if (f.kernel()) return ::shutdown(sockfd, how) < 0 ? -errno : 0;
  if (f.closed()) return -EBADF;
  if (!f->is_socket()) return -ENOTSOCK;  // sockfd_lookup_light
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
  if (uepoll::fd::Target::is_kernel(fd)) return 0;
  FileRef f(uepoll::fd::lookup(fd));
  return f ? 1 : 0;
}

}  // extern "C"
