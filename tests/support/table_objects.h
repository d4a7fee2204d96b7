// table_objects.h - uepoll's built-in object kinds written again by "a
// provider" through the file interface (<uepoll/file.h>, uep_file_create),
// for the tests: an eventfd with Linux's eventfd semantics (fs/eventfd.c:
// counter, semaphore mode, overflow, the EPOLLIN / EPOLLOUT wakeup of every
// write / read).  Only the public C API; the provider's state is under its
// own std::mutex, held across every uep_file_notify it makes (the file
// interface allows it: wakes never call back).
//
// table_objects_api(base): `base` with eventfd() replaced, so that any
// scenario written against an Api runs unchanged on provider files (the
// conformance harness's "user-files" variant, tests/conformance/variants.h).
#pragma once

#include "api.h"

#include <uepoll/file.h>
#include <uepoll/uepoll.h>

#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstring>
#include <fcntl.h>
#include <mutex>
#include <sys/eventfd.h>

namespace uepoll_test {

struct TableEventFd {
  std::mutex mu;
  uint64_t count = 0;      // guarded by mu
  bool semaphore = false;  // immutable after creation
  uep_file* handle = nullptr;

  static uint32_t poll(void* ctx) {  // Linux eventfd_poll
    auto* e = static_cast<TableEventFd*>(ctx);
    std::lock_guard<std::mutex> g(e->mu);
    uint32_t m = 0;
    if (e->count > 0) m |= EPOLLIN;
    if (e->count == ULLONG_MAX) m |= EPOLLERR;
    if (ULLONG_MAX - 1 > e->count) m |= EPOLLOUT;
    return m;
  }
  // Linux eventfd_read (->read_iter): at least 8 bytes, across segments.
  static ssize_t read_iter(void* ctx, const struct iovec* iov, int n, const uep_file_call*) {
    auto* e = static_cast<TableEventFd*>(ctx);
    size_t total = 0;
    for (int i = 0; i < n; ++i) total += iov[i].iov_len;
    if (total < 8) return -EINVAL;
    uint64_t v;
    {
      std::lock_guard<std::mutex> g(e->mu);
      if (e->count == 0) return -EAGAIN;  // uepoll sleeps for a blocking read
      v = e->semaphore ? 1 : e->count;
      e->count -= v;
      uep_file_notify(e->handle, EPOLLOUT);  // wake_up_locked_poll, lock held
    }
    // Linux copy_to_iter fails after the counter was consumed.
    for (int i = 0; i < n; ++i)
      if (iov[i].iov_len && reinterpret_cast<uintptr_t>(iov[i].iov_base) < 4096) return -EFAULT;
    const char* src = reinterpret_cast<const char*>(&v);
    size_t done = 0;
    for (int i = 0; i < n && done < 8; ++i) {
      const size_t k = iov[i].iov_len < 8 - done ? iov[i].iov_len : 8 - done;
      std::memcpy(iov[i].iov_base, src + done, k);
      done += k;
    }
    return 8;
  }
  // Linux eventfd_write (->write only: writev goes segment by segment).
  static ssize_t write_iter(void* ctx, const struct iovec* iov, int n, const uep_file_call*) {
    auto* e = static_cast<TableEventFd*>(ctx);
    ssize_t done = 0;
    // A zero-length write(2) reaches ->write (writev returns 0 before it).
    if (n == 1 && iov[0].iov_len == 0) return write_one(e, iov[0].iov_base, 0);
    for (int i = 0; i < n; ++i) {
      if (!iov[i].iov_len) continue;
      const ssize_t r = write_one(e, iov[i].iov_base, iov[i].iov_len);
      if (r < 0) return done ? done : r;
      done += r;
    }
    return done;
  }
  static ssize_t write_one(TableEventFd* e, const void* buf, size_t len) {
    if (len != 8) return -EINVAL;
    if (reinterpret_cast<uintptr_t>(buf) < 4096) return -EFAULT;  // copy_from_user
    uint64_t v;
    std::memcpy(&v, buf, 8);
    if (v == ULLONG_MAX) return -EINVAL;
    std::lock_guard<std::mutex> g(e->mu);
    if (!(ULLONG_MAX - e->count > v)) return -EAGAIN;
    e->count += v;
    uep_file_notify(e->handle, EPOLLIN);
    return 8;
  }
  static void release(void* ctx) {
    auto* e = static_cast<TableEventFd*>(ctx);
    uep_file_put(e->handle);
    delete e;
  }
  static const uep_file_operations& ops() {
    static const uep_file_operations o = [] {
      uep_file_operations t{};
      t.size = sizeof t;
      t.poll = &poll;
      t.read_iter = &read_iter;
      t.write_iter = &write_iter;
      t.release = &release;
      return t;
    }();
    return o;
  }

  // eventfd(2) over uep_file_create: same flags, same errors.
  static int create(unsigned int initval, int flags) {
    if (flags & ~(EFD_SEMAPHORE | EFD_CLOEXEC | EFD_NONBLOCK)) return errno = EINVAL, -1;
    auto* e = new TableEventFd;
    e->count = initval;
    e->semaphore = (flags & EFD_SEMAPHORE) != 0;
    const int fd = uep_file_create(&ops(), e, flags & (O_NONBLOCK | O_CLOEXEC), 0, &e->handle);
    if (fd < 0) {
      const int err = errno;
      delete e;
      errno = err;
    }
    return fd;
  }
};

namespace detail {
inline int table_eventfd(unsigned int v, int f) { return TableEventFd::create(v, f); }
}  // namespace detail

inline const Api& table_objects_api(const Api& base, const char* name) {
  static Api api = [&] {
    Api a = base;
    a.name = name;
    a.eventfd = &detail::table_eventfd;
    return a;
  }();
  return api;
}

}  // namespace uepoll_test
