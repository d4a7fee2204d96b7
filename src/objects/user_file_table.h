// user_file_table.h - TableFile: a file whose operations are a provider's
// struct uep_file_operations (<uepoll/file.h>, uep_file_create; Linux: a
// driver's file_operations + a protocol's proto_ops, with wake_up_poll()
// and sk_wait_event()).  The contract is file.h's; this is how it holds.
//
// No provider code under a uepoll lock.  poll() (called by harvests under
// shard/scan mutexes) returns the cached mask: for UEP_FILE_PUSH files what
// notify/set_mask made it, for the others the result of the provider's poll
// made at creation and after every operation (refresh(), no lock held),
// with the keys notified since OR-ed in.  The cache is one 64-bit word,
// (sequence << 32 | mask): notify and set_mask change it with a CAS that
// bumps the sequence; a refresh publishes its poll only over the word it
// loaded before polling (else it polls again), so a notify is never lost.
//
// Wakes never call the provider, never take its locks, never run release:
// notify is a CAS on the word plus wq().wake_locked(key) under the
// wait-queue spinlock (11), which may take the ready locks (12) of watching
// instances.  Those are leaves with respect to provider code, so a provider
// may call it holding its own locks, from inside any operation, from any
// thread.  `notifying_` counts the notifies in flight; on_release waits for
// it to drain (each is bounded) after setting released_, so that release
// starts after every wake has returned (seq_cst pair: released_ store /
// notifying_ load in on_release against notifying_ increment / released_
// load in notify).
//
// Lifetimes: File::refs_ (descriptors + pins: program calls in progress,
// uep_file_get handles) ends in release; holds_ (the file until dispose +
// the create handle) keeps the memory, so the create handle stays valid
// after release.  A uep_file_put that would drop the last pin hands it to
// the release thread (release_thread_put) instead: release never runs in a
// put, nor in a wake.
//
// Blocking (wait(), core::block_on_unlocked): the operation returns
// -EAGAIN; for a blocking call the thread queues a WaiterEntry with the
// wanted bits on wq(), calls the operation again, and sleeps until a wake
// whose key meets those bits (or key 0), SO_RCVTIMEO/SO_SNDTIMEO's
// deadline (-EAGAIN), or a signal handler (-EINTR; with no timeout set,
// SA_RESTART handlers restart the sleep as signal(7) says).  Signals are
// blocked between the check and the sleep.  A stream write, and a stream
// receive with MSG_WAITALL, repeat the operation until the whole count.
#pragma once

#include "core/file.h"

#include <uepoll/file.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <ctime>

namespace uepoll::objects {

class TableFile final : public core::File {
 public:
  // ops_in is copied up to ops_in->size (the rest stays NULL / 0).
  TableFile(const uep_file_operations* ops_in, size_t copy, void* ctx, int status_flags,
            uint32_t initial_mask) noexcept;

  const uep_file_operations* table() const noexcept { return table_; }
  void* ctx() const noexcept { return ctx_; }

  // ---- file.h's wakes (any thread, any lock of the provider's) ----------
  void notify(uint32_t key) noexcept;
  void set_mask(uint32_t mask) noexcept;
  void notify_mask(uint32_t mask, uint32_t key) noexcept;
  void set_error(int err) noexcept;
  // The create handle's hold (uep_file_put on it).
  void drop_handle() noexcept { drop_hold(); }
  // Undoes a creation that was never installed (no release).
  void discard() noexcept;
  // Calls the provider's poll (if any) and publishes it.  No lock held.
  void refresh() noexcept;

  // An operation of a pull file running on this thread (run()): notifies
  // of the file from inside it are collected here (user_file_table.cpp).
  struct OpFrame {
    TableFile* file;
    OpFrame* up;
    bool pending = false;
    uint32_t key = 0;  // union of the pending keys; 0 with pending = all
  };
  class OpScope {
   public:
    explicit OpScope(TableFile* f) noexcept;
    ~OpScope();
    OpScope(const OpScope&) = delete;
    OpScope& operator=(const OpScope&) = delete;
    const OpFrame& frame() const noexcept { return frame_; }

   private:
    OpFrame frame_;
  };

  // ---- core::File ---------------------------------------------------------
  uint32_t poll(int depth) noexcept override;
  ssize_t read(void* buf, size_t count) noexcept override;
  ssize_t write(const void* buf, size_t count) noexcept override;
  ssize_t read_iter(const struct iovec* iov, int iovcnt, size_t total) noexcept override;
  ssize_t write_iter(const struct iovec* iov, int iovcnt, size_t total) noexcept override;
  long ioctl(unsigned long request, void* arg) noexcept override;
  long fstat(struct stat* st) noexcept override;
  long rw_check(bool write) const noexcept override {
    return (ops_.flags & (write ? UEP_FILE_RDONLY : UEP_FILE_WRONLY)) ? -EBADF : 0;  // FMODE_READ/WRITE
  }
  bool anon_inode() const noexcept override { return !is_socket() && !fifo(); }
  bool has_fasync() const noexcept override { return is_socket() || fifo(); }
  bool direct_io() const noexcept override { return fifo(); }
  long setfl_hook(int old_flags, int new_flags) noexcept override;
  long pipe_size(int cmd, unsigned long arg) noexcept override;
  void show_fdinfo(std::string& out) noexcept override;
  bool is_socket() const noexcept override { return ops_.sock_type != 0; }
  int shutdown(int how) noexcept override;
  long bind(const struct sockaddr* addr, socklen_t len) noexcept override;
  long listen(int backlog) noexcept override;
  long accept4(struct sockaddr* addr, socklen_t* len, int flags) noexcept override;
  long connect(const struct sockaddr* addr, socklen_t len) noexcept override;
  long sendmsg(const struct msghdr* msg, int flags) noexcept override;
  long recvmsg(struct msghdr* msg, int flags) noexcept override;
  long getsockopt(int level, int name, void* val, socklen_t* len) noexcept override;
  long setsockopt(int level, int name, const void* val, socklen_t len) noexcept override;
  long getsockname(struct sockaddr* addr, socklen_t* len) noexcept override;
  long getpeername(struct sockaddr* addr, socklen_t* len) noexcept override;

 protected:
  void on_release() noexcept override;
  void dispose() noexcept override { drop_hold(); }

 private:
  template <class Op>
  long wait(uint32_t want, bool nonblock, const timespec* deadline, Op&& op, bool restart = true) noexcept;
  // MSG_WAITALL on a blocking stream socket: receive, or peek, the whole
  // count (recvmsg's helpers).
  long recv_all(struct msghdr* msg, size_t total, const timespec* dl, const uep_file_call& c) noexcept;
  long recv_peek_all(struct msghdr* msg, size_t total, const timespec* dl, const uep_file_call& c) noexcept;
  // The provider's SIOCATMARK says the stream is at out-of-band data (a
  // provider without it: never).
  bool at_oob_mark() noexcept;
  // The whole of a stream write: op(iov, n) until every byte is taken.
  template <class Op>
  long write_all(const struct iovec* iov, size_t n, bool nonblock, Op&& op) noexcept;
  uep_file_call call(int flags) const noexcept { return {status_flags(), flags}; }
  bool fifo() const noexcept { return (ops_.flags & UEP_FILE_FIFO) != 0; }
  // Runs fn (an operation), then refreshes a pull file.
  template <class Fn>
  auto run(Fn&& fn) noexcept -> decltype(fn());
  int take_error() noexcept;
  // The pending error a socket call returns first (0: none, or not a socket).
  int sock_error() noexcept { return is_socket() ? take_error() : 0; }
  // The absolute deadline of SO_RCVTIMEO (rcv) / SO_SNDTIMEO, or nullptr.
  const timespec* deadline(bool rcv, timespec* out) const noexcept;
  void wake_queue(uint32_t key) noexcept;
  void drop_hold() noexcept;
  // Publishes new = f(old mask) with a sequence bump; returns the old mask.
  template <class F>
  uint32_t update_mask(F&& f) noexcept;

  uep_file_operations ops_{};                 // immutable after construction
  const uep_file_operations* const table_;   // the provider's table (uep_file_get compares it)
  void* const ctx_;                           // the provider's
  std::atomic<uint64_t> state_;               // (sequence << 32) | mask; see above
  std::atomic<int> err_{0};                   // pending error (sk_err); relaxed + the wake's lock
  std::atomic<int64_t> rcvtimeo_ns_{0};       // SO_RCVTIMEO, 0 = none (relaxed: a value)
  std::atomic<int64_t> sndtimeo_ns_{0};       // SO_SNDTIMEO
  std::atomic<bool> released_{false};         // seq_cst, see above
  std::atomic<int> notifying_{0};             // seq_cst, see above
  std::atomic<int> holds_{2};                 // file + create handle; acq_rel
  bool skip_release_ = false;                 // set by discard() before the last put
};

// Drops a pin (a uep_file_get handle): the last one is handed to uepoll's
// release thread, which makes the put (and so the release) there.
void release_thread_put(core::File* f) noexcept;

}  // namespace uepoll::objects
