// file.h - File: a reference-counted open file description, the unit that
// descriptors point to, that epoll watches, and that dup() shares.
//
// Lifetime: `refs_` counts descriptor-table slots plus temporary pins taken
// by calls in progress (fd lookup, a harvest polling the file).  When it
// drops to zero, put() runs, in Linux's __fput order: (1) epoll release --
// every registration of this file in every instance is removed, silently
// (epoll/release.h); (2) on_release() -- the object's own teardown, e.g. a
// pipe end telling its peer it is gone; (3) the memory is retired through
// core/reclaim.h, because a lock-free fd lookup may still be looking at it.
//
// Locks: none of its own.  wq_ (level 11) is both the readiness wait queue
// and the object's state lock.  Objects call wq_.wake_locked(key) with the
// EPOLL* bits that changed, exactly where Linux calls wake_up_*_poll().
#pragma once

#include "core/own_slot.h"
#include "core/reclaim.h"
#include "core/waitqueue.h"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

struct pollfd;
namespace uepoll::objects {
class UnixGcNode;
}
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>

namespace uepoll::core {

class SpliceSink;

// kUser: a user-defined file (uep_file_open / uep_file_create,
// objects/user_file*.h).  Only the objects themselves look at the kind
// (src/objects, and is_epoll() for the epoll layer); everything that
// differs between kinds is an operation below.
enum class FileKind : uint8_t { kEpoll, kEventFd, kPipeRead, kPipeWrite, kSocket, kTimer, kUser };

// What the preload's fork conversion needs of a pipe end or a socket of a
// pair (capi/preload_support.h turns it into the C struct).
struct StreamState {
  const void* conn = nullptr;  // the same for both ends
  int side = 0;                // pipe: 0 read end, 1 write end; pair: 0 or 1
  int shutdown = 0;            // pair: RCV_SHUTDOWN 1 / SEND_SHUTDOWN 2
  bool is_socket = false;
  int sock_type = 0;  // pair: SOCK_STREAM, SOCK_DGRAM or SOCK_SEQPACKET
  long msgs = 0;      // datagram/seqpacket pair: messages queued at this side
};

// fstat's answers, taken from a real kernel object of the same kind,
// fstat'ed once (core/file_ops.cpp): an anonymous inode (epoll, eventfd,
// timerfd: mode 0600, no type bits, one inode shared by all), pipefs
// (S_IFIFO|0600) and sockfs (S_IFSOCK|0777).  Fills *st or returns -errno.
enum class StatKind : uint8_t { kAnon, kFifo, kSock };
long stat_template(StatKind kind, struct stat* st) noexcept;
// Inode numbers of uepoll pipes and sockets start here: far above the
// kernel's pipefs/sockfs counters.
inline constexpr ino_t kInoBase = static_cast<ino_t>(1) << 40;

// Cache-line aligned: files of different threads never share a line (the
// reference count and the wait-queue lock are written on every call).
class alignas(64) File {
 public:
  explicit File(FileKind kind, int status_flags) noexcept;
  virtual ~File() = default;
  File(const File&) = delete;
  File& operator=(const File&) = delete;

  FileKind kind() const noexcept { return kind_; }
  bool is_epoll() const noexcept { return kind_ == FileKind::kEpoll; }
  uint64_t id() const noexcept { return id_; }
  WaitQueue& wq() noexcept UEP_RETURN_CAPABILITY(wq_) { return wq_; }

  // O_NONBLOCK (and other F_GETFL bits) of the open description.
  int status_flags() const noexcept { return status_flags_.load(std::memory_order_relaxed); }
  // O_NONBLOCK, or a send/recv with MSG_DONTWAIT in progress on this thread.
  bool nonblocking() const noexcept;
  // F_SETFL / FIONBIO (the caller computes Linux's new flag word).
  void set_status_flags(int flags) noexcept;
  // F_SETOWN / F_GETOWN (Linux's f_owner): a process id, a process group
  // (negative) or, by F_SETOWN_EX, a thread (owner_is_thread).  0: none.
  int owner() const noexcept { return owner_.load(std::memory_order_relaxed); }
  void set_owner(int pid) noexcept {
    owner_.store(pid, std::memory_order_relaxed);
    owner_tid_.store(false, std::memory_order_relaxed);
  }
  bool owner_is_thread() const noexcept { return owner_tid_.load(std::memory_order_relaxed); }
  void set_owner_thread(int tid) noexcept {
    owner_.store(tid, std::memory_order_relaxed);
    owner_tid_.store(true, std::memory_order_relaxed);
  }
  // F_SETSIG / F_GETSIG (f_owner.signum): 0 is SIGIO without siginfo.
  int sigio_signal() const noexcept { return sigio_sig_.load(std::memory_order_relaxed); }
  void set_sigio_signal(int sig) noexcept { sigio_sig_.store(sig, std::memory_order_relaxed); }
  // The descriptor number that turned O_ASYNC on (Linux's fasync entry's
  // fa_fd, reported as si_fd); the preload replaces it with the number
  // the program sees.
  void set_fasync_fd(int fd) noexcept { fasync_fd_.store(fd, std::memory_order_relaxed); }
  // Linux kill_fasync(&list, SIGIO, reason) for this file: with O_ASYNC set
  // and an owner, sends the owner SIGIO, or the F_SETSIG signal with
  // si_code = reason (POLL_IN, POLL_OUT, POLL_HUP, ...), si_band and si_fd
  // (core/sigio.cpp).  Makes a system call: no uepoll lock may be held.
  void kill_fasync(int reason) noexcept;
  // Linux sk_send_sigurg for a socket's file: send_sigurg (SIGURG, as
  // SEND_SIG_PRIV, to an owner if one is set, O_ASYNC or not), then, when
  // there was one, kill_fasync(SIGURG, POLL_PRI), which sends only an
  // F_SETSIG signal (with O_ASYNC).  Makes system calls: no uepoll lock.
  void send_sigurg() noexcept;

  // True for kinds whose poll() reads only state that stays valid until the
  // memory itself is freed (an epoll instance, an eventfd): inside a
  // reclaim::ReadGuard they can be polled without a reference, even while
  // being released.  Pipes, sockets and timers free or close shared state
  // in on_release() and must be pinned with tryget() first.  A user file's
  // poll() reads only its cached mask, never user code (user_file.h), and
  // must not be pinned: a harvest's unpin could run its release callback
  // under the scan mutex.
  bool poll_unpinned_ok() const noexcept { return poll_unpinned_; }

  // ---- references ---------------------------------------------------
  void get() noexcept { refs_.fetch_add(1, std::memory_order_relaxed); }
  // Takes a reference unless the count already reached zero (the file is
  // being released).  Callers that found the pointer without a reference
  // must be inside a reclaim::ReadGuard or hold a lock that keeps the
  // release from completing.  Inline: a blocking epoll_wait pins its
  // instance with it on every call.
  bool tryget() noexcept {
    long r = refs_.load(std::memory_order_relaxed);
    while (r > 0) {
      // acquire: pairs with the release in put(), so a successful tryget
      // sees the file fully constructed and not yet torn down.
      if (refs_.compare_exchange_weak(r, r + 1, std::memory_order_acquire, std::memory_order_relaxed))
        return true;
    }
    return false;
  }
  // Drops a reference; the last one releases the file (see above).  Must
  // not be called with any uepoll lock held.  Inline up to the last one.
  void put() noexcept {
    // acq_rel: the last put must see every write made under earlier refs.
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) [[unlikely]]
      release_last();
  }
  long refcount() const noexcept { return refs_.load(std::memory_order_relaxed); }
  // Drops a reference unless it is the last one; returns false (and drops
  // nothing) in that case, so that a caller holding locks can defer the
  // release until it has dropped them.
  bool put_unless_last() noexcept;

  // ---- operations (Linux f_op + proto_ops; negative errno on failure) --
  // Called by the C API after its argument checks (descriptor, user
  // memory, MAX_RW_COUNT), with a reference held and no uepoll lock held.
  // The defaults answer as Linux does for a file without the operation.
  //
  // Current readiness (EPOLL* bits).  May take this file's wq lock; must be
  // called without it.  `depth` is the nesting depth of the caller
  // (instances use it to bound recursion).
  virtual uint32_t poll(int depth) noexcept = 0;
  virtual ssize_t read(void* buf, size_t count) noexcept;          // -EINVAL
  virtual ssize_t write(const void* buf, size_t count) noexcept;   // -EINVAL
  // readv/writev over a checked vector of `total` bytes (> 0).  Defaults:
  // read_iter reads once into a bounce buffer (every object's ->read_iter
  // fills the whole vector at once); write_iter writes segment by segment,
  // stopping at an error or a short write (Linux do_loop_readv_writev, for
  // files with ->write only).  Pipes and sockets override write_iter with
  // one gathered write (write_gathered).
  virtual ssize_t read_iter(const struct iovec* iov, int iovcnt, size_t total) noexcept;
  virtual ssize_t write_iter(const struct iovec* iov, int iovcnt, size_t total) noexcept;
  // vfs_read/vfs_write's mode checks: -EBADF (not open for that
  // direction), -EINVAL (no such operation), 0 to proceed.
  virtual long rw_check(bool /*write*/) const noexcept { return 0; }
  // The file-specific ioctls (f_op->unlocked_ioctl), after the generic
  // ones (FIONBIO, FIOASYNC, FIOCLEX, FIONCLEX).  -ENOTTY.
  virtual long ioctl(unsigned long request, void* arg) noexcept;
  // fstat into a kernel-side copy; default: an anonymous inode (0600).
  virtual long fstat(struct stat* st) noexcept;
  // Linux setfl's per-file parts.  anon_inode: the inode is the kernel's
  // anonymous one (owned by root: O_NOATIME needs root; lseek answers 0);
  // has_fasync: O_ASYNC is kept (pipes and sockets); direct_io: O_DIRECT is
  // accepted (pipes).  setfl_hook: called with the old and new flags before
  // they change; a negative errno refuses the change.
  virtual bool anon_inode() const noexcept { return true; }
  virtual bool has_fasync() const noexcept { return false; }
  virtual bool direct_io() const noexcept { return false; }
  virtual long setfl_hook(int /*old_flags*/, int /*new_flags*/) noexcept { return 0; }
  // F_GETPIPE_SZ / F_SETPIPE_SZ: -EBADF on anything but a pipe.
  virtual long pipe_size(int cmd, unsigned long arg) noexcept;
  // The fdinfo lines after the four common ones (f_op->show_fdinfo).
  virtual void show_fdinfo(std::string& /*out*/) noexcept {}
  // Kernel descriptors a poll() sleeper must also wait on (POLLIN) to learn
  // of this file's readiness (an instance watching kernel descriptors);
  // fills out[0..2), returns how many.  Takes the file's wq lock.
  virtual int sleep_fds(struct pollfd* /*out*/) noexcept { return 0; }
  // A pipe end or a socket of a pair: fills *out and returns true.
  virtual bool stream_state(StreamState* /*out*/) noexcept { return false; }
  // A socket of a pair: copies the options the program set on it onto
  // kernel socket kfd (the preload's conversion at fork).
  virtual void carry_options(int /*kfd*/) noexcept {}
  // A new kernel descriptor (close-on-exec) that is this file for the
  // kernel, for the preload to put in its place when the program hands it
  // to a kernel interface; -EINVAL for a file that has none (a timerfd
  // has its kernel timer).
  virtual int kernel_form() noexcept { return -EINVAL; }

  // Splice, tee, vmsplice, sendfile (fs/splice.c; core/splice.h).  The C
  // API checks the arguments in Linux's order, then asks these.  Moves go
  // through one bounce buffer of core::kSpliceChunk bytes.
  // get_pipe_info: a pipe end (ESPIPE for an offset, "one side must be a
  // pipe"), and the pipe both ends share (splicing to self is EINVAL).
  virtual bool is_pipe() const noexcept { return false; }
  virtual const void* pipe_id() const noexcept { return nullptr; }
  // ->splice_write: this file as a destination (a pipe's write end, a
  // socket), or nullptr (Linux: EINVAL).
  virtual SpliceSink* splice_sink() noexcept { return nullptr; }
  // ->splice_read, or the pipe side of a splice out of a pipe: moves up to
  // len bytes (> 0) into `to`; nonblock: SPLICE_F_NONBLOCK or an O_NONBLOCK
  // the call adds.  Bytes `to` does not take stay here.  -EINVAL.
  virtual long splice_read(SpliceSink& to, size_t len, bool nonblock) noexcept;
  // splice from a kernel descriptor (a kernel pipe, file or socket; at
  // *pos when pos is set) into this file, and sendfile.  -EINVAL.
  virtual long splice_from_kernel(int fd, long long* pos, size_t len, bool nonblock) noexcept;
  // tee out of this pipe into `to` (a pipe), consuming nothing.  -EINVAL.
  virtual long tee(SpliceSink& to, size_t len, bool nonblock) noexcept;
  // vmsplice: into this pipe from the vector (write end) or out of it into
  // the vector (read end); total > 0, the vector readable.  -EBADF.
  virtual long vmsplice(const struct iovec* iov, int iovcnt, size_t total, bool nonblock) noexcept;

  // Socket operations (sock_from_file: is_socket()).  Every default is
  // -ENOTSOCK; the C API checks is_socket() first in Linux's order.
  virtual bool is_socket() const noexcept { return false; }
  // A uepoll AF_UNIX socket's in-flight accounting (objects/unix_gc.h,
  // Linux unix_get_socket), or nullptr.
  virtual objects::UnixGcNode* unix_gc_node() noexcept { return nullptr; }
  virtual int shutdown(int how) noexcept;
  virtual long bind(const struct sockaddr* addr, socklen_t len) noexcept;
  virtual long listen(int backlog) noexcept;
  // Returns a new descriptor; flags: SOCK_NONBLOCK | SOCK_CLOEXEC.
  virtual long accept4(struct sockaddr* addr, socklen_t* len, int flags) noexcept;
  virtual long connect(const struct sockaddr* addr, socklen_t len) noexcept;
  // msg (and its iovec array) is readable; flags are the call's MSG_*.
  virtual long sendmsg(const struct msghdr* msg, int flags) noexcept;
  virtual long recvmsg(struct msghdr* msg, int flags) noexcept;
  // A receive of zero bytes takes a whole message (datagram and seqpacket
  // sockets); otherwise recv(fd, buf, 0, flags) waits for data and takes
  // none (capi/socket_api.cpp then peeks one byte instead).
  virtual bool zero_recv_takes_message() const noexcept { return false; }
  virtual long getsockopt(int level, int name, void* val, socklen_t* len) noexcept;
  virtual long setsockopt(int level, int name, const void* val, socklen_t len) noexcept;
  virtual long getsockname(struct sockaddr* addr, socklen_t* len) noexcept;
  virtual long getpeername(struct sockaddr* addr, socklen_t* len) noexcept;

  // ---- locks: flock(2) and fcntl's record locks (core/file_locks.cpp) --
  // The kernel descriptor that stands in for this open file description in
  // lock calls (flock; F_GETLK, F_SETLK, F_SETLKW and their F_OFD_ forms),
  // so that the kernel keeps the locks with Linux's semantics: conflicts
  // between open file descriptions of one inode, blocking, EINTR and
  // SA_RESTART, l_pid, and their release with the file.  One of uepoll's
  // own descriptors (core/own_fds.h), made at the first lock call and
  // closed when the file is released (the kernel then drops its locks, as
  // Linux's __fput does).  Its inode is shared as the object's is on Linux:
  // every eventfd, epoll instance and timerfd shares the kernel's one
  // anonymous inode (a kernel eventfd stands in), the two ends of a pipe
  // share one (the ends of one kernel pipe, objects/pipe.h), and each
  // socket has its own (a kernel socket).  It is held by an OwnSlot
  // (core/own_slot.h), so that a program's dup2 onto its number moves it,
  // until a record lock is taken through it (keep_lock_fd).  The slot, or
  // nullptr with -errno in *err.
  virtual OwnSlot* lock_slot(long* err) noexcept;
  // A POSIX record lock (F_SETLK, F_SETLKW) was set through the lock
  // descriptor: it stays at its number from now on, since closing any of
  // the process's descriptors of its inode (the program's dup2 over the
  // old number ends a move) drops the process's record locks there.
  virtual void keep_lock_fd() noexcept;
  // A descriptor of the program's for this file was closed: Linux's
  // filp_close drops the process's POSIX record locks on the inode
  // (locks_remove_posix), here one F_UNLCK of the whole file on the lock
  // descriptor, if one was made.  A system call: no uepoll lock held.
  void close_posix_locks() noexcept;
  // /proc/self/fdinfo of the lock descriptor, NUL-terminated in buf[0..len)
  // (its "lock:" lines are the locks held through this open file
  // description): the length, 0 if none was made, or -errno.  System
  // calls: no uepoll lock held.
  long lock_fdinfo(char* buf, size_t len) noexcept;

  // Number of epoll items currently queued on wq_.  Written only under
  // wq_'s lock (add_watcher_locked / remove_watcher_locked: a plain
  // load+store, no locked instruction); read without it by the release
  // fast path (after the last put's acq_rel) and by Instance::add (after an
  // acquiring read of watch_hold, see there).
  std::atomic<int> watchers{0};
  void add_watcher_locked() noexcept {
    watchers.store(watchers.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
  void remove_watcher_locked() noexcept {
    watchers.store(watchers.load(std::memory_order_relaxed) - 1, std::memory_order_relaxed);
  }

 private:
  std::atomic<int> owner_{0};  // next to watchers: fills the padding before wq_
  // Relaxed, like owner_: each is one fcntl's word, read whole when a
  // signal is sent; Linux reads f_owner under its lock but a racing
  // F_SETOWN may equally land before or after the signal.
  std::atomic<bool> owner_tid_{false};
  std::atomic<int> sigio_sig_{0};
  std::atomic<int> fasync_fd_{-1};

 protected:
  // Object teardown after the last reference; no uepoll lock held.
  virtual void on_release() noexcept {}
  // The lock descriptor's slot if one was made, else nullptr (pipes: their
  // kernel pipe's end, objects/pipe.h).
  virtual OwnSlot* made_lock_slot() const noexcept { return lock_.made(); }
  // Called last by put(): frees the memory after a grace period.  An
  // instance overrides it to wait for the items that still point at it.
  virtual void dispose() noexcept { retire_memory(); }
  // Hands the memory to core/reclaim.h (freed after a grace period).
  void retire_memory() noexcept;
  // Closes lock_slot()'s descriptor, if made (put(), after on_release()).
  void release_lock_fd() noexcept;
  // For kinds whose poll() may run unpinned (see poll_unpinned_ok); set by
  // the constructor, before the file is published.
  void set_poll_unpinned() noexcept { poll_unpinned_ = true; }
  // One ->write_iter over the whole vector (pipes, sockets): gathered
  // through a bounce buffer in chunks of at most 1 MiB into write().
  ssize_t write_gathered(const struct iovec* iov, int iovcnt, size_t total) noexcept;

 private:
  static void free_retired(reclaim::Retired* r) noexcept;
  // A new kernel descriptor for lock_slot() (not yet parked), or -errno.
  int make_lock_fd() noexcept;
  // put()'s slow path: the last reference is gone; releases the file.
  void release_last() noexcept;

  WaitQueue wq_;
  std::atomic<long> refs_{1};
  std::atomic<int> status_flags_;
  const FileKind kind_;
  bool poll_unpinned_ = false;  // written by the constructor only
  const uint64_t id_;
  // lock_slot()'s descriptor, made by the first lock call; closed by put()
  // after on_release(), when no call holds the file any more.
  LazyOwnSlot lock_;
  // keep_lock_fd() pinned lock_ (once).
  std::atomic<bool> lock_kept_{false};
  reclaim::Retired retired_;
};

}  // namespace uepoll::core
