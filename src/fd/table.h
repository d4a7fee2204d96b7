// table.h - the uepoll descriptor table: int descriptors -> File.
//
// Scheme: descriptor = UEP_FD_BASE + index, index allocated lowest-free (as
// the kernel does), so uepoll descriptors never collide with kernel ones
// (the kernel never hands out a descriptor >= /proc/sys/fs/nr_open, at most
// 1,048,576 by default; init refuses a system whose nr_open reaches
// UEP_FD_BASE).
//
// Locks: a process-wide mutex (table_mutex_) serializes installing and
// removing descriptors (Linux: files->file_lock).  lookup() takes no lock:
// it reads the slot inside a reclaim::ReadGuard and pins the file with
// File::tryget(), so a concurrent close cannot free it under us.
#pragma once

#include <uepoll/uepoll.h>

#include "core/file.h"

#include <atomic>

namespace uepoll::fd {

// Most descriptors the table can ever hold (the "max_fds" knob's ceiling).
inline constexpr long kHardMax = 1L << 24;

// True if fd lies in uepoll's descriptor range (open or not).  Inline: every
// call of the C API asks it first, some twice.
inline bool in_range(int fd) noexcept { return fd >= UEP_FD_BASE && fd < UEP_FD_BASE + kHardMax; }

// Installs f at the lowest free index; the table takes over one reference.
// Returns the descriptor, or -EMFILE (past the "max_fds" limit) / -ENOMEM.
// On failure the reference is still the caller's.
int install(core::File* f) noexcept;
// Installs a and b at the two lowest free indexes (pipe, socketpair): both or
// neither.  Returns 0 and fills out[0], out[1], or a negative errno.
int install_pair(core::File* a, core::File* b, int out[2]) noexcept;

// F_DUPFD: installs f at the lowest free index >= min_index.  Returns the
// descriptor, -EMFILE or -ENOMEM (the reference stays the caller's then).
int install_from(core::File* f, long min_index) noexcept;
// dup2/dup3 onto fd (in range, below max_fds()): installs f there with the
// close-on-exec flag `cloexec`, atomically replacing what was open there.
// Returns 0 and stores the replaced file's reference in *old (nullptr when
// the slot was free; the caller put()s it), -ENOMEM, or -EBUSY (the index
// is held by a signal handler's close whose release is still deferred).
int install_at(int fd, core::File* f, bool cloexec, core::File** old) noexcept;

// The close-on-exec flag of an open descriptor (FD_CLOEXEC): a property of
// the slot, not of the file, as in Linux's fdtable.  A new slot starts
// without it.  set_cloexec returns -EBADF if fd is not open.
int set_cloexec(int fd, bool on) noexcept;
bool get_cloexec(int fd) noexcept;
// For constructors: sets FD_CLOEXEC on a just-installed fd (r >= 0) when
// `on`; returns r unchanged.
inline long cloexec_if(long r, bool on) noexcept {
  if (r >= 0 && on) set_cloexec(static_cast<int>(r), true);
  return r;
}

// A new reference to the file behind fd, or nullptr (fd not open).
core::File* lookup(int fd) noexcept;

namespace detail {
// The slots, 4096 to a chunk allocated on first use (table.cpp); the
// directory is static, so the lookups below are inline.
inline constexpr long kChunk = 4096;
inline constexpr long kChunks = kHardMax / kChunk;
extern constinit std::atomic<std::atomic<core::File*>*> g_chunks[kChunks];
// The slot of an in-range fd whose chunk exists, or nullptr.  acquire:
// pairs with the release that published the chunk (its nulls visible).
inline std::atomic<core::File*>* slot_of(int fd) noexcept {
  const long idx = fd - UEP_FD_BASE;
  std::atomic<core::File*>* chunk = g_chunks[idx / kChunk].load(std::memory_order_acquire);
  return chunk ? &chunk[idx % kChunk] : nullptr;
}
}  // namespace detail

// lookup() for a caller already inside a core::reclaim::ReadGuard (the
// guard lookup() would open is then redundant): peek() pinned with tryget().
inline core::File* lookup_guarded(int fd) noexcept {
  if (!in_range(fd)) return nullptr;
  std::atomic<core::File*>* s = detail::slot_of(fd);
  if (!s) return nullptr;
  // seq_cst: one total order with the removals' exchanges and the epoch
  // (core/reclaim.cpp).
  core::File* f = s->load(std::memory_order_seq_cst);
  return f && f->tryget() ? f : nullptr;
}

// The file behind fd without taking a reference, or nullptr.  The caller
// must be inside a core::reclaim::ReadGuard for as long as it uses the
// pointer, and must cope with the file being released meanwhile (its
// memory stays valid; see Instance::add's `dead_` check).  Used by ctl on
// the instance so that threads sharing one instance do not bounce its
// reference count (Linux's fdget avoids the count the same way for
// single-threaded tables).
inline core::File* peek(int fd) noexcept {
  if (!in_range(fd)) return nullptr;
  std::atomic<core::File*>* s = detail::slot_of(fd);
  if (!s) return nullptr;
  core::File* f = s->load(std::memory_order_seq_cst);  // as lookup_guarded
  return f && f->refcount() > 0 ? f : nullptr;
}


// Detaches fd and returns the table's reference (the caller must put() it),
// or nullptr if fd was not open.
core::File* remove(int fd) noexcept;

// For a signal handler's close (core/deferred.h): detaches fd without a
// lock (an exchange on its slot) and returns the table's reference, or
// nullptr.  The index stays allocated until release_index(fd), which takes
// the table mutex and must run with no SpinLock held.
core::File* remove_slot(int fd) noexcept;
void release_index(int fd) noexcept;

long max_fds() noexcept;
int set_max_fds(long n) noexcept;  // -EINVAL outside [1, kHardMax]
long open_count() noexcept;

// RAII holder of one reference.
class FileRef {
 public:
  FileRef() noexcept = default;
  explicit FileRef(core::File* f) noexcept : f_(f) {}
  FileRef(FileRef&& o) noexcept : f_(o.f_) { o.f_ = nullptr; }
  FileRef& operator=(FileRef&& o) noexcept {
    if (this != &o) {
      reset();
      f_ = o.f_;
      o.f_ = nullptr;
    }
    return *this;
  }
  ~FileRef() { reset(); }
  void reset() noexcept {
    if (f_) f_->put();
    f_ = nullptr;
  }
  core::File* get() const noexcept { return f_; }
  core::File* operator->() const noexcept { return f_; }
  explicit operator bool() const noexcept { return f_ != nullptr; }
  core::File* release() noexcept {
    core::File* f = f_;
    f_ = nullptr;
    return f;
  }

 private:
  core::File* f_ = nullptr;
};

}  // namespace uepoll::fd
