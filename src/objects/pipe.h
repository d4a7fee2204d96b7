// pipe.h - the uepoll pipe: two files (PipeReader, PipeWriter) over one
// shared Pipe ring (Linux fs/pipe.c: pipe_read, pipe_write, pipe_poll,
// pipe_release, do_pipe2; the ring's size, pipe_set_size: pipe_size.cpp).
//
// What it owns.  Pipe is Linux's pipe_inode_info: a ring of page-sized
// buffers (kPipePage = 4096 bytes; kPipeSlots = 16 of them, 64 KiB, until
// F_SETPIPE_SZ gives it another power of two: Linux pipe_set_size and
// pipe_resize_ring), head/tail indexes that wrap naturally, a one-page
// cache (tmp_page), the reader and writer counts, and Linux's "poll_usage"
// flag.  The default ring lives inside the Pipe; a resized one is
// allocated (outside mu_) and swapped in under mu_, its buffers moved in
// order, so a resize racing readers and writers loses and reorders
// nothing.  Each end is a File with its
// own wait queue: the reader's wq() is Linux's pipe->rd_wait, the writer's
// wq() is pipe->wr_wait.  Pages are allocated lazily through core::create
// allocation (raw_alloc), one page cached as Linux does, so a steady
// write/read cycle allocates nothing.
//
// Locks.  Pipe::mu_ (a SpinLock, Linux's pipe->mutex) guards every field of
// the ring.  It is a leaf (level 14 of core/lock_order.h): nothing is taken
// while it is held, and it may be taken with at most one wait-queue lock
// (level 11) held (block_on's op); it is never held across a wake.  Neither
// user memory nor the allocator is touched under it: a write stages its
// data outside the lock (a small write in a stack buffer, each page-sized
// chunk in a page of its own, allocated outside the lock) and links or
// merges it under the lock; a read of at most a page copies into a stack
// buffer under the lock, a larger read takes whole pages out of the ring
// under the lock and copies them to the caller after.  Wakeups are issued after mu_ is released, each under the
// target end's own wq lock (wake_locked), as Linux wakes after
// mutex_unlock().  A splice out of the pipe sets held_ (under mu_) from
// its copy to its commit; reads and other splices out that find it set
// back off (core::Backoff) and retry, as Linux's pipe mutex holds them
// (pipe_splice.cpp).  A peer end is reached through an atomic pointer cleared
// by its on_release(); wakers read it inside a reclaim::ReadGuard, so the
// peer's memory cannot be freed under them.
//
// Wakeup policy (observable through EPOLLET; kept exactly as fs/pipe.c):
//   * every write that got past the "no readers" check wakes the read end
//     with EPOLLIN|EPOLLRDNORM when the pipe was empty or anyone ever polled
//     the pipe (poll_usage: Linux's "epoll nonsensically wants a wakeup"),
//     even a write that failed with EAGAIN;
//   * a read wakes the write end with EPOLLOUT|EPOLLWRNORM only when it
//     freed a slot of a full pipe;
//   * a blocking reader that slept and leaves data wakes the next reader;
//     a blocking writer that slept wakes the next writer if not full;
//   * closing an end while the other is open wakes both queues with key 0
//     (wake_up_interruptible_all).
//
// Signal handlers (core/deferred.h).  A uep_write of at most PIPE_BUF bytes
// from a handler that interrupted its own thread inside uepoll never waits
// for a lock that thread holds: if the thread holds this pipe's mu_ (seen
// through the lock's owner), the write is queued, returns count, and is
// performed as a non-blocking write when the interrupted code releases its
// last uepoll lock (if the pipe is then full, or has no reader, the bytes
// are dropped: a full pipe already carries a wakeup); otherwise it is made
// at once, non-blocking and without allocating (-EAGAIN when there is no
// room or no cached page), and only its wakeup is queued.  Larger writes
// give -EAGAIN.  A uep_read from such a handler gives -EAGAIN (as an empty
// pipe; nothing is consumed).  An empty pipe holds one cached page
// (allocated with the pipe; a read that empties the pipe caches one), so a
// handler's write into it does not allocate; the exception is the moment a
// larger write holds that page while it copies into it outside mu_, and
// then that write's own data is about to make the pipe readable.
//
// Status flags: reader O_RDONLY|O_NONBLOCK?, writer O_WRONLY|O_NONBLOCK?
// |O_DIRECT? (create_pipe_files).  O_DIRECT makes the writer packetized.
#pragma once

#include "core/file.h"
#include "core/splice.h"
#include "core/spinlock.h"

#include <atomic>
#include <cerrno>
#include <cstdint>

namespace uepoll::objects {

inline constexpr unsigned kPipeSlots = 16;     // Linux PIPE_DEF_BUFFERS
inline constexpr unsigned kPipePage = 4096;    // Linux PAGE_SIZE (x86-64)
static_assert((kPipeSlots & (kPipeSlots - 1)) == 0, "ring size must be a power of two");

class PipeReader;
class PipeWriter;

class Pipe {
 public:
  Pipe() noexcept = default;
  ~Pipe();
  Pipe(const Pipe&) = delete;
  Pipe& operator=(const Pipe&) = delete;

 private:
  friend class PipeReader;
  friend class PipeWriter;
  friend int make_pipe(int flags, int out[2]) noexcept;
  friend int pipe_queued_bytes(Pipe* p) noexcept;
  friend long pipe_size_fcntl(core::File* end, int cmd, unsigned long arg) noexcept;

  enum : uint8_t { kCanMerge = 1, kPacket = 2 };
  struct Buf {
    char* page = nullptr;  // null when the slot is unused
    uint32_t offset = 0;
    uint32_t len = 0;
    uint8_t flags = 0;
  };

  // Preconditions: mu_ held.
  bool empty_locked() const noexcept UEP_REQUIRES(mu_) { return head_ == tail_; }
  // Linux pipe_full(head, tail, max_usage); max_usage is the ring size
  // (they differ only for watch queues, which uepoll has not).
  bool full_locked() const noexcept UEP_REQUIRES(mu_) { return head_ - tail_ >= ring_size_; }
  Buf& slot_locked(unsigned i) noexcept UEP_REQUIRES(mu_) { return bufs_[i & (ring_size_ - 1)]; }
  // Linux pipe_resize_ring: -EBUSY when more buffers are in use than
  // nr_slots, -ENOMEM; wakes the writers (there may be room now).
  // Preconditions: nr_slots a power of two; mu_ not held.
  int resize(unsigned nr_slots) noexcept UEP_EXCLUDES(mu_);
  void release_page_locked(Buf& b, char** to_free) noexcept UEP_REQUIRES(mu_);
  // Appends n bytes of our own memory to the last buffer if it may merge
  // them (Linux: the sub-page remainder of a write).
  bool merge_locked(const char* data, size_t n) noexcept UEP_REQUIRES(mu_);
  // Links `page` (n bytes of data) as a new buffer.  Preconditions: not full.
  void push_page_locked(char* page, size_t n, bool packet) noexcept UEP_REQUIRES(mu_);
  char* take_tmp_page_locked() noexcept UEP_REQUIRES(mu_) {
    char* page = tmp_page_;
    tmp_page_ = nullptr;
    return page;
  }
  struct ReadPlan;
  // Consumes up to count bytes into plan (Linux pipe_read's loop).
  long take_locked(size_t count, bool fault, ReadPlan* plan, bool* wake_writer) noexcept UEP_REQUIRES(mu_);
  // Splice out of the pipe (pipe_splice.cpp).  kHeld: what a read's attempt
  // returns while a splice holds the readers off (it backs off and retries).
  static constexpr long kHeld = -EDEADLK;
  // Copies up to n bytes from the oldest buffer on into dst, consuming
  // nothing (one packet at most in O_DIRECT mode).  Returns the count.
  size_t peek_locked(char* dst, size_t n) const noexcept UEP_REQUIRES(mu_);
  // Consumes n bytes that peek_locked saw; pages released go to to_free
  // (room for kSpliceChunk / kPipePage + 1), their count to *nfree.
  void consume_locked(size_t n, char** to_free, int* nfree, bool* wake_writer) noexcept UEP_REQUIRES(mu_);
  // Caches one of the pages a read took out of the ring, frees the others.
  void recycle_pages(char** pages, int n) noexcept UEP_EXCLUDES(mu_);

  // Drops one end's reference to the ring; the last frees it.
  void put() noexcept;
  // Wakes the reader's (rd_wait) or writer's (wr_wait) queue; no lock held.
  void wake_reader(uint32_t key, int nr_exclusive = 1) noexcept;
  void wake_writer(uint32_t key, int nr_exclusive = 1) noexcept;
  // Linux kill_fasync(&pipe->fasync_readers / _writers, SIGIO, reason):
  // the read (write) end's owner is signalled if it set O_ASYNC.  No lock
  // may be held (a system call).
  void fasync_reader(int reason) noexcept;
  void fasync_writer(int reason) noexcept;
  // The lock descriptors of the ends (core::File::lock_slot;
  // pipe_locks.cpp): side 0 the read end's, 1 the write end's.  lock_slot
  // makes the kernel pipe at the first call of either end; keep_lock_fds
  // pins both ends once a record lock is set through either (one inode);
  // release_lock_fd closes a side's at its end's release (before the end
  // drops the pipe); free_lock_fds closes what is left and frees them.
  struct LockFds;
  core::OwnSlot* lock_slot(int side, long* err) noexcept;
  core::OwnSlot* made_lock_slot(int side) const noexcept;
  void keep_lock_fds() noexcept;
  void release_lock_fd(int side) noexcept;
  void free_lock_fds() noexcept;  // ~Pipe

  core::SpinLock mu_{core::lock_class::kPipe};  // leaf (14)
  Buf inline_bufs_[kPipeSlots];                  // the default ring (reached through bufs_)
  Buf* bufs_ UEP_GUARDED_BY(mu_) = inline_bufs_;  // ring_size_ entries
  unsigned ring_size_ UEP_GUARDED_BY(mu_) = kPipeSlots;  // a power of two
  // ring_size_, for sizing a read's plan before mu_ is taken; relaxed (a
  // stale value only makes a read take fewer buffers).
  std::atomic<unsigned> slots_hint_{kPipeSlots};
  unsigned head_ UEP_GUARDED_BY(mu_) = 0;
  unsigned tail_ UEP_GUARDED_BY(mu_) = 0;
  char* tmp_page_ UEP_GUARDED_BY(mu_) = nullptr;  // one cached page
  int readers_ UEP_GUARDED_BY(mu_) = 1;
  int writers_ UEP_GUARDED_BY(mu_) = 1;
  bool poll_usage_ UEP_GUARDED_BY(mu_) = false;
  // A splice out of the pipe is between its copy and its commit: reads and
  // other splices out wait (Linux holds pipe->mutex across ->splice_write).
  bool held_ UEP_GUARDED_BY(mu_) = false;
  std::atomic<int> refs_{2};  // one per end; acq_rel on the last put
  // The two ends; each cleared by that end's on_release().  Read inside a
  // reclaim::ReadGuard (acquire pairs with the release store of creation).
  std::atomic<core::File*> rd_{nullptr};
  std::atomic<core::File*> wr_{nullptr};
  // The kernel pipe whose ends stand in for this pipe's ends in lock calls
  // (one inode for both, as Linux's), nullptr until made.  Installed once
  // by compare-and-swap (acq_rel/acquire: a reader sees it made); a side
  // is closed when its end is released, the rest by ~Pipe.
  std::atomic<LockFds*> lock_fds_{nullptr};
};

class PipeReader final : public core::File {
 public:
  PipeReader(Pipe* p, int status_flags) noexcept;
  uint32_t poll(int depth) noexcept override;
  // count 0: 0.  Data: up to count bytes (one packet in O_DIRECT mode).
  // Empty: 0 without writers, else -EAGAIN or sleeps (-EINTR on a signal).
  ssize_t read(void* buf, size_t count) noexcept override;
  ssize_t write(const void*, size_t) noexcept override { return -EBADF; }  // not FMODE_WRITE
  long rw_check(bool write) const noexcept override { return write ? -EBADF : 0; }
  // The per-kind operations both ends share (pipe_ops.cpp): one gathered
  // write_iter, FIONREAD, fstat S_IFIFO (both ends one inode: the ring's
  // address), O_ASYNC and O_DIRECT kept, F_GETPIPE_SZ/F_SETPIPE_SZ.
  ssize_t write_iter(const struct iovec* iov, int iovcnt, size_t total) noexcept override {
    return write_gathered(iov, iovcnt, total);
  }
  long ioctl(unsigned long request, void* arg) noexcept override;
  long fstat(struct stat* st) noexcept override;
  bool anon_inode() const noexcept override { return false; }
  bool has_fasync() const noexcept override { return true; }
  bool direct_io() const noexcept override { return true; }
  long pipe_size(int cmd, unsigned long arg) noexcept override;
  bool stream_state(core::StreamState* out) noexcept override;
  Pipe* pipe() const noexcept { return pipe_; }
  core::OwnSlot* lock_slot(long* err) noexcept override { return pipe_->lock_slot(0, err); }
  void keep_lock_fd() noexcept override { pipe_->keep_lock_fds(); }
  // Splice out of the pipe (pipe_splice.cpp; Linux splice_from_pipe_next,
  // splice_pipe_to_pipe, link_pipe, vmsplice_to_user): waits for data
  // (0 without writers, -EAGAIN when nonblock), then moves chunks of what
  // is queued until len, an empty pipe or a sink that took less; the bytes
  // a sink did not take stay queued.  tee copies without consuming.
  bool is_pipe() const noexcept override { return true; }
  const void* pipe_id() const noexcept override { return pipe_; }
  long splice_read(core::SpliceSink& to, size_t len, bool nonblock) noexcept override;
  long tee(core::SpliceSink& to, size_t len, bool nonblock) noexcept override;
  long vmsplice(const struct iovec* iov, int iovcnt, size_t total, bool nonblock) noexcept override;

 protected:
  void on_release() noexcept override;
  core::OwnSlot* made_lock_slot() const noexcept override { return pipe_->made_lock_slot(0); }

 private:
  // Waits until the pipe has data (1), or 0 / -EAGAIN / -EINTR.
  long wait_data(bool nonblock) noexcept;
  Pipe* const pipe_;
};

class PipeWriter final : public core::File, public core::SpliceSink {
 public:
  PipeWriter(Pipe* p, int status_flags) noexcept;
  uint32_t poll(int depth) noexcept override;
  ssize_t read(void*, size_t) noexcept override { return -EBADF; }  // not FMODE_READ
  // Linux pipe_write: 0 for count 0, -EPIPE and
  // SIGPIPE to the calling thread without readers, atomic up to PIPE_BUF,
  // partial counts for larger non-blocking writes, -EAGAIN when full.
  ssize_t write(const void* buf, size_t count) noexcept override;
  long rw_check(bool write) const noexcept override { return write ? 0 : -EBADF; }
  // The per-kind operations both ends share (pipe_ops.cpp): one gathered
  // write_iter, FIONREAD, fstat S_IFIFO (both ends one inode: the ring's
  // address), O_ASYNC and O_DIRECT kept, F_GETPIPE_SZ/F_SETPIPE_SZ.
  ssize_t write_iter(const struct iovec* iov, int iovcnt, size_t total) noexcept override {
    return write_gathered(iov, iovcnt, total);
  }
  long ioctl(unsigned long request, void* arg) noexcept override;
  long fstat(struct stat* st) noexcept override;
  bool anon_inode() const noexcept override { return false; }
  bool has_fasync() const noexcept override { return true; }
  bool direct_io() const noexcept override { return true; }
  long pipe_size(int cmd, unsigned long arg) noexcept override;
  bool stream_state(core::StreamState* out) noexcept override;
  Pipe* pipe() const noexcept { return pipe_; }
  core::OwnSlot* lock_slot(long* err) noexcept override { return pipe_->lock_slot(1, err); }
  void keep_lock_fd() noexcept override { pipe_->keep_lock_fds(); }
  // Splice into the pipe (pipe_splice.cpp).  As a sink: wait_room is
  // Linux's wait_for_space (-EPIPE and SIGPIPE without readers, then room
  // or -EAGAIN / sleep), push a write that takes what fits.
  // splice_from_kernel: splice or sendfile from a kernel descriptor (Linux
  // splice_file_to_pipe): waits for room, then moves at most what the free
  // buffers hold, as the page cache fills them (a regular file at position
  // p: free * 4096 - p % 4096 bytes), in chunks through the bounce buffer.
  // A seekable fd is read with pread at *pos (nullptr: at its file
  // position, then advanced by the bytes moved) and a stream socket with
  // MSG_PEEK, so what the pipe did not take stays in the source; a kernel
  // pipe goes to splice_from_kernel_pipe (splice_pipe_to_pipe: the source
  // waited for first, only what was written consumed); any other is read
  // with read() and what it gave is written whole (waiting for room if a
  // writer raced in; a signal does not end that wait).  A blocking call
  // that finds the pipe filled by another writer before anything moved
  // waits again.  Returns the bytes moved (0 at end of file) or the first
  // error.  vmsplice: waits for room, then takes what fits.
  bool is_pipe() const noexcept override { return true; }
  const void* pipe_id() const noexcept override { return pipe_; }
  core::SpliceSink* splice_sink() noexcept override { return this; }
  long wait_room(bool nonblock) noexcept override;
  ssize_t push(const char* buf, size_t n) noexcept override { return write_impl(buf, n, true); }
  long splice_from_kernel(int fd, long long* pos, size_t len, bool nonblock) noexcept override;
  long vmsplice(const struct iovec* iov, int iovcnt, size_t total, bool nonblock) noexcept override;

 protected:
  void on_release() noexcept override;
  core::OwnSlot* made_lock_slot() const noexcept override { return pipe_->made_lock_slot(1); }

 private:
  struct Call;
  // The write proper; buf may be user memory (staged outside mu_).
  ssize_t write_impl(const void* buf, size_t count, bool nonblock) noexcept;
  // Preconditions: p.mu_ held.  Fills pages until done, full or failed.
  bool fill_locked(Call& c) noexcept UEP_REQUIRES(pipe_->mu_);
  // Preconditions: p.mu_ held; drops and retakes it around the sleep.
  bool wait_writable_locked(Call& c) noexcept UEP_REQUIRES(pipe_->mu_);
  // A write from a signal handler that interrupted its own thread in uepoll.
  ssize_t write_from_handler(const void* buf, size_t count) noexcept;
  static void deferred_write(core::File* f, uint32_t, const char* data, uint32_t len) noexcept;
  // Takes what fits without sleeping; with wait_again, a pipe that another
  // writer filled since wait_room is waited for again (pipe_splice.cpp).
  ssize_t take_what_fits(const void* buf, size_t n, bool wait_again) noexcept;
  // The rounds of splice_from_kernel (pipe_splice.cpp).
  struct KernelSource {
    int fd;
    bool seekable;   // a regular file or block device
    bool stream;     // a stream socket
    int peek_flags;  // MSG_DONTWAIT or 0, for a stream socket's MSG_PEEK
  };
  long splice_from_kernel_pipe(int fd, size_t len, bool nonblock) noexcept;
  long splice_from_kernel_file(KernelSource src, long long* pos, size_t len, core::SpliceBounce& bounce,
                               bool* raced) noexcept;

  Pipe* const pipe_;
};

// Creates a pipe and installs both ends (read end first, as Linux).  flags
// must already be validated (O_CLOEXEC|O_NONBLOCK|O_DIRECT; the C API
// answers O_NOTIFICATION_PIPE with ENOPKG, as a kernel without
// CONFIG_WATCH_QUEUE does).  Returns 0 and fills out, or -ENOMEM / -EMFILE.
int make_pipe(int flags, int out[2]) noexcept;

// fcntl F_GETPIPE_SZ / F_SETPIPE_SZ on either end (Linux pipe_fcntl):
// -EBADF on a file that is not a pipe end.  F_SETPIPE_SZ takes the low 32
// bits of arg (Linux's unsigned int), rounds it up to a power of two pages
// (at least one; -EINVAL past 2^31), refuses to grow past
// /proc/sys/fs/pipe-max-size without CAP_SYS_RESOURCE (-EPERM), gives
// -EBUSY when the buffers in use do not fit, -ENOMEM, else the new size in
// bytes.  From a signal handler that interrupted its own thread inside
// this pipe: -EBUSY (the ring's lock is held below it).  Allocates (the
// new ring) with no lock held.
long pipe_size_fcntl(core::File* end, int cmd, unsigned long arg) noexcept;

// FIONREAD on either end (Linux pipe_ioctl): bytes queued in the ring.
// Takes the ring's mu_ (leaf).
int pipe_queued_bytes(Pipe* p) noexcept;

// Sends SIGPIPE to the calling thread (Linux send_sig(SIGPIPE, current, 0)).
void raise_sigpipe() noexcept;

}  // namespace uepoll::objects
