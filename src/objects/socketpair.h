// socketpair.h - the uepoll AF_UNIX SOCK_STREAM socket pair (Linux
// net/unix/af_unix.c: unix_socketpair, unix_stream_sendmsg,
// unix_stream_read_generic, unix_poll, unix_shutdown, unix_release_sock,
// unix_write_space; net/core/sock.c: sock_alloc_send_pskb, sock_def_readable,
// sock_def_wakeup).
//
// What it owns.  UnixConn holds both sockets' state, indexed 0/1: each side's
// receive queue of skbs (the bytes its peer wrote), its out-of-band skb
// (MSG_OOB, socketpair_oob.cpp), sk_shutdown bits, sk_err and
// sk_wmem_alloc (the truesize of this side's skbs still queued at the
// peer).  The read side is socketpair_read.cpp.  Flow control is Linux's, byte for byte: a write is cut into skbs of
// at most (sk_sndbuf >> 1) - 64 bytes, capped at SKB_MAX_HEAD(0) +
// UNIX_SKB_FRAGS_SZ (36544), each skb is charged the truesize Linux charges
// on x86-64 (sk_buff 256 + kmalloc'd head + page-aligned frags), a new skb
// is allowed while wmem_alloc < sk_sndbuf (212992, net.core.wmem_default,
// until SO_SNDBUF sets it: objects/unix_sockopt.h), and the socket is
// writable (EPOLLOUT) when 4 * wmem_alloc <= sk_sndbuf.
// So the counts a program observes (278 one-byte writes, 44 writes of 4096
// bytes, EPOLLOUT back after draining to a quarter) are Linux's.
//
// Locks.  UnixConn::mu_ (a SpinLock; Linux's unix_state_lock plus the
// receive-queue lock of both sockets) guards everything in UnixConn.  It is
// a leaf taken with at most one wait-queue lock (level 11) held (block_on's
// op); wakeups are issued after it is released, each under the target
// socket's own wq lock.  The peer File is reached through an atomic pointer
// that its on_release() clears, read inside a reclaim::ReadGuard.
//
// Wakeups (observable through EPOLLET), as Linux issues them:
//   * each skb queued wakes the receiver with EPOLLIN|EPOLLPRI|EPOLLRDNORM|
//     EPOLLRDBAND (sock_def_readable);
//   * each skb consumed (or purged) wakes its writer with EPOLLOUT|
//     EPOLLWRNORM|EPOLLWRBAND if the writer is then writable
//     (sock_wfree -> unix_write_space);
//   * shutdown() wakes both sockets, close wakes the peer, with key 0 and
//     every waiter (sock_def_wakeup: wake_up_interruptible_all).
#pragma once

#include "core/file.h"
#include "core/splice.h"
#include "core/mutex.h"
#include "core/spinlock.h"
#include "objects/unix_common.h"
#include "objects/unix_gc.h"
#include "objects/unix_scm.h"
#include "objects/unix_sockopt.h"

#include <atomic>
#include <cstdint>

namespace uepoll::objects {

// Linux value on x86-64 (kUnixSndBuf: objects/unix_common.h).
inline constexpr uint32_t kUnixMaxSkb = 36544;     // SKB_MAX_HEAD(0) + UNIX_SKB_FRAGS_SZ
// sk_buff truesize charged for an skb carrying `size` bytes of a stream write.
uint32_t unix_skb_truesize(uint32_t size) noexcept;

class UnixSocket;

class UnixConn {
 public:
  UnixConn() noexcept = default;
  ~UnixConn();
  UnixConn(const UnixConn&) = delete;
  UnixConn& operator=(const UnixConn&) = delete;

 private:
  friend class UnixSocket;
  friend struct UnixSideOpts<UnixConn>;
  friend int make_socketpair(int status_flags, int out[2]) noexcept;

  struct Skb {
    Skb* next;
    uint32_t len;       // bytes carried
    uint32_t consumed;  // bytes already read (UNIXCB(skb).consumed)
    uint32_t truesize;  // charged to the writer's wmem
    ScmPayload* scm;    // credentials and files sent with these bytes, or nullptr
    char data[];        // NOLINT: flexible array (GNU extension in C++)
  };
  enum : uint8_t { kRcvShutdown = 1, kSendShutdown = 2, kShutdownMask = 3 };
  struct Side {
    Skb* head = nullptr;  // receive queue, FIFO
    Skb* tail = nullptr;
    uint8_t shutdown = 0;  // sk_shutdown
    int err = 0;           // sk_err (positive errno)
    long wmem = 0;         // sk_wmem_alloc minus its base reference
    bool dead = false;     // released
    bool passcred = false; // SO_PASSCRED
    bool passpidfd = false; // SO_PASSPIDFD
    bool urginline = false; // SO_OOBINLINE
    // u->oob_skb: the skb of the out-of-band byte not yet read (queued),
    // or nullptr.  A byte read with MSG_OOB leaves its skb queued with
    // nothing left in it, as Linux does: a read stops there, SIOCATMARK
    // counts it, poll says EPOLLIN while it is at the head.
    Skb* oob = nullptr;
    int peek_off = -1;     // sk_peek_off (SO_PEEK_OFF; -1: off)
    long sndbuf = kUnixSndBuf;  // sk_sndbuf (SO_SNDBUF, through the socket's UnixOpts)
    long rcvbuf = kUnixSndBuf;  // sk_rcvbuf: read back only
  };

  void put() noexcept;
  // Wakes socket i's queue; no lock held.  nr_exclusive 0 = all.
  void wake(int i, uint32_t key, int nr_exclusive = 1) noexcept;
  // Linux sk_wake_async(sk_i, how, reason): socket i's owner signalled if
  // it set O_ASYNC (File::kill_fasync).  kWakeWaitd: not while a reader
  // sleeps in recv on it (SOCKWQ_ASYNC_WAITDATA); kWakeSpace: only if a
  // send or poll found no room since (SOCKWQ_ASYNC_NOSPACE, cleared).  No
  // lock held (a system call).
  enum WakeHow { kWakeWaitd, kWakeSpace };
  void fasync(int i, WakeHow how, int reason) noexcept;
  // Linux unix_write_space for socket i, once room came back: the wakeup
  // with the write-space key, then fasync(kWakeSpace, POLL_OUT).  No lock
  // held.
  void write_space(int i) noexcept;
  // Frees a list of skbs and releases the files they carry (no lock held).
  static void free_list(Skb* s) noexcept;
  // Takes skb (after prev; nullptr: skb is the head) off side s's queue
  // and charges its truesize back to w, the side that wrote it.  Returns
  // true if that leaves w writable (unix_write_space).  mu_ held.
  static bool unlink(Side& s, Side& w, Skb* prev, Skb* skb) noexcept;
  // Linux sk_send_sigurg(sk_i): SIGURG to socket i's owner, and with
  // O_ASYNC and F_SETSIG that signal for POLL_PRI (File::send_sigurg).  No
  // lock held.
  void sigurg(int i) noexcept;

  core::SpinLock mu_{core::lock_class::kUnixConn};  // leaf (14); guards side_
  Side side_[2] UEP_GUARDED_BY(mu_);
  std::atomic<int> refs_{2};   // one per socket
  std::atomic<core::File*> file_[2] = {nullptr, nullptr};  // cleared on release
  // SOCKWQ_ASYNC_WAITDATA: readers of socket i asleep in recv.  Relaxed: a
  // signal racing a reader falling asleep may or may not be sent, as on Linux.
  std::atomic<int> waitdata_[2] = {0, 0};
  // SOCKWQ_ASYNC_NOSPACE of socket i (set by a send without room or a poll
  // that found it unwritable; taken by the next write-space signal).
  std::atomic<bool> nospace_[2] = {false, false};
  struct ucred peercred_ = {};  // SO_PEERCRED of both ends: the creator's pid, euid, egid (immutable)
};

class UnixSocket final : public core::File, public core::SpliceSink, public UnixGcNode {
 public:
  // In-flight accounting and the collection's view of our receive queue
  // (objects/unix_gc.h; called with the GC mutex held, take mu_).
  UnixGcNode* unix_gc_node() noexcept override { return this; }
  void gc_scan(void (*visit)(UnixGcNode*, void*), void* arg) noexcept override;
  int gc_detach(bool (*is_garbage)(UnixGcNode*), ScmPayload** out, int room) noexcept override;
  core::File* gc_file() noexcept override { return this; }
  UnixSocket(UnixConn* c, int index, int status_flags) noexcept;

  uint32_t poll(int depth) noexcept override;
  // count 0: 0.  Returns queued bytes (across skbs) up to count; when empty:
  // a pending error (-ECONNRESET once, after the peer closed with unread
  // data), 0 after RCV_SHUTDOWN, else -EAGAIN or sleeps (-EINTR).
  ssize_t read(void* buf, size_t count) noexcept override { return recv(buf, count, false); }
  // read(), or with `peek` (MSG_PEEK) the same bytes left queued.  Files
  // sent with the bytes are closed (a receive with no control buffer).
  ssize_t recv(void* buf, size_t count, bool peek) noexcept;
  // SEND_SHUTDOWN: -EPIPE + SIGPIPE.  Peer gone or shut for reading while
  // sending: what was sent, else -EPIPE + SIGPIPE.  Full: partial count,
  // -EAGAIN, or sleeps until writable.
  ssize_t write(const void* buf, size_t count) noexcept override { return write_scm(buf, count, nullptr); }
  // write() with the credentials and files of scm (nullable): the files go
  // with the first skb, explicit credentials with each (unix_scm_to_skb),
  // the sender's when SO_PASSCRED is on at either end (maybe_add_creds).
  // With `oob` (MSG_OOB; count >= 1) the last byte goes alone in an skb
  // of its own that becomes the peer's out-of-band byte (queue_oob: a
  // peer gone or shut for reading is -EPIPE there without SIGPIPE, and
  // the peer's owner gets SIGURG).
  ssize_t write_scm(const void* buf, size_t count, ScmPayload* scm, bool oob = false) noexcept;
  // how outside SHUT_RD..SHUT_RDWR: -EINVAL.
  int shutdown(int how) noexcept override;

  // The socket calls of a connected, unnamed AF_UNIX stream socket
  // (socketpair_calls.cpp; Linux unix_stream_ops): bind EOPNOTSUPP (a
  // deviation), listen and accept EINVAL, connect EISCONN; sendmsg
  // (MSG_DONTWAIT, MSG_NOSIGNAL; SCM_RIGHTS and SCM_CREDENTIALS, a name is
  // EISCONN), recvmsg (MSG_PEEK, MSG_WAITALL, MSG_DONTWAIT,
  // MSG_CMSG_CLOEXEC), the socket options (objects/unix_sockopt.h), unnamed
  // addresses.
  bool is_socket() const noexcept override { return true; }
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
  // As a file: one gathered write_iter, SIOCINQ/SIOCOUTQ, fstat S_IFSOCK
  // (an inode of its own), O_ASYNC kept, "scm_fds: N" in fdinfo (files
  // in flight in this socket's receive queue).
  ssize_t write_iter(const struct iovec* iov, int iovcnt, size_t total) noexcept override {
    return write_gathered(iov, iovcnt, total);
  }
  long ioctl(unsigned long request, void* arg) noexcept override;
  long fstat(struct stat* st) noexcept override;
  bool anon_inode() const noexcept override { return false; }
  bool has_fasync() const noexcept override { return true; }
  void show_fdinfo(std::string& out) noexcept override;
  bool stream_state(core::StreamState* out) noexcept override;
  void carry_options(int kfd) noexcept override { unix_carry_opts(opts_, kfd); }
  // Splice (Linux sock_splice_write, unix_stream_splice_read).  As a sink:
  // no room to wait for, push() is write() (its O_NONBLOCK, SIGPIPE).
  // splice_read into a pipe: waits as a MSG_PEEK receive (MSG_DONTWAIT for
  // nonblock), then, holding iolock_, copies up to len bytes (one bounce
  // buffer) and consumes what the pipe took.  splice_from_kernel
  // (socketpair_splice.cpp): sendfile from a regular file or block device
  // at *pos or its position (each chunk written with write()), or a splice
  // from a kernel pipe (at most one skb's bytes looked at with tee,
  // written with write(), and as many consumed as it took); no other
  // kernel file reaches a socket.
  core::SpliceSink* splice_sink() noexcept override { return this; }
  long wait_room(bool) noexcept override { return 0; }
  ssize_t push(const char* buf, size_t n) noexcept override { return write(buf, n); }
  const void* pipe_id() const noexcept override { return nullptr; }
  long splice_read(core::SpliceSink& to, size_t len, bool nonblock) noexcept override;
  long splice_from_kernel(int fd, long long* pos, size_t len, bool nonblock) noexcept override;
  long splice_from_kernel_pipe(int fd, size_t len, bool nonblock, char* bounce) noexcept;
  // getsockopt(SO_ERROR): the pending error, consumed (sock_error()).
  int take_error() noexcept;
  // ioctl SIOCINQ (FIONREAD): unread bytes queued; SIOCOUTQ (TIOCOUTQ):
  // this socket's sk_wmem_alloc (truesize of its skbs not yet read).
  long inq() noexcept;
  long outq() noexcept;
  // This side's sk_shutdown bits (RCV_SHUTDOWN 1, SEND_SHUTDOWN 2, as
  // Linux's), for the preload's conversion at fork.  Takes mu_ (leaf).
  int shutdown_bits() noexcept;
  bool passcred() noexcept;
  // SO_PASSCRED and SO_PASSPIDFD, as a receive asks for them.
  ScmWants scm_wants() noexcept;
  // After a set of SO_PASSCRED, SO_PASSPIDFD or SO_OOBINLINE (`name`),
  // from the option store into this side's state.
  void take_side_option(int name) noexcept;
  const UnixOpts& opts() const noexcept { return opts_; }
  // The most bytes one skb of a write carries at the current SO_SNDBUF.
  uint32_t skb_size_cap() noexcept;

 protected:
  void on_release() noexcept override;

 private:
  struct ReadPlan;
  // Consumes up to count bytes of our queue into plan under mu_; returns
  // the count, -EFAULT, a pending error, 0 after RCV_SHUTDOWN, or -EAGAIN.
  // With `peek` nothing is consumed: the plan names the bytes to copy.
  // `scm` gets the control state of what was taken (ScmRecv::glue/take:
  // the take stops before bytes it may not merge and after bytes that
  // carried files, and then sets *stop).
  // A MSG_PEEK take starts SO_PEEK_OFF bytes in and moves it on; a splice's
  // internal peek (use_off false) does neither.  A take that finds
  // nothing names the queue's tail in plan->last (what a wait compares).
  // A movable call (core/handover.h) on a pair being handed over takes
  // nothing: -EINTR, with the deadline's time left noted, unless
  // `may_leave` is off (the second half of a splice, whose first half ran).
  struct TakeMode {
    bool use_off = true;
    bool may_leave = true;
    const timespec* deadline = nullptr;
  };
  long take(size_t count, bool fault, bool peek, ReadPlan* plan, int* write_space_wakes, ScmRecv* scm,
            bool* stop, TakeMode mode) noexcept;
  // take()'s MSG_PEEK walk over side s (ours), with conn_->mu_ held.
  // -EAGAIN when `skip` (the peek offset) passes every queued byte.
  long peek_locked(UnixConn::Side& s, size_t count, size_t skip, bool fault, ReadPlan* plan, ScmRecv* scm,
                   bool* stop) noexcept;
  static const ScmPayload& scm_of(const UnixConn::Skb* skb) noexcept;
  static UnixConn::Skb* new_skb(uint32_t size, ScmPayload* scm, bool first, bool passcred) noexcept;
  // recv() into scm's receive: what one round of a blocking receive
  // returns (sleeping until the deadline, nullptr for none; `restart`: an
  // SA_RESTART handler lets it sleep on); *stop as take() (a MSG_WAITALL
  // receive ends there).
  long recv_scm(char* buf, size_t count, bool peek, ScmRecv* scm, bool* stop, const timespec* deadline,
                bool restart) noexcept;
  // A whole receive (unix_stream_read_generic): rounds of recv_scm until
  // `target` bytes (MSG_WAITALL: all; else min(SO_RCVLOWAT, count)), EOF,
  // an error, a signal or SO_RCVTIMEO after some data, or a stop.
  long recv_target(char* buf, size_t count, bool peek, bool waitall, ScmRecv* scm) noexcept;
  // One stream send over a gathered vector (unix_stream_sendmsg), one
  // stream receive (unix_stream_recvmsg).
  long send_iov(const struct iovec* iov, size_t n, int flags, ScmPayload* scm) noexcept;
  long recv_buf(char* buf, size_t len, int flags, ScmRecv* scm) noexcept;
  // Out-of-band data (socketpair_oob.cpp; Linux CONFIG_AF_UNIX_OOB).
  // recv_urg: a receive with MSG_OOB (unix_stream_recv_urg): the pending
  // out-of-band byte, without waiting; -EINVAL with none or SO_OOBINLINE.
  // at_mark: SIOCATMARK.  manage_oob_locked: Linux manage_oob for the
  // skb at the head of our queue s (w: the writer's side), before a read
  // takes from it (`copied`: bytes this read took already); drops a
  // spent out-of-band skb, or the unread byte a read passes (not
  // SO_OOBINLINE), into plan; called with conn_->mu_ held.
  long recv_urg(struct msghdr* msg, int flags) noexcept;
  int at_mark() noexcept;
  enum class OobStep { kRead, kSkipped, kStop };
  OobStep manage_oob_locked(UnixConn::Side& s, UnixConn::Side& w, UnixConn::Skb* skb, bool copied,
                            ReadPlan* plan, int* write_space_wakes) noexcept;
  // The first skb a MSG_PEEK read looks at from the head (spent
  // out-of-band skbs and an unread out-of-band byte passed over).
  static UnixConn::Skb* oob_peek_start(const UnixConn::Side& s) noexcept;

  UnixConn* const conn_;
  const int me_;  // 0 or 1; the peer is 1 - me_
  core::Mutex iolock_{core::lock_class::kUnixIolock};  // Linux u->iolock: readers, one at a time
  UnixOpts opts_;  // setsockopt's twin, timeouts, SO_RCVLOWAT
};

// Creates a connected pair and installs both.  status_flags: O_RDWR plus
// O_NONBLOCK for SOCK_NONBLOCK.  Returns 0 and fills out, or -ENOMEM /
// -EMFILE.
int make_socketpair(int status_flags, int out[2]) noexcept;

}  // namespace uepoll::objects
