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
//
// Locks: none.  Thread-safe (per-thread cache).
#pragma once

#include <cstddef>

namespace uepoll::core {

// Bytes of [p, p + len) that are writable, counted from p.
std::size_t writable_prefix(void* p, std::size_t len) noexcept;

}  // namespace uepoll::core
