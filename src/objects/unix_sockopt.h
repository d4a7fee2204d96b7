// unix_sockopt.h - the socket options of uepoll's AF_UNIX sockets (stream
// pairs: objects/socketpair.h; datagram and seqpacket pairs:
// objects/unix_dgram.h), as Linux's sk_setsockopt / sk_getsockopt answer
// them for an AF_UNIX socket.
//
// Linux checks, clamps, doubles and stores some sixty options there, several
// behind a capability (SO_SNDBUFFORCE, SO_PRIORITY above 6, SO_MARK...).
// Rather than restate that table, a socket that sets an option, or reads
// one whose value uepoll does not keep, gets a kernel AF_UNIX socket of its
// own type that is never connected: its twin.  Every setsockopt goes to the
// twin first, so its answer (errno and its order, the stored value, the
// privilege checks) is the kernel's; then the options that change what the
// uepoll socket does are taken from the twin:
//
//   SO_SNDBUF, SO_SNDBUFFORCE  the sender's flow control (the socket's)
//   SO_RCVBUF, SO_RCVBUFFORCE  read back only (AF_UNIX never checks it)
//   SO_RCVTIMEO, SO_SNDTIMEO   the deadline of a blocking call (kept here),
//                              which then gives EAGAIN and never restarts
//                              after a signal handler (sock_intr_errno)
//   SO_RCVLOWAT                a stream receive's target (kept here)
//   SO_PASSCRED                credentials with each message (the socket's)
//   SO_TIMESTAMP{,NS}_{OLD,NEW}  a datagram's send time with it (the
//                              datagram socket's; a stream has none, as Linux)
//   SO_TIMESTAMPING_{OLD,NEW}  its software stamp after that one (the same)
//   SO_PASSPIDFD               a pidfd of the sender with each message
//
// SO_PEEK_OFF never reaches the twin: it indexes the socket's queue and
// lives with it (UnixSideOpts).
//
// The twin is made with the first call that needs it and closed with the
// socket; a socket that never sets an option has none.  getsockopt answers
// the options that depend on the connection from the socket itself (the
// caller's switch, then get() here for the peer's name, groups and pidfd);
// everything else is read from the twin.
//
// What is accepted as Linux accepts it but not acted on (documented in
// docs/linux-deviations.md): socket filters (SO_ATTACH_FILTER,
// SO_ATTACH_BPF).
//
// Locks: none of its own.  The socket holds its iolock_ (level 10) around
// set() and the store of what it reads back (Linux: lock_sock), so that two
// setsockopt calls cannot leave the twin and the socket disagreeing.  Only
// system calls on the twin run here.
#pragma once

#include "core/file.h"
#include "core/own_slot.h"
#include "core/sockopt.h"
#include "objects/unix_common.h"

#include <atomic>
#include <climits>
#include <cstdint>
#include <sys/socket.h>

namespace uepoll::objects {

class UnixOpts {
 public:
  UnixOpts() noexcept = default;
  UnixOpts(const UnixOpts&) = delete;
  UnixOpts& operator=(const UnixOpts&) = delete;

  // setsockopt on the twin of a socket of `type` (made if need be: -ENOMEM
  // when no kernel descriptor can be had); on success the timeouts and
  // SO_RCVLOWAT are taken over.  The caller then reads back the options
  // it keeps itself (read_int).
  long set(int type, int level, int name, const void* val, socklen_t len) noexcept;
  // getsockopt of the options the socket does not answer itself: the
  // timeouts and SO_RCVLOWAT without a twin, SO_PEERNAME (sock's peer
  // address), SO_PEERGROUPS and SO_PEERPIDFD (the creating process: both
  // ends of a pair are this one), else the twin's answer.
  long get(int type, core::File& sock, int level, int name, void* val, socklen_t* len) noexcept;
  // The twin's int value of SOL_SOCKET option `name` (after a set()).
  int read_int(int name) const noexcept;
  // The twin's slot, or nullptr when none was made.  Its number is taken
  // through a core::OwnSlot::Use: a program's dup2 onto it moves it.
  core::OwnSlot* twin() const noexcept { return twin_.made(); }
  // Closes the twin (the socket's release).
  void release() noexcept { twin_.release(); }

  // SO_RCVTIMEO / SO_SNDTIMEO (core/sock_timeo.h: 0 none, -1 immediate).
  int64_t rcvtimeo_ns() const noexcept { return rcvtimeo_ns_.load(std::memory_order_relaxed); }
  int64_t sndtimeo_ns() const noexcept { return sndtimeo_ns_.load(std::memory_order_relaxed); }
  // SO_RCVLOWAT (at least 1).
  int rcvlowat() const noexcept { return rcvlowat_.load(std::memory_order_relaxed); }

 private:
  // The twin, made on first use; nullptr with -errno in *err if it cannot be.
  core::OwnSlot* twin_slot(int type, long* err) noexcept;

  core::LazyOwnSlot twin_;
  // Values only, read relaxed by the blocking calls (a call that races a
  // setsockopt sees the old or the new one, as on Linux).
  std::atomic<int64_t> rcvtimeo_ns_{0};
  std::atomic<int64_t> sndtimeo_ns_{0};
  std::atomic<int> rcvlowat_{1};
};

// setsockopt's int argument (sk_setsockopt): -EINVAL for less than an
// int's room, -EFAULT; 0 with the value in *out.
long unix_int_optval(const void* val, socklen_t len, int* out) noexcept;

// sk_peek_offset_fwd (val > 0) and _bwd (val < 0): an offset in use
// (>= 0) moves by val, not below 0.
inline void peek_off_move(int* off, long val) noexcept {
  if (*off < 0) return;
  const long v = *off + val;
  *off = v < 0 ? 0 : v > INT32_MAX ? INT32_MAX : static_cast<int>(v);
}

// The options a pair's socket keeps in its connection's side (Conn:
// UnixConn or UnixDgramConn, whose side_[] has sndbuf, rcvbuf, wmem and
// peek_off under mu_, a leaf): SO_SNDBUF, SO_RCVBUF, SO_PEEK_OFF.
template <class Conn>
struct UnixSideOpts {
  // SO_PEEK_OFF (unix_set_peek_off; the caller holds its iolock_): any int,
  // -1 switches offsets off.
  static long set_peek_off(Conn& c, int me, const void* val, socklen_t len) noexcept {
    int v;
    if (const long e = unix_int_optval(val, len, &v)) return e;
    core::SpinGuard g(c.mu_);
    c.side_[me].peek_off = v;
    return 0;
  }
  static long get_peek_off(Conn& c, int me, void* val, socklen_t* len) noexcept {
    c.mu_.lock();
    const int v = c.side_[me].peek_off;
    c.mu_.unlock();
    return core::put_int_opt(v, val, len);
  }
  // getsockopt of either.
  static long get(Conn& c, int me, int name, void* val, socklen_t* len) noexcept {
    c.mu_.lock();
    const long v = name == SO_SNDBUF ? c.side_[me].sndbuf : c.side_[me].rcvbuf;
    c.mu_.unlock();
    return core::put_int_opt(static_cast<int>(v), val, len);
  }
  // After a successful UnixOpts::set of name: the twin's value taken over;
  // true when SO_SNDBUF left the side writable (sk_write_space is due).
  static bool take(Conn& c, int me, const UnixOpts& o, int name) noexcept {
    const bool snd = name == SO_SNDBUF || name == SO_SNDBUFFORCE;
    if (!snd && name != SO_RCVBUF && name != SO_RCVBUFFORCE) return false;
    const long b = o.read_int(snd ? SO_SNDBUF : SO_RCVBUF);
    core::SpinGuard g(c.mu_);
    (snd ? c.side_[me].sndbuf : c.side_[me].rcvbuf) = b;  // rcvbuf: read back only, AF_UNIX never checks it
    return snd && unix_writable(c.side_[me].wmem, b);
  }
};

// Copies the options a program can have set on uepoll socket ufd (its
// twin's values) onto kernel socket kfd: the preload's conversion of a
// pair at fork.  Nothing when ufd has no twin.
void unix_carry_opts(const UnixOpts& opts, int kfd) noexcept;

}  // namespace uepoll::objects
