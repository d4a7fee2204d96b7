// socketpair_oob.cpp - out-of-band data on a uepoll socket pair
// (socketpair.h), as Linux 6.18 net/unix/af_unix.c does it with
// CONFIG_AF_UNIX_OOB: unix_stream_recv_urg, manage_oob, SIOCATMARK.
//
// A send with MSG_OOB queues its last byte in an skb of its own and makes
// it the receiver's oob (write_scm).  That byte is read with MSG_OOB (its
// skb stays queued, spent), or passed over by an ordinary read, which
// stops before it when it has taken bytes already and otherwise drops it
// (with SO_OOBINLINE it is read as ordinary data instead).  A spent skb
// ends a read that has taken bytes, unless another out-of-band byte is
// pending, and is dropped by the next read that reaches it first.  Also
// UnixConn::sigurg, the SIGURG a send of out-of-band data gives the
// receiver's owner.
//
// Locks: the socket's iolock_ (10) around recv_urg and at_mark, as
// Linux's u->iolock; UnixConn::mu_ (leaf, 14) inside it.
#include "core/block.h"
#include "core/user_memory.h"
#include "objects/socketpair_plan.h"

#include <cerrno>
#include <sys/socket.h>

namespace uepoll::objects {

UnixConn::Skb* UnixSocket::oob_peek_start(const UnixConn::Side& s) noexcept {
  UnixConn::Skb* skb = s.head;
  if (skb && skb->consumed == skb->len) skb = skb->next;  // a spent out-of-band skb
  if (skb && skb == s.oob && !s.urginline) skb = skb->next;
  return skb;
}

UnixSocket::OobStep UnixSocket::manage_oob_locked(UnixConn::Side& s, UnixConn::Side& w, UnixConn::Skb* skb,
                                                  bool copied, ReadPlan* plan, int* write_space_wakes) noexcept {
  if (skb->consumed == skb->len) {  // spent: its byte was read with MSG_OOB
    if (copied && !s.oob) return OobStep::kStop;
    if (UnixConn::unlink(s, w, nullptr, skb)) ++*write_space_wakes;
    plan->drop(skb);
    return OobStep::kSkipped;
  }
  // skb is the unread out-of-band byte.
  if (copied) return OobStep::kStop;
  s.oob = nullptr;
  if (s.urginline) return OobStep::kRead;
  if (UnixConn::unlink(s, w, nullptr, skb)) ++*write_space_wakes;
  plan->drop(skb);
  return OobStep::kSkipped;
}

long UnixSocket::recv_urg(struct msghdr* msg, int flags) noexcept {
  UnixConn& c = *conn_;
  const bool peek = (flags & MSG_PEEK) != 0;
  UnixConn::Skb* spent = nullptr;
  bool space = false;
  char byte;
  {
    core::MutexLock io(iolock_);
    c.mu_.lock();
    if (core::leave_if_handed_over(wq().handed_over())) {  // made again on the kernel pair
      c.mu_.unlock();
      return -EINTR;
    }
    UnixConn::Side& s = c.side_[me_];
    UnixConn::Skb* oob = s.oob;
    if (s.urginline || !oob) {
      c.mu_.unlock();
      return -EINVAL;
    }
    byte = oob->data[0];
    if (!peek) {
      s.oob = nullptr;
      oob->consumed = 1;  // stays queued, spent
      // A spent out-of-band skb just before it goes (Linux frees it here).
      UnixConn::Skb* before = nullptr;
      UnixConn::Skb* prev = nullptr;
      for (UnixConn::Skb* k = s.head; k != oob; k = k->next) {
        before = prev;
        prev = k;
      }
      if (prev && prev->consumed == prev->len) {
        space = UnixConn::unlink(s, c.side_[1 - me_], before, prev);
        spent = prev;
      }
    }
    c.mu_.unlock();
  }
  if (space) c.write_space(1 - me_);
  UnixConn::free_list(spent);
  // The byte into the first segment with room (skb_copy_datagram_msg of
  // one byte: none at all takes it and copies nothing), after it was
  // taken; no control data comes with it.
  for (size_t i = 0; i < msg->msg_iovlen; ++i) {
    if (!msg->msg_iov[i].iov_len) continue;
    if (core::writable_prefix(msg->msg_iov[i].iov_base, 1) < 1) return -EFAULT;
    *static_cast<char*>(msg->msg_iov[i].iov_base) = byte;
    break;
  }
  msg->msg_namelen = 0;
  msg->msg_controllen = 0;
  msg->msg_flags = (flags & MSG_CMSG_CLOEXEC) | MSG_OOB;
  return 1;
}

int UnixSocket::at_mark() noexcept {
  UnixConn& c = *conn_;
  core::MutexLock io(iolock_);
  core::SpinGuard g(c.mu_);
  const UnixConn::Side& s = c.side_[me_];
  const UnixConn::Skb* head = s.head;
  if (!head) return 0;
  const bool spent = head->consumed == head->len;
  const int at = head == s.oob || (spent && (!s.oob || head->next == s.oob));
  return at;
}

void UnixConn::sigurg(int i) noexcept {
  core::File* f;
  {
    core::reclaim::ReadGuard g;
    f = file_[i].load(std::memory_order_acquire);
    if (!f || !f->tryget()) return;
  }
  f->send_sigurg();
  f->put();
}

}  // namespace uepoll::objects
