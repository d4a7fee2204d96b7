// socketpair_plan.h - UnixSocket::ReadPlan, what one read of a socket
// pair's queue took (socketpair_read.cpp, socketpair_oob.cpp).  Built under
// UnixConn::mu_, used after it is dropped, with the socket's iolock_ held.
#pragma once

#include "objects/socketpair.h"

#include <cstring>

namespace uepoll::objects {

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
  // Out-of-band skbs a read passed and took off the queue (spent, or an
  // unread byte skipped): freed after the copy, their files closed.
  UnixConn::Skb* dropped = nullptr;

  void drop(UnixConn::Skb* skb) noexcept {
    skb->next = dropped;
    dropped = skb;
  }

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

}  // namespace uepoll::objects
