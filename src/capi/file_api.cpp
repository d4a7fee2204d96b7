// file_api.cpp - the C API of the file interface (<uepoll/file.h>):
// uep_file_create, uep_file_notify, uep_file_set_mask, uep_file_notify_mask,
// uep_file_set_error,
// uep_file_get, uep_file_put.  Argument checks and errno only; the file is
// objects/user_file_table.h.
//
// Handles: the create handle is the TableFile's address; a uep_file_get
// handle is that address with bit 0 set (a File is 64-byte aligned), so
// that uep_file_put knows a pin from the create handle's hold.
// Locks: none here (the fd table's inside fd::install; wq() in the wakes).
#include "capi/edge.h"
#include "core/alloc.h"
#include "core/user_memory.h"
#include "fd/table.h"
#include "fd/target.h"
#include "objects/user_file_table.h"

#include <uepoll/file.h>
#include <uepoll/uepoll.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <fcntl.h>

namespace {

using uepoll::objects::TableFile;

constexpr uintptr_t kPinTag = 1;
// The version 1 table: every field up to getpeername.
constexpr size_t kV1Size = offsetof(uep_file_operations, getpeername) + sizeof(void*);

TableFile* file_of(uep_file* h) noexcept {
  return reinterpret_cast<TableFile*>(reinterpret_cast<uintptr_t>(h) & ~kPinTag);
}
bool is_pin(uep_file* h) noexcept { return (reinterpret_cast<uintptr_t>(h) & kPinTag) != 0; }

long file_create(const uep_file_operations* ops, void* ctx, int flags, uint32_t initial_mask,
                 uep_file** handle) noexcept {
  // Order (file.h): flags, the pointers, the table's size and poll.
  if (flags & ~(O_NONBLOCK | O_CLOEXEC)) return -EINVAL;
  if (!ops || !handle || !uepoll::core::user_readable(ops, sizeof ops->size) ||
      !uepoll::core::user_readable(handle, sizeof *handle))
    return -EFAULT;
  if (ops->size < kV1Size) return -EINVAL;
  const size_t copy = ops->size < sizeof *ops ? ops->size : sizeof *ops;
  if (!uepoll::core::user_readable(ops, copy)) return -EFAULT;
  const bool push = (ops->flags & UEP_FILE_PUSH) != 0;
  if (!push && !ops->poll) return -EINVAL;
  // The access mode F_GETFL shows (anon_inode_getfd and sockets: O_RDWR).
  const int mode = (ops->flags & UEP_FILE_RDONLY) ? O_RDONLY : (ops->flags & UEP_FILE_WRONLY) ? O_WRONLY : O_RDWR;
  if ((ops->flags & UEP_FILE_RDONLY) && (ops->flags & UEP_FILE_WRONLY)) return -EINVAL;
  auto* f = uepoll::core::create<TableFile>(ops, copy, ctx, mode | (flags & O_NONBLOCK), push ? initial_mask : 0u);
  if (!f) return -ENOMEM;
  f->refresh();  // a pull file's initial readiness, before anyone can see it
  const int fd = uepoll::fd::install(f);
  if (fd < 0) {
    f->discard();  // never reached by anyone: no release
    return fd;
  }
  uepoll::fd::cloexec_if(fd, (flags & O_CLOEXEC) != 0);
  *handle = reinterpret_cast<uep_file*>(f);
  return fd;
}

}  // namespace

extern "C" {

int uep_file_create(const struct uep_file_operations* ops, void* ctx, int flags, uint32_t initial_mask,
                    struct uep_file** handle) {
  return uepoll::capi::to_c(file_create(ops, ctx, flags, initial_mask, handle));
}

void uep_file_notify(struct uep_file* handle, uint32_t key) {
  if (handle) file_of(handle)->notify(key);
}

void uep_file_set_mask(struct uep_file* handle, uint32_t mask) {
  if (handle) file_of(handle)->set_mask(mask);
}

void uep_file_notify_mask(struct uep_file* handle, uint32_t mask, uint32_t key) {
  if (handle) file_of(handle)->notify_mask(mask, key);
}

void uep_file_set_error(struct uep_file* handle, int err) {
  if (handle) file_of(handle)->set_error(err);
}

struct uep_file* uep_file_get(int fd, const struct uep_file_operations* ops, void** ctx) {
  if (uepoll::fd::Target::is_kernel(fd)) {
    errno = ::fcntl(fd, F_GETFD) < 0 ? EBADF : ENOTSOCK;
    return nullptr;
  }
  uepoll::core::File* f = uepoll::fd::lookup(fd);  // the pin
  if (!f) {
    errno = EBADF;
    return nullptr;
  }
  auto* t = dynamic_cast<TableFile*>(f);
  if (!t || t->table() != ops) {
    uepoll::objects::release_thread_put(f);  // a close may race us: never a release in the provider's call
    errno = ENOTSOCK;
    return nullptr;
  }
  if (ctx) *ctx = t->ctx();
  return reinterpret_cast<uep_file*>(reinterpret_cast<uintptr_t>(t) | kPinTag);
}

void uep_file_put(struct uep_file* handle) {
  if (!handle) return;
  if (is_pin(handle))
    uepoll::objects::release_thread_put(file_of(handle));  // never the release here
  else
    file_of(handle)->drop_handle();
}

}  // extern "C"
