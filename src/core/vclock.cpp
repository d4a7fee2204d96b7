// vclock.cpp - the virtual clock (see vclock.h): mode, time, timer list,
// sleepers and automatic mode's quiescence check.
// Locks: g_mutex (level 1 of core/lock_order.h) around every change; under
// it, timer callbacks take wait-queue locks (11) and sleepers' eventfds are
// written.  No other uepoll lock is held when it is taken.
#include "core/vclock.h"

#include "core/thread_exit.h"
#include "core/vclock_serial.h"
#include "core/waiter.h"

#include <uepoll/vclock.h>

#include <cerrno>
#include <csignal>
#include <unistd.h>

namespace uepoll::core::vclock {

std::atomic<int> g_mode{kOff};
Mutex g_mutex(lock_class::kVClock);

namespace {

// The monotonic virtual time.  Written under g_mutex with release, read
// anywhere with acquire: pairs so that a thread that sees a time also sees
// the timer state the advance to it left (the expiries it fired).
std::atomic<int64_t> g_now{UEP_VCLOCK_START_MONO};
// REALTIME - MONOTONIC; written under g_mutex (enabling from off,
// set_realtime), read without it, relaxed: a reader racing a set sees the
// old or the new offset, as a clock_gettime racing clock_settime does.
std::atomic<int64_t> g_rt_offset{UEP_VCLOCK_START_REALTIME - UEP_VCLOCK_START_MONO};

int64_t g_start_mono UEP_GUARDED_BY(g_mutex) = UEP_VCLOCK_START_MONO;
int64_t g_start_rt UEP_GUARDED_BY(g_mutex) = UEP_VCLOCK_START_REALTIME;
Timer* g_timers UEP_GUARDED_BY(g_mutex) = nullptr;         // armed, sorted by expires
Timer* g_cancel UEP_GUARDED_BY(g_mutex) = nullptr;         // the cancel list (CANCEL_ON_SET)
SleepScope* g_sleepers UEP_GUARDED_BY(g_mutex) = nullptr;  // threads in a virtual sleep
int g_known UEP_GUARDED_BY(g_mutex) = 0;    // threads automatic mode waits for
int g_blocked UEP_GUARDED_BY(g_mutex) = 0;  // of them, in a virtual sleep (= list length)
int g_spawning UEP_GUARDED_BY(g_mutex) = 0;  // counted in g_known, not yet started

// A SIGALRM was sent to a handler and no sleep has ended since: the thread
// it interrupts is about to run, so automatic mode does not jump further.
bool g_signal_pending UEP_GUARDED_BY(g_mutex) = false;

// ITIMER_REAL (itimer_real_set).
Timer g_itimer UEP_GUARDED_BY(g_mutex);
int64_t g_itimer_interval UEP_GUARDED_BY(g_mutex) = 0;

// This thread is counted in g_known (trivially destructible: thread_exit.h).
thread_local bool tls_known = false;

void know_self_locked() noexcept UEP_REQUIRES(g_mutex) {
  if (tls_known) return;
  tls_known = true;
  ++g_known;
  thread_exit_arm();  // thread_exit() below takes it off
  serial::self_known_locked();
}

// After time moved or a thread stopped running: automatic mode's jumps,
// then a free turn (serialized mode) goes to a runnable thread.
void settle_locked(const SleepScope* self = nullptr) noexcept UEP_REQUIRES(g_mutex);

// Sets the time to t (never backwards) and delivers what is due: timers in
// list order (expiry, then arming order), then every sleeper whose deadline
// has come gets an eventfd write (it re-checks its deadline and returns),
// but `self`: the calling thread's own sleep, which checks its deadline
// before it would sleep in the kernel (SleepScope::begin comes first).
void advance_to_locked(int64_t t, const SleepScope* self = nullptr) noexcept UEP_REQUIRES(g_mutex) {
  if (t > g_now.load(std::memory_order_relaxed)) g_now.store(t, std::memory_order_release);
  const int64_t now = g_now.load(std::memory_order_relaxed);
  while (g_timers && g_timers->expires <= now) {
    Timer* x = g_timers;
    timer_cancel(x);
    x->fire(x);
  }
  for (SleepScope* s = g_sleepers; s; s = s->next)
    if (s->deadline <= now && s != self) s->waiter->write_kick();
}

// Automatic mode: while every known thread sleeps in a uepoll wait, none has
// been woken (its woken flag is set by every wake before its eventfd write)
// and none has a deadline already passed, nothing in the process can make
// progress except time: jump to the earliest deadline.  Each jump either
// wakes someone (the loop then stops) or delivers an expiry nobody waits
// for (the loop goes on to the next one).
// The earliest deadline when every known thread sleeps and none of them
// can run (see idle()); INT64_MIN when some thread can run or is not
// asleep, INT64_MAX when nothing is pending.
int64_t quiescent_next_locked() noexcept UEP_REQUIRES(g_mutex) {
  if (g_known <= 0 || g_blocked < g_known || g_signal_pending) return INT64_MIN;
  const int64_t now = g_now.load(std::memory_order_relaxed);
  int64_t next = g_timers ? g_timers->expires : INT64_MAX;
  for (SleepScope* s = g_sleepers; s; s = s->next) {
    if (s->waiter->woken() || s->deadline <= now) return INT64_MIN;
    if (s->deadline < next) next = s->deadline;
  }
  return next;
}

void maybe_advance_locked(const SleepScope* self = nullptr) noexcept UEP_REQUIRES(g_mutex) {
  while (g_mode.load(std::memory_order_relaxed) == kAuto) {
    const int64_t next = quiescent_next_locked();
    // INT64_MAX: nothing will ever happen: the program hangs, as on Linux.
    if (next == INT64_MIN || next == INT64_MAX) return;
    advance_to_locked(next, self);
  }
}

void settle_locked(const SleepScope* self) noexcept {
  maybe_advance_locked(self);
  serial::schedule_locked();
}

}  // namespace

int enable(int mode) noexcept {
  if (mode != kOff && mode != kManual && mode != kAuto) return -EINVAL;
  MutexLock l(g_mutex);
  if (g_mode.load(std::memory_order_relaxed) == kOff && mode != kOff) {
    g_now.store(g_start_mono, std::memory_order_release);
    g_rt_offset.store(g_start_rt - g_start_mono, std::memory_order_relaxed);
  }
  g_mode.store(mode, std::memory_order_relaxed);
  if (mode == kOff) serial::disable_locked();
  settle_locked();
  return 0;
}

int set_start(int64_t mono, int64_t realtime) noexcept {
  if (mono < 0 || realtime < 0) return -EINVAL;
  MutexLock l(g_mutex);
  g_start_mono = mono;
  g_start_rt = realtime;
  return 0;
}

int64_t now() noexcept { return g_now.load(std::memory_order_acquire); }

bool clock_offset(clockid_t clock, int64_t* offset) noexcept {
  switch (clock) {
    case CLOCK_MONOTONIC:
    case CLOCK_MONOTONIC_RAW:
    case CLOCK_MONOTONIC_COARSE:
    case CLOCK_BOOTTIME:
    case CLOCK_BOOTTIME_ALARM:
      *offset = 0;
      return true;
    case CLOCK_REALTIME:
    case CLOCK_REALTIME_COARSE:
    case CLOCK_REALTIME_ALARM:
      *offset = g_rt_offset.load(std::memory_order_relaxed);
      return true;
    default:
      return false;
  }
}

bool gettime(clockid_t clock, timespec* ts) noexcept {
  int64_t off = 0;
  if (!clock_offset(clock, &off)) return false;
  *ts = to_ts(now() + off);
  return true;
}

void timer_start(Timer* t) noexcept {
  if (t->queued) timer_cancel(t);
  if (t->expires <= g_now.load(std::memory_order_relaxed)) {
    t->fire(t);  // already due: expires now (hrtimer_start of a past time)
    return;
  }
  // After every timer that expires no later (equal times keep arming order).
  Timer* prev = nullptr;
  Timer* cur = g_timers;
  while (cur && cur->expires <= t->expires) {
    prev = cur;
    cur = cur->next;
  }
  t->prev = prev;
  t->next = cur;
  if (cur) cur->prev = t;
  (prev ? prev->next : g_timers) = t;
  t->queued = true;
}

void timer_cancel(Timer* t) noexcept {
  if (!t->queued) return;
  (t->prev ? t->prev->next : g_timers) = t->next;
  if (t->next) t->next->prev = t->prev;
  t->prev = t->next = nullptr;
  t->queued = false;
}

uint64_t timer_forward_now(Timer* t, int64_t interval) noexcept {
  // Linux hrtimer_forward() (kernel/time/hrtimer.c), resolution 1 ns.
  const int64_t now = g_now.load(std::memory_order_relaxed);
  const int64_t delta = now - t->expires;
  if (delta < 0 || interval <= 0) return 0;
  uint64_t orun = 1;
  if (delta >= interval) {
    orun = static_cast<uint64_t>(delta / interval);
    t->expires += interval * static_cast<int64_t>(orun);
    if (t->expires > now) return orun;
    ++orun;  // the correction for exact multiples
  }
  t->expires = add_sat(t->expires, interval);
  return orun;
}

namespace {

// t is a time the clock may move to: not before now, and neither clock past
// kMaxTime.
bool reachable_locked(int64_t t) noexcept UEP_REQUIRES(g_mutex) {
  const int64_t off = g_rt_offset.load(std::memory_order_relaxed);
  return t >= g_now.load(std::memory_order_relaxed) && t <= kMaxTime && (off <= 0 || t <= kMaxTime - off);
}

}  // namespace

int advance(int64_t ns) noexcept {
  if (!on() || ns < 0) return -EINVAL;
  MutexLock l(g_mutex);
  const int64_t t = add_sat(g_now.load(std::memory_order_relaxed), ns);
  if (!reachable_locked(t)) return -EINVAL;
  advance_to_locked(t);
  settle_locked();
  return 0;
}

int advance_to(int64_t t) noexcept {
  if (!on()) return -EINVAL;
  MutexLock l(g_mutex);
  if (!reachable_locked(t)) return -EINVAL;
  advance_to_locked(t);
  settle_locked();
  return 0;
}

int64_t rt_offset() noexcept { return g_rt_offset.load(std::memory_order_relaxed); }

int set_realtime(int64_t rt_ns) noexcept {
  if (!on() || rt_ns < 0 || rt_ns > kMaxTime) return -EINVAL;
  MutexLock l(g_mutex);
  const int64_t now = g_now.load(std::memory_order_relaxed);
  const int64_t old_off = g_rt_offset.load(std::memory_order_relaxed);
  const int64_t off = rt_ns - now;
  g_rt_offset.store(off, std::memory_order_relaxed);
  // Linux clock_was_set: the realtime base's timers are re-evaluated at the
  // new offset (expires = realtime expiry - offset), then the timerfds on
  // the cancel list hear of the change (timerfd_clock_was_set).
  Timer* moved = nullptr;
  for (Timer* t = g_timers; t;) {
    Timer* nx = t->next;
    if (t->realtime) {
      timer_cancel(t);
      t->shift_next = moved;
      moved = t;
    }
    t = nx;
  }
  while (moved) {
    Timer* t = moved;
    moved = t->shift_next;
    t->shift_next = nullptr;
    const int64_t d = old_off - off;  // no overflow: both offsets lie in (-INT64_MAX, INT64_MAX)
    t->expires = d > 0 ? add_sat(t->expires, d) : (t->expires < INT64_MIN - d ? INT64_MIN : t->expires + d);
    timer_start(t);  // fires now if its realtime expiry has come
  }
  for (Timer* t = g_cancel; t; t = t->cnext) t->clock_was_set(t);
  settle_locked();
  return 0;
}

void cancel_list_add(Timer* t) noexcept {
  if (t->on_cancel_list) return;
  t->cprev = nullptr;
  t->cnext = g_cancel;
  if (g_cancel) g_cancel->cprev = t;
  g_cancel = t;
  t->on_cancel_list = true;
}

void cancel_list_remove(Timer* t) noexcept {
  if (!t->on_cancel_list) return;
  (t->cprev ? t->cprev->cnext : g_cancel) = t->cnext;
  if (t->cnext) t->cnext->cprev = t->cprev;
  t->cprev = t->cnext = nullptr;
  t->on_cancel_list = false;
}

bool idle() noexcept {
  MutexLock l(g_mutex);
  return quiescent_next_locked() != INT64_MIN;
}

namespace {

// Linux it_real_fn: SIGALRM to the process; an interval timer re-arms at
// once (hrtimer_forward_now, HRTIMER_RESTART).
// Called by advance_to_locked through Timer::fire, with g_mutex held.
void itimer_fire(Timer* t) noexcept UEP_REQUIRES(g_mutex) {
  g_mutex.assert_held();
  struct sigaction sa {};
  if (sigaction(SIGALRM, nullptr, &sa) == 0 && sa.sa_handler != SIG_IGN && sa.sa_handler != SIG_DFL)
    g_signal_pending = true;  // a handler will interrupt some thread's sleep
  (void)kill(getpid(), SIGALRM);
  if (g_itimer_interval > 0) {
    (void)timer_forward_now(t, g_itimer_interval);
    timer_start(t);
  }
}

void itimer_real_get_locked(int64_t* value, int64_t* interval) noexcept UEP_REQUIRES(g_mutex) {
  if (value) {
    const int64_t rem = g_itimer.expires - g_now.load(std::memory_order_relaxed);
    *value = !g_itimer.queued ? 0 : rem <= 0 ? 1000 : rem;
  }
  if (interval) *interval = g_itimer_interval;
}

}  // namespace

void itimer_real_get(int64_t* value, int64_t* interval) noexcept {
  MutexLock l(g_mutex);
  itimer_real_get_locked(value, interval);
}

void itimer_real_set(int64_t value, int64_t interval, int64_t* old_value, int64_t* old_interval) noexcept {
  MutexLock l(g_mutex);
  itimer_real_get_locked(old_value, old_interval);
  g_itimer.fire = &itimer_fire;
  timer_cancel(&g_itimer);
  g_itimer_interval = value ? interval : 0;
  if (value) {
    g_itimer.expires = add_sat(g_now.load(std::memory_order_relaxed), value);
    timer_start(&g_itimer);
  }
}

void SleepScope::begin(ThreadWaiter* w, const timespec* dl) noexcept {
  waiter = w;
  deadline = dl ? to_ns(*dl) : INT64_MAX;
  MutexLock l(g_mutex);
  know_self_locked();
  prev = nullptr;
  next = g_sleepers;
  if (g_sleepers) g_sleepers->prev = this;
  g_sleepers = this;
  ++g_blocked;
  registered_ = true;
  serial::sleep_begin_locked(this);  // gives the turn away
  settle_locked(this);  // a jump to this sleep's own deadline needs no kick
}

void SleepScope::end() noexcept {
  MutexLock l(g_mutex);
  (prev ? prev->next : g_sleepers) = next;
  if (next) next->prev = prev;
  --g_blocked;
  g_signal_pending = false;  // a thread runs: it decides when the clock may move again
  registered_ = false;
  serial::sleep_end_locked();  // waits for this thread's turn
}

void attach_thread() noexcept {
  MutexLock l(g_mutex);
  know_self_locked();
}

int serialize(uint64_t seed) noexcept {
  if (!on()) return -EINVAL;
  MutexLock l(g_mutex);
  know_self_locked();
  if (!serial::on() && g_known > 1) return -EBUSY;
  serial::enable_locked(seed);
  return 0;
}

void* spawning() noexcept {
  MutexLock l(g_mutex);
  ++g_known;
  ++g_spawning;
  return serial::spawn_locked();
}

void started(void* token) noexcept {
  MutexLock l(g_mutex);
  if (tls_known || g_spawning == 0) {
    serial::drop_locked(static_cast<serial::ThreadRec*>(token));  // (no count to take over)
    know_self_locked();
    return;
  }
  --g_spawning;  // take over the count the creator made
  tls_known = true;
  thread_exit_arm();
  serial::adopt_locked(static_cast<serial::ThreadRec*>(token));  // waits for its turn
}

void spawn_failed(void* token) noexcept {
  MutexLock l(g_mutex);
  if (g_spawning > 0) {
    --g_spawning;
    --g_known;
  }
  serial::drop_locked(static_cast<serial::ThreadRec*>(token));
  settle_locked();
}

void thread_exit() noexcept {
  if (!tls_known) return;
  MutexLock l(g_mutex);
  tls_known = false;
  --g_known;
  serial::exit_locked();
  settle_locked();  // the others may be waiting only for this one
}

// The fork hooks (core/fork.h), not analysed: the lock taken in prepare is
// released in parent or child.
void fork_prepare() noexcept UEP_NO_THREAD_SAFETY_ANALYSIS { g_mutex.lock(); }
void fork_parent() noexcept UEP_NO_THREAD_SAFETY_ANALYSIS { g_mutex.unlock(); }
void fork_child() noexcept UEP_NO_THREAD_SAFETY_ANALYSIS {
  g_sleepers = nullptr;  // the parent's other threads do not exist here
  g_blocked = 0;
  g_known = tls_known ? 1 : 0;
  g_spawning = 0;
  g_signal_pending = false;
  serial::fork_child_locked();
  timer_cancel(&g_itimer);  // Linux: a child does not inherit the parent's itimers
  g_itimer_interval = 0;
  g_mutex.unlock();
}

}  // namespace uepoll::core::vclock
