// poll.h - poll()/ppoll() over a mix of uepoll and kernel descriptors:
// the layer that owns descriptors walks them (Linux fs/select.c).  The C
// API (capi/fd_api.cpp) checks the arguments that come before and hands
// the rest here; select/pselect stay the kernel's (an fd_set cannot name a
// uepoll descriptor).  Locks: see poll.cpp.
#pragma once

#include <poll.h>
#include <signal.h>
#include <time.h>

namespace uepoll::fd {

// Linux do_sys_poll(): more entries than RLIMIT_NOFILE is EINVAL before
// anything is read.
bool too_many_fds(nfds_t nfds) noexcept;
// True when a readable pollfd array names a uepoll descriptor (otherwise
// the whole call goes to the kernel, which also makes its pointer checks).
bool any_uepoll_fd(const struct pollfd* fds, nfds_t nfds) noexcept;
// The call: deadline absolute CLOCK_MONOTONIC (nullptr = forever);
// `nonblock`: a zero timeout; sigmask (ppoll): the mask while sleeping.
// Returns the count of ready entries or -errno (EINVAL, EFAULT, ENOMEM,
// EINTR).
long do_poll(struct pollfd* fds, nfds_t nfds, const timespec* deadline, bool nonblock,
             const sigset_t* sigmask) noexcept;

}  // namespace uepoll::fd
