// user_file_api.cpp - the C API of user-defined files: uep_file_open,
// uep_file_wake, uep_file_unref (contracts in uepoll.h), and their engine
// entry points for the C++ API (detail/ops.hpp).  Argument checks and
// errno only; the file itself is objects/user_file.h.
// Locks: none here (the fd table's inside fd::install; wq() in wake).
#include "capi/edge.h"
#include "core/alloc.h"
#include "core/user_memory.h"
#include "fd/table.h"
#include "objects/user_file.h"

#include <uepoll/detail/ops.hpp>
#include <uepoll/uepoll.h>

#include <cerrno>
#include <fcntl.h>

namespace {

using uepoll::objects::UserFile;

UserFile* from_handle(uep_file* h) noexcept { return reinterpret_cast<UserFile*>(h); }
uep_file* to_handle(UserFile* f) noexcept { return reinterpret_cast<uep_file*>(f); }

}  // namespace

namespace uepoll::detail {

long file_open(const uep_file_ops* ops, void* ctx, int flags, uep_file** handle) noexcept {
  // Order: flags (EINVAL), the two pointers (EFAULT), the poll callback
  // (EINVAL), then the allocations (ENOMEM, EMFILE), as eventfd2 checks.
  if (flags & ~(O_NONBLOCK | O_CLOEXEC)) return -EINVAL;
  if (!uepoll::core::user_readable(ops, sizeof *ops) || !uepoll::core::user_readable(handle, sizeof *handle))
    return -EFAULT;
  if (!ops->poll) return -EINVAL;
  auto* f = uepoll::core::create<UserFile>(*ops, ctx, O_RDWR | (flags & O_NONBLOCK));
  if (!f) return -ENOMEM;
  f->refresh();  // the initial readiness, before anyone can see the file
  const int fd = uepoll::fd::install(f);
  if (fd < 0) {
    // Never reached by anyone: tear down without the release callback.
    f->discard();
    return fd;
  }
  uepoll::fd::cloexec_if(fd, (flags & O_CLOEXEC) != 0);
  *handle = to_handle(f);
  return fd;
}

void file_wake(uep_file* handle, uint32_t events) noexcept {
  if (handle) from_handle(handle)->wake(events);
}

void file_unref(uep_file* handle) noexcept {
  if (handle) from_handle(handle)->unref_handle();
}

}  // namespace uepoll::detail

extern "C" {

int uep_file_open(const struct uep_file_ops* ops, void* ctx, int flags, struct uep_file** handle) {
  return uepoll::capi::to_c(uepoll::detail::file_open(ops, ctx, flags, handle));
}
void uep_file_wake(struct uep_file* handle, uint32_t events) { uepoll::detail::file_wake(handle, events); }
void uep_file_unref(struct uep_file* handle) { uepoll::detail::file_unref(handle); }

}  // extern "C"
