// fdmap.h - the preload's descriptor numbers (owned by src/preload/).
//
// Under the preload a program never sees uepoll's own descriptor numbers
// (UEP_FD_BASE and up): programs index arrays by descriptor (Redis's event
// loop, libevent) and put them in fd_sets.  Each uepoll descriptor is
// instead shown under an ordinary kernel number N that the preload reserves
// by holding a placeholder there: an O_PATH descriptor of /dev/null, always
// close-on-exec.  map(N) gives the uepoll descriptor behind N (0 if N is an
// ordinary kernel descriptor).  A call the preload does not interpose
// reaches the kernel with the placeholder, which answers EBADF for almost
// everything (read, write, mmap, ioctl, epoll_ctl on it: EPERM), and an
// exec'd program inherits nothing (the placeholders close on exec).
//
// Concurrency: the table is an array of slots (preload.h's uep_pl_slot),
// each field read and written atomically.  bind() publishes with a
// release store after the uepoll descriptor is fully made; lookups acquire.
// unbind() exchanges the slot to 0 before the placeholder is closed, so the
// kernel can hand N out again only after the slot is clear.  Two threads
// racing close() and use of the same N get one of the two outcomes, as with
// kernel descriptors.  Allocation of the array: once, under a mutex.
#pragma once

#include <atomic>
#include <cstdint>

namespace uepoll::preload {

// kProvider: a socket served by the loaded socket provider (interpose_sock.c).
enum class Kind : uint8_t { kNone = 0, kEpoll, kEventFd, kPipe, kSocket, kTimer, kProvider, kCount };

// The uepoll descriptor shown as n, or 0.  Lock-free, async-signal-safe.
int map(int n) noexcept;
Kind kind(int n) noexcept;

// Reserves the lowest free kernel number >= min (0: lowest) for a new
// uepoll descriptor u and publishes it; returns n, or -errno (EMFILE...).
int bind_new(int u, Kind k, int min = 0) noexcept;
// Reserves exactly n (closing a kernel descriptor there, as dup2 does) and
// publishes u there; returns the uepoll descriptor previously shown as n
// (0 if none), which the caller closes, or -errno.
int bind_at(int n, int u, Kind k) noexcept;
// Clears n and returns the uepoll descriptor it showed (0 if none); does
// not close the placeholder.
int unbind(int n) noexcept;
// Highest number ever bound + 1 (for scans at fork).
int high_water() noexcept;
// In a forked child: marks n (showing a uepoll pipe or pair the fork could
// not make a kernel one) as a copy not used yet; 1, or 0 if n shows none.
// take_fork_copy clears the mark and says whether it was set.  A bind or
// unbind of n clears it too.
int mark_fork_copy(int n) noexcept;
bool take_fork_copy(int n) noexcept;

}  // namespace uepoll::preload
