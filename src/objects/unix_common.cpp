// unix_common.cpp - the type-independent answers of uepoll's AF_UNIX
// socket pairs (objects/unix_common.h).  Locks: unix_wake takes the woken
// socket's wq lock (11), nothing else.
#include "objects/unix_common.h"

#include "core/file.h"
#include "core/reclaim.h"
#include "core/user_memory.h"

#include <cerrno>
#include <cstring>
#include <unistd.h>

namespace uepoll::objects {

long unix_put_unnamed_addr(struct sockaddr* addr, socklen_t* len) noexcept {
  if (!core::user_readable(len, sizeof *len)) return -EFAULT;
  if (static_cast<int>(*len) < 0) return -EINVAL;
  const sa_family_t fam = AF_UNIX;
  socklen_t n = *len < sizeof fam ? *len : sizeof fam;
  if (n && !core::user_readable(addr, n)) return -EFAULT;
  std::memcpy(addr, &fam, n);
  *len = sizeof fam;
  return 0;
}

long put_peercred(const struct ucred& uc, void* optval, socklen_t* optlen) noexcept {
  if (!core::user_readable(optlen, sizeof *optlen)) return -EFAULT;
  const int len = static_cast<int>(*optlen);
  if (len < 0) return -EINVAL;
  const size_t n = static_cast<size_t>(len) < sizeof uc ? static_cast<size_t>(len) : sizeof uc;
  if (n && !core::user_readable(optval, n)) return -EFAULT;
  std::memcpy(optval, &uc, n);
  *optlen = static_cast<socklen_t>(n);
  return 0;
}

struct ucred unix_creator_cred() noexcept {
  struct ucred uc;
  uc.pid = ::getpid();
  uc.uid = ::geteuid();
  uc.gid = ::getegid();
  return uc;
}

long unix_fstat(uint64_t id, struct stat* st) noexcept {
  if (long r = core::stat_template(core::StatKind::kSock, st)) return r;
  st->st_ino = core::kInoBase + id;
  return 0;
}

void unix_wake(const std::atomic<core::File*>& slot, uint32_t key, int nr_exclusive) noexcept {
  core::reclaim::ReadGuard g;
  core::File* f = slot.load(std::memory_order_acquire);  // pairs with the store at creation / release
  if (!f) return;
  f->wq().wake(key, nr_exclusive);
}

}  // namespace uepoll::objects
