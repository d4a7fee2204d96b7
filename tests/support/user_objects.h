// user_objects.h - objects written by "a program" with uep_file_open (the
// user-defined file API, uepoll.h), for the tests: an eventfd with Linux's
// exact eventfd semantics (fs/eventfd.c: counter, semaphore mode, overflow,
// the EPOLLIN / EPOLLOUT wakeups of every write / read), and a pipe-like
// byte channel (two ends, EOF and EPOLLHUP when the writer is closed,
// EPIPE and EPOLLERR when the reader is).  Both use only the public C API.
//
// user_eventfd_api(base): `base` with eventfd() replaced by the user
// eventfd, so that any scenario written against an Api runs unchanged on a
// user-defined file.  uepoll_api() returns it when UEPOLL_TEST_USER_EVENTFD
// is set (tests/support/api.h): the conformance suite runs once more that
// way (ctest conformance_user_eventfd).
//
// Locks: each object has a std::mutex; callbacks take it, and every
// uep_file_wake is made after it is released (the rule in uepoll.h).
#pragma once

#include "api.h"
#include "eventfd_rules.h"

#include <uepoll/uepoll.h>

#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstring>
#include <fcntl.h>
#include <mutex>
#include <string>
#include <algorithm>

namespace uepoll_test {

// ---- eventfd semantics --------------------------------------------------
struct UserEventFd {
  std::mutex mu;
  uint64_t count = 0;       // guarded by mu
  bool semaphore = false;   // immutable after creation
  uep_file* handle = nullptr;

  static bool faulting(const void* p) { return reinterpret_cast<uintptr_t>(p) < 4096; }

  static uint32_t poll(void* ctx) {  // Linux eventfd_poll
    auto* e = static_cast<UserEventFd*>(ctx);
    std::lock_guard<std::mutex> g(e->mu);
    return eventfd_rules::poll_mask(e->count);
  }
  static ssize_t read(void* ctx, void* buf, size_t len) {  // Linux eventfd_read
    auto* e = static_cast<UserEventFd*>(ctx);
    if (len < 8) return errno = EINVAL, -1;
    uint64_t v;
    {
      std::lock_guard<std::mutex> g(e->mu);
      if (e->count == 0) return errno = EAGAIN, -1;
      v = eventfd_rules::read_value(e->count, e->semaphore);
      e->count -= v;
    }
    uep_file_wake(e->handle, EPOLLOUT);
    if (faulting(buf)) return errno = EFAULT, -1;  // after the read, as Linux
    memcpy(buf, &v, 8);
    return 8;
  }
  static ssize_t write(void* ctx, const void* buf, size_t len) {  // Linux eventfd_write
    auto* e = static_cast<UserEventFd*>(ctx);
    if (len != 8) return errno = EINVAL, -1;
    if (faulting(buf)) return errno = EFAULT, -1;
    uint64_t v;
    memcpy(&v, buf, 8);
    if (v == ULLONG_MAX) return errno = EINVAL, -1;
    {
      std::lock_guard<std::mutex> g(e->mu);
      if (!eventfd_rules::write_fits(e->count, v)) return errno = EAGAIN, -1;
      e->count += v;
    }
    uep_file_wake(e->handle, EPOLLIN);
    return 8;
  }
  static void release(void* ctx) {
    auto* e = static_cast<UserEventFd*>(ctx);
    uep_file_unref(e->handle);
    delete e;
  }
  static constexpr uep_file_ops kOps = {&poll, &read, &write, &release};

  // eventfd(2) over uep_file_open: same flags, same errors.
  static int create(unsigned int initval, int flags) {
    if (!eventfd_rules::create_flags_ok(flags)) return errno = EINVAL, -1;
    auto* e = new UserEventFd;
    e->count = initval;
    e->semaphore = (flags & EFD_SEMAPHORE) != 0;
    int fd = uep_file_open(&kOps, e, flags & (O_NONBLOCK | O_CLOEXEC), &e->handle);
    if (fd < 0) {
      int err = errno;
      delete e;
      errno = err;
    }
    return fd;
  }
};

// ---- a pipe-like byte channel ---------------------------------------------
// Two user files over one buffer of `capacity` bytes.  Readiness: reader
// IN|RDNORM with data, HUP without writer; writer OUT|WRNORM with space,
// ERR without reader.  Wakeups: each write wakes the reader (IN|RDNORM),
// a read that frees space of a full channel wakes the writer (OUT|WRNORM),
// closing an end wakes the other with key 0 -- as Linux's pipe once epoll
// has polled it.
struct UserChannel {
  struct End {
    UserChannel* ch;
    bool reader;
    uep_file* handle = nullptr;
  };
  std::mutex mu;
  std::string buf;                 // guarded by mu
  size_t capacity;                 // immutable
  bool rd_open = true, wr_open = true;  // guarded by mu
  int ends = 2;                    // guarded by mu: ends not yet released
  End rd{this, true}, wr{this, false};

  explicit UserChannel(size_t cap) : capacity(cap) {}

  static uint32_t poll(void* ctx) {
    auto* e = static_cast<End*>(ctx);
    UserChannel* c = e->ch;
    std::lock_guard<std::mutex> g(c->mu);
    uint32_t m = 0;
    if (e->reader) {
      if (!c->buf.empty()) m |= EPOLLIN | EPOLLRDNORM;
      if (!c->wr_open) m |= EPOLLHUP;
    } else {
      if (c->buf.size() < c->capacity) m |= EPOLLOUT | EPOLLWRNORM;
      if (!c->rd_open) m |= EPOLLERR;
    }
    return m;
  }
  static ssize_t read(void* ctx, void* out, size_t len) {
    auto* e = static_cast<End*>(ctx);
    UserChannel* c = e->ch;
    if (!e->reader) return errno = EBADF, -1;
    if (len == 0) return 0;
    size_t n;
    bool was_full;
    {
      std::lock_guard<std::mutex> g(c->mu);
      if (c->buf.empty()) {
        if (!c->wr_open) return 0;
        return errno = EAGAIN, -1;
      }
      was_full = c->buf.size() >= c->capacity;
      n = std::min(len, c->buf.size());
      memcpy(out, c->buf.data(), n);
      c->buf.erase(0, n);
    }
    if (was_full) uep_file_wake(c->wr.handle, EPOLLOUT | EPOLLWRNORM);
    return static_cast<ssize_t>(n);
  }
  static ssize_t write(void* ctx, const void* in, size_t len) {
    auto* e = static_cast<End*>(ctx);
    UserChannel* c = e->ch;
    if (e->reader) return errno = EBADF, -1;
    if (len == 0) return 0;
    size_t n;
    {
      std::lock_guard<std::mutex> g(c->mu);
      if (!c->rd_open) return errno = EPIPE, -1;
      if (c->buf.size() >= c->capacity) return errno = EAGAIN, -1;
      n = std::min(len, c->capacity - c->buf.size());
      c->buf.append(static_cast<const char*>(in), n);
    }
    uep_file_wake(c->rd.handle, EPOLLIN | EPOLLRDNORM);
    return static_cast<ssize_t>(n);
  }
  // Wakes the peer, then lets go of the channel; the last end to let go
  // drops both handles (so no wake can reach a dropped handle) and frees it.
  static void release(void* ctx) {
    auto* e = static_cast<End*>(ctx);
    UserChannel* c = e->ch;
    uep_file* peer;
    {
      std::lock_guard<std::mutex> g(c->mu);
      (e->reader ? c->rd_open : c->wr_open) = false;
      peer = e->reader ? c->wr.handle : c->rd.handle;
    }
    uep_file_wake(peer, 0);  // wake_up_all; a no-op if the peer is closed too
    bool last;
    {
      std::lock_guard<std::mutex> g(c->mu);
      last = --c->ends == 0;
    }
    if (last) {
      uep_file_unref(c->rd.handle);
      uep_file_unref(c->wr.handle);
      delete c;
    }
  }
  static constexpr uep_file_ops kReadOps = {&poll, &read, nullptr, &release};
  static constexpr uep_file_ops kWriteOps = {&poll, nullptr, &write, &release};

  // pipe2(2)-like: fds[0] reads, fds[1] writes; flags O_NONBLOCK|O_CLOEXEC.
  static int create(int fds[2], int flags, size_t capacity = 65536) {
    auto* c = new UserChannel(capacity);
    fds[0] = uep_file_open(&kReadOps, &c->rd, flags, &c->rd.handle);
    if (fds[0] < 0) {
      int err = errno;
      delete c;
      return errno = err, -1;
    }
    fds[1] = uep_file_open(&kWriteOps, &c->wr, flags, &c->wr.handle);
    if (fds[1] < 0) {
      int err = errno;
      {
        std::lock_guard<std::mutex> g(c->mu);
        --c->ends;  // the write end never existed
        c->wr_open = false;
      }
      uep_close(fds[0]);  // releases the read end, which frees c
      return errno = err, -1;
    }
    return 0;
  }
};

namespace detail {
inline int user_eventfd(unsigned int v, int f) { return UserEventFd::create(v, f); }
}  // namespace detail

// `base` with its eventfd() replaced by the user-defined eventfd.
inline const Api& user_eventfd_api(const Api& base) {
  static Api api = [&] {
    Api a = base;
    a.eventfd = &detail::user_eventfd;
    return a;
  }();
  return api;
}

}  // namespace uepoll_test
