// unix_dgram.cpp - UnixDgramConn and UnixDgramSocket's queue, poll, send,
// receive, shutdown and release (see unix_dgram.h).  Mirrors Linux
// net/unix/af_unix.c for SOCK_DGRAM and SOCK_SEQPACKET pairs.  Locks: a
// socket's iolock_ (10), UnixDgramConn::mu_ (leaf, 14), each socket's wq()
// (11) through core::block_on and for wakeups; never a wake, an allocation
// or a copy of user memory with mu_ held, never two wq locks at once.
#include "objects/unix_dgram.h"

#include "core/alloc.h"
#include "core/block.h"
#include "core/lockdep.h"
#include "core/reclaim.h"
#include "core/sock_timeo.h"
#include "core/vclock.h"
#include "fd/table.h"
#include "objects/user_ptr.h"

#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>
#include <fcntl.h>
#include <sys/socket.h>

namespace uepoll::objects {

namespace {
constexpr uint32_t kSkbMaxAlloc = 4 * unix_skb::kPage - unix_skb::kSharedInfo;  // SKB_MAX_ALLOC = 16064
constexpr uint32_t kMaxSkbFrags = 17;                                              // MAX_SKB_FRAGS

// unix_dgram_sendmsg: the linear part is at most SKB_MAX_ALLOC, the rest
// (page aligned, at most MAX_SKB_FRAGS pages) goes to frags.
uint32_t dgram_truesize(uint32_t len) {
  uint32_t data_len = 0;
  if (len > kSkbMaxAlloc) {
    data_len = len - kSkbMaxAlloc;
    if (data_len > kMaxSkbFrags * unix_skb::kPage) data_len = kMaxSkbFrags * unix_skb::kPage;
    data_len = unix_skb::align_up(data_len, unix_skb::kPage);
  }
  return unix_skb::truesize(len - data_len, data_len);
}
}  // namespace

// ---- UnixDgramConn ------------------------------------------------------------

UnixDgramConn::~UnixDgramConn() {
  free_list(side_[0].head);
  free_list(side_[1].head);
}

void UnixDgramConn::free_list(Msg* s) noexcept {
  while (s) {
    Msg* n = s->next;
    free_msg(s);
    s = n;
  }
}

void UnixDgramConn::free_msg(Msg* m) noexcept {
  if (m->scm) core::destroy(m->scm);  // unix_destruct_scm: its files released
  core::raw_free(m);
}

void UnixDgramConn::put() noexcept {
  if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) core::destroy(this);
}

void UnixDgramConn::wake(int i, uint32_t key, int nr_exclusive) noexcept { unix_wake(file_[i], key, nr_exclusive); }

UnixDgramConn::Msg* UnixDgramConn::unlink_queue_locked(int i, int* wakes) noexcept {
  mu_.assert_held();
  Side& s = side_[i];
  Side& w = side_[1 - i];  // the writer of this queue
  Msg* list = s.head;
  s.head = s.tail = nullptr;
  s.count = 0;
  for (Msg* m = list; m; m = m->next) {  // skb_queue_purge -> sock_wfree on the writer
    w.wmem -= m->truesize;
    if (!w.dead && unix_writable_after_free(w.wmem, w.sndbuf)) ++*wakes;
  }
  return list;
}

// ---- UnixDgramSocket: poll ---------------------------------------------------

UnixDgramSocket::UnixDgramSocket(UnixDgramConn* c, int index, int status_flags) noexcept
    : core::File(core::FileKind::kSocket, status_flags), conn_(c), me_(index) {}

uint32_t UnixDgramSocket::poll(int) noexcept {
  UnixDgramConn& c = *conn_;
  core::SpinGuard g(c.mu_);
  const UnixDgramConn::Side& s = c.side_[me_];
  uint32_t mask = 0;
  // Linux unix_dgram_poll, in its order.  (A seqpacket socket is
  // TCP_CLOSE only after its own release: never seen here.)
  if (s.err) mask |= EPOLLERR;
  if (s.shutdown & UnixDgramConn::kRcvShutdown) mask |= EPOLLRDHUP | EPOLLIN | EPOLLRDNORM;
  if (s.shutdown == UnixDgramConn::kShutdownMask) mask |= EPOLLHUP;
  if (s.head) mask |= EPOLLIN | EPOLLRDNORM;
  if (unix_writable(s.wmem, s.sndbuf)) mask |= kUnixWriteSpace;
  return mask;
}

// ---- receive -----------------------------------------------------------------

// The message a receive took off the queue (ours to free) or, with
// MSG_PEEK, found at its head (left queued; iolock_ keeps it there).
struct UnixDgramSocket::Taken {
  UnixDgramConn::Msg* msg = nullptr;
  bool owned = false;
  uint32_t skip = 0;                   // a peek's offset into msg (SO_PEEK_OFF)
  int tstamp = 0;                      // the receiver's timestamp option, as take() saw it
  bool tsing = false;                  // and whether SO_TIMESTAMPING adds its message
  UnixDgramConn::Msg* last = nullptr;  // the queue's tail when nothing was found
};

namespace {

// CLOCK_REALTIME now (the virtual clock's under virtual time); lock-free.
int64_t realtime_ns() noexcept {
  timespec now;
  if (!core::vclock::on() || !core::vclock::gettime(CLOCK_REALTIME, &now)) clock_gettime(CLOCK_REALTIME, &now);
  return static_cast<int64_t>(now.tv_sec) * 1000000000 + now.tv_nsec;
}

// __sock_recv_timestamp for SOCK_RCVTSTAMP: the message's send time (or
// now, if it had none: the option came on after it was sent) as the
// option's control message: a timeval for SO_TIMESTAMP_*, a timespec for
// SO_TIMESTAMPNS_* (the _NEW ones 64-bit, as both are here).  With
// `tsing`, SCM_TIMESTAMPING follows: the same time as the software stamp,
// no hardware stamps, _NEW when the timestamp option is (SOCK_TSTAMP_NEW).
void put_timestamp(int type, bool tsing, int64_t stamp, ScmRecv* scm) noexcept {
  const int64_t ns = stamp ? stamp : realtime_ns();
  const bool nano = type == SO_TIMESTAMPNS_OLD || type == SO_TIMESTAMPNS_NEW;
  const int64_t v[2] = {ns / 1000000000, nano ? ns % 1000000000 : ns % 1000000000 / 1000};
  scm->set_timestamp(type, v);
  if (!tsing) return;
  const bool is_new = type == SO_TIMESTAMP_NEW || type == SO_TIMESTAMPNS_NEW;
  const int64_t tss[6] = {ns / 1000000000, ns % 1000000000, 0, 0, 0, 0};
  scm->set_timestamping(is_new ? SO_TIMESTAMPING_NEW : SO_TIMESTAMPING_OLD, tss);
}

}  // namespace

UnixDgramConn::Msg* UnixDgramSocket::peek_at(UnixDgramConn::Msg* head, int peek_off, uint32_t* skip) noexcept {
  long off = peek_off > 0 ? peek_off : 0;
  for (UnixDgramConn::Msg* m = head; m; m = m->next) {
    if (peek_off >= 0 && off >= m->len && (off || m->peeked)) {
      off -= m->len;
      continue;
    }
    if (!m->len) m->peeked = true;  // skb_set_peeked
    *skip = static_cast<uint32_t>(off);
    return m;
  }
  return nullptr;
}

long UnixDgramSocket::take(bool peek, Taken* out, int* wakes, const timespec* deadline) noexcept {
  UnixDgramConn& c = *conn_;
  core::SpinGuard g(c.mu_);
  UnixDgramConn::Side& s = c.side_[me_];
  UnixDgramConn::Side& w = c.side_[1 - me_];
  long r;
  // Under the lock the conversion's drain takes (as a send's queueing).
  if (core::leave_if_handed_over(wq().handed_over(), deadline)) {
    r = -EINTR;
  } else if (s.err) {  // __skb_try_recv_datagram: sock_error() before the queue
    r = -s.err;
    s.err = 0;
  } else if (UnixDgramConn::Msg* m = peek ? peek_at(s.head, s.peek_off, &out->skip) : s.head) {
    out->msg = m;
    out->tstamp = s.tstamp;
    out->tsing = s.tsing;
    if (!peek) {
      s.head = m->next;
      if (!s.head) s.tail = nullptr;
      --s.count;
      m->next = nullptr;
      out->owned = true;
      // consume_skb -> sock_wfree -> unix_write_space on the writer.
      w.wmem -= m->truesize;
      if (!w.dead && unix_writable_after_free(w.wmem, w.sndbuf)) ++*wakes;
    }
    r = 1;
  } else if (c.type_ == SOCK_SEQPACKET && (s.shutdown & UnixDgramConn::kRcvShutdown)) {
    r = 0;  // "Signal EOF on disconnected non-blocking SEQPACKET socket"
  } else {
    r = -EAGAIN;
    out->last = s.tail;
  }
  return r;
}

long UnixDgramSocket::recv_msg(const struct iovec* iov, size_t n, int flags, int* msg_flags, ScmRecv* scm) noexcept {
  UnixDgramConn& c = *conn_;
  const bool peek = (flags & MSG_PEEK) != 0;
  size_t size = 0;
  for (size_t i = 0; i < n; ++i) size += iov[i].iov_len;
  timespec ts;
  const timespec* dl = core::sock_timeo_deadline(opts_.rcvtimeo_ns(), &ts);  // sock_rcvtimeo, once
  for (;;) {
    Taken t;
    int wakes = 0;
    long r;
    {
      core::MutexLock io(iolock_);
      r = take(peek, &t, &wakes, dl);
      if (r == 1) {
        const UnixDgramConn::Msg* m = t.msg;
        const uint32_t skip = t.skip;
        size_t len = m->len - skip;
        if (size < len) {
          len = size;
          *msg_flags |= MSG_TRUNC;
        }
        // skb_copy_datagram_msg: a fault loses the message (already taken).
        core::lockdep_assert_no_spin("a copy to user memory");
        size_t off = 0;
        r = static_cast<long>(len);
        for (size_t i = 0; i < n && off < len; ++i) {
          size_t k = iov[i].iov_len < len - off ? iov[i].iov_len : len - off;
          if (!k) continue;
          if (faulting_ptr(iov[i].iov_base)) {
            r = -EFAULT;
            break;
          }
          std::memcpy(iov[i].iov_base, m->data + skip + off, k);
          off += k;
        }
        if (r >= 0 && scm) {
          // scm_set_cred, then unix_detach_fds (or unix_peek_fds).
          (void)scm->glue(scm_or_none(m->scm), true);
          if (m->scm && peek) {
            (void)scm->peek(*m->scm);
          } else if (m->scm) {
            (void)scm->take(m->scm);
          }
        }
        if (r >= 0 && scm && t.tstamp) put_timestamp(t.tstamp, t.tsing, m->tstamp, scm);
        if (r >= 0) {  // sk_peek_offset_fwd by what a peek copied, _bwd by a message taken
          core::SpinGuard g(c.mu_);
          peek_off_move(&c.side_[me_].peek_off, peek ? static_cast<long>(len) : -static_cast<long>(m->len));
        }
        if (r >= 0 && (flags & MSG_TRUNC)) r = static_cast<long>(m->len - skip);
      }
    }
    for (int i = 0; i < wakes; ++i) c.wake(1 - me_, kUnixWriteSpace);
    if (t.owned) UnixDgramConn::free_msg(t.msg);  // a fault loses its files too
    if (r != -EAGAIN || nonblocking()) return r;
    // __skb_wait_for_more_packets: a message, an error, or RCV_SHUTDOWN
    // ends the wait; a datagram socket then answers 0 at RCV_SHUTDOWN.
    bool shut = false;
    const long w = core::block_loop<true>(wq(), false, EPOLLIN | EPOLLRDNORM, dl, dl == nullptr, [&]() -> long {
      c.mu_.lock();
      const UnixDgramConn::Side& s = c.side_[me_];
      shut = (s.shutdown & UnixDgramConn::kRcvShutdown) != 0;
      const bool ready = s.tail != t.last || s.err || shut;  // more packets than the take saw
      c.mu_.unlock();
      return ready ? 0 : -EAGAIN;
    });
    if (w < 0) return w;
    if (shut) {
      c.mu_.lock();
      const bool empty = !c.side_[me_].head && !c.side_[me_].err;
      c.mu_.unlock();
      if (empty) return 0;
    }
  }
}

ssize_t UnixDgramSocket::read(void* buf, size_t count) noexcept {
  if (count == 0) return 0;  // sock_read_iter: "Match SYS5 behaviour"
  struct iovec iov = {buf, count};
  int msg_flags = 0;
  return recv_msg(&iov, 1, 0, &msg_flags, nullptr);  // files closed (scm_recv_unix without a buffer)
}

// ---- send --------------------------------------------------------------------

long UnixDgramSocket::sndbuf() noexcept {
  core::SpinGuard g(conn_->mu_);
  const long b = conn_->side_[me_].sndbuf;
  return b;
}

long UnixDgramSocket::send_msg(const struct iovec* iov, size_t n, size_t total, ScmPayload* scm) noexcept {
  UnixDgramConn& c = *conn_;
  const int peer = 1 - me_;
  c.mu_.lock();
  const bool connected = c.side_[me_].connected;
  c.mu_.unlock();
  if (!connected) return -ENOTCONN;
  if (total > static_cast<size_t>(sndbuf() - 32)) return -EMSGSIZE;
  const uint32_t len = static_cast<uint32_t>(total);
  const uint32_t truesize = dgram_truesize(len);
  // sock_alloc_send_pskb: sk_err, SEND_SHUTDOWN, then room in sk_sndbuf;
  // the charge is taken with the room (skb_set_owner_w).
  bool passcred = false;  // SO_PASSCRED at either end, read with the room
  timespec ts;
  const timespec* dl = core::sock_timeo_deadline(opts_.sndtimeo_ns(), &ts);  // sock_sndtimeo
  const long room = core::block_loop<true>(wq(), nonblocking(), kUnixWriteSpace, dl, dl == nullptr, [&]() -> long {
    core::SpinGuard g(c.mu_);
    UnixDgramConn::Side& s = c.side_[me_];
    long res = 0;
    if (core::leave_if_handed_over(wq().handed_over(), dl)) {
      res = -EINTR;  // sent again through the kernel pair (core/handover.h)
    } else if (s.err) {
      res = -s.err;
      s.err = 0;
    } else if (s.shutdown & UnixDgramConn::kSendShutdown) {
      res = -EPIPE;
    } else if (s.wmem + 1 < s.sndbuf) {
      s.wmem += truesize;
      // unix_maybe_add_creds: unix_may_passcred at either end.
      passcred = s.passcred || s.passpidfd || c.side_[peer].passcred || c.side_[peer].passpidfd;
    } else {
      res = -EAGAIN;
    }
    return res;
  });
  if (room < 0) return room;
  auto* m = static_cast<UnixDgramConn::Msg*>(core::raw_alloc(offsetof(UnixDgramConn::Msg, data) + (len ? len : 1)));
  long err = m ? 0 : -ENOBUFS;
  if (m) m->scm = nullptr;
  // unix_scm_to_skb, then maybe_add_creds (SO_PASSCRED at either end).
  if (m && ((scm && (scm->has_files() || scm->creds().set)) || passcred)) {
    m->scm = core::create<ScmPayload>(scm ? std::move(*scm) : ScmPayload());
    if (!m->scm)
      err = -ENOMEM;
    else
      maybe_add_creds(m->scm, passcred);
  }
  size_t off = 0;
  for (size_t i = 0; i < n && !err; ++i) {
    if (!iov[i].iov_len) continue;
    if (faulting_ptr(iov[i].iov_base)) {  // skb_copy_datagram_from_iter fails
      err = -EFAULT;
      break;
    }
    std::memcpy(m->data + off, iov[i].iov_base, iov[i].iov_len);
    off += iov[i].iov_len;
  }
  bool refused = false;
  int wakes = 0;
  c.mu_.lock();
  UnixDgramConn::Side& s = c.side_[me_];
  UnixDgramConn::Side& other = c.side_[peer];
  if (!err && core::leave_if_handed_over(wq().handed_over(), dl)) {
    err = -EINTR;  // sent again through the kernel pair (core/handover.h)
  } else if (!err && other.dead) {
    // The peer was released: a datagram socket disconnects (ECONNREFUSED);
    // seqpacket only races with the release here: EPIPE.
    if (c.type_ == SOCK_SEQPACKET) {
      err = -EPIPE;
    } else {
      err = -ECONNREFUSED;
      refused = s.connected;
      s.connected = false;
    }
  } else if (!err && (other.shutdown & UnixDgramConn::kRcvShutdown)) {
    err = -EPIPE;
  }
  if (err) {
    s.wmem -= truesize;  // kfree_skb -> sock_wfree
    if (unix_writable_after_free(s.wmem, s.sndbuf)) ++wakes;
  } else {
    m->next = nullptr;
    m->len = len;
    m->truesize = truesize;
    m->peeked = false;
    m->tstamp = other.tstamp ? realtime_ns() : 0;  // unix_dgram_sendmsg: __net_timestamp
    if (other.tail)
      other.tail->next = m;
    else
      other.head = m;
    other.tail = m;
    ++other.count;
  }
  c.mu_.unlock();
  for (int i = 0; i < wakes; ++i) c.wake(me_, kUnixWriteSpace);
  if (err) {
    if (m) UnixDgramConn::free_msg(m);  // kfree_skb: the files it took are released
    if (refused) {
      c.wake(me_, kUnixWriteSpace);  // unix_dgram_peer_wake_disconnect_wakeup
      disconnect();
    }
    return err;
  }
  c.wake(peer, kUnixReadable);  // other->sk_data_ready(other)
  return static_cast<long>(len);
}

void UnixDgramSocket::disconnect() noexcept {
  UnixDgramConn& c = *conn_;
  const int peer = 1 - me_;
  int wakes = 0;
  UnixDgramConn::Msg* purge;
  bool reset = false;
  {
    core::MutexLock io(iolock_);  // no MSG_PEEK copy is reading our queue
    core::SpinGuard g(c.mu_);
    purge = c.unlink_queue_locked(me_, &wakes);
    UnixDgramConn::Side& p = c.side_[peer];
    if (purge && !p.dead && p.connected) {
      p.err = ECONNRESET;  // "one link of bidirectional dgram pipe is disconnected"
      reset = true;
    }
  }
  for (int i = 0; i < wakes; ++i) c.wake(peer, kUnixWriteSpace);
  if (reset) c.wake(peer, EPOLLERR);  // sk_error_report
  UnixDgramConn::free_list(purge);
}

ssize_t UnixDgramSocket::write(const void* buf, size_t count) noexcept {
  struct iovec iov = {const_cast<void*>(buf), count};
  return send_msg(&iov, 1, count, nullptr);
}

ssize_t UnixDgramSocket::write_iter(const struct iovec* iov, int iovcnt, size_t total) noexcept {
  return send_msg(iov, static_cast<size_t>(iovcnt), total, nullptr);
}

bool UnixDgramSocket::passcred() noexcept {
  core::SpinGuard g(conn_->mu_);
  const bool on = conn_->side_[me_].passcred;
  return on;
}

ScmWants UnixDgramSocket::scm_wants() noexcept {
  core::SpinGuard g(conn_->mu_);
  const UnixDgramConn::Side& s = conn_->side_[me_];
  return ScmWants{s.passcred, s.passpidfd};
}

void UnixDgramSocket::show_fdinfo(std::string& out) noexcept {
  long files = 0;  // unix_show_fdinfo: u->scm_stat.nr_fds, the files queued to us
  conn_->mu_.lock();  // a receive takes a message's files only once it is off the queue
  for (const UnixDgramConn::Msg* m = conn_->side_[me_].head; m; m = m->next)
    if (m->scm) files += m->scm->nfiles();
  conn_->mu_.unlock();
  char line[40];
  std::snprintf(line, sizeof line, "scm_fds: %ld\n", files);
  out += line;
}

// ---- shutdown and release ----------------------------------------------------

int UnixDgramSocket::shutdown(int how) noexcept {
  if (how < SHUT_RD || how > SHUT_RDWR) return -EINVAL;
  const uint8_t mode = static_cast<uint8_t>(how + 1);  // SHUT_RD -> RCV_SHUTDOWN ...
  UnixDgramConn& c = *conn_;
  c.mu_.lock();
  c.side_[me_].shutdown |= mode;
  const bool to_peer = c.type_ == SOCK_SEQPACKET && c.side_[me_].connected;
  c.mu_.unlock();
  c.wake(me_, 0, 0);  // sk->sk_state_change(sk)
  if (!to_peer) return 0;  // a datagram peer is not told
  uint8_t peer_mode = 0;
  if (mode & UnixDgramConn::kRcvShutdown) peer_mode |= UnixDgramConn::kSendShutdown;
  if (mode & UnixDgramConn::kSendShutdown) peer_mode |= UnixDgramConn::kRcvShutdown;
  c.mu_.lock();
  c.side_[1 - me_].shutdown |= peer_mode;
  c.mu_.unlock();
  c.wake(1 - me_, 0, 0);  // other->sk_state_change(other)
  return 0;
}

void UnixDgramSocket::on_release() noexcept {
  UnixDgramConn& c = *conn_;
  const int peer = 1 - me_;
  int wakes = 0;
  c.mu_.lock();
  UnixDgramConn::Side& s = c.side_[me_];
  UnixDgramConn::Side& p = c.side_[peer];
  s.shutdown = UnixDgramConn::kShutdownMask;
  s.dead = true;
  c.file_[me_].store(nullptr, std::memory_order_release);
  const bool tell_peer = c.type_ == SOCK_SEQPACKET && s.connected && !p.dead;
  if (tell_peer) {
    p.shutdown = UnixDgramConn::kShutdownMask;  // "No more writes"
    if (s.head) p.err = ECONNRESET;              // we die with unread messages
  }
  UnixDgramConn::Msg* purge = c.unlink_queue_locked(me_, &wakes);
  c.mu_.unlock();
  if (tell_peer) c.wake(peer, 0, 0);  // skpair->sk_state_change(skpair)
  for (int i = 0; i < wakes; ++i) c.wake(peer, kUnixWriteSpace);
  UnixDgramConn::free_list(purge);
  opts_.release();
  c.put();
  unix_gc_maybe();  // unix_release_sock: unix_gc when sockets are in flight
}

void UnixDgramSocket::gc_scan(void (*visit)(UnixGcNode*, void*), void* arg) noexcept {
  UnixDgramConn& c = *conn_;
  core::SpinGuard g(c.mu_);
  unix_gc_scan_queue(c.side_[me_].head, visit, arg);
}

int UnixDgramSocket::gc_detach(bool (*is_garbage)(UnixGcNode*), ScmPayload** out, int room) noexcept {
  UnixDgramConn& c = *conn_;
  core::SpinGuard g(c.mu_);
  const int n = unix_gc_detach_queue(c.side_[me_].head, is_garbage, out, room);
  return n;
}

int make_dgram_pair(int type, int status_flags, int out[2]) noexcept {
  auto* c = core::create<UnixDgramConn>(type);
  if (!c) return -ENOMEM;
  c->peercred_ = unix_creator_cred();
  return unix_make_pair<UnixDgramSocket>(c, c->refs_, c->file_, status_flags, out);
}

}  // namespace uepoll::objects
