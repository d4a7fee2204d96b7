// objects_api.cpp - the C API's object constructors and timer controls:
// uep_eventfd, uep_pipe, uep_pipe2, uep_socketpair, uep_timerfd_create,
// uep_timerfd_settime, uep_timerfd_gettime.  Argument checks and errno, in
// the order Linux makes them (fs/eventfd.c do_eventfd, fs/pipe.c do_pipe2,
// net/socket.c __sys_socketpair + __sock_create + net/unix unix_create,
// fs/timerfd.c); the objects themselves live in src/objects/.
// Locks: none here (the fd table's, inside fd::install / fd::lookup).
#include "capi/edge.h"
#include "core/user_memory.h"
#include "fd/table.h"
#include "fd/target.h"
#include "objects/eventfd.h"
#include "objects/pipe.h"
#include "objects/socketpair.h"
#include "objects/timerfd.h"
#include "objects/unix_dgram.h"

#include <uepoll/uepoll.h>
#include <uepoll/detail/ops.hpp>

#include <cerrno>
#include <cstdint>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

namespace {

using uepoll::capi::to_c;

// linux/watch_queue.h: O_NOTIFICATION_PIPE is O_EXCL.
constexpr int kNotificationPipe = O_EXCL;
constexpr int kSockTypeMask = 0xf;  // SOCK_TYPE_MASK
constexpr int kSockMax = 11;        // SOCK_MAX = SOCK_PACKET + 1

// Linux copy_{from,to}_user(): NULL, the first page and kernel addresses
// fault.  uepoll cannot see unmapped user pages.
bool user_ok(const void* p, size_t len) { return uepoll::core::user_readable(p, len); }

bool timespec_valid(const timespec& t) {  // Linux timespec64_valid
  return t.tv_sec >= 0 && static_cast<unsigned long>(t.tv_nsec) < 1000000000UL;
}

// Undo an installed pair (the caller still reports an error).
void uninstall_pair(const int fds[2]) {
  for (int i = 0; i < 2; ++i)
    if (uepoll::core::File* f = uepoll::fd::remove(fds[i])) f->put();
}

}  // namespace

namespace uepoll::detail {

long eventfd(unsigned int initval, int flags) noexcept {
  // Linux do_eventfd: flags & ~EFD_FLAGS_SET -> EINVAL, then ENOMEM, EMFILE.
  if (flags & ~(EFD_SEMAPHORE | EFD_CLOEXEC | EFD_NONBLOCK)) return -EINVAL;
  return uepoll::fd::cloexec_if(uepoll::objects::make_eventfd(initval, flags), flags & EFD_CLOEXEC);
}

long pipe2(int pipefd[2], int flags) noexcept {
  // Linux __do_pipe_flags: EINVAL; create_pipe_files (ENFILE/ENOMEM; ENOPKG
  // for O_NOTIFICATION_PIPE on a kernel without CONFIG_WATCH_QUEUE, as this
  // one); get_unused_fd_flags (EMFILE); then do_pipe2's copy_to_user (EFAULT).
  if (flags & ~(O_CLOEXEC | O_NONBLOCK | O_DIRECT | kNotificationPipe)) return -EINVAL;
  if (flags & kNotificationPipe) return -ENOPKG;
  int fds[2];
  const int err = uepoll::objects::make_pipe(flags, fds);
  if (err < 0) return err;
  if (!user_ok(pipefd, 2 * sizeof(int))) {
    uninstall_pair(fds);
    return -EFAULT;
  }
  uepoll::fd::cloexec_if(fds[0], flags & O_CLOEXEC);
  uepoll::fd::cloexec_if(fds[1], flags & O_CLOEXEC);
  pipefd[0] = fds[0];
  pipefd[1] = fds[1];
  return 0;
}

long socketpair(int domain, int type, int protocol, int sv[2]) noexcept {
  // Linux __sys_socketpair: flags in type -> EINVAL; reserve two fds
  // (EMFILE); write sv (EFAULT); then __sock_create / unix_create.
  const int flags = type & ~kSockTypeMask;
  if (flags & ~(SOCK_CLOEXEC | SOCK_NONBLOCK)) return -EINVAL;
  type &= kSockTypeMask;
  if (uepoll::fd::max_fds() - uepoll::fd::open_count() < 2) return -EMFILE;
  if (!user_ok(sv, 2 * sizeof(int))) return -EFAULT;
  if (domain != AF_UNIX) {
    // Every other family: ask the kernel for its exact error (EAFNOSUPPORT,
    // EINVAL, EPROTONOSUPPORT, ESOCKTNOSUPPORT, EOPNOTSUPP for AF_INET...).
    // A family whose kernel socketpair succeeds (e.g. AF_TIPC) is still not
    // a uepoll object: EOPNOTSUPP (docs/linux-deviations.md).
    int k[2];
    if (::socketpair(domain, type | flags, protocol, k) < 0) return -errno;
    ::close(k[0]);
    ::close(k[1]);
    return -EOPNOTSUPP;
  }
  if (type >= kSockMax) return -EINVAL;                            // __sock_create
  if (protocol && protocol != PF_UNIX) return -EPROTONOSUPPORT;    // unix_create
  switch (type) {
    case SOCK_STREAM:
    case SOCK_DGRAM:
    case SOCK_SEQPACKET:
      break;
    case SOCK_RAW:  // unix_create: "SOCK_RAW is the same as SOCK_DGRAM"
      type = SOCK_DGRAM;
      break;
    default:
      return -ESOCKTNOSUPPORT;
  }
  int fds[2];
  const int status = O_RDWR | ((flags & SOCK_NONBLOCK) ? O_NONBLOCK : 0);
  const int err = type == SOCK_STREAM ? uepoll::objects::make_socketpair(status, fds)
                                      : uepoll::objects::make_dgram_pair(type, status, fds);
  if (err < 0) return err;
  uepoll::fd::cloexec_if(fds[0], flags & SOCK_CLOEXEC);
  uepoll::fd::cloexec_if(fds[1], flags & SOCK_CLOEXEC);
  sv[0] = fds[0];
  sv[1] = fds[1];
  return 0;
}

long timerfd_create(int clockid, int flags) noexcept {
  // Linux: flags & ~TFD_CREATE_FLAGS or an unknown clock -> EINVAL; alarm
  // clocks without CAP_WAKE_ALARM -> EPERM (the kernel timerfd we create
  // makes the clock checks itself).
  if (flags & ~(TFD_NONBLOCK | TFD_CLOEXEC)) return -EINVAL;
  return uepoll::fd::cloexec_if(uepoll::objects::make_timerfd(clockid, flags), flags & TFD_CLOEXEC);
}

long timerfd_settime(int fd, int flags, const struct itimerspec* new_value, struct itimerspec* old_value) noexcept {
  uepoll::fd::Target f(fd);
  if (f.kernel()) return ::timerfd_settime(fd, flags, new_value, old_value) < 0 ? -errno : 0;
  // Linux: get_itimerspec64 (EFAULT), then flags / itimerspec64_valid
  // (EINVAL), then the descriptor (EBADF, EINVAL if not a timerfd).
  if (!user_ok(new_value, sizeof *new_value)) return -EFAULT;
  if ((flags & ~(TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET)) || !timespec_valid(new_value->it_value) ||
      !timespec_valid(new_value->it_interval))
    return -EINVAL;
  if (f.closed()) return -EBADF;
  auto* t = uepoll::objects::as_timerfd(f.get());
  if (!t) return -EINVAL;
  return t->settime(flags, new_value, old_value);
}

long timerfd_gettime(int fd, struct itimerspec* curr_value) noexcept {
  uepoll::fd::Target f(fd);
  if (f.kernel()) return ::timerfd_gettime(fd, curr_value) < 0 ? -errno : 0;
  // Linux: EBADF, EINVAL (not a timerfd), then put_itimerspec64 (EFAULT) --
  // the kernel timerfd we forward to makes the last check.
  if (f.closed()) return -EBADF;
  auto* t = uepoll::objects::as_timerfd(f.get());
  if (!t) return -EINVAL;
  return t->gettime(curr_value);
}

}  // namespace uepoll::detail

extern "C" {

int uep_eventfd(unsigned int initval, int flags) { return to_c(uepoll::detail::eventfd(initval, flags)); }
int uep_pipe2(int pipefd[2], int flags) { return to_c(uepoll::detail::pipe2(pipefd, flags)); }
int uep_pipe(int pipefd[2]) { return to_c(uepoll::detail::pipe2(pipefd, 0)); }
int uep_socketpair(int domain, int type, int protocol, int sv[2]) {
  return to_c(uepoll::detail::socketpair(domain, type, protocol, sv));
}
int uep_timerfd_create(int clockid, int flags) { return to_c(uepoll::detail::timerfd_create(clockid, flags)); }
int uep_timerfd_settime(int fd, int flags, const struct itimerspec* new_value, struct itimerspec* old_value) {
  return to_c(uepoll::detail::timerfd_settime(fd, flags, new_value, old_value));
}
int uep_timerfd_gettime(int fd, struct itimerspec* curr_value) {
  return to_c(uepoll::detail::timerfd_gettime(fd, curr_value));
}

}  // extern "C"
