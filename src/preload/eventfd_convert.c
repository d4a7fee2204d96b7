/*
 * eventfd_convert.c - a uepoll eventfd handed to a kernel interface that
 * signals it becomes a kernel eventfd first (owned by src/preload/).
 *
 * io_uring (IORING_REGISTER_EVENTFD, IORING_REGISTER_EVENTFD_ASYNC), Linux
 * AIO (an iocb with IOCB_FLAG_RESFD and aio_resfd) and KVM (KVM_IRQFD,
 * KVM_IOEVENTFD) are given an eventfd's number and signal it from the
 * kernel.  Given a uepoll eventfd they would see the placeholder (EBADF, or
 * EINVAL), and the program's watchers would never hear the kernel.  So
 * before such a call reaches the kernel, the eventfd it names is turned
 * into a kernel eventfd under the same numbers, as fork_convert.c does for
 * pipes:
 *
 *   1. the count is taken from the uepoll eventfd for good, and a kernel
 *      eventfd is made with it, EFD_SEMAPHORE and O_NONBLOCK as the uepoll
 *      one had;
 *   2. it is dup3()'d onto every number showing that eventfd (FD_CLOEXEC
 *      per number);
 *   3. each registration of the eventfd in the program's uepoll instances
 *      is made again on the kernel descriptor, same events and data;
 *   4. the uepoll descriptors are closed.
 * From then on it is a kernel eventfd, watched by uepoll instances like any
 * other kernel descriptor.  posix_spawn[p]() does the same for every uepoll
 * eventfd the child would inherit (not close-on-exec), and
 * posix_spawn_file_actions_adddup2() for its source, so that the spawned
 * program shares the eventfd as on Linux; fork() and vfork() for every
 * uepoll eventfd, so that parent and child share each one (and an exec'd
 * child inherits those without FD_CLOEXEC); all of them do it for timerfds
 * too, through timerfd_convert.c, which shares steps 2 to 4 of this file.
 *
 * Reached through: liburing's exported io_uring_register_eventfd[_async]
 * and io_uring_register (liburing makes its system calls inline, so these
 * symbols are the only way in), syscall(SYS_io_uring_register, ...),
 * syscall(SYS_io_submit, ...) (libaio's io_submit calls syscall(); its
 * iocbs are walked once, by kernel_operands.c, which converts the files
 * they act on too), and ioctl().  What cannot be reached is listed in
 * README.md.
 *
 * A thread asleep on it (read, write, poll, select...) first leaves it and
 * makes its call again on the kernel eventfd once the conversion is done
 * (uep_pl_evict_sleepers, core/handover.h).  A read or write that comes
 * after the count's take, by another thread or by a sleeper whose thread
 * ran a signal handler through the eviction, leaves the former object too
 * and is made again on the kernel eventfd (uep__eventfd_take_for_move).
 * Locks:
 * the conversions' lock (uep_pl_convert_lock), then uepoll's calls take
 * theirs.
 */
#define _GNU_SOURCE
#include "preload/preload.h"

#include <uepoll/uepoll.h>

#include "capi/preload_support.h"
#include "preload/interpose.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

/* io_uring_register(2) opcodes (Linux: include/uapi/linux/io_uring.h). */
enum { kRegisterEventfd = 4, kRegisterEventfdAsync = 7 };

/* The eventfd's id (eventfd-id in its fdinfo) + 1 and its semaphore
 * mode; 0 if u is no uepoll eventfd. */
static unsigned long long eventfd_info(int u, int *semaphore) {
  char text[256];
  if (uep_fdinfo(u, text, sizeof text) < 0) return 0;
  const char *i = strstr(text, "eventfd-id:"), *s = strstr(text, "eventfd-semaphore:");
  int id = 0, sem = 0;
  if (!i || !s || sscanf(i, "eventfd-id: %d", &id) != 1 || sscanf(s, "eventfd-semaphore: %d", &sem) != 1) return 0;
  if (semaphore) *semaphore = sem;
  return (unsigned long long)(unsigned)id + 1;
}

static unsigned long long eventfd_key(int tfd) { return eventfd_info(tfd, NULL); }

/* Step 1: the count, taken from uepoll descriptor u for good: a read or
 * write that comes after it is made again on the kernel eventfd
 * (uep__eventfd_take_for_move), so that no count is lost. */
static unsigned long long take_count(int u) {
  unsigned long long v = 0;
  int semaphore = 0;
  return uep__eventfd_take_for_move(u, &v, &semaphore) == 0 ? v : 0;
}

/* Steps 2 to 4 for the numbers shown[0..ns) of one object (key, as key_of
 * names it) and its kernel descriptor k (left open): k is dup3()'d onto
 * each number (FD_CLOEXEC as that number's uepoll descriptor us[i] has
 * it), each registration moves to the kernel descriptor now at the number
 * it was made through, and the uepoll descriptors are closed.  `what`
 * names the object in the refusals. */
void uep_pl_move_to_kernel(int k, const int *shown, const int *us, int ns, unsigned long long key,
                           unsigned long long (*key_of)(int u), const char *what, struct uep_pl_locks *held) {
  char why[200];
  for (int i = 0; i < ns; ++i) {
    const int fdfl = uep_fcntl(us[i], F_GETFD);
    if (UEP_PL_REAL(dup3)(k, shown[i], fdfl > 0 && (fdfl & FD_CLOEXEC) ? O_CLOEXEC : 0) < 0) {
      snprintf(why, sizeof why, "%s handed to the kernel: could not place its kernel descriptor (dup3 failed)", what);
      uep_pl_refuse(why);
    }
    uep_pl_unbind(shown[i]);
  }
  int nregs = 0;
  struct uep_pl_reg *regs = uep_pl_collect_registrations(uep_pl_high_water(), &nregs, key_of);
  for (int j = 0; j < nregs; ++j) {
    if (regs[j].conn != key) continue;
    uep_epoll_ctl(regs[j].ue, EPOLL_CTL_DEL, regs[j].tfd, NULL);
    int n = -1;
    for (int i = 0; i < ns && n < 0; ++i)
      if (us[i] == regs[j].tfd) n = shown[i];
    struct epoll_event ev = regs[j].ev;
    if (n < 0 || uep_epoll_ctl(regs[j].ue, EPOLL_CTL_ADD, n, &ev) < 0) {
      snprintf(why, sizeof why,
               "%s handed to the kernel: a registration could not be moved to its kernel "
               "descriptor (registered under a number since closed, or out of memory)",
               what);
      uep_pl_refuse(why);
    }
  }
  free(regs);
  if (ns) uep_pl_locks_collect(us[0], held); /* one object: one open file description */
  for (int i = 0; i < ns; ++i) uep_close(us[i]);
}

/* The numbers showing a uepoll object of `kind` that key_of names `key`
 * (malloc'd, with their uepoll descriptors in *us_out); *ns_out set. */
int *uep_pl_numbers_showing(int kind, unsigned long long (*key_of)(int u), unsigned long long key, int **us_out,
                            int *ns_out) {
  int *shown = NULL, *us = NULL, ns = 0, cap = 0, ucap = 0;
  const int hw = uep_pl_high_water();
  for (int m = 0; m < hw; ++m) {
    if (uep_pl_kind(m) != kind) continue;
    const int um = uep_pl_map(m);
    if (!um || key_of(um) != key) continue;
    int *t = uep_pl_grow_for_one(shown, &cap, ns, sizeof *shown);
    int *tu = t ? uep_pl_grow_for_one(us, &ucap, ns, sizeof *us) : NULL;
    if (t) shown = t;
    if (!tu) break;
    us = tu;
    shown[ns] = m;
    us[ns++] = um;
  }
  *us_out = us;
  *ns_out = ns;
  return shown;
}

static int convert_locked(int n) {
  const int u = uep_pl_map(n);
  int semaphore = 0;
  const unsigned long long key = u && uep_pl_kind(n) == UEP_PL_EVENTFD ? eventfd_info(u, &semaphore) : 0;
  if (!key) return -1;
  int *us = NULL, ns = 0;
  int *shown = uep_pl_numbers_showing(UEP_PL_EVENTFD, eventfd_key, key, &us, &ns);
  int fl = uep_fcntl(u, F_GETFL);
  if (fl < 0) fl = 0;
  int k = ns ? UEP_PL_REAL(eventfd)(0, EFD_CLOEXEC | (semaphore ? EFD_SEMAPHORE : 0) | (fl & O_NONBLOCK)) : -1;
  if (k < 0) {
    free(shown);
    free(us);
    return -1;
  }
  /* A thread asleep reading or writing it through the interposers leaves
   * it before the count is taken, and makes its call again on the kernel
   * eventfd once this is done (core/handover.h). */
  (void)uep_pl_evict_sleepers(&u, 1);
  /* Read again after the mark: a change made since has left (core/handover.h). */
  const int fl_now = uep_fcntl(u, F_GETFL);
  if (fl_now >= 0 && ((fl_now ^ fl) & O_NONBLOCK)) UEP_PL_REAL(fcntl)(k, F_SETFL, fl_now & O_NONBLOCK);
  const uint64_t count = take_count(u);
  if (count && UEP_PL_REAL(write)(k, &count, sizeof count) != (ssize_t)sizeof count)
    uep_pl_refuse("eventfd handed to the kernel: its count could not be carried to the kernel eventfd");
  struct uep_pl_locks held = {0};
  uep_pl_move_to_kernel(k, shown, us, ns, key, eventfd_key, "eventfd", &held);
  UEP_PL_REAL(close)(k);
  uep_pl_locks_take(&held, shown[0]);
  uep_pl_count(UEP_PL_EVENTFD_CONVERTED, 1);
  free(shown);
  free(us);
  return 0;
}

int uep_pl_convert_eventfd(int n) {
  if (uep_pl_inside()) return -1;
  UEP_PL_ENTER();
  const int r = uep_pl_convert_eventfd_inside(n);
  UEP_PL_LEAVE();
  return r;
}

int uep_pl_convert_eventfd_inside(int n) {
  if (n < 0 || uep_pl_kind(n) != UEP_PL_EVENTFD || !uep_pl_map(n)) return -1;
  uep_pl_convert_lock();
  const int r = convert_locked(n);
  uep_pl_convert_unlock();
  return r;
}

/* The uepoll eventfds and timerfds the program shows made kernel ones:
 * every one (all), or only those without FD_CLOEXEC. */
static void convert_shown(int all) {
  if (uep_pl_inside()) return;
  const int hw = uep_pl_high_water();
  for (int n = 0; n < hw; ++n) {
    const int kind = uep_pl_kind(n);
    const int u = kind == UEP_PL_EVENTFD || kind == UEP_PL_TIMER ? uep_pl_map(n) : 0;
    if (!u) continue;
    int fdfl = 0;
    if (!all) {
      UEP_PL_ENTER();
      fdfl = uep_fcntl(u, F_GETFD);
      UEP_PL_LEAVE();
    }
    if (fdfl >= 0 && !(fdfl & FD_CLOEXEC)) {
      if (kind == UEP_PL_EVENTFD)
        uep_pl_convert_eventfd(n);
      else
        uep_pl_convert_timerfd(n);
    }
  }
}

void uep_pl_convert_inherited(void) { convert_shown(0); }

void uep_pl_convert_at_fork(void) { convert_shown(1); }

/* ---- the calls that hand an eventfd to the kernel ------------------------------------ */
static void register_arg(unsigned opcode, const void *arg) {
  if ((opcode == kRegisterEventfd || opcode == kRegisterEventfdAsync) && arg) uep_pl_convert_eventfd(*(const int *)arg);
}

/* syscall(2): io_uring_register(fd, opcode, arg, nr), before the kernel
 * sees it (io_submit's iocbs, resfd included: kernel_operands.c). */
void uep_pl_kernel_signals_syscall(long nr, const long *a) {
  if (nr == SYS_io_uring_register) register_arg((unsigned)a[1], (const void *)a[2]);
}

/* ioctl(2) on a kernel descriptor: KVM's irqfd (and its resample eventfd)
 * and ioeventfd. */
void uep_pl_kernel_signals_ioctl(unsigned long request, void *arg) {
  if (!arg) return;
  if (request == KVM_IRQFD) {
    const struct kvm_irqfd *q = arg;
    uep_pl_convert_eventfd((int)q->fd);
    if (q->flags & KVM_IRQFD_FLAG_RESAMPLE) uep_pl_convert_eventfd((int)q->resamplefd);
  } else if (request == KVM_IOEVENTFD) {
    uep_pl_convert_eventfd(((const struct kvm_ioeventfd *)arg)->fd);
  }
}

/* liburing (its own symbols: it makes the system calls inline). */
struct io_uring;
int io_uring_register_eventfd(struct io_uring *ring, int fd);
int io_uring_register_eventfd_async(struct io_uring *ring, int fd);
int io_uring_register(unsigned fd, unsigned opcode, const void *arg, unsigned nr_args);

int io_uring_register_eventfd(struct io_uring *ring, int fd) {
  uep_pl_convert_eventfd(fd);
  return UEP_PL_REAL(io_uring_register_eventfd)(ring, fd);
}

int io_uring_register_eventfd_async(struct io_uring *ring, int fd) {
  uep_pl_convert_eventfd(fd);
  return UEP_PL_REAL(io_uring_register_eventfd_async)(ring, fd);
}

int io_uring_register(unsigned fd, unsigned opcode, const void *arg, unsigned nr_args) {
  register_arg(opcode, arg);
  struct uep_pl_operands keep = {0};
  const void *kernel_arg = uep_pl_register_operands(opcode, arg, nr_args, &keep); /* registered files (kernel_operands.c) */
  const int r = UEP_PL_REAL(io_uring_register)(fd, opcode, kernel_arg, nr_args);
  uep_pl_operands_done(&keep);
  return r;
}

/* A spawned child given a uepoll eventfd by a file action shares it. */
int posix_spawn_file_actions_adddup2(posix_spawn_file_actions_t *actions, int fd, int newfd) {
  uep_pl_convert_eventfd(fd);
  uep_pl_convert_timerfd(fd);
  return UEP_PL_REAL(posix_spawn_file_actions_adddup2)(actions, fd, newfd);
}
