// eventfd.cpp - EventFd (see eventfd.h).  Mirrors Linux fs/eventfd.c:
// eventfd_read / eventfd_write / eventfd_poll / eventfd_release / do_eventfd.
// Locks: wq() only (level 11), to wake and through core::block_on; none in a
// signal handler that interrupted its own thread inside uepoll.
#include "objects/eventfd.h"

#include "core/alloc.h"
#include "core/block.h"
#include "core/deferred.h"
#include "core/lock_state.h"
#include "fd/table.h"
#include "objects/user_ptr.h"

#include <cerrno>
#include <climits>
#include <cstring>
#include <fcntl.h>
#include <cstdio>
#include <sys/epoll.h>
#include <sys/eventfd.h>

namespace uepoll::objects {

EventFd::EventFd(uint64_t initval, bool semaphore, int status_flags) noexcept
    : core::File(core::FileKind::kEventFd, status_flags), count_(initval), semaphore_(semaphore) {
  set_poll_unpinned();  // poll reads count_ only
}

void EventFd::show_fdinfo(std::string& out) noexcept {
  // Linux eventfd_show_fdinfo.
  char buf[128];
  const int n = std::snprintf(buf, sizeof buf, "eventfd-count: %16llx\neventfd-id: %d\neventfd-semaphore: %d\n",
                              static_cast<unsigned long long>(count_snapshot()), static_cast<int>(id()),
                              semaphore_ ? 1 : 0);
  if (n > 0) out.append(buf, static_cast<size_t>(n) < sizeof buf ? static_cast<size_t>(n) : sizeof buf - 1);
}

uint32_t EventFd::poll(int) noexcept {
  // Linux eventfd_poll: READ_ONCE(ctx->count), no lock (see eventfd.h).
  // Linux also reports EPOLLERR at ULLONG_MAX, a count no write reaches;
  // here that value marks an eventfd taken for a move (kMoved).
  const uint64_t c = count_.load(std::memory_order_relaxed);
  if (c == kMoved) return 0;  // the kernel eventfd answers from now on
  uint32_t events = 0;
  if (c > 0) events |= EPOLLIN;
  if (ULLONG_MAX - 1 > c) events |= EPOLLOUT;
  return events;
}

long EventFd::take(uint64_t* ucnt) noexcept {
  // relaxed: the counter carries no other data; a sleeper that checked it
  // is ordered by the queue lock its waker takes after this CAS.
  uint64_t c = count_.load(std::memory_order_relaxed);
  do {
    if (c == kMoved) return moved();
    if (c == 0) return -EAGAIN;
  } while (!count_.compare_exchange_weak(c, semaphore_ ? c - 1 : 0, std::memory_order_relaxed));
  *ucnt = semaphore_ ? 1 : c;  // Linux eventfd_ctx_do_read
  return static_cast<long>(sizeof *ucnt);
}

long EventFd::add(uint64_t v) noexcept {
  uint64_t c = count_.load(std::memory_order_relaxed);
  do {
    if (c == kMoved) return moved();
    if (!(ULLONG_MAX - c > v)) return -EAGAIN;
  } while (!count_.compare_exchange_weak(c, c + v, std::memory_order_relaxed));
  return static_cast<long>(sizeof v);
}

long EventFd::moved() noexcept {
  return core::leave_if_handed_over(true) ? -EINTR : -EBADF;
}

long EventFd::take_for_move(uint64_t* count) noexcept {
  const uint64_t c = count_.exchange(kMoved, std::memory_order_relaxed);
  if (c == kMoved) return -EBADF;
  *count = c;
  wq().wake(EPOLLIN | EPOLLOUT);  // a sleeper goes round and leaves
  return 0;
}

bool EventFd::wake_after(uint32_t key, bool in_handler) noexcept {
  if (!in_handler) {
    wq().wake(key);
    return true;
  }
  get();  // the queued entry's reference (the caller's lookup holds another)
  if (core::defer_to_release(&core::deferred_wake, this, key, nullptr, 0)) return true;
  core::put_in_handler(this);
  return false;
}

ssize_t EventFd::read(void* buf, size_t count) noexcept {
  uint64_t ucnt = 0;
  if (count < sizeof ucnt) return -EINVAL;
  // A handler that interrupted its own thread inside uepoll: lock-free
  // counter, wakeup queued (core/deferred.h); it cannot sleep.
  const bool in_handler = core::thread_in_uepoll();
  if (in_handler && !core::defer_has_room(&core::deferred_wake, this, EPOLLOUT, 0)) return -EAGAIN;
  long r = take(&ucnt);
  if (r > 0) {
    wake_after(EPOLLOUT, in_handler);  // Linux: wake_up_locked_poll(&ctx->wqh, EPOLLOUT)
  } else if (r == -EAGAIN && !nonblocking() && !in_handler) {
    // block_on runs the op with wq() locked.
    r = core::block_on(wq(), false, EPOLLIN, [&]() -> long {
      wq().assert_held();
      const long x = take(&ucnt);
      if (x > 0) wq().wake_locked(EPOLLOUT);
      return x;
    });
  }
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
  const bool in_handler = core::thread_in_uepoll();
  if (in_handler && !core::defer_has_room(&core::deferred_wake, this, EPOLLIN, 0)) return -EAGAIN;
  long r = add(ucnt);
  if (r > 0) {
    wake_after(EPOLLIN, in_handler);  // Linux: wake_up_locked_poll(&ctx->wqh, EPOLLIN)
  } else if (r == -EAGAIN && !nonblocking() && !in_handler) {
    r = core::block_on(wq(), false, EPOLLOUT, [&]() -> long {
      wq().assert_held();  // block_on runs the op with wq() locked
      const long x = add(ucnt);
      if (x > 0) wq().wake_locked(EPOLLIN);
      return x;
    });
  }
  return r;
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
