// own_fds.h - the numbers of uepoll's own kernel descriptors.
//
// uepoll makes kernel descriptors for itself: each waiting thread's eventfd
// and epoll (core/waiter.cpp), each timerfd's kernel timer and the timer
// service's epoll (objects/timerfd.cpp), an instance's kernel-side epolls
// (epoll/kernel_watch.cpp), in-flight kernel descriptors of socket pairs
// (objects/unix_scm.cpp), the preload's placeholder source, the lock
// descriptors of files that took a lock (core/file.h, "locks"), the option
// twins of socket pair ends that set an option (objects/unix_sockopt.h).  They are made
// lazily (a thread's first blocking wait, a timerfd_create), so at the
// lowest free number they would take the numbers a program expects for its
// own next descriptors, where Linux has none.  park_high() moves each, as it
// is made, to a number the program does not get:
//
//   soft = min(RLIMIT_NOFILE's soft limit, kTopCap)
//   top  = min(RLIMIT_NOFILE's hard limit, kTopCap)
//
// - Above the soft limit when top > soft: the highest free number below
//   top, walking down.  No allocation of the program's reaches there
//   (lowest-free, F_DUPFD, accept... stay below the soft limit), and its
//   dup2/dup3 onto such a number gets EBADF, Linux's answer for a number
//   at or past the limit.  To make the descriptor there, the soft limit is
//   raised to top for the few system calls of the walk and then put back
//   (prlimit; a value the program set in between is kept).  That window
//   is exclusive, held across fork() and the preload's spawns too
//   (own_fds_hold), so that no child inherits the raised limit.  A program
//   thread that opens a descriptor in the window while every number below
//   its limit is taken gets one above it instead of EMFILE.
// - Below the soft limit otherwise (hard == soft, soft >= kTopCap, the
//   window busy for long, prlimit refused): the highest free number below
//   soft.  A program sees other numbers than on Linux only once it has
//   nearly `soft` descriptors open (and then gets EMFILE that many
//   descriptors earlier); a dup2 onto one of these numbers moves the
//   descriptor if it is held by an OwnSlot (core/own_slot.h), else gets
//   EBUSY (interpose_own.c, docs/linux-deviations.md).  A program that raises its
//   soft limit later finds the descriptors parked above the old one inside
//   its range the same way.
//
// kTopCap bounds the cost: the kernel's descriptor table grows to the
// highest open number (8 bytes a slot, copied at each fork), so a
// descriptor at 2^20 (a common limit in containers) would cost every
// process 8 MiB of kernel memory and each fork a copy of it; at 2^16 it is
// 512 KiB.
//
// The numbers are recorded (a bitmap), so that the preload can make a
// program's close, close_range and closefrom of a number it never had
// answer as Linux does (EBADF; skipped) without closing uepoll's descriptor.
// Every own descriptor is closed through close_own(), which forgets the
// number first.
//
// Locks: none.  The raise window is a flag: park_high tries it for a
// bounded while (it may run in a signal handler that interrupted the
// holder) and falls back below the soft limit; own_fds_hold waits for it.
// Allocation-free.
#pragma once

#include <cstddef>

namespace uepoll::core {

inline constexpr int kTopCap = 1 << 16;

// Takes over kernel descriptor fd (uepoll's own, close-on-exec) and returns
// the number it now lives at (see above; fd itself, recorded, when no
// number above fd is free).  fd < 0 is returned unchanged.  Thread-safe,
// no lock; errno is kept.
int park_high(int fd) noexcept;
// A duplicate of fd made straight at the highest free number below the
// soft limit (no low number is taken meanwhile), recorded as own; fd stays
// open.  -1 when none is free.  errno is kept.
int dup_high(int fd) noexcept;
// Holds the raise window (waiting for a park to finish), so that the soft
// limit is the program's while a child is made: fork's prepare handler
// and the preload's spawns; own_fds_release() gives it back (parent and
// child alike).
void own_fds_hold() noexcept;
void own_fds_release() noexcept;
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
// The text of /proc/self/fdinfo/FD for own descriptor fd (read as an
// internal call: the preload shows the program no fdinfo of these
// numbers), NUL-terminated in buf[0..len), len >= 1: its length, or -errno
// when nothing could be read.  The caller keeps fd at its number meanwhile.
long read_own_fdinfo(int fd, char* buf, size_t len) noexcept;

}  // namespace uepoll::core
