// deferred.h - work a signal handler leaves for the code it interrupted.
//
// A handler calling uep_write/uep_read/uep_close while its own thread was
// inside uepoll (core/lock_state.h: thread_in_uepoll()) must not take a
// lock that thread may hold.  It does what it can without locks (an
// eventfd's counter is a lock-free atomic; a descriptor slot is cleared by
// an exchange) and queues the rest here: a wakeup, a pipe write whose pipe
// lock the thread holds, a close's bookkeeping and last put.  The queue is
// per thread, fixed size and allocation-free; the interrupted code runs it
// when it releases its last uepoll lock (lock_exit), with no lock held.
//
// Each entry owns one file reference, dropped after fn ran.  A wakeup entry
// equal to one already queued (same fn, file and key) is merged into it: a
// queued wakeup has not happened yet, so one covers both.
//
// Async-signal-safe: only lock-free atomics on thread-local memory.  A
// handler interrupting another handler of the same thread may lose a queue
// slot (the entry is then refused); handlers that call uepoll should not
// nest (sa_mask).
// Locks: none taken here; the queued functions take what they need.
#pragma once

#include <cstdint>

namespace uepoll::core {

class File;

using DeferredFn = void (*)(File* f, uint32_t arg, const char* data, uint32_t len) noexcept;

inline constexpr uint32_t kDeferredData = 4096;  // bytes of pipe data per thread (PIPE_BUF)

// True if an entry with `len` bytes of data (or one merging with an entry
// of the same fn/file/arg when len == 0) can be queued now.
bool defer_has_room(DeferredFn fn, File* f, uint32_t arg, uint32_t len) noexcept;
// Queues fn(f, arg, copy of data, len); takes over one reference to f.
// False (nothing queued, the reference still the caller's) when full.
bool defer_to_release(DeferredFn fn, File* f, uint32_t arg, const void* data, uint32_t len) noexcept;

// Drops a reference from a handler that interrupted uepoll: the last one is
// handed to the release point (a release takes locks the thread may hold).
void put_in_handler(File* f) noexcept;

// Deferred functions shared by the objects.
void deferred_wake(File* f, uint32_t key, const char*, uint32_t) noexcept;  // f->wq().wake(key)

// In a handler that interrupted its own thread: tells the lock checker
// that the locks held belong to the interrupted frame (core/lockdep.h).
class SignalFrame {
 public:
  SignalFrame() noexcept;
  ~SignalFrame();
  SignalFrame(const SignalFrame&) = delete;
  SignalFrame& operator=(const SignalFrame&) = delete;

 private:
  int saved_;
};

}  // namespace uepoll::core
