// eventfd_rules.h - Linux's eventfd rules (fs/eventfd.c) as functions of the
// counter, shared by the tests' two eventfds: UserEventFd (user_objects.h,
// over uep_file_open) and TableEventFd (table_objects.h, over the file
// interface), which differ only in how they report errors and when they wake.
// Pure functions: no state, no locks (the callers hold their object's mutex
// around the ones that read the counter).
#pragma once

#include <sys/epoll.h>
#include <sys/eventfd.h>

#include <climits>
#include <cstdint>

namespace uepoll_test::eventfd_rules {

// eventfd2: any other flag is EINVAL.
inline bool create_flags_ok(int flags) { return (flags & ~(EFD_SEMAPHORE | EFD_CLOEXEC | EFD_NONBLOCK)) == 0; }

// eventfd_poll: IN with a count, ERR at ULLONG_MAX (overflow), OUT while one
// more can be added.
inline uint32_t poll_mask(uint64_t count) {
  uint32_t m = 0;
  if (count > 0) m |= EPOLLIN;
  if (count == ULLONG_MAX) m |= EPOLLERR;
  if (ULLONG_MAX - 1 > count) m |= EPOLLOUT;
  return m;
}

// eventfd_read of a nonzero count: 1 in semaphore mode, else all of it.
inline uint64_t read_value(uint64_t count, bool semaphore) { return semaphore ? 1 : count; }

// eventfd_write: `v` can be added without reaching ULLONG_MAX.
inline bool write_fits(uint64_t count, uint64_t v) { return ULLONG_MAX - count > v; }

}  // namespace uepoll_test::eventfd_rules
