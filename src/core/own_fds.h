// own_fds.h - the numbers of uepoll's own kernel descriptors.
//
// uepoll makes kernel descriptors for itself: each waiting thread's eventfd
// and epoll (core/waiter.cpp), each timerfd's kernel timer and the timer
// service's epoll (objects/timerfd.cpp), an instance's kernel-side epolls
// (epoll/kernel_watch.cpp), the preload's placeholder source.  They are made
// lazily (a thread's first blocking wait, a timerfd_create), so at the
// lowest free number they would take the numbers a program expects for its
// own next descriptors, where Linux has none.  park_high() moves each, as it
// is made, to the highest free number below the top, walking down:
//
//   top = min(RLIMIT_NOFILE's soft limit, kTopCap)
//
// The soft limit bounds every number fcntl(F_DUPFD) can give.  kTopCap
// bounds the cost: the kernel's descriptor table grows to the highest open
// number (8 bytes a slot, copied at each fork), so a descriptor at 2^20 (a
// common soft limit in containers) would cost every process 8 MiB of kernel
// memory and each fork a copy of it; at 2^16 it is 512 KiB.  A program sees
// other numbers than on Linux only once it has nearly `top` descriptors open
// (and then gets EMFILE that many descriptors earlier).
//
// The numbers are recorded (a bitmap), so that the preload can make a
// program's close, close_range and closefrom of a number it never had
// answer as Linux does (EBADF; skipped) without closing uepoll's descriptor,
// and refuse a dup2 onto one.  Every own descriptor is closed through
// close_own(), which forgets the number first.
//
// Locks: none (the cursor and the bitmap are atomics).  Allocation-free.
#pragma once

namespace uepoll::core {

inline constexpr int kTopCap = 1 << 16;

// Takes over kernel descriptor fd (uepoll's own, close-on-exec) and returns
// the number it now lives at: the highest free number below the top found
// walking down from there (fd itself, recorded, when none above fd is
// free).  fd < 0 is returned unchanged.  Thread-safe, no lock.
int park_high(int fd) noexcept;
// Records fd as one of uepoll's own, or forgets it (before the number is
// given up).
void mark_own(int fd) noexcept;
void forget_own(int fd) noexcept;
// Closes own descriptor fd (forgotten first).  fd < 0: nothing.
void close_own(int fd) noexcept;
// True if fd is one of uepoll's own descriptors.  Lock-free,
// async-signal-safe.
bool is_own(int fd) noexcept;
// The lowest own descriptor >= from, or -1.  Lock-free.
int next_own(int from) noexcept;

}  // namespace uepoll::core
