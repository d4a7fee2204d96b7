// socketpair.cpp - UnixConn and UnixSocket (see socketpair.h).  Mirrors
// Linux net/unix/af_unix.c for SOCK_STREAM pairs.  Locks: a socket's
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

void UnixConn::put() noexcept {
  if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) core::destroy(this);
}

void UnixConn::wake(int i, uint32_t key, int nr_exclusive) noexcept { unix_wake(file_[i], key, nr_exclusive); }

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
  // (state == TCP_CLOSE only after our own release: never seen by poll.)
  // "we set writable also when the other side has shut down the connection"
  if (unix_writable(s.wmem, s.sndbuf)) mask |= EPOLLOUT | EPOLLWRNORM | EPOLLWRBAND;
  else c.nospace_[me_].store(true, std::memory_order_relaxed);  // sk_set_bit(SOCKWQ_ASYNC_NOSPACE)
  return mask;
}

// What a read consumed under mu_, copied to the caller after dropping it:
// the skbs it finished (taken off the queue, ours), then the part of the
// skb it stopped in (still queued; iolock_ keeps other readers off it, and
// nothing else frees or changes a queued skb's data).  A MSG_PEEK read
// consumes nothing: it copies peek_len bytes from peek_head on, the skbs
// left queued (iolock_ keeps them there; a writer only links a new skb
// after the queue's tail, whose `next` the copy stops before reading).
struct UnixSocket::ReadPlan {
  UnixConn::Skb* done_head = nullptr;  // in queue order
  UnixConn::Skb* done_tail = nullptr;
  uint32_t first_start = 0;  // unread offset of the first finished skb
  UnixConn::Skb* part = nullptr;
  uint32_t part_start = 0;
  uint32_t part_len = 0;
  UnixConn::Skb* peek_head = nullptr;
  uint32_t peek_start = 0;
  size_t peek_len = 0;
  UnixConn::Skb* peek_files = nullptr;  // MSG_PEEK reached this skb's files
  UnixConn::Skb* last = nullptr;        // the queue's tail when nothing was taken

  // Appends a finished skb (unlinked from the queue) read from `start` on.
  void add_done(UnixConn::Skb* skb, uint32_t start) noexcept {
    skb->next = nullptr;
    if (done_tail) {
      done_tail->next = skb;
    } else {
      done_head = skb;
      first_start = start;
    }
    done_tail = skb;
  }

  void copy_out(char* dst) const noexcept {
    if (peek_head) {
      copy_peeked(dst);
      return;
    }
    uint32_t start = first_start;
    for (UnixConn::Skb* k = done_head; k; k = k->next) {
      std::memcpy(dst, k->data + start, k->len - start);
      dst += k->len - start;
      start = 0;
    }
    if (part) std::memcpy(dst, part->data + part_start, part_len);
  }
  void copy_peeked(char* dst) const noexcept {
    size_t left = peek_len;
    uint32_t start = peek_start;
    for (UnixConn::Skb* k = peek_head;; k = k->next) {
      size_t n = k->len - start;
      if (n > left) n = left;
      std::memcpy(dst, k->data + start, n);
      dst += n;
      left -= n;
      start = 0;
      if (!left) break;
    }
  }
};

namespace {
}  // namespace

const ScmPayload& UnixSocket::scm_of(const UnixConn::Skb* skb) noexcept { return scm_or_none(skb->scm); }

// The bytes a read would take, left queued (unix_stream_read_generic's
// MSG_PEEK branch), from `skip` bytes in (sk_peek_offset; whole skbs it
// covers are passed over before any credential check).  The walk goes on past `count` (with
// chunks of 0) to the next files or the end of the queue: a peek reports
// the files of bytes it did not reach, as Linux's does.  s is our side,
// its queue not empty; called with conn_->mu_ held.
long UnixSocket::peek_locked(UnixConn::Side& s, size_t count, size_t skip, bool fault, ReadPlan* plan,
                             ScmRecv* scm, bool* stop) noexcept {
  UnixConn::Skb* first = s.head;
  while (first && skip >= first->len - first->consumed) {
    skip -= first->len - first->consumed;
    first = first->next;
  }
  if (!first) return -EAGAIN;
  if (fault) return -EFAULT;
  long copied = 0;
  plan->peek_head = first;
  plan->peek_start = first->consumed + static_cast<uint32_t>(skip);
  for (UnixConn::Skb* skb = first; skb; skb = skb->next) {
    if (!scm->glue(scm_of(skb), s.passcred || s.passpidfd)) {
      *stop = true;
      break;
    }
    const uint32_t from = skb == first ? plan->peek_start : skb->consumed;
    size_t chunk = skb->len - from;
    if (chunk > count - static_cast<size_t>(copied)) chunk = count - static_cast<size_t>(copied);
    copied += static_cast<long>(chunk);
    if (scm_of(skb).has_files()) {  // unix_peek_fds, then the receive ends
      plan->peek_files = skb;
      *stop = true;
      break;
    }
  }
  plan->peek_len = static_cast<size_t>(copied);
  return copied;
}

long UnixSocket::take(size_t count, bool fault, bool peek, ReadPlan* plan, int* write_space_wakes, ScmRecv* scm,
                      bool* stop, TakeMode mode) noexcept {
  UnixConn& c = *conn_;
  long copied = 0;
  c.mu_.lock();
  // Under the lock the conversion's drain takes: what this call would take
  // is either taken before the drain or drained into the kernel pair.
  if (mode.may_leave && core::leave_if_handed_over(wq().handed_over(), mode.deadline)) {
    c.mu_.unlock();
    return -EINTR;
  }
  const bool use_off = mode.use_off;
  UnixConn::Side& s = c.side_[me_];
  UnixConn::Side& w = c.side_[1 - me_];  // the writer of our queue
  bool reached = peek && s.head;  // an skb was taken from (bytes or not: a count of 0 takes files)
  if (reached) {
    const size_t skip = use_off && s.peek_off > 0 ? static_cast<size_t>(s.peek_off) : 0;
    copied = peek_locked(s, count, skip, fault, plan, scm, stop);
    if (copied == -EAGAIN) {  // the offset is past the queue: as an empty one
      copied = 0;
      reached = false;
    } else if (use_off && copied > 0) {
      peek_off_move(&s.peek_off, copied);  // sk_peek_offset_fwd
    }
  }
  while (UnixConn::Skb* skb = peek ? nullptr : s.head) {
    if (!scm->glue(scm_of(skb), s.passcred || s.passpidfd)) {  // another writer's bytes
      *stop = true;
      break;
    }
    reached = true;
    size_t chunk = skb->len - skb->consumed;
    if (chunk > count - static_cast<size_t>(copied)) chunk = count - static_cast<size_t>(copied);
    if (fault) {  // skb_copy_datagram_msg fails
      if (!copied) copied = -EFAULT;
      break;
    }
    const uint32_t start = skb->consumed;
    copied += static_cast<long>(chunk);
    skb->consumed += static_cast<uint32_t>(chunk);
    // swap(scm.fp, UNIXCB(skb).fp): the files go with the first bytes read.
    const bool files = skb->scm && scm->take(skb->scm);
    if (files) *stop = true;
    if (skb->consumed < skb->len) {
      plan->part = skb;
      plan->part_start = start;
      plan->part_len = static_cast<uint32_t>(chunk);
      break;
    }
    s.head = skb->next;
    if (!s.head) s.tail = nullptr;
    // consume_skb -> sock_wfree -> unix_write_space on the writer.
    w.wmem -= skb->truesize;
    if (!w.dead && unix_writable_after_free(w.wmem, w.sndbuf)) ++*write_space_wakes;
    plan->add_done(skb, start);
    if (files || static_cast<size_t>(copied) == count) break;
  }
  if (!peek && copied > 0) peek_off_move(&s.peek_off, -copied);  // sk_peek_offset_bwd
  // A stop with nothing taken: a MSG_WAITALL receive's later round.
  if (copied || *stop || reached) {
    c.mu_.unlock();
    return copied;
  }
  plan->last = s.tail;
  // "POSIX 1003.1g mandates this order": error, then shutdown.
  if (s.err) {
    const int e = s.err;
    s.err = 0;  // sock_error() consumes it
    c.mu_.unlock();
    return -e;
  }
  const bool rcv_shut = (s.shutdown & UnixConn::kRcvShutdown) != 0;
  c.mu_.unlock();
  return rcv_shut ? 0 : -EAGAIN;
}

ssize_t UnixSocket::recv(void* buf, size_t count, bool peek) noexcept {
  if (count == 0) return 0;  // sock_read_iter: "Match SYS5 behaviour"
  struct msghdr none = {};
  ScmRecv scm(&none, peek ? MSG_PEEK : 0);
  const long r = recv_target(static_cast<char*>(buf), count, peek, false, &scm);
  if (r >= 0) scm.finish(scm_wants());  // no control buffer: the files are closed
  return r;
}

long UnixSocket::recv_target(char* buf, size_t count, bool peek, bool waitall, ScmRecv* scm) noexcept {
  // sock_rcvtimeo once for the whole call; sock_rcvlowat's target.
  timespec ts;
  const timespec* dl = core::sock_timeo_deadline(opts_.rcvtimeo_ns(), &ts);
  const size_t lowat = static_cast<size_t>(opts_.rcvlowat());
  const size_t target = waitall ? count : (lowat < count ? lowat : count);
  bool stop = false;
  long done = recv_scm(buf, count, peek, scm, &stop, dl, dl == nullptr);
  // A peek walks the queue once; a stop is where control data ends a read.
  if (done <= 0 || peek || stop || static_cast<size_t>(done) >= target || nonblocking()) return done;
  while (static_cast<size_t>(done) < target && !stop) {
    // After some data a signal or the deadline ends the call with its count.
    const long r = recv_scm(buf + done, count - static_cast<size_t>(done), false, scm, &stop, dl, false);
    if (r <= 0) break;
    done += r;
  }
  return done;
}

long UnixSocket::recv_scm(char* dst, size_t count, bool peek, ScmRecv* scm, bool* stop, const timespec* deadline,
                          bool restart) noexcept {
  UnixConn& c = *conn_;
  const bool fault = faulting_ptr(dst);
  for (;;) {
    ReadPlan plan;
    int write_space_wakes = 0;
    long r;
    {
      // Linux u->iolock: one reader at a time, held across the copy (which
      // runs with no SpinLock held), never while sleeping.
      core::MutexLock io(iolock_);
      r = take(count, fault, peek, &plan, &write_space_wakes, scm, stop, TakeMode{true, true, deadline});
      if (r > 0) {
        core::lockdep_assert_no_spin("a copy to user memory");
        plan.copy_out(dst);
      }
      // iolock_ keeps the peeked skb queued and its files in place.
      if (plan.peek_files) scm->peek(*plan.peek_files->scm);
    }
    for (int i = 0; i < write_space_wakes; ++i) {
      c.wake(1 - me_, kWriteSpace);
      c.fasync(1 - me_, UnixConn::kWakeSpace, POLL_OUT);  // unix_write_space
    }
    UnixConn::free_list(plan.done_head);
    if (r != -EAGAIN || nonblocking()) return r;
    // Sleep until there is something to take (data, an error, shutdown);
    // the next round takes it, or sleeps again if another reader was first.
    // unix_stream_data_wait: a tail other than the one the take saw (a
    // peek offset may have passed every queued byte), an error, shutdown.
    c.waitdata_[me_].fetch_add(1, std::memory_order_relaxed);
    const long w = core::block_loop<true>(wq(), false, EPOLLIN | EPOLLRDNORM, deadline, restart, [&]() -> long {
      c.mu_.lock();
      const UnixConn::Side& s = c.side_[me_];
      const bool ready = s.tail != plan.last || s.err || (s.shutdown & UnixConn::kRcvShutdown);
      c.mu_.unlock();
      return ready ? 0 : -EAGAIN;
    });
    c.waitdata_[me_].fetch_sub(1, std::memory_order_relaxed);
    if (w < 0) return w;
  }
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

long UnixSocket::splice_read(core::SpliceSink& to, size_t len, bool nonblock) noexcept {
  UnixConn& c = *conn_;
  core::SpliceBounce bounce;
  if (!bounce.data()) return -ENOMEM;
  const size_t want = len < core::kSpliceChunk ? len : core::kSpliceChunk;
  // splice_file_to_pipe: wait_for_space first.
  if (const long e = to.wait_room(nonblock)) return e;
  core::CallFlagsScope dontwait(nonblock, false);  // unix_stream_splice_read: MSG_DONTWAIT
  timespec ts;
  const timespec* dl = core::sock_timeo_deadline(opts_.rcvtimeo_ns(), &ts);  // sock_rcvtimeo, once
  for (;;) {
    ReadPlan plan, done;
    int write_space_wakes = 0;
    long r;
    bool peeked = false;
    // unix_stream_splice_read has no control buffer: the read stops at the
    // same boundaries as recv, and the files it takes are closed.
    struct msghdr none = {};
    ScmRecv peek_scm(&none, MSG_PEEK), scm(&none, 0);
    bool peek_stop = false, stop = false;
    {
      core::MutexLock io(iolock_);
      r = take(want, false, true, &plan, &write_space_wakes, &peek_scm, &peek_stop, TakeMode{false, true, dl});
      if (r > 0) {
        peeked = true;
        plan.copy_out(bounce.data());
        r = to.push(bounce.data(), static_cast<size_t>(r));
        if (r > 0)  // what the push took is consumed, hand-over or not
          (void)take(static_cast<size_t>(r), false, false, &done, &write_space_wakes, &scm, &stop,
                     TakeMode{true, false, nullptr});
      }
    }
    for (int i = 0; i < write_space_wakes; ++i) c.wake(1 - me_, kWriteSpace);
    UnixConn::free_list(done.done_head);
    peek_scm.finish(ScmWants{});
    scm.finish(ScmWants{});
    if (r != -EAGAIN || peeked || nonblocking()) return r;
    const long w = core::block_loop<true>(wq(), false, EPOLLIN | EPOLLRDNORM, dl, dl == nullptr, [&]() -> long {
      c.mu_.lock();
      const UnixConn::Side& s = c.side_[me_];
      const bool ready = s.head || s.err || (s.shutdown & UnixConn::kRcvShutdown);
      c.mu_.unlock();
      return ready ? 0 : -EAGAIN;
    });
    if (w < 0) return w;
  }
}

ssize_t UnixSocket::write_scm(const void* buf, size_t count, ScmPayload* scm) noexcept {
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
  size_t sent = 0;
  long err = 0;
  while (sent < count) {
    const size_t want = count - sent;
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
      if (!sent) raise_sigpipe();
      err = -EPIPE;
      break;
    }
    c.side_[me_].wmem += skb->truesize;
    if (other.tail)
      other.tail->next = skb;
    else
      other.head = skb;
    other.tail = skb;
    c.mu_.unlock();
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
  for (int i = 0; i < write_space_wakes; ++i) {
    c.wake(peer, kWriteSpace);
    c.fasync(peer, UnixConn::kWakeSpace, POLL_OUT);
  }
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

void UnixSocket::take_pass_option(int name) noexcept {
  if (name != SO_PASSCRED && name != kSoPassPidfd) return;
  const bool on = opts_.read_int(name) != 0;
  core::SpinGuard g(conn_->mu_);
  (name == SO_PASSCRED ? conn_->side_[me_].passcred : conn_->side_[me_].passpidfd) = on;
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
