// unix_dgram.h - the uepoll AF_UNIX SOCK_DGRAM and SOCK_SEQPACKET socket
// pairs (Linux net/unix/af_unix.c: unix_socketpair, unix_dgram_sendmsg,
// unix_dgram_recvmsg, unix_dgram_poll, unix_seqpacket_sendmsg/recvmsg,
// unix_shutdown, unix_release_sock, unix_dgram_disconnected; net/core/
// datagram.c: __skb_try_recv_datagram, __skb_wait_for_more_packets).
//
// What it owns.  UnixDgramConn holds both sockets' state, indexed 0/1: each
// side's receive queue of messages (one per send, boundaries kept, zero
// length allowed), sk_shutdown bits, sk_err, sk_wmem_alloc (the truesize of
// this side's messages still queued at the peer), sk_sndbuf/sk_rcvbuf and
// whether it is still connected to its peer (a datagram socket whose peer
// was closed is disconnected by its next send: ECONNREFUSED, then
// ENOTCONN; seqpacket: EPIPE).  Flow control is Linux's for a pair: a send
// larger than sk_sndbuf - 32 is EMSGSIZE; a message is allowed while
// wmem < sk_sndbuf, charged the truesize Linux charges on x86-64 (linear
// part up to SKB_MAX_ALLOC = 16064 bytes, the rest in at most 17 pages);
// writable (EPOLLOUT) when 4 * (wmem + 1) <= sk_sndbuf.  The peer's queue
// length (max_dgram_qlen) does not limit a pair: Linux skips that test when
// the receiver's peer is the sender.
//
// Control data (objects/unix_scm.h) as Linux's unix_dgram_sendmsg and
// __unix_dgram_recvmsg carry it: a message's `scm` payload holds the files
// and credentials it was sent with (null: none); a receive that takes the
// message takes its files (MSG_PEEK: new references), and the receiver's
// SO_PASSCRED decides whether its credentials are written out.  Files of a
// message that is purged, or read by read(), are released.
//
// Locks.  UnixDgramConn::mu_ (a SpinLock, level 14; Linux's unix_state_lock
// plus both receive-queue locks) guards everything in UnixDgramConn.  A
// leaf, taken with at most one wait-queue lock (11) held (block_on's op);
// wakeups are issued after it is released, under the target socket's own
// wq lock.  A socket's iolock_ (10) is held by a receiver from taking a
// message to copying it out (a MSG_PEEK copy reads a message still queued)
// and by a purge of its own queue, never while sleeping.
//
// Wakeups (observable through EPOLLET), as Linux issues them: each message
// queued wakes the receiver (EPOLLIN|EPOLLPRI|EPOLLRDNORM|EPOLLRDBAND); each
// message consumed or purged wakes its writer with EPOLLOUT|EPOLLWRNORM|
// EPOLLWRBAND if the writer is then writable; shutdown() wakes the socket
// (and a seqpacket peer), a seqpacket close wakes the peer, key 0 and every
// waiter; a datagram socket's disconnection wakes itself with EPOLLOUT.
#pragma once

#include "core/file.h"
#include "core/mutex.h"
#include "core/spinlock.h"
#include "objects/unix_common.h"
#include "objects/unix_gc.h"
#include "objects/unix_scm.h"
#include "objects/unix_sockopt.h"

#include <atomic>
#include <cstdint>

namespace uepoll::objects {

class UnixDgramSocket;

class UnixDgramConn {
 public:
  explicit UnixDgramConn(int type) noexcept : type_(type) {}
  ~UnixDgramConn();
  UnixDgramConn(const UnixDgramConn&) = delete;
  UnixDgramConn& operator=(const UnixDgramConn&) = delete;

 private:
  friend class UnixDgramSocket;
  friend struct UnixSideOpts<UnixDgramConn>;
  friend int make_dgram_pair(int type, int status_flags, int out[2]) noexcept;

  struct Msg {
    Msg* next;
    uint32_t len;       // bytes carried
    uint32_t truesize;  // charged to the writer's wmem
    bool peeked;        // skb->peeked: a zero-length message already peeked at
    int64_t tstamp;     // skb->tstamp (CLOCK_REALTIME ns) when the receiver wanted one, else 0
    ScmPayload* scm;    // files and credentials sent with it, or null
    char data[];        // NOLINT: flexible array (GNU extension in C++)
  };
  enum : uint8_t { kRcvShutdown = 1, kSendShutdown = 2, kShutdownMask = 3 };
  struct Side {
    Msg* head = nullptr;  // receive queue, FIFO
    Msg* tail = nullptr;
    uint32_t count = 0;      // messages queued
    uint8_t shutdown = 0;    // sk_shutdown
    int err = 0;             // sk_err (positive errno)
    long wmem = 0;           // sk_wmem_alloc minus its base reference
    long sndbuf = kUnixSndBuf;
    long rcvbuf = kUnixSndBuf;
    int peek_off = -1;       // sk_peek_off (SO_PEEK_OFF; -1: off)
    int tstamp = 0;          // SOCK_RCVTSTAMP: the SO_TIMESTAMP{,NS}_{OLD,NEW} name on, or 0
    bool tsing = false;      // SO_TIMESTAMPING's flags report the software stamp too
    bool connected = true;   // unix_peer(sk) != NULL
    bool passcred = false;   // SO_PASSCRED
    bool passpidfd = false;  // SO_PASSPIDFD
    bool dead = false;       // released
  };

  void put() noexcept;
  // Wakes socket i's queue; no lock held.  nr_exclusive 0 = all.
  void wake(int i, uint32_t key, int nr_exclusive = 1) noexcept;
  // Unlinks side i's whole queue under mu_ (the caller holds it) and
  // refunds the writer's charge; returns the list and adds the writer's
  // write-space wakes to *wakes.
  Msg* unlink_queue_locked(int i, int* wakes) noexcept UEP_REQUIRES(mu_);
  // Free messages and the files they carry: no lock held (a file's last
  // put may run its release).
  static void free_list(Msg* m) noexcept;
  static void free_msg(Msg* m) noexcept;

  core::SpinLock mu_{core::lock_class::kUnixDgramConn};  // leaf (14); guards side_
  Side side_[2] UEP_GUARDED_BY(mu_);
  const int type_;  // SOCK_DGRAM or SOCK_SEQPACKET
  struct ucred peercred_ = {};  // SO_PEERCRED of both ends: the creator's pid, euid, egid (immutable)
  std::atomic<int> refs_{2};  // one per socket
  std::atomic<core::File*> file_[2] = {nullptr, nullptr};  // cleared on release
};

class UnixDgramSocket final : public core::File, public UnixGcNode {
 public:
  // In-flight accounting and the collection's view of our receive queue
  // (objects/unix_gc.h; called with the GC mutex held, take mu_).
  UnixGcNode* unix_gc_node() noexcept override { return this; }
  void gc_scan(void (*visit)(UnixGcNode*, void*), void* arg) noexcept override;
  int gc_detach(bool (*is_garbage)(UnixGcNode*), ScmPayload** out, int room) noexcept override;
  core::File* gc_file() noexcept override { return this; }
  UnixDgramSocket(UnixDgramConn* c, int index, int status_flags) noexcept;

  uint32_t poll(int depth) noexcept override;
  // read/write: recv/send of one message without flags.  read of 0 bytes:
  // 0 (sock_read_iter), nothing taken.
  ssize_t read(void* buf, size_t count) noexcept override;
  ssize_t write(const void* buf, size_t count) noexcept override;
  ssize_t write_iter(const struct iovec* iov, int iovcnt, size_t total) noexcept override;
  int shutdown(int how) noexcept override;

  // The socket calls of a connected, unnamed AF_UNIX datagram or seqpacket
  // socket (unix_dgram.cpp, unix_dgram_calls.cpp; Linux unix_dgram_ops and
  // unix_seqpacket_ops).
  bool is_socket() const noexcept override { return true; }
  bool zero_recv_takes_message() const noexcept override { return true; }
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
  long ioctl(unsigned long request, void* arg) noexcept override;
  long fstat(struct stat* st) noexcept override;
  bool anon_inode() const noexcept override { return false; }
  bool has_fasync() const noexcept override { return true; }
  void show_fdinfo(std::string& out) noexcept override;
  bool stream_state(core::StreamState* out) noexcept override;
  void carry_options(int kfd) noexcept override { unix_carry_opts(opts_, kfd); }

  int type() const noexcept { return conn_->type_; }
  const UnixOpts& opts() const noexcept { return opts_; }

 protected:
  void on_release() noexcept override;

 private:
  struct Taken;
  // One send of `total` bytes gathered from iov (unix_dgram_sendmsg after
  // the address checks), carrying scm's files and credentials (nullable;
  // the message takes the files, released with it on failure).
  long send_msg(const struct iovec* iov, size_t n, size_t total, ScmPayload* scm) noexcept;
  // One receive into iov (unix_dgram_recvmsg): the message's length with
  // MSG_TRUNC in flags, else the bytes copied; *msg_flags gets MSG_TRUNC
  // when the message was longer than the buffer.  `scm` (nullable) gets the
  // message's credentials and files (MSG_PEEK: new references); without
  // it they are released with the message.
  long recv_msg(const struct iovec* iov, size_t n, int flags, int* msg_flags, ScmRecv* scm) noexcept;
  bool passcred() noexcept;
  // SO_PASSCRED and SO_PASSPIDFD, as a receive asks for them.
  ScmWants scm_wants() noexcept;
  // Takes (or with `peek` finds, past SO_PEEK_OFF's bytes) the first
  // message under mu_: 1, or a pending error, 0 (seqpacket after
  // RCV_SHUTDOWN), -EAGAIN (the queue's tail, for a wait, in out->last).
  // A movable call on a pair being handed over (core/handover.h) takes
  // nothing: -EINTR, with the deadline's time left noted.
  long take(bool peek, Taken* out, int* wakes, const timespec* deadline) noexcept;
  // __skb_try_recv_from_queue's MSG_PEEK walk (mu_ held): with an offset in
  // use, whole messages it covers are passed over (a zero-length one once
  // peeked at); the message found and the offset left into it, or null.
  static UnixDgramConn::Msg* peek_at(UnixDgramConn::Msg* head, int peek_off, uint32_t* skip) noexcept;
  // The datagram disconnection (unix_dgram_disconnected after the peer
  // pointer is cleared): purges our queue; the peer gets ECONNRESET if it
  // is alive and still connected to us and there was something to purge.
  void disconnect() noexcept;
  long sndbuf() noexcept;

  UnixDgramConn* const conn_;
  const int me_;  // 0 or 1; the peer is 1 - me_
  core::Mutex iolock_{core::lock_class::kUnixDgramIolock};
  UnixOpts opts_;  // setsockopt's twin, timeouts
};

// Creates a connected pair of `type` (SOCK_DGRAM or SOCK_SEQPACKET) and
// installs both.  status_flags: O_RDWR plus O_NONBLOCK.  Returns 0 and fills
// out, or -ENOMEM / -EMFILE.
int make_dgram_pair(int type, int status_flags, int out[2]) noexcept;

}  // namespace uepoll::objects
