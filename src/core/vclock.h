// vclock.h - the virtual clock (include/uepoll/vclock.h): its mode, its
// time, the virtual hrtimers that timerfds arm on it, and the registry of
// threads sleeping in uepoll waits that automatic mode watches for
// quiescence.
//
// What it owns.  One process-wide clock: the mode (g_mode), the monotonic
// time in ns (BOOTTIME equals it; REALTIME adds an offset that only
// set_realtime changes), the armed timers sorted by expiry (ties: arming
// order, as Linux's timerqueue), the cancel list (TFD_TIMER_CANCEL_ON_SET),
// and the sleepers: one record per thread inside ThreadWaiter::sleep_with
// while the clock is on, with its deadline.  known/blocked count the
// threads automatic mode waits for.
//
// Locks.  One Mutex, g_mutex (level 1 of core/lock_order.h: taken with no
// uepoll lock held), guards the timer list, every Timer's fields, the
// cancel list, the sleepers and the counts (and serialized mode's records:
// core/vclock_serial.h); a timer's fire callback runs under it and may
// take a wait-queue lock (11) to deliver the expiry, and sleepers are kicked
// under it (an eventfd write).  The time is an atomic written under the
// mutex and read without it.
#pragma once

#include "core/mutex.h"

#include <atomic>
#include <cstdint>
#include <ctime>

namespace uepoll::core {
class ThreadWaiter;
}

namespace uepoll::core::vclock {

enum Mode : int { kOff = 0, kManual = 1, kAuto = 2 };

// The mode; relaxed: a change is made at a quiescent point (see vclock.h's
// public header), so no reader needs ordering with it.
extern std::atomic<int> g_mode;
inline bool on() noexcept { return __builtin_expect(g_mode.load(std::memory_order_relaxed) != kOff, 0); }

extern Mutex g_mutex;  // see the file comment

int enable(int mode) noexcept;  // 0 or -EINVAL
int set_start(int64_t mono, int64_t realtime) noexcept;

// Monotonic virtual ns, and the offset of `clock` from it (0 for
// MONOTONIC/BOOTTIME, the REALTIME offset for REALTIME); false for a clock
// the virtual clock does not cover.
int64_t now() noexcept;
bool clock_offset(clockid_t clock, int64_t* offset) noexcept;
bool gettime(clockid_t clock, timespec* ts) noexcept;

inline int64_t to_ns(const timespec& t) noexcept {
  constexpr int64_t kMaxSec = INT64_MAX / 1000000000 - 1;
  if (t.tv_sec >= kMaxSec) return INT64_MAX;
  return static_cast<int64_t>(t.tv_sec) * 1000000000 + t.tv_nsec;
}
inline timespec to_ts(int64_t ns) noexcept {
  if (ns < 0) ns = 0;
  return timespec{static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
}
inline int64_t add_sat(int64_t a, int64_t b) noexcept { return b > INT64_MAX - a ? INT64_MAX : a + b; }

// A virtual hrtimer.  All fields under g_mutex.
struct Timer {
  Timer* prev = nullptr;
  Timer* next = nullptr;
  int64_t expires = 0;  // monotonic virtual ns (hrtimer_get_expires)
  bool queued = false;  // in the armed list
  // On CLOCK_REALTIME's base (a REALTIME timerfd, relative or absolute, as
  // Linux's hrtimer): set_realtime() moves `expires` so that its realtime
  // expiry stays where it was.
  bool realtime = false;
  Timer* shift_next = nullptr;  // set_realtime's scratch list
  void (*fire)(Timer*) noexcept = nullptr;  // called once when it expires, under g_mutex
  // The cancel list (Linux timerfd's cancel_list, TFD_TIMER_CANCEL_ON_SET):
  // clock_was_set runs, under g_mutex, for each listed timer whenever the
  // realtime clock is set.
  Timer* cprev = nullptr;
  Timer* cnext = nullptr;
  bool on_cancel_list = false;
  void (*clock_was_set)(Timer*) noexcept = nullptr;
};
// Preconditions for all three: g_mutex held.  start() of a time already
// reached fires it at once (hrtimer_start of a past expiry).
void timer_start(Timer* t) noexcept UEP_REQUIRES(g_mutex);
void timer_cancel(Timer* t) noexcept UEP_REQUIRES(g_mutex);
// hrtimer_forward(t, now, interval): moves expires past now by whole
// intervals; returns the number of intervals (0 if expires is in the future).
uint64_t timer_forward_now(Timer* t, int64_t interval) noexcept UEP_REQUIRES(g_mutex);

// The latest time the clock reaches (MONOTONIC and REALTIME, ns): about
// 146 years, so that no sum of a time and an offset overflows.
inline constexpr int64_t kMaxTime = INT64_MAX / 2;

// Moves the clock forward by ns: 0, or -EINVAL (negative, past kMaxTime,
// or the clock off).
int advance(int64_t ns) noexcept;
// Moves the clock to monotonic time t (now <= t <= kMaxTime): 0, or -EINVAL.
int advance_to(int64_t t) noexcept;

// REALTIME - MONOTONIC now (ktime_mono_to_real(0)).
int64_t rt_offset() noexcept;
// clock_settime(CLOCK_REALTIME) on the virtual clock: REALTIME becomes
// rt_ns (0 <= rt_ns <= kMaxTime), MONOTONIC and BOOTTIME do not move; timers on the realtime
// base keep their realtime expiry (the ones now due fire), then every timer
// on the cancel list gets clock_was_set.  0, or -EINVAL (negative, or off).
int set_realtime(int64_t rt_ns) noexcept;
void cancel_list_add(Timer* t) noexcept UEP_REQUIRES(g_mutex);
void cancel_list_remove(Timer* t) noexcept UEP_REQUIRES(g_mutex);

// Every known thread sleeps in a uepoll wait, none has been woken or has a
// deadline already passed, no SIGALRM is on its way: the state in which
// automatic mode jumps (manual mode waits for a driver).  False with no
// known thread.
bool idle() noexcept;

// ITIMER_REAL on the virtual clock (Linux kernel/time/itimer.c): one
// process-wide timer whose expiry sends SIGALRM to the process and, with an
// interval, re-arms at once (it_real_fn).  Values in ns; *old_value and
// *old_interval (if non-null) get the previous setting, a remaining time of
// 0 or less as 1000 ns (itimer_get_remtime).  value 0 disarms.
void itimer_real_set(int64_t value, int64_t interval, int64_t* old_value, int64_t* old_interval) noexcept;
void itimer_real_get(int64_t* value, int64_t* interval) noexcept;

// The sleep hook of ThreadWaiter::sleep_with: while the clock is on, each
// sleep registers its thread and deadline (INT64_MAX = none) for its whole
// duration; the thread's kernel sleep has no timeout then, and the clock
// kicks it (an eventfd write) when the deadline is reached.
class SleepScope {
 public:
  SleepScope(ThreadWaiter* w, const timespec* deadline) noexcept {
    if (on()) begin(w, deadline);
  }
  ~SleepScope() {
    if (registered_) end();
  }
  SleepScope(const SleepScope&) = delete;
  SleepScope& operator=(const SleepScope&) = delete;

  SleepScope* prev = nullptr;  // the sleepers list (under g_mutex)
  SleepScope* next = nullptr;
  ThreadWaiter* waiter = nullptr;
  int64_t deadline = INT64_MAX;
  bool active() const noexcept { return registered_; }

 private:
  void begin(ThreadWaiter* w, const timespec* deadline) noexcept;
  void end() noexcept;
  bool registered_ = false;
};

// Makes the calling thread known to automatic mode (idempotent).
void attach_thread() noexcept;
// Serialized mode (core/vclock_serial.h) with `seed`; the calling thread
// becomes known and holds the turn.  0, or -EINVAL (the clock off), -EBUSY
// (another thread is known already).
int serialize(uint64_t seed) noexcept;
// A thread being created is known from before pthread_create (the creator
// calls spawning(); then the new thread started() with what it returned, or
// the creator spawn_failed()), so that the creator cannot let the clock
// jump before the new thread first runs.
void* spawning() noexcept;
void started(void* token) noexcept;
void spawn_failed(void* token) noexcept;
// core/thread_exit.h hook: a known thread leaves the count.
void thread_exit() noexcept;
// core/fork.h hooks: the mutex is held across fork(); in the child only the
// forking thread exists (known if it was), nobody sleeps.
void fork_prepare() noexcept;
void fork_parent() noexcept;
void fork_child() noexcept;

}  // namespace uepoll::core::vclock
