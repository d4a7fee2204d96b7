// timerfd_virtual.cpp - TimerFd on the virtual clock (see timerfd.h): Linux
// fs/timerfd.c's timerfd_ctx, computed on core/vclock.h's time.
// Locks: vclock::g_mutex (1) around every access to the timer's state;
// v_fire runs under it and takes the timer's wq lock (11) in deliver().
#include "core/user_memory.h"
#include "core/vclock.h"
#include "objects/timerfd.h"

#include <cerrno>
#include <sys/epoll.h>
#include <sys/timerfd.h>

namespace uepoll::objects {

namespace vclock = core::vclock;

namespace {

// timerfd_get_remaining(): expires - now, never negative (a disarmed timer's
// expires is 0).
timespec remaining_locked(const vclock::Timer& t) noexcept UEP_REQUIRES(vclock::g_mutex) {
  const int64_t r = t.expires - vclock::now();
  return vclock::to_ts(r < 0 ? 0 : r);
}

bool writable(void* p, size_t len) noexcept {
  return core::user_readable(p, len) && core::writable_prefix(p, len) == len;
}

}  // namespace

// Linux timerfd_tmrproc -> timerfd_triggered: expired = 1, ticks++, one wakeup.
void TimerFd::v_fire(vclock::Timer* t) noexcept UEP_NO_THREAD_SAFETY_ANALYSIS {
  TimerFd* self = static_cast<VTimer*>(t)->owner;
  self->vexpired_ = true;
  self->vticks_.store(self->vticks_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
  self->deliver(self->rearm_.load(std::memory_order_seq_cst), false);
}

// Linux timerfd_clock_was_set, for a timer on the cancel list: unless it
// has seen this offset already, it is cancelled (moffs = KTIME_MAX), gets a
// tick (so it polls readable) and a wakeup.
void TimerFd::v_clock_was_set(vclock::Timer* t) noexcept UEP_NO_THREAD_SAFETY_ANALYSIS {
  TimerFd* self = static_cast<VTimer*>(t)->owner;
  if (self->vmoffs_ == vclock::rt_offset()) return;
  self->vmoffs_ = INT64_MAX;
  self->vticks_.store(self->vticks_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
  self->deliver(self->rearm_.load(std::memory_order_seq_cst), true);
}

// Linux timerfd_canceled: a cancelled timer reports it once, and then
// takes the current offset as seen.
bool TimerFd::v_canceled_locked() noexcept UEP_NO_THREAD_SAFETY_ANALYSIS {
  if (!vmight_cancel_ || vmoffs_ != INT64_MAX) return false;
  vmoffs_ = vclock::rt_offset();
  return true;
}

// Linux timerfd_read's critical section: a cancelled timer drops its ticks
// and is not re-armed (ECANCELED); otherwise the ticks, plus the overruns
// of an expired interval timer, which is re-armed.
ssize_t TimerFd::v_read_ticks(uint64_t* ticks, bool nonblock) noexcept {
  core::MutexLock l(vclock::g_mutex);
  uint64_t n = vticks_.load(std::memory_order_relaxed);
  if (n == 0 && !nonblock) {  // Linux waits for a tick before the cancel check
    errno = EAGAIN;
    return -1;
  }
  if (v_canceled_locked()) {
    vticks_.store(0, std::memory_order_release);
    vexpired_ = false;
    errno = ECANCELED;
    return -1;
  }
  if (n == 0) {
    errno = EAGAIN;
    return -1;
  }
  if (vexpired_ && vintv_) {
    n += vclock::timer_forward_now(&vt_, vintv_) - 1;
    vclock::timer_start(&vt_);
  }
  vexpired_ = false;
  vticks_.store(0, std::memory_order_release);
  *ticks = n;
  return static_cast<ssize_t>(sizeof *ticks);
}

// Linux do_timerfd_settime + timerfd_setup_cancel + timerfd_setup.
int TimerFd::v_settime(int flags, const struct itimerspec* new_value, struct itimerspec* old_value) noexcept {
  int64_t offset = 0;
  if (!vclock::clock_offset(clockid_, &offset)) return -EINVAL;
  const bool old_ok = !old_value || writable(old_value, sizeof *old_value);
  core::MutexLock l(vclock::g_mutex);
  vmight_cancel_ = vt_.realtime && (flags & TFD_TIMER_ABSTIME) && (flags & TFD_TIMER_CANCEL_ON_SET);
  if (vmight_cancel_)
    vclock::cancel_list_add(&vt_);
  else
    vclock::cancel_list_remove(&vt_);
  offset = vt_.realtime ? vclock::rt_offset() : 0;  // under the mutex: no set_realtime in between
  if (vexpired_ && vintv_) (void)vclock::timer_forward_now(&vt_, vintv_);
  itimerspec old{};
  old.it_value = remaining_locked(vt_);
  old.it_interval = vclock::to_ts(vintv_);
  vclock::timer_cancel(&vt_);
  vticks_.store(0, std::memory_order_release);
  carried_.store(0, std::memory_order_relaxed);
  vexpired_ = false;
  vintv_ = vclock::to_ns(new_value->it_interval);
  const int64_t texp = vclock::to_ns(new_value->it_value);
  vt_.expires = texp;
  if (texp != 0) {
    vt_.expires = (flags & TFD_TIMER_ABSTIME) ? texp - offset : vclock::add_sat(vclock::now(), texp);
    vclock::timer_start(&vt_);  // fires now if already due
    // A clock set since the timer last looked: armed, but ECANCELED (and
    // neither the flags nor the old value are stored, as Linux returns first).
    if (v_canceled_locked()) return -ECANCELED;
  }
  set_flags_.store(flags, std::memory_order_relaxed);
  if (old_value) {
    if (!old_ok) return -EFAULT;  // Linux: the copy out fails after the change
    *old_value = old;
  }
  return 0;
}

// Linux timerfd_gettime: an expired interval timer is re-armed, its
// overruns added to the ticks.
int TimerFd::v_gettime(struct itimerspec* curr) noexcept {
  const bool ok = writable(curr, sizeof *curr);
  core::MutexLock l(vclock::g_mutex);
  if (vexpired_ && vintv_) {
    vexpired_ = false;
    const uint64_t orun = vclock::timer_forward_now(&vt_, vintv_);
    vticks_.store(vticks_.load(std::memory_order_relaxed) + orun - 1, std::memory_order_release);
    vclock::timer_start(&vt_);
  }
  if (!ok) return -EFAULT;
  curr->it_value = remaining_locked(vt_);
  curr->it_interval = vclock::to_ts(vintv_);
  return 0;
}

void TimerFd::v_release() noexcept {
  core::MutexLock l(vclock::g_mutex);
  vclock::timer_cancel(&vt_);
  vclock::cancel_list_remove(&vt_);
}

}  // namespace uepoll::objects
