// user_memory.h - what Linux's copy_to_user() would find: how much of a
// caller's buffer is really writable, so that epoll_wait into a read-only
// or unmapped buffer returns EFAULT instead of crashing (kernel-epoll-spec
// section 8.1, LTP epoll_wait03).
//
// A range is checked once with process_vm_readv/process_vm_writev on our
// own process (the kernel copies, so a bad page gives EFAULT, not SIGSEGV)
// and then remembered in a small per-thread cache, so a program that reuses
// its event buffer pays the two system calls once.  A buffer unmapped or
// made read-only after it was cached is not noticed (docs/linux-deviations.md).
// Where a sandbox refuses process_vm_* the probe goes through a kernel pipe
// instead, and where pipes are refused too there is no probe (see
// user_memory.cpp); NULL and the first page give EFAULT in every case.
//
// Locks: none.  Thread-safe (per-thread cache).
#pragma once

#include <cstddef>
#include <cstdint>

namespace uepoll::core {

// Linux TASK_SIZE on x86-64: user addresses end here.
inline constexpr uintptr_t kTaskSize = 0x00007ffffffff000ULL;

// True for pointers whose copy would fault on Linux no matter the mapping
// (NULL and the first page, which access_ok() lets through).
inline bool faulting_ptr(const void* p) noexcept { return reinterpret_cast<std::uintptr_t>(p) < 4096; }

// Linux access_ok(): the range lies below TASK_SIZE (NULL passes).
inline bool user_range_ok(const void* p, std::size_t len) noexcept {
  const auto a = reinterpret_cast<uintptr_t>(p);
  return a <= kTaskSize && len <= kTaskSize - a;
}

// What copy_from_user() can be seen to fault on without a system call:
// out of range, or in the first page (never mapped).
inline bool user_readable(const void* p, std::size_t len) noexcept {
  return reinterpret_cast<uintptr_t>(p) >= 4096 && user_range_ok(p, len);
}

// Bytes of [p, p + len) that are writable, counted from p.
std::size_t writable_prefix(void* p, std::size_t len) noexcept;

}  // namespace uepoll::core
