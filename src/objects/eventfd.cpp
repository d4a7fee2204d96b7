// eventfd.cpp - EventFd (see eventfd.h).  Mirrors Linux fs/eventfd.c:
// eventfd_read / eventfd_write / eventfd_poll / eventfd_release / do_eventfd.
// Locks: wq() only (level 6), taken through core::block_on.
#include "objects/eventfd.h"

#include "core/alloc.h"
#include "core/block.h"
#include "fd/table.h"
#include "objects/user_ptr.h"

#include <cerrno>
#include <climits>
#include <cstring>
#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>

namespace uepoll::objects {

EventFd::EventFd(uint64_t initval, bool semaphore, int status_flags) noexcept
    : core::File(core::FileKind::kEventFd, status_flags), count_(initval), semaphore_(semaphore) {}

uint32_t EventFd::poll(int) noexcept {
  // Linux eventfd_poll: READ_ONCE(ctx->count), no lock (see eventfd.h).
  const uint64_t c = count_.load(std::memory_order_relaxed);
  uint32_t events = 0;
  if (c > 0) events |= EPOLLIN;
  if (c == ULLONG_MAX) events |= EPOLLERR;
  if (ULLONG_MAX - 1 > c) events |= EPOLLOUT;
  return events;
}

ssize_t EventFd::read(void* buf, size_t count) noexcept {
  uint64_t ucnt = 0;
  if (count < sizeof ucnt) return -EINVAL;
  // Preconditions of the op: wq() locked (block_on).
  const long r = core::block_on(wq(), nonblocking(), EPOLLIN, [&]() -> long {
    const uint64_t c = count_.load(std::memory_order_relaxed);
    if (c == 0) return -EAGAIN;
    ucnt = semaphore_ ? 1 : c;  // Linux eventfd_ctx_do_read
    count_.store(c - ucnt, std::memory_order_relaxed);
    wq().wake_locked(EPOLLOUT);  // Linux: wake_up_locked_poll(&ctx->wqh, EPOLLOUT)
    return static_cast<long>(sizeof ucnt);
  });
  if (r < 0) return r;
  if (faulting_ptr(buf)) return -EFAULT;  // Linux: copy_to_iter fails after the read
  std::memcpy(buf, &ucnt, sizeof ucnt);
  return r;
}

ssize_t EventFd::write(const void* buf, size_t count) noexcept {
  uint64_t ucnt;
  // Linux 6.18 eventfd_write: count != sizeof(ucnt) -> EINVAL (reads only
  // need at least 8).
  if (count != sizeof ucnt) return -EINVAL;
  if (faulting_ptr(buf)) return -EFAULT;  // Linux: copy_from_user
  std::memcpy(&ucnt, buf, sizeof ucnt);
  if (ucnt == ULLONG_MAX) return -EINVAL;
  return core::block_on(wq(), nonblocking(), EPOLLOUT, [&]() -> long {
    const uint64_t c = count_.load(std::memory_order_relaxed);
    if (!(ULLONG_MAX - c > ucnt)) return -EAGAIN;
    count_.store(c + ucnt, std::memory_order_relaxed);
    wq().wake_locked(EPOLLIN);  // Linux: wake_up_locked_poll(&ctx->wqh, EPOLLIN)
    return static_cast<long>(sizeof ucnt);
  });
}

void EventFd::on_release() noexcept {
  wq().wake(EPOLLHUP);  // Linux eventfd_release: wake_up_poll(&ctx->wqh, EPOLLHUP)
}

int make_eventfd(unsigned int initval, int flags) noexcept {
  auto* f = core::create<EventFd>(initval, (flags & EFD_SEMAPHORE) != 0, O_RDWR | (flags & O_NONBLOCK));
  if (!f) return -ENOMEM;
  const int fd = fd::install(f);
  if (fd < 0) f->put();
  return fd;
}

}  // namespace uepoll::objects
