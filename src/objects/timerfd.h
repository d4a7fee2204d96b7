// timerfd.h - TimerFd: the uepoll timerfd (Linux fs/timerfd.c semantics,
// obtained by delegation).
//
// What it owns.  Each TimerFd owns one kernel timerfd (created
// TFD_NONBLOCK|TFD_CLOEXEC with the caller's clock).  Everything that
// defines a timer's state -- settime/gettime, the expiration count, interval
// overruns (hrtimer_forward_now), TFD_TIMER_CANCEL_ON_SET and ECANCELED --
// lives in that kernel object, so those semantics are Linux's exactly:
// settime, gettime and read are forwarded to it (read non-blocking).
//
// What uepoll adds is the wakeup.  One process-wide service thread (started
// with the first timer, all signals blocked, never exits) sleeps in a kernel
// epoll holding every kernel timerfd with EPOLLIN|EPOLLET (and a doorbell
// eventfd that ends its wait when a program's dup2 moves that epoll's
// number: core/own_slot.h).  Each expiry the
// kernel signals (timerfd_tmrproc / clock-was-set: wake_up_locked_poll(
// EPOLLIN)) becomes one edge there, and the service turns it into
// wq().wake_locked(EPOLLIN) on the TimerFd: the same wakeups Linux issues,
// one per expiry.  A periodic timer that nobody reads therefore wakes once
// and then stays quiet, as on Linux (the kernel timer does not re-arm until
// it is read).  poll() asks the kernel timerfd (a poll(2) with timeout 0), so
// readiness is exact and immediate; only the wakeup goes through the
// service thread (microseconds late).
//
// On the virtual clock (core/vclock.h, on when the timer is created) the
// kernel timerfd is never armed: the state of Linux's timerfd_ctx (expiry,
// interval, ticks, expired) lives here, on a vclock::Timer, under the
// clock's mutex, and every operation is Linux fs/timerfd.c's computation on
// the virtual time (timerfd_virtual.cpp).  The wakeup path is the same
// deliver(), called by the clock when the timer expires.
//
// Locks.  The service's registry mutex (a core::Mutex of class
// kTimerRegistry, level 2 of core/lock_order.h: the key -> TimerFd table
// (a timer's key is its table index, the data of its epoll registration)
// and the kernel epoll's membership) is taken with no uepoll lock
// held; under it the service polls a TimerFd's kernel timer (no wait: the
// table entry is valid only under the registry mutex) and takes its wq
// lock (level 11) to wake it.  The service never holds a lock while it
// waits in epoll_wait.
// TimerFd::seq_ (the number of service wakeups) is written under wq(); a
// blocking read sleeps through core::block_on until seq_ moves.  Kernel
// calls are never made under a wq lock.
#pragma once

#include "core/file.h"
#include "core/own_slot.h"
#include "core/vclock.h"

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <time.h>

struct itimerspec;

namespace uepoll::objects {

class TimerFd final : public core::File {
 public:
  TimerFd(int kfd, int status_flags, int clockid = CLOCK_MONOTONIC, bool on_vclock = false) noexcept;
  ~TimerFd() override { kfd_.close(); }  // closed already after on_release

  uint32_t poll(int depth) noexcept override;  // EPOLLIN when expirations are pending
  // count < 8: -EINVAL.  Returns the expiration count (8 bytes) and clears
  // it; -ECANCELED after a clock change (CANCEL_ON_SET); -EAGAIN or sleeps
  // when none; -EINTR on a signal; -EFAULT for a null buf (count consumed).
  ssize_t read(void* buf, size_t count) noexcept override;
  long rw_check(bool write) const noexcept override { return write ? -EINVAL : 0; }  // no ->write
  // The kernel timerfd's own per-type lines (its ticks, clockid, it_value).
  void show_fdinfo(std::string& out) noexcept override;

  // Forwarded to the kernel timerfd; arguments already validated by the C
  // API (flags, itimerspec ranges, non-null new_value).  0 or -errno.
  int settime(int flags, const struct itimerspec* new_value, struct itimerspec* old_value) noexcept;
  int gettime(struct itimerspec* curr) noexcept;

  // Service thread (and settime): the kernel timer signalled an expiry.
  // Wakes wq() once per re-arm cycle, and only while the kernel timer holds
  // an unread expiry (an event that a read overtook is stale).  Takes wq().
  void kernel_fired() noexcept;

  // After fork(), in the child (timers_fork_child): the kernel timer is an
  // open file description shared with the parent, so a new one takes its
  // place in the slot (the service registers it again) with the same clock and settime flags, the
  // remaining time and interval, and the unread expiration count carried in
  // carried_.  0, or -errno (the timer then stays shared, as on Linux).
  int fork_rebuild() noexcept;

  // A dup of the kernel timer (close-on-exec), holding every expiration
  // the timer holds: those carried across fork() go into it with
  // TFD_IOC_SET_TICKS.  -EOPNOTSUPP on the virtual clock (the kernel timer
  // is never armed); the kernel's error otherwise (ENOTTY without
  // CONFIG_CHECKPOINT_RESTORE, the expirations then kept in carried_).
  int kernel_form() noexcept override;

  // The service's key for this timer (an index of its table), set by
  // TimerService::add before the timer is shared; service_ctl makes op on
  // the service's kernel epoll for the kernel timer, keyed so (0 or
  // -errno).
  void set_service_key(int key) noexcept { key_ = key; }
  int service_ctl(int epfd, int op, uint32_t key) noexcept;

 protected:
  void on_release() noexcept override;  // unregisters, closes the kernel fd

 private:
  // The kernel timer: one of uepoll's own descriptors, in a slot so that a
  // program's dup2 may take its number (core/own_slot.h); every use is one
  // non-blocking system call.  Closed in on_release.
  core::OwnSlot kfd_;
  int key_ = -1;                   // the service's key (set_service_key)
  bool kernel_readable() noexcept;             // poll of the kernel timer, no wait
  ssize_t kernel_read(uint64_t* ticks) noexcept;  // its count (non-blocking)
  std::atomic<uint64_t> seq_{0};   // written under wq(): service wakeups so far
  // Linux wakes once per expiry and re-arms an expired timer only in read,
  // settime and gettime, so at most one wakeup belongs to each re-arm cycle.
  // rearm_ numbers the cycles: a read, settime or gettime adds 1 before its
  // kernel call and 1 after it (seq_cst RMWs), so it is odd while one is in
  // the kernel.  kernel_fired() names an expiry's cycle by loading rearm_
  // (even) on both sides of its poll of the kernel timer; woke_cycle_, under
  // wq(), is the cycle whose wakeup was delivered, so a second event for the
  // same expiry (settime's synchronous delivery, then the service's edge) is
  // dropped, and an event that a read overtook (harvested by the service
  // before the read, handled after it) finds the timer unreadable, or, if a
  // later expiry is already pending, counts as that expiry's one wakeup.
  std::atomic<uint64_t> rearm_{0};
  uint64_t woke_cycle_ = UINT64_MAX;  // under wq()
  class Rearm;                        // the two increments around a kernel call
  // Wakes wq() for `cycle` unless its wakeup was delivered; `always`: even
  // then (a virtual clock set, which Linux signals with a wakeup of its
  // own, or kernel_fired() unable to name the cycle).  Takes wq().
  void deliver(uint64_t cycle, bool always) noexcept;
  const int clockid_;              // immutable: the clock it was created on
  std::atomic<int> set_flags_{0};  // flags of the last successful settime
  // What the last successful settime armed, for fork_rebuild: kDisarmed, a
  // one-shot whose expiry no read has taken yet (kOneShot; read() clears it
  // when it takes the kernel's count), or an interval timer (kPeriodic,
  // armed until the next settime).  Relaxed: read only by the forking
  // child, single-threaded, after fork copied the parent's memory.
  enum : int { kDisarmed = 0, kOneShot = 1, kPeriodic = 2 };
  std::atomic<int> armed_{kDisarmed};
  // Expirations inherited across fork() that the rebuilt kernel timer does
  // not hold: read() adds them to its count, poll() reports EPOLLIN while
  // nonzero, settime() clears them (Linux: settime zeroes ctx->ticks).
  std::atomic<uint64_t> carried_{0};
  uint64_t take_carried() noexcept { return carried_.exchange(0, std::memory_order_relaxed); }

  // The virtual clock's timer (timerfd_virtual.cpp): Linux's timerfd_ctx
  // fields, under vclock::g_mutex.  vticks_ is also read without it (poll).
  const bool virtual_;  // immutable: created while the virtual clock was on
  struct VTimer : core::vclock::Timer {
    TimerFd* owner = nullptr;
  } vt_;
  int64_t vintv_ = 0;       // ctx->tintv (ns)
  bool vexpired_ = false;   // ctx->expired
  // ctx->ticks.  Written under vclock::g_mutex with release; poll() loads it
  // with acquire (pairs: a poller that sees ticks sees the expiry's state).
  std::atomic<uint64_t> vticks_{0};
  // TFD_TIMER_CANCEL_ON_SET (timerfd_setup_cancel): ctx->might_cancel (on
  // the clock's cancel list) and ctx->moffs (the REALTIME offset last seen;
  // INT64_MAX once a clock set has cancelled the timer).
  bool vmight_cancel_ = false;
  int64_t vmoffs_ = 0;
  static void v_fire(core::vclock::Timer* t) noexcept;
  static void v_clock_was_set(core::vclock::Timer* t) noexcept;
  bool v_canceled_locked() noexcept;  // timerfd_canceled; under vclock::g_mutex
  // 8, or -1 with errno EAGAIN or ECANCELED (a blocking caller gets EAGAIN
  // while no tick is pending, then sleeps, as Linux's read waits first).
  ssize_t v_read_ticks(uint64_t* ticks, bool nonblock) noexcept;
  int v_settime(int flags, const struct itimerspec* new_value, struct itimerspec* old_value) noexcept;
  int v_gettime(struct itimerspec* curr) noexcept;
  void v_release() noexcept;
};

// Creates a timer on clockid (flags already validated: TFD_NONBLOCK |
// TFD_CLOEXEC) and installs it.  Returns the descriptor or -errno: the
// kernel's timerfd_create errors (EINVAL for an unknown clock, EPERM for an
// alarm clock without CAP_WAKE_ALARM, EMFILE/ENFILE for kernel descriptors),
// -ENOMEM, -EAGAIN if the service thread cannot start, -EMFILE (uepoll table).
int make_timerfd(int clockid, int flags) noexcept;

// f as a timer, or nullptr for any other file (timerfd_settime/gettime:
// EINVAL on another file, Linux's f_op != &timerfd_fops).
inline TimerFd* as_timerfd(core::File* f) noexcept {
  return f->kind() == core::FileKind::kTimer ? static_cast<TimerFd*>(f) : nullptr;
}

}  // namespace uepoll::objects
