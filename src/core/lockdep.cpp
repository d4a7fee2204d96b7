// lockdep.cpp - the lock checker (see lockdep.h).  Per-thread state only; no
// locks, no allocation.  Compiled to nothing unless UEPOLL_LOCKDEP is 1.
#include "core/lockdep.h"

#if UEPOLL_LOCKDEP

#include "core/lock_state.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unistd.h>

namespace uepoll::core {

namespace {

struct Held {
  const LockClass* cls;
  const void* instance;
};

struct LockdepState {
  static constexpr int kMax = 64;
  Held held[kMax];
  int n = 0;
  int release_base = -1;  // held[0 .. release_base) predate the release in progress
  int frame_base = 0;     // held[0 .. frame_base) belong to an interrupted frame
  int release_depth = 0;
  // Locks taken with Mutex::lock_unchecked, for lockdep_assert_held only;
  // n_unchecked > kMax: some were not recorded (the check then passes).
  const void* unchecked[kMax];
  int n_unchecked = 0;
};
thread_local LockdepState tls_lockdep;

[[noreturn]] void die(const char* msg) {
  ssize_t r = ::write(2, msg, std::strlen(msg));
  (void)r;
  std::abort();
}

// A level as numbered in lock_order.h: the class level is ten times that
// (plus a leaf mutex's place among the leaves, which is not printed).
struct Level {
  char s[8];
  explicit Level(const LockClass* c) { std::snprintf(s, sizeof s, "%d", c->level / 10); }
};

// "<what>: acquiring 'A' (level 6) while holding 'B' (level 14)".
[[noreturn]] void die2(const char* what, const char* verb, const LockClass* a, const char* rel, const LockClass* b) {
  char buf[512];
  std::snprintf(buf, sizeof buf, "uepoll lockdep: %s: %s '%s' (level %s) %s '%s' (level %s)\n", what, verb, a->name,
                Level(a).s, rel, b->name, Level(b).s);
  die(buf);
}

[[noreturn]] void die1(const char* what, const char* how, const LockClass* c) {
  char buf[512];
  std::snprintf(buf, sizeof buf, "uepoll lockdep: %s %s: '%s' (level %s) is held\n", what, how, c->name, Level(c).s);
  die(buf);
}

bool release_exempt(const LockClass* c) {
  return c == &lock_class::kScan || c == &lock_class::kNestedPoll;
}

}  // namespace

void lockdep_acquire(const LockClass* cls, const void* instance) noexcept {
  LockdepState& s = tls_lockdep;
  int same = 0;
  for (int i = s.n - 1; i >= 0; --i) {
    const Held& h = s.held[i];
    if (i < s.frame_base) {
      // A signal handler's frame: only leaves (the caller checked, through
      // the lock's owner, that its thread does not hold this one; the
      // interrupted code may be about to take it, which is harmless).
      if (cls->level < lock_class::kPipe.level)
        die2("signal handler inside uepoll", "acquiring", cls, "while its thread holds", h.cls);
      continue;
    }
    if (h.instance == instance)
      die2("recursive locking", "acquiring", cls, "while already holding (same instance)", h.cls);
    if (i < s.release_base && release_exempt(h.cls)) continue;
    if (h.cls == cls && cls->nests) {
      if (++same >= kMaxLockNesting)
        die2("nesting too deep", "acquiring", cls, "under too many of the same class", h.cls);
      continue;
    }
    if (h.cls->level >= cls->level)
      die2("lock order violation", "acquiring", cls, "while holding", h.cls);
  }
  if (s.n == LockdepState::kMax)
    die2("too many locks held", "acquiring", cls, "last held", s.held[s.n - 1].cls);
  s.held[s.n] = Held{cls, instance};
  std::atomic_signal_fence(std::memory_order_seq_cst);
  ++s.n;
}

void lockdep_release(const LockClass* cls, const void* instance) noexcept {
  LockdepState& s = tls_lockdep;
  for (int i = s.n - 1; i >= 0; --i) {
    if (s.held[i].instance != instance) continue;
    for (int j = i; j + 1 < s.n; ++j) s.held[j] = s.held[j + 1];
    --s.n;
    return;
  }
  die2("release of a lock not held", "releasing", cls, "last held", s.n ? s.held[s.n - 1].cls : cls);
}

void lockdep_hold_unchecked(const void* instance) noexcept {
  LockdepState& s = tls_lockdep;
  if (s.n_unchecked < LockdepState::kMax) s.unchecked[s.n_unchecked] = instance;
  std::atomic_signal_fence(std::memory_order_seq_cst);
  ++s.n_unchecked;
}

void lockdep_drop_unchecked(const void* instance) noexcept {
  LockdepState& s = tls_lockdep;
  const int n = s.n_unchecked < LockdepState::kMax ? s.n_unchecked : LockdepState::kMax;
  for (int i = n - 1; i >= 0; --i) {
    if (s.unchecked[i] != instance) continue;
    for (int j = i; j + 1 < n; ++j) s.unchecked[j] = s.unchecked[j + 1];
    break;
  }
  --s.n_unchecked;
}

void lockdep_assert_held(const LockClass* cls, const void* instance) noexcept {
  LockdepState& s = tls_lockdep;
  for (int i = s.n - 1; i >= 0; --i)
    if (s.held[i].instance == instance) return;
  if (s.n_unchecked > LockdepState::kMax) return;
  for (int i = s.n_unchecked - 1; i >= 0; --i)
    if (s.unchecked[i] == instance) return;
  lockdep_not_held(cls);
}

void lockdep_not_held(const LockClass* cls) noexcept {
  char buf[512];
  std::snprintf(buf, sizeof buf, "uepoll lockdep: '%s' (level %s) is not held by this thread\n", cls->name, Level(cls).s);
  die(buf);
}

void lockdep_assert_no_spin(const char* what) noexcept {
  LockdepState& s = tls_lockdep;
  for (int i = s.n - 1; i >= s.frame_base; --i) {
    const LockClass* c = s.held[i].cls;
    if (c->level >= lock_class::kWaitQueue.level && c->level <= lock_class::kUnixConn.level)
      die1(what, "under a SpinLock", c);
  }
}

void lockdep_assert_none_held(const char* what) noexcept {
  LockdepState& s = tls_lockdep;
  for (int i = s.n - 1; i >= s.frame_base; --i) {
    if (i < s.release_base && release_exempt(s.held[i].cls)) continue;
    const LockClass* c = s.held[i].cls;
    die1(what, "with a uepoll lock held", c);
  }
}

void lockdep_release_begin() noexcept {
  LockdepState& s = tls_lockdep;
  if (s.release_depth++ == 0) s.release_base = s.n;
}

void lockdep_release_end() noexcept {
  LockdepState& s = tls_lockdep;
  if (--s.release_depth == 0) s.release_base = -1;
}

// The handler's frame starts one slot past the interrupted frame's top: the
// interrupted code may have written held[n] and not yet counted it (or be
// moving entries down in lockdep_release), and must find that slot intact.
int lockdep_signal_frame_begin() noexcept {
  LockdepState& s = tls_lockdep;
  const int saved = s.frame_base + s.n * 256;
  if (s.n + 1 < LockdepState::kMax) ++s.n;
  s.frame_base = s.n;
  std::atomic_signal_fence(std::memory_order_seq_cst);
  return saved;
}

void lockdep_signal_frame_end(int saved) noexcept {
  LockdepState& s = tls_lockdep;
  s.frame_base = saved % 256;
  s.n = saved / 256;
  std::atomic_signal_fence(std::memory_order_seq_cst);
}

}  // namespace uepoll::core

#endif  // UEPOLL_LOCKDEP
