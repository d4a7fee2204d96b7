// user_file.hpp - uepoll::UserFile: a program's own object as a uepoll
// descriptor, in C++ (the C API is uep_file_open in uepoll.h; this header
// is built on the same engine entry points, detail/ops.hpp).  Header-only;
// include it instead of (or after) uepoll.hpp.
//
// Derive from UserFile, implement poll() (and read()/write() if the object
// carries data), and open a descriptor for it with UserFile::open().  The
// descriptor is an ordinary uepoll descriptor: epoll (LT, ET, ONESHOT,
// EXCLUSIVE, nesting), poll, read, write, dup and close work on it as on an
// eventfd or a pipe.  Call wake(events) whenever readiness changes outside
// read()/write() -- also when it goes away (uepoll caches what poll()
// returned; uepoll.h explains why and when poll() is called).
//
// Contract of the virtual functions (those of uep_file_ops in uepoll.h):
// called with no uepoll lock held, from any thread, concurrently with each
// other and with themselves; they may call any uepoll function, wake()
// included.  They must not block (read/write: return
// std::errc::resource_unavailable_try_again, and uepoll sleeps for a
// blocking descriptor until the matching wake()).  Errors are returned as
// std::error_code in the system (errno) category; any other category
// becomes EIO.  wake() calls poll() in the calling thread: do not call it
// while holding a lock that poll() or on_close() takes.
//
// Lifetime: open() takes a std::shared_ptr to the object; the file holds it
// until it is closed (last descriptor closed, on_close() has run), so the
// object outlives every callback.  The object keeps its handle until it is
// destroyed, so wake() is always safe; after the close it does nothing.  An
// object is opened at most once.
//
// Example:
//
//   struct Flag final : uepoll::UserFile {
//     std::atomic<bool> up{false};
//     std::uint32_t poll() noexcept override { return up ? EPOLLIN : 0u; }
//     void raise() { up = true; wake(EPOLLIN); }
//   };
//   auto flag = std::make_shared<Flag>();
//   uepoll::Fd fd = uepoll::UserFile::open(flag, O_NONBLOCK);
//   ep.add(fd, EPOLLIN | EPOLLET, 1);
//   flag->raise();                                 // ep.wait() reports it
#pragma once

#include <uepoll/uepoll.hpp>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <span>
#include <system_error>

namespace uepoll {

class UserFile {
 public:
  UserFile(const UserFile&) = delete;
  UserFile& operator=(const UserFile&) = delete;
  // Drops the handle.  Runs after the file is closed (the file holds a
  // shared_ptr until then) or if it was never opened.
  virtual ~UserFile() {
    if (uep_file* h = handle_.load(std::memory_order_acquire)) detail::file_unref(h);
  }

  // Current readiness: EPOLLIN, EPOLLOUT, EPOLLHUP, EPOLLERR, EPOLLRDHUP...
  virtual std::uint32_t poll() noexcept = 0;
  // As read(2)/write(2): the byte count, or an error (EAGAIN: not ready).
  // Default: EINVAL, as a file without that operation.
  virtual Result<std::size_t> read(std::span<std::byte> buf) noexcept {
    (void)buf;
    return std::make_error_code(std::errc::invalid_argument);
  }
  virtual Result<std::size_t> write(std::span<const std::byte> buf) noexcept {
    (void)buf;
    return std::make_error_code(std::errc::invalid_argument);
  }
  // The file was closed: its last descriptor is gone and no call is in
  // progress.  Runs once; no callback follows it.  Default: nothing.
  virtual void on_close() noexcept {}

  // Readiness changed (uep_file_wake): calls poll(), then wakes the waiters
  // for `events` (0 = all).  Before open() and after the close: nothing.
  // Contract: thread-safe; never blocks; never allocates.
  void wake(std::uint32_t events = 0) const noexcept {
    if (uep_file* h = handle_.load(std::memory_order_acquire)) detail::file_wake(h, events);
  }

  // A new descriptor for `self` (flags: O_NONBLOCK, O_CLOEXEC).  Errors:
  // EINVAL (bad flags; self empty), EBUSY (already opened), EMFILE, ENOMEM.
  // Calls self->poll() once.  Contract: thread-safe; never blocks;
  // allocates the file and one shared_ptr.
  static Result<Fd> try_open(std::shared_ptr<UserFile> self, int flags = 0) noexcept {
    if (!self) return std::make_error_code(std::errc::invalid_argument);
    UserFile* obj = self.get();
    if (obj->opened_.exchange(true, std::memory_order_relaxed))
      return std::make_error_code(std::errc::device_or_resource_busy);
    auto* keep = new (std::nothrow) std::shared_ptr<UserFile>(std::move(self));
    if (!keep) {
      obj->opened_.store(false, std::memory_order_relaxed);
      return std::make_error_code(std::errc::not_enough_memory);
    }
    static constexpr uep_file_ops kOps = {&poll_cb, &read_cb, &write_cb, &release_cb};
    uep_file* h = nullptr;
    const long r = detail::file_open(&kOps, keep, flags, &h);
    if (r < 0) {
      obj->opened_.store(false, std::memory_order_relaxed);
      delete keep;  // never seen by uepoll: no callback will use it
      return detail::errc_from(r);
    }
    // release: pairs with the acquire loads in wake() and the destructor.
    obj->handle_.store(h, std::memory_order_release);
    return Fd(static_cast<int>(r));
  }
  // As try_open(); throws std::system_error on failure.
  static Fd open(std::shared_ptr<UserFile> self, int flags = 0) {
    return detail::value_or_throw(try_open(std::move(self), flags));
  }

 protected:
  UserFile() noexcept = default;

 private:
  static UserFile& self_of(void* ctx) noexcept { return **static_cast<std::shared_ptr<UserFile>*>(ctx); }
  static ssize_t to_ssize(const Result<std::size_t>& r) noexcept {
    if (r) return static_cast<ssize_t>(*r);
    const std::error_code ec = r.error();
    const bool errno_like = ec.category() == std::system_category() || ec.category() == std::generic_category();
    errno = errno_like && ec.value() > 0 ? ec.value() : EIO;
    return -1;
  }
  static std::uint32_t poll_cb(void* ctx) noexcept { return self_of(ctx).poll(); }
  static ssize_t read_cb(void* ctx, void* buf, std::size_t len) noexcept {
    return to_ssize(self_of(ctx).read(std::span<std::byte>(static_cast<std::byte*>(buf), len)));
  }
  static ssize_t write_cb(void* ctx, const void* buf, std::size_t len) noexcept {
    return to_ssize(self_of(ctx).write(std::span<const std::byte>(static_cast<const std::byte*>(buf), len)));
  }
  static void release_cb(void* ctx) noexcept {
    auto* keep = static_cast<std::shared_ptr<UserFile>*>(ctx);
    (*keep)->on_close();
    delete keep;  // may destroy the object, whose destructor drops the handle
  }

  std::atomic<uep_file*> handle_{nullptr};  // set once by try_open
  std::atomic<bool> opened_{false};
};

}  // namespace uepoll
