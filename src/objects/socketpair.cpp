// socketpair.cpp - UnixConn and UnixSocket (see socketpair.h).  Mirrors
// Linux net/unix/af_unix.c for SOCK_STREAM pairs.  Locks: a socket's
// iolock_ (5.5, readers), UnixConn::mu_ (leaf, 8), each socket's wq() (6)
// through core::block_on and for wakeups; never a wake, an allocation or a
// copy of user memory with mu_ held, never two wq locks at once.
#include "objects/socketpair.h"

#include "core/alloc.h"
#include "core/block.h"
#include "core/call_flags.h"
#include "core/lockdep.h"
#include "core/reclaim.h"
#include "fd/table.h"
#include "objects/pipe.h"  // raise_sigpipe
#include "objects/user_ptr.h"

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/socket.h>

namespace uepoll::objects {

namespace {
// Linux x86-64 constants behind an skb's truesize.
constexpr uint32_t kPage = 4096;
constexpr uint32_t kSharedInfo = 320;  // SKB_DATA_ALIGN(sizeof(struct skb_shared_info))
constexpr uint32_t kSkbStruct = 256;   // SKB_DATA_ALIGN(sizeof(struct sk_buff))
constexpr uint32_t kMaxHead = kPage - kSharedInfo;  // SKB_MAX_HEAD(0) = 3776
constexpr uint32_t align_up(uint32_t v, uint32_t a) { return (v + a - 1) & ~(a - 1); }
// kmalloc_size_roundup for the sizes a head can take (320..4096).
constexpr uint32_t kmalloc_roundup(uint32_t n) {
  uint32_t s = 512;
  while (s < n) s <<= 1;
  return s;
}
constexpr uint32_t kReadable = EPOLLIN | EPOLLPRI | EPOLLRDNORM | EPOLLRDBAND;  // sock_def_readable
constexpr uint32_t kWriteSpace = EPOLLOUT | EPOLLWRNORM | EPOLLWRBAND;         // unix_write_space
static_assert(kUnixMaxSkb == kMaxHead + 32768, "SKB_MAX_HEAD(0) + UNIX_SKB_FRAGS_SZ");
static_assert(kUnixMaxSkb <= (kUnixSndBuf >> 1) - 64, "(sk_sndbuf >> 1) - 64 is not the cap");

// unix_write_space's test, made while sock_wfree still holds one extra
// reference on sk_wmem_alloc: (wmem + base 1 + extra 1) << 2 <= sndbuf.
bool writable_after_free(long wmem) { return ((wmem + 2) << 2) <= kUnixSndBuf; }
}  // namespace

uint32_t unix_skb_truesize(uint32_t size) noexcept {
  // unix_stream_sendmsg: data_len = min(size, PAGE_ALIGN(max(0, size - SKB_MAX_HEAD(0)))).
  uint32_t data_len = size > kMaxHead ? align_up(size - kMaxHead, kPage) : 0;
  if (data_len > size) data_len = size;
  const uint32_t head = size - data_len;
  // __alloc_skb: kmalloc(SKB_DATA_ALIGN(head) + shared info), then
  // alloc_skb_with_frags charges whole pages.
  return kSkbStruct + kmalloc_roundup(align_up(head, 64) + kSharedInfo) + align_up(data_len, kPage);
}

// ---- UnixConn ----------------------------------------------------------------

UnixConn::~UnixConn() {
  free_list(side_[0].head);
  free_list(side_[1].head);
}

void UnixConn::free_list(Skb* s) noexcept {
  while (s) {
    Skb* n = s->next;
    core::raw_free(s);
    s = n;
  }
}

void UnixConn::put() noexcept {
  if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) core::destroy(this);
}

void UnixConn::wake(int i, uint32_t key, int nr_exclusive) noexcept {
  core::reclaim::ReadGuard g;
  core::File* f = file_[i].load(std::memory_order_acquire);
  if (!f) return;
  f->wq().lock();
  f->wq().wake_locked(key, nr_exclusive);
  f->wq().unlock();
}

// ---- UnixSocket ----------------------------------------------------------------

UnixSocket::UnixSocket(UnixConn* c, int index, int status_flags) noexcept
    : core::File(core::FileKind::kSocket, status_flags), conn_(c), me_(index) {}

uint32_t UnixSocket::poll(int) noexcept {
  UnixConn& c = *conn_;
  c.mu_.lock();
  const UnixConn::Side& s = c.side_[me_];
  uint32_t mask = 0;
  // Linux unix_poll, in its order.
  if (s.err) mask |= EPOLLERR;
  if (s.shutdown == UnixConn::kShutdownMask) mask |= EPOLLHUP;
  if (s.shutdown & UnixConn::kRcvShutdown) mask |= EPOLLRDHUP | EPOLLIN | EPOLLRDNORM;
  if (s.head) mask |= EPOLLIN | EPOLLRDNORM;
  // (state == TCP_CLOSE only after our own release: never seen by poll.)
  // "we set writable also when the other side has shut down the connection"
  if (((s.wmem + 1) << 2) <= kUnixSndBuf) mask |= EPOLLOUT | EPOLLWRNORM | EPOLLWRBAND;
  c.mu_.unlock();
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

long UnixSocket::take(size_t count, bool fault, bool peek, ReadPlan* plan, int* write_space_wakes) noexcept {
  UnixConn& c = *conn_;
  long copied = 0;
  c.mu_.lock();
  UnixConn::Side& s = c.side_[me_];
  UnixConn::Side& w = c.side_[1 - me_];  // the writer of our queue
  if (peek && s.head) {
    // MSG_PEEK: the bytes a read would take, left queued
    // (unix_stream_read_generic with skip = the peek offset, here 0).
    if (fault) {
      copied = -EFAULT;
    } else {
      plan->peek_head = s.head;
      plan->peek_start = s.head->consumed;
      for (UnixConn::Skb* skb = s.head; skb && static_cast<size_t>(copied) < count; skb = skb->next) {
        size_t chunk = skb->len - skb->consumed;
        if (chunk > count - static_cast<size_t>(copied)) chunk = count - static_cast<size_t>(copied);
        copied += static_cast<long>(chunk);
      }
      plan->peek_len = static_cast<size_t>(copied);
    }
  }
  while (UnixConn::Skb* skb = peek ? nullptr : s.head) {
    size_t chunk = skb->len - skb->consumed;
    if (chunk > count - static_cast<size_t>(copied)) chunk = count - static_cast<size_t>(copied);
    if (fault) {  // skb_copy_datagram_msg fails
      if (!copied) copied = -EFAULT;
      break;
    }
    const uint32_t start = skb->consumed;
    copied += static_cast<long>(chunk);
    skb->consumed += static_cast<uint32_t>(chunk);
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
    if (!w.dead && writable_after_free(w.wmem)) ++*write_space_wakes;
    skb->next = nullptr;
    if (plan->done_tail) {
      plan->done_tail->next = skb;
    } else {
      plan->done_head = skb;
      plan->first_start = start;
    }
    plan->done_tail = skb;
    if (static_cast<size_t>(copied) == count) break;
  }
  if (copied) {
    c.mu_.unlock();
    return copied;
  }
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
  UnixConn& c = *conn_;
  char* dst = static_cast<char*>(buf);
  const bool fault = faulting_ptr(dst);
  for (;;) {
    ReadPlan plan;
    int write_space_wakes = 0;
    long r;
    {
      // Linux u->iolock: one reader at a time, held across the copy (which
      // runs with no SpinLock held), never while sleeping.
      core::MutexLock io(iolock_);
      r = take(count, fault, peek, &plan, &write_space_wakes);
      if (r > 0) {
        core::lockdep_assert_no_spin("a copy to user memory");
        plan.copy_out(dst);
      }
    }
    for (int i = 0; i < write_space_wakes; ++i) c.wake(1 - me_, kWriteSpace);
    UnixConn::free_list(plan.done_head);
    if (r != -EAGAIN || nonblocking()) return r;
    // Sleep until there is something to take (data, an error, shutdown);
    // the next round takes it, or sleeps again if another reader was first.
    const long w = core::block_on(wq(), false, EPOLLIN | EPOLLRDNORM, [&]() -> long {
      c.mu_.lock();
      const UnixConn::Side& s = c.side_[me_];
      const bool ready = s.head || s.err || (s.shutdown & UnixConn::kRcvShutdown);
      c.mu_.unlock();
      return ready ? 0 : -EAGAIN;
    });
    if (w < 0) return w;
  }
}

long UnixSocket::splice_read(core::SpliceSink& to, size_t len, bool nonblock) noexcept {
  UnixConn& c = *conn_;
  core::SpliceBounce bounce;
  if (!bounce.data()) return -ENOMEM;
  const size_t want = len < core::kSpliceChunk ? len : core::kSpliceChunk;
  // splice_file_to_pipe: wait_for_space first.
  if (const long e = to.wait_room(nonblock)) return e;
  core::CallFlagsScope dontwait(nonblock, false);  // unix_stream_splice_read: MSG_DONTWAIT
  for (;;) {
    ReadPlan plan, done;
    int write_space_wakes = 0;
    long r;
    bool peeked = false;
    {
      core::MutexLock io(iolock_);
      r = take(want, false, true, &plan, &write_space_wakes);
      if (r > 0) {
        peeked = true;
        plan.copy_out(bounce.data());
        r = to.push(bounce.data(), static_cast<size_t>(r));
        if (r > 0) (void)take(static_cast<size_t>(r), false, false, &done, &write_space_wakes);
      }
    }
    for (int i = 0; i < write_space_wakes; ++i) c.wake(1 - me_, kWriteSpace);
    UnixConn::free_list(done.done_head);
    if (r != -EAGAIN || peeked || nonblocking()) return r;
    const long w = core::block_on(wq(), false, EPOLLIN | EPOLLRDNORM, [&]() -> long {
      c.mu_.lock();
      const UnixConn::Side& s = c.side_[me_];
      const bool ready = s.head || s.err || (s.shutdown & UnixConn::kRcvShutdown);
      c.mu_.unlock();
      return ready ? 0 : -EAGAIN;
    });
    if (w < 0) return w;
  }
}

ssize_t UnixSocket::write(const void* buf, size_t count) noexcept {
  UnixConn& c = *conn_;
  const int peer = 1 - me_;
  c.mu_.lock();
  const bool send_shut = (c.side_[me_].shutdown & UnixConn::kSendShutdown) != 0;
  c.mu_.unlock();
  if (send_shut) {
    raise_sigpipe();
    return -EPIPE;
  }
  const char* src = static_cast<const char*>(buf);
  size_t sent = 0;
  long err = 0;
  while (sent < count) {
    const size_t want = count - sent;
    const uint32_t size = want < kUnixMaxSkb ? static_cast<uint32_t>(want) : kUnixMaxSkb;
    // sock_alloc_send_pskb: sk_err, SEND_SHUTDOWN, then room in sk_sndbuf.
    const long room = core::block_on(wq(), nonblocking(), kWriteSpace, [&]() -> long {
      c.mu_.lock();
      UnixConn::Side& s = c.side_[me_];
      long res = 0;
      if (s.err) {
        res = -s.err;
        s.err = 0;
      } else if (s.shutdown & UnixConn::kSendShutdown) {
        res = -EPIPE;  // no SIGPIPE on this path (Linux: goto out_err)
      } else if (!(s.wmem + 1 < kUnixSndBuf)) {
        res = -EAGAIN;
      }
      c.mu_.unlock();
      return res;
    }, sent == 0);  // Linux unix_stream_sendmsg: a partial count after any handler
    if (room < 0) {
      err = room;
      break;
    }
    auto* skb = static_cast<UnixConn::Skb*>(core::raw_alloc(offsetof(UnixConn::Skb, data) + size));
    if (!skb) {
      err = -ENOBUFS;
      break;
    }
    if (faulting_ptr(src)) {  // skb_copy_datagram_from_iter fails
      core::raw_free(skb);
      err = -EFAULT;
      break;
    }
    skb->next = nullptr;
    skb->len = size;
    skb->consumed = 0;
    skb->truesize = unix_skb_truesize(size);
    std::memcpy(skb->data, src + sent, size);
    c.mu_.lock();
    UnixConn::Side& other = c.side_[peer];
    if (other.dead || (other.shutdown & UnixConn::kRcvShutdown)) {
      c.mu_.unlock();
      core::raw_free(skb);
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
  return 0;
}

int UnixSocket::shutdown_bits() noexcept {
  UnixConn& c = *conn_;
  c.mu_.lock();
  const int bits = c.side_[me_].shutdown;
  c.mu_.unlock();
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
    if (!p.dead && writable_after_free(p.wmem)) ++write_space_wakes;
  }
  c.mu_.unlock();
  c.wake(peer, 0, 0);  // skpair->sk_state_change(skpair)
  for (int i = 0; i < write_space_wakes; ++i) c.wake(peer, kWriteSpace);
  UnixConn::free_list(purge);
  c.put();
}

int make_socketpair(int status_flags, int out[2]) noexcept {
  auto* c = core::create<UnixConn>();
  if (!c) return -ENOMEM;
  auto* a = core::create<UnixSocket>(c, 0, status_flags);
  if (!a) {
    core::destroy(c);
    return -ENOMEM;
  }
  auto* b = core::create<UnixSocket>(c, 1, status_flags);
  if (!b) {
    c->refs_.store(1, std::memory_order_relaxed);
    a->put();
    return -ENOMEM;
  }
  c->file_[0].store(a, std::memory_order_release);
  c->file_[1].store(b, std::memory_order_release);
  const int err = fd::install_pair(a, b, out);
  if (err < 0) {
    a->put();
    b->put();
    return err;
  }
  return 0;
}

int UnixSocket::take_error() noexcept {
  conn_->mu_.lock();
  const int e = conn_->side_[me_].err;
  conn_->side_[me_].err = 0;
  conn_->mu_.unlock();
  return e;
}

long UnixSocket::inq() noexcept {
  long n = 0;
  conn_->mu_.lock();
  for (const UnixConn::Skb* skb = conn_->side_[me_].head; skb; skb = skb->next) n += skb->len - skb->consumed;
  conn_->mu_.unlock();
  return n;
}

long UnixSocket::outq() noexcept {
  conn_->mu_.lock();
  const long n = conn_->side_[me_].wmem;
  conn_->mu_.unlock();
  return n;
}

}  // namespace uepoll::objects
