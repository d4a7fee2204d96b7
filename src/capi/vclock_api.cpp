// vclock_api.cpp - the C API of the virtual clock (include/uepoll/vclock.h)
// and the preload's private entry points (capi/vclock_support.h): argument
// checks and errno; the clock itself is core/vclock.h.
// Locks: the clock's mutex, inside core::vclock; none while sleeping.
#include <uepoll/vclock.h>

#include "capi/edge.h"
#include "capi/vclock_support.h"
#include "core/user_memory.h"
#include "core/vcond.h"
#include "core/vclock.h"
#include "core/waiter.h"

#include <cerrno>

namespace vclock = uepoll::core::vclock;
using uepoll::capi::to_c;

extern "C" {

int uep_vclock_enable(int mode) { return to_c(vclock::enable(mode)); }

int uep_vclock_mode(void) { return vclock::g_mode.load(std::memory_order_relaxed); }

int uep_vclock_set_start(int64_t mono_ns, int64_t realtime_ns) { return to_c(vclock::set_start(mono_ns, realtime_ns)); }

int64_t uep_vclock_now(clockid_t clock) {
  int64_t off = 0;
  if (!vclock::on() || !vclock::clock_offset(clock, &off)) {
    errno = EINVAL;
    return -1;
  }
  return vclock::now() + off;
}

int uep_vclock_gettime(clockid_t clock, struct timespec* ts) {
  if (!vclock::on()) return to_c(-EINVAL);
  if (!uepoll::core::user_readable(ts, sizeof *ts)) return to_c(-EFAULT);
  return vclock::gettime(clock, ts) ? 0 : to_c(-EINVAL);
}

int uep_vclock_advance(int64_t ns) { return to_c(vclock::advance(ns)); }

int uep_vclock_advance_to(int64_t mono_ns) { return to_c(vclock::advance_to(mono_ns)); }

int uep_vclock_set_realtime(int64_t realtime_ns) { return to_c(vclock::set_realtime(realtime_ns)); }

int uep_vclock_idle(void) { return vclock::on() && vclock::idle() ? 1 : 0; }

int uep_vclock_attach_thread(void) {
  if (!vclock::on()) return to_c(-EINVAL);
  vclock::attach_thread();
  return 0;
}

int uep_vclock_serialize(uint64_t seed) { return to_c(vclock::serialize(seed)); }

void* uep__vclock_spawning(void) { return vclock::spawning(); }
void uep__vclock_started(void* token) { vclock::started(token); }
void uep__vclock_spawn_failed(void* token) { vclock::spawn_failed(token); }

namespace {

itimerval to_itimerval(int64_t value, int64_t interval) noexcept {
  itimerval v{};
  v.it_value = {static_cast<time_t>(value / 1000000000), static_cast<suseconds_t>(value % 1000000000 / 1000)};
  v.it_interval = {static_cast<time_t>(interval / 1000000000),
                   static_cast<suseconds_t>(interval % 1000000000 / 1000)};
  return v;
}

bool timeval_ok(const timeval& t) noexcept {  // Linux timeval_valid
  return t.tv_sec >= 0 && t.tv_usec >= 0 && t.tv_usec < 1000000;
}

int64_t ns_of(const timeval& t) noexcept {
  return vclock::to_ns(timespec{t.tv_sec, static_cast<long>(t.tv_usec) * 1000});
}

}  // namespace

int uep__vclock_setitimer(const struct itimerval* new_value, struct itimerval* old_value) {
  // Linux: copy in (EFAULT), validity (EINVAL), then the change and the copy out.
  // A NULL new_value disarms (Linux, with a warning in its log).
  itimerval nv{};
  if (new_value) {
    if (!uepoll::core::user_readable(new_value, sizeof *new_value)) return to_c(-EFAULT);
    nv = *new_value;
    if (!timeval_ok(nv.it_value) || !timeval_ok(nv.it_interval)) return to_c(-EINVAL);
  }
  if (old_value && !uepoll::core::user_readable(old_value, sizeof *old_value)) return to_c(-EFAULT);
  int64_t ov = 0, oi = 0;
  vclock::itimer_real_set(ns_of(nv.it_value), ns_of(nv.it_interval), &ov, &oi);
  if (old_value) *old_value = to_itimerval(ov, oi);
  return 0;
}

int uep__vclock_getitimer(struct itimerval* curr) {
  if (!uepoll::core::user_readable(curr, sizeof *curr)) return to_c(-EFAULT);
  int64_t v = 0, i = 0;
  vclock::itimer_real_get(&v, &i);
  *curr = to_itimerval(v, i);
  return 0;
}

namespace {

int vcond_wait(const void* cond, void* mutex, clockid_t clock, const struct timespec* abstime, void (*unlock)(void*),
               void (*relock)(void*), bool interruptible) {
  timespec deadline{};
  if (abstime) {
    int64_t off = 0;
    // glibc: EINVAL for a clock other than REALTIME/MONOTONIC, or a bad abstime.
    if ((clock != CLOCK_REALTIME && clock != CLOCK_MONOTONIC) || !vclock::clock_offset(clock, &off) ||
        static_cast<unsigned long>(abstime->tv_nsec) >= 1000000000UL)
      return EINVAL;
    if (abstime->tv_sec < 0) return ETIMEDOUT;
    deadline = vclock::to_ts(vclock::to_ns(*abstime) - off);
  }
  return uepoll::core::vcond::wait(cond, abstime ? &deadline : nullptr, unlock, relock, mutex, interruptible);
}

}  // namespace

int uep__vcond_wait(const void* cond, void* mutex, clockid_t clock, const struct timespec* abstime,
                    void (*unlock)(void*), void (*relock)(void*)) {
  return vcond_wait(cond, mutex, clock, abstime, unlock, relock, false);
}

int uep__vcond_wait_intr(const void* cond, void* mutex, clockid_t clock, const struct timespec* abstime,
                         void (*unlock)(void*), void (*relock)(void*)) {
  return vcond_wait(cond, mutex, clock, abstime, unlock, relock, true);
}

void uep__vcond_signal(const void* cond, int all) { uepoll::core::vcond::signal(cond, all != 0); }

int uep_vclock_nanosleep(clockid_t clock, int flags, const struct timespec* req, struct timespec* rem) {
  int64_t off = 0;
  // Linux clock_nanosleep: the clock, then the request (EFAULT, EINVAL).
  if (!vclock::on() || !vclock::clock_offset(clock, &off)) return EINVAL;
  if (!uepoll::core::user_readable(req, sizeof *req)) return EFAULT;
  if (req->tv_sec < 0 || static_cast<unsigned long>(req->tv_nsec) >= 1000000000UL) return EINVAL;
  const bool abs = (flags & TIMER_ABSTIME) != 0;
  const int64_t until = abs ? vclock::to_ns(*req) - off : vclock::add_sat(vclock::now(), vclock::to_ns(*req));
  const timespec deadline = vclock::to_ts(until);
  int err = 0;
  uepoll::core::ThreadWaiter* w = uepoll::core::ThreadWaiter::self(&err);
  if (!w) return err;
  uepoll::core::ThreadWaiter::Hold hold(w);
  uepoll::core::SignalBlock blocked;  // a handler runs only inside the sleep
  for (;;) {
    w->prepare();  // nobody else kicks this waiter: only the deadline ends the sleep
    const int s = w->sleep(&deadline, &blocked.saved());
    if (s == 0) return 0;
    if (s == -EINTR) {
      if (rem && !abs) {
        if (!uepoll::core::user_readable(rem, sizeof *rem)) return EFAULT;
        const int64_t left = until - vclock::now();
        *rem = vclock::to_ts(left < 0 ? 0 : left);
      }
      return EINTR;
    }
    if (s < 0) return -s;
  }
}

}  // extern "C"
