// unix_common.h - what the uepoll AF_UNIX socket pairs of every type share
// (objects/socketpair.h for SOCK_STREAM, objects/unix_dgram.h for
// SOCK_DGRAM and SOCK_SEQPACKET): Linux's x86-64 skb truesize arithmetic,
// the wakeup keys, the default buffer size, and the socket-call answers that
// do not depend on the type (an unnamed address, SO_PEERCRED; the options
// are objects/unix_sockopt.h's).
//
// Locks: none, but unix_wake takes the woken socket's wq lock (11).
#pragma once

#include "core/alloc.h"
#include "core/file.h"
#include "fd/table.h"

#include <cerrno>

#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <atomic>
#include <cstdint>

namespace uepoll::objects {

// Linux values on x86-64 with default sysctls.
inline constexpr long kUnixSndBuf = 212992;  // net.core.wmem_default (sk_sndbuf, sk_rcvbuf)

namespace unix_skb {
inline constexpr uint32_t kPage = 4096;
inline constexpr uint32_t kSharedInfo = 320;  // SKB_DATA_ALIGN(sizeof(struct skb_shared_info))
inline constexpr uint32_t kSkbStruct = 256;   // SKB_DATA_ALIGN(sizeof(struct sk_buff))
inline constexpr uint32_t align_up(uint32_t v, uint32_t a) { return (v + a - 1) & ~(a - 1); }
// kmalloc_size_roundup for the sizes an skb head takes (head + shared info
// >= 320): a power of two from 512 on (slab caches up to 8192, then whole
// page orders).
inline constexpr uint32_t kmalloc_roundup(uint32_t n) {
  uint32_t s = 512;
  while (s < n) s <<= 1;
  return s;
}
// truesize of an skb with a kmalloc'd linear part of `head` bytes and
// `data_len` bytes in page frags (__alloc_skb + alloc_skb_with_frags).
inline constexpr uint32_t truesize(uint32_t head, uint32_t data_len) {
  return kSkbStruct + kmalloc_roundup(align_up(head, 64) + kSharedInfo) + align_up(data_len, kPage);
}
}  // namespace unix_skb

inline constexpr uint32_t kUnixReadable = EPOLLIN | EPOLLPRI | EPOLLRDNORM | EPOLLRDBAND;  // sock_def_readable
inline constexpr uint32_t kUnixWriteSpace = EPOLLOUT | EPOLLWRNORM | EPOLLWRBAND;         // unix_write_space

// unix_write_space's test, made while sock_wfree still holds one extra
// reference on sk_wmem_alloc: (wmem + base 1 + extra 1) << 2 <= sndbuf.
inline bool unix_writable_after_free(long wmem, long sndbuf = kUnixSndBuf) { return ((wmem + 2) << 2) <= sndbuf; }
// unix_writable: (sk_wmem_alloc (base 1 included) << 2) <= sk_sndbuf.
inline bool unix_writable(long wmem, long sndbuf = kUnixSndBuf) { return ((wmem + 1) << 2) <= sndbuf; }

// getsockname/getpeername of an unnamed AF_UNIX socket (unix_getname):
// just the family; -EFAULT / -EINVAL for a bad length pointer or value.
long unix_put_unnamed_addr(struct sockaddr* addr, socklen_t* len) noexcept;
// fstat of a pair's socket: sockfs's answer, an inode of its own.
long unix_fstat(uint64_t id, struct stat* st) noexcept;

}  // namespace uepoll::objects

namespace uepoll::objects {

// Wakes the socket in `slot` (cleared by its release; read inside a
// reclaim::ReadGuard) under its own wq lock; no lock held by the caller.
// nr_exclusive 0 = all.
void unix_wake(const std::atomic<core::File*>& slot, uint32_t key, int nr_exclusive) noexcept;
// Makes the two sockets of connection c (created with two references, one
// per socket, and the two `file` slots) and installs them: 0 and out
// filled, or -ENOMEM / -EMFILE with everything released.
template <class Sock, class Conn>
int unix_make_pair(Conn* c, std::atomic<int>& refs, std::atomic<core::File*> (&file)[2], int status_flags,
                   int out[2]) noexcept {
  auto* a = core::create<Sock>(c, 0, status_flags);
  if (!a) {
    core::destroy(c);
    return -ENOMEM;
  }
  auto* b = core::create<Sock>(c, 1, status_flags);
  if (!b) {
    refs.store(1, std::memory_order_relaxed);  // a's release drops the last
    a->put();
    return -ENOMEM;
  }
  file[0].store(a, std::memory_order_release);  // pairs with unix_wake's acquire
  file[1].store(b, std::memory_order_release);
  const int err = fd::install_pair(a, b, out);
  if (err < 0) {
    a->put();
    b->put();
    return err;
  }
  return 0;
}

// sk_getsockopt SO_PEERCRED: min(len, sizeof(struct ucred)) bytes of uc,
// the length written back; -EFAULT, -EINVAL for a negative length.
long put_peercred(const struct ucred& uc, void* optval, socklen_t* optlen) noexcept;
// init_peercred: what both ends of a new pair answer SO_PEERCRED with, the
// creating process's pid, euid and egid.
struct ucred unix_creator_cred() noexcept;

}  // namespace uepoll::objects
