/* raw_listing.h - for the preload tests that look for uepoll's own
 * kernel descriptors: make_own_descriptors() has uepoll make them, and
 * raw_getdents64() is the kernel's own listing of a directory, past any
 * library: getdents64 made by the system call instruction, which no
 * preload can interpose (the preload's getdents64 and syscall() skip
 * uepoll's own numbers in /proc/self/fd, src/preload/interpose_fddir.c;
 * x86-64, elsewhere kRawListing is 0 and the listing is empty). */
#pragma once

#include <poll.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>

/* Under the preload, uepoll's own descriptors are made now: a blocking
 * epoll_wait on timerfd t (armed for 1 ms) in instance ep, and a poll of
 * pipe read end rd with a timeout (a thread's waiter).  Prints both
 * results (1 and 0, plainly and under the preload). */
static inline void make_own_descriptors(int t, int ep, int rd) {
  struct itimerspec its = {{0, 0}, {0, 1000000}};
  timerfd_settime(t, 0, &its, NULL);
  struct epoll_event ev = {.events = EPOLLIN, .data.u32 = 1};
  epoll_ctl(ep, EPOLL_CTL_ADD, t, &ev);
  printf("epoll_wait = %d\n", epoll_wait(ep, &ev, 1, 5000));
  struct pollfd pf = {.fd = rd, .events = POLLIN};
  printf("poll = %d\n", poll(&pf, 1, 10));
}

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
