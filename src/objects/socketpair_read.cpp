// socketpair_read.cpp - the read side of a uepoll socket pair
// (socketpair.h): Linux 6.18 net/unix/af_unix.c unix_stream_read_generic
// (with MSG_PEEK, SO_PEEK_OFF, MSG_WAITALL, SO_RCVLOWAT, SO_RCVTIMEO and
// the control data's stops) and unix_stream_splice_read.  Locks: the
// socket's iolock_ (10) around each take and its copy, UnixConn::mu_
// (leaf, 14) inside it; the wait-queue lock (11) through core::block_loop;
// wakeups and frees with no lock held.
#include "core/block.h"
#include "core/call_flags.h"
#include "core/lockdep.h"
#include "core/sock_timeo.h"
#include "objects/socketpair_plan.h"
#include "objects/user_ptr.h"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <sys/epoll.h>
#include <sys/socket.h>

namespace uepoll::objects {

const ScmPayload& UnixSocket::scm_of(const UnixConn::Skb* skb) noexcept { return scm_or_none(skb->scm); }

// The bytes a read would take, left queued (unix_stream_read_generic's
// MSG_PEEK branch), from `skip` bytes in (sk_peek_offset; whole skbs it
// covers are passed over before any credential check).  The walk goes on past `count` (with
// chunks of 0) to the next files or the end of the queue: a peek reports
// the files of bytes it did not reach, as Linux's does.  s is our side,
// its queue not empty; called with conn_->mu_ held.
long UnixSocket::peek_locked(UnixConn::Side& s, size_t count, size_t skip, bool fault, ReadPlan* plan,
                             ScmRecv* scm, bool* stop) noexcept {
  UnixConn::Skb* first = s.oob || (s.head && s.head->consumed == s.head->len) ? oob_peek_start(s) : s.head;
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
    // manage_oob after bytes were copied: a peek ends at the unread
    // out-of-band byte, and at a spent one unless another is pending.
    if (skb != first && (skb == s.oob || (skb->consumed == skb->len && !s.oob))) {
      *stop = true;
      break;
    }
    if (skb != first && skb->consumed == skb->len) continue;
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
    if (skb == s.oob || skb->consumed == skb->len) {  // out-of-band data at the head
      const OobStep step = manage_oob_locked(s, w, skb, copied > 0, plan, write_space_wakes);
      if (step == OobStep::kStop) {
        *stop = true;
        break;
      }
      if (step == OobStep::kSkipped) continue;
    }
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
    // consume_skb -> sock_wfree -> unix_write_space on the writer.
    if (UnixConn::unlink(s, w, nullptr, skb)) ++*write_space_wakes;
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
    for (int i = 0; i < write_space_wakes; ++i) c.write_space(1 - me_);
    UnixConn::free_list(plan.done_head);
    UnixConn::free_list(plan.dropped);
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
    for (int i = 0; i < write_space_wakes; ++i) c.write_space(1 - me_);
    UnixConn::free_list(done.done_head);
    UnixConn::free_list(plan.dropped);
    UnixConn::free_list(done.dropped);
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

}  // namespace uepoll::objects
