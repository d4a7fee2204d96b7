/* raw_listing.h - the kernel's own listing of a directory, past any
 * library: getdents64 made by the system call instruction, which no
 * preload can interpose (the preload's getdents64 and syscall() skip
 * uepoll's own numbers in /proc/self/fd, src/preload/interpose_fddir.c).
 * For the preload tests that look for those numbers (x86-64; elsewhere
 * kRawListing is 0 and the listing is empty). */
#pragma once

#include <sys/syscall.h>

#if defined(__x86_64__)
enum { kRawListing = 1 };
#else
enum { kRawListing = 0 };
#endif

/* getdents64(fd, buf, n): the byte count, 0 at the end, or -errno. */
static inline long raw_getdents64(int fd, void *buf, unsigned long n) {
#if defined(__x86_64__)
  long r;
  __asm__ volatile("syscall"
                   : "=a"(r)
                   : "0"((long)SYS_getdents64), "D"((long)fd), "S"(buf), "d"(n)
                   : "rcx", "r11", "memory");
  return r;
#else
  (void)fd, (void)buf, (void)n;
  return 0;
#endif
}
