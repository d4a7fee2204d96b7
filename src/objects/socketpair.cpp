// socketpair.cpp - UnixConn and UnixSocket (see socketpair.h): the
// connection, poll, the write side, shutdown and release; the read side is
// socketpair_read.cpp, out-of-band data socketpair_oob.cpp.  Mirrors Linux
// net/unix/af_unix.c for SOCK_STREAM pairs.  Locks: a socket's
// iolock_ (10, readers), UnixConn::mu_ (leaf, 14), each socket's wq() (11)
// through core::block_on and for wakeups; never a wake, an allocation or a
// copy of user memory with mu_ held, never two wq locks at once.
#include "objects/socketpair.h"

#include "core/alloc.h"
#include "core/block.h"
#include "core/call_flags.h"
#include "core/sock_timeo.h"
#include "core/lockdep.h"
#include "core/reclaim.h"
#include "fd/table.h"
#include "objects/pipe.h"  // raise_sigpipe
#include "objects/user_ptr.h"

#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <csignal>
#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <string>
#include <unistd.h>

namespace uepoll::objects {

namespace {
using unix_skb::kPage;
constexpr uint32_t kMaxHead = kPage - unix_skb::kSharedInfo;  // SKB_MAX_HEAD(0) = 3776
constexpr uint32_t kReadable = kUnixReadable;
constexpr uint32_t kWriteSpace = kUnixWriteSpace;
static_assert(kUnixMaxSkb == kMaxHead + 32768, "SKB_MAX_HEAD(0) + UNIX_SKB_FRAGS_SZ");
// unix_stream_sendmsg's skb size for a socket of sk_sndbuf `sndbuf`.
uint32_t skb_cap(long sndbuf) {
  const long half = (sndbuf >> 1) - 64;
  return half < static_cast<long>(kUnixMaxSkb) ? static_cast<uint32_t>(half) : kUnixMaxSkb;
}
}  // namespace

uint32_t unix_skb_truesize(uint32_t size) noexcept {
  // unix_stream_sendmsg: data_len = min(size, PAGE_ALIGN(max(0, size - SKB_MAX_HEAD(0)))).
  uint32_t data_len = size > kMaxHead ? unix_skb::align_up(size - kMaxHead, kPage) : 0;
  if (data_len > size) data_len = size;
  return unix_skb::truesize(size - data_len, data_len);
}

// ---- UnixConn ----------------------------------------------------------------

UnixConn::~UnixConn() {
  free_list(side_[0].head);
  free_list(side_[1].head);
}

void UnixConn::free_list(Skb* s) noexcept {
  while (s) {
    Skb* n = s->next;
    if (s->scm) core::destroy(s->scm);  // unix_destruct_scm: its files released
    core::raw_free(s);
    s = n;
  }
}

bool UnixConn::unlink(Side& s, Side& w, Skb* prev, Skb* skb) noexcept {
  (prev ? prev->next : s.head) = skb->next;
  if (s.tail == skb) s.tail = prev;
  skb->next = nullptr;
  w.wmem -= skb->truesize;
  return !w.dead && unix_writable_after_free(w.wmem, w.sndbuf);
}

void UnixConn::put() noexcept {
  if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) core::destroy(this);
}

void UnixConn::wake(int i, uint32_t key, int nr_exclusive) noexcept { unix_wake(file_[i], key, nr_exclusive); }

void UnixConn::write_space(int i) noexcept {
  wake(i, kWriteSpace);
  fasync(i, kWakeSpace, POLL_OUT);
}

void UnixConn::fasync(int i, WakeHow how, int reason) noexcept {
  core::File* f;
  {
    core::reclaim::ReadGuard g;
    f = file_[i].load(std::memory_order_acquire);
    // sk_wake_async_rcu: nothing unless the socket has fasync entries.
    if (!f || !(f->status_flags() & O_ASYNC)) return;
    if (how == kWakeWaitd && waitdata_[i].load(std::memory_order_relaxed) > 0) return;
    if (how == kWakeSpace && !nospace_[i].exchange(false, std::memory_order_relaxed)) return;
    if (!f->tryget()) return;
  }
  f->kill_fasync(reason);
  f->put();
}

// ---- UnixSocket ----------------------------------------------------------------

UnixSocket::UnixSocket(UnixConn* c, int index, int status_flags) noexcept
    : core::File(core::FileKind::kSocket, status_flags), conn_(c), me_(index) {}

uint32_t UnixSocket::poll(int) noexcept {
  UnixConn& c = *conn_;
  core::SpinGuard g(c.mu_);
  const UnixConn::Side& s = c.side_[me_];
  uint32_t mask = 0;
  // Linux unix_poll, in its order.
  if (s.err) mask |= EPOLLERR;
  if (s.shutdown == UnixConn::kShutdownMask) mask |= EPOLLHUP;
  if (s.shutdown & UnixConn::kRcvShutdown) mask |= EPOLLRDHUP | EPOLLIN | EPOLLRDNORM;
  if (s.head) mask |= EPOLLIN | EPOLLRDNORM;
  if (s.oob) mask |= EPOLLPRI;
  // (state == TCP_CLOSE only after our own release: never seen by poll.)
  // "we set writable also when the other side has shut down the connection"
  if (unix_writable(s.wmem, s.sndbuf)) mask |= EPOLLOUT | EPOLLWRNORM | EPOLLWRBAND;
  else c.nospace_[me_].store(true, std::memory_order_relaxed);  // sk_set_bit(SOCKWQ_ASYNC_NOSPACE)
  return mask;
}

// An skb for `size` bytes (data not yet copied) with its control data
// (unix_scm_to_skb: the files with the first skb only, credentials with
// each; maybe_add_creds), or nullptr.
UnixConn::Skb* UnixSocket::new_skb(uint32_t size, ScmPayload* scm, bool first, bool passcred) noexcept {
  auto* skb = static_cast<UnixConn::Skb*>(core::raw_alloc(offsetof(UnixConn::Skb, data) + size));
  if (!skb) return nullptr;
  skb->next = nullptr;
  skb->scm = nullptr;
  skb->len = size;
  skb->consumed = 0;
  skb->truesize = unix_skb_truesize(size);
  const bool files = scm && first && scm->has_files();
  if (files || (scm && scm->creds().set) || passcred) {
    skb->scm = files ? core::create<ScmPayload>(scm->take_files())
                     : core::create<ScmPayload>(scm ? scm->clone_creds() : ScmPayload());
    if (!skb->scm) {
      core::raw_free(skb);
      return nullptr;
    }
    maybe_add_creds(skb->scm, passcred);
  }
  return skb;
}


ssize_t UnixSocket::write_scm(const void* buf, size_t count, ScmPayload* scm, bool oob) noexcept {
  UnixConn& c = *conn_;
  const int peer = 1 - me_;
  c.mu_.lock();
  // A pair being handed over (core/handover.h): checked under the lock
  // that its release's shutdown takes, so that a write made after the
  // conversion closed this pair leaves rather than raise SIGPIPE.
  const bool moving = core::leave_if_handed_over(wq().handed_over());
  const bool send_shut = (c.side_[me_].shutdown & UnixConn::kSendShutdown) != 0;
  c.mu_.unlock();
  if (moving) return -EINTR;
  if (send_shut) {
    raise_sigpipe();
    return -EPIPE;
  }
  const char* src = static_cast<const char*>(buf);
  const size_t plain = oob ? count - 1 : count;  // the bytes before the out-of-band one
  size_t sent = 0;
  long err = 0;
  while (sent < count) {
    const bool urgent = oob && sent == plain;  // queue_oob's skb: one byte
    const size_t want = urgent ? 1 : plain - sent;
    bool passcred = false;  // SO_PASSCRED at either end, as last seen
    long sndbuf = kUnixSndBuf;
    // sock_alloc_send_pskb: sk_err, SEND_SHUTDOWN, then room in sk_sndbuf,
    // waiting at most SO_SNDTIMEO (counted afresh for each skb).
    timespec ts;
    const timespec* dl = core::sock_timeo_deadline(opts_.sndtimeo_ns(), &ts);
    const long room = core::block_loop<true>(wq(), nonblocking(), kWriteSpace, dl, sent == 0 && !dl, [&]() -> long {
      c.mu_.lock();
      if (core::leave_if_handed_over(wq().handed_over(), dl)) {
        c.mu_.unlock();
        return -EINTR;
      }
      UnixConn::Side& s = c.side_[me_];
      passcred = s.passcred || s.passpidfd || c.side_[peer].passcred || c.side_[peer].passpidfd;
      sndbuf = s.sndbuf;
      long res = 0;
      if (s.err) {
        res = -s.err;
        s.err = 0;
      } else if (s.shutdown & UnixConn::kSendShutdown) {
        res = -EPIPE;  // no SIGPIPE on this path (Linux: goto out_err)
      } else if (!(s.wmem + 1 < s.sndbuf)) {
        res = -EAGAIN;
        c.nospace_[me_].store(true, std::memory_order_relaxed);  // sock_alloc_send_pskb
      }
      c.mu_.unlock();
      return res;
    });  // Linux unix_stream_sendmsg: a partial count after any handler
    if (room < 0) {
      err = room;
      break;
    }
    const uint32_t cap = skb_cap(sndbuf);
    const uint32_t size = want < cap ? static_cast<uint32_t>(want) : cap;
    UnixConn::Skb* skb = new_skb(size, scm, sent == 0, passcred);
    if (!skb) {
      err = -ENOBUFS;
      break;
    }
    if (faulting_ptr(src)) {  // skb_copy_datagram_from_iter fails
      UnixConn::free_list(skb);
      err = -EFAULT;
      break;
    }
    std::memcpy(skb->data, src + sent, size);
    c.mu_.lock();
    UnixConn::Side& other = c.side_[peer];
    if (core::leave_if_handed_over(wq().handed_over(), dl)) {  // the rest goes to the kernel pair
      c.mu_.unlock();
      UnixConn::free_list(skb);
      err = -EINTR;
      break;
    }
    if (other.dead || (other.shutdown & UnixConn::kRcvShutdown)) {
      c.mu_.unlock();
      UnixConn::free_list(skb);
      if (!sent && !urgent) raise_sigpipe();  // queue_oob: -EPIPE alone
      err = -EPIPE;
      break;
    }
    c.side_[me_].wmem += skb->truesize;
    if (other.tail)
      other.tail->next = skb;
    else
      other.head = skb;
    other.tail = skb;
    if (urgent) other.oob = skb;  // replaces an older one, which stays as data
    c.mu_.unlock();
    if (urgent) c.sigurg(peer);  // sk_send_sigurg, before sk_data_ready
    c.wake(peer, kReadable);  // other->sk_data_ready(other)
    c.fasync(peer, UnixConn::kWakeWaitd, POLL_IN);
    sent += size;
  }
  return sent ? static_cast<ssize_t>(sent) : err;
}

int UnixSocket::shutdown(int how) noexcept {
  if (how < SHUT_RD || how > SHUT_RDWR) return -EINVAL;
  const uint8_t mode = static_cast<uint8_t>(how + 1);  // SHUT_RD -> RCV_SHUTDOWN ...
  uint8_t peer_mode = 0;
  if (mode & UnixConn::kRcvShutdown) peer_mode |= UnixConn::kSendShutdown;
  if (mode & UnixConn::kSendShutdown) peer_mode |= UnixConn::kRcvShutdown;
  UnixConn& c = *conn_;
  c.mu_.lock();
  c.side_[me_].shutdown |= mode;
  c.mu_.unlock();
  c.wake(me_, 0, 0);  // sk->sk_state_change(sk)
  c.mu_.lock();
  c.side_[1 - me_].shutdown |= peer_mode;
  c.mu_.unlock();
  c.wake(1 - me_, 0, 0);  // other->sk_state_change(other)
  if (peer_mode == UnixConn::kShutdownMask) c.fasync(1 - me_, UnixConn::kWakeWaitd, POLL_HUP);
  else if (peer_mode & UnixConn::kRcvShutdown) c.fasync(1 - me_, UnixConn::kWakeWaitd, POLL_IN);
  return 0;
}

uint32_t UnixSocket::skb_size_cap() noexcept {
  conn_->mu_.lock();
  const long b = conn_->side_[me_].sndbuf;
  conn_->mu_.unlock();
  return skb_cap(b);
}

int UnixSocket::shutdown_bits() noexcept {
  UnixConn& c = *conn_;
  core::SpinGuard g(c.mu_);
  const int bits = c.side_[me_].shutdown;
  return bits;
}

void UnixSocket::on_release() noexcept {
  UnixConn& c = *conn_;
  const int peer = 1 - me_;
  c.mu_.lock();
  UnixConn::Side& s = c.side_[me_];
  UnixConn::Side& p = c.side_[peer];
  s.shutdown = UnixConn::kShutdownMask;
  s.dead = true;
  c.file_[me_].store(nullptr, std::memory_order_release);
  UnixConn::Skb* purge = s.head;
  s.head = s.tail = nullptr;
  s.oob = nullptr;
  if (!p.dead) {
    p.shutdown = UnixConn::kShutdownMask;  // "No more writes"
    if (purge) p.err = ECONNRESET;         // we die with unread data
  }
  int write_space_wakes = 0;
  for (UnixConn::Skb* k = purge; k; k = k->next) {  // the peer wrote these
    p.wmem -= k->truesize;
    if (!p.dead && unix_writable_after_free(p.wmem, p.sndbuf)) ++write_space_wakes;
  }
  c.mu_.unlock();
  c.wake(peer, 0, 0);  // skpair->sk_state_change(skpair)
  c.fasync(peer, UnixConn::kWakeWaitd, POLL_HUP);
  for (int i = 0; i < write_space_wakes; ++i) c.write_space(peer);
  UnixConn::free_list(purge);
  opts_.release();
  c.put();
  unix_gc_maybe();  // unix_release_sock: unix_gc when sockets are in flight
}

void UnixSocket::gc_scan(void (*visit)(UnixGcNode*, void*), void* arg) noexcept {
  UnixConn& c = *conn_;
  core::SpinGuard g(c.mu_);
  unix_gc_scan_queue(c.side_[me_].head, visit, arg);
}

int UnixSocket::gc_detach(bool (*is_garbage)(UnixGcNode*), ScmPayload** out, int room) noexcept {
  UnixConn& c = *conn_;
  core::SpinGuard g(c.mu_);
  const int n = unix_gc_detach_queue(c.side_[me_].head, is_garbage, out, room);
  return n;
}

int make_socketpair(int status_flags, int out[2]) noexcept {
  auto* c = core::create<UnixConn>();
  if (!c) return -ENOMEM;
  c->peercred_ = unix_creator_cred();
  return unix_make_pair<UnixSocket>(c, c->refs_, c->file_, status_flags, out);
}

bool UnixSocket::passcred() noexcept {
  core::SpinGuard g(conn_->mu_);
  const bool on = conn_->side_[me_].passcred;
  return on;
}

ScmWants UnixSocket::scm_wants() noexcept {
  core::SpinGuard g(conn_->mu_);
  const UnixConn::Side& s = conn_->side_[me_];
  return ScmWants{s.passcred, s.passpidfd};
}

void UnixSocket::take_side_option(int name) noexcept {
  if (name != SO_PASSCRED && name != kSoPassPidfd && name != SO_OOBINLINE) return;
  const bool on = opts_.read_int(name) != 0;
  core::SpinGuard g(conn_->mu_);
  UnixConn::Side& s = conn_->side_[me_];
  (name == SO_PASSCRED ? s.passcred : name == kSoPassPidfd ? s.passpidfd : s.urginline) = on;
}

void UnixSocket::show_fdinfo(std::string& out) noexcept {
  long n = 0;  // unix_show_fdinfo: u->scm_stat.nr_fds
  conn_->mu_.lock();
  for (const UnixConn::Skb* skb = conn_->side_[me_].head; skb; skb = skb->next)
    if (skb->scm) n += skb->scm->nfiles();
  conn_->mu_.unlock();
  char line[40];  // snprintf, not std::to_string: its digit table would be exported by the shared library
  std::snprintf(line, sizeof line, "scm_fds: %ld\n", n);
  out += line;
}

int UnixSocket::take_error() noexcept {
  core::SpinGuard g(conn_->mu_);
  const int e = conn_->side_[me_].err;
  conn_->side_[me_].err = 0;
  return e;
}

long UnixSocket::inq() noexcept {
  long n = 0;
  core::SpinGuard g(conn_->mu_);
  for (const UnixConn::Skb* skb = conn_->side_[me_].head; skb; skb = skb->next) n += skb->len - skb->consumed;
  return n;
}

long UnixSocket::outq() noexcept {
  core::SpinGuard g(conn_->mu_);
  const long n = conn_->side_[me_].wmem;
  return n;
}

}  // namespace uepoll::objects
