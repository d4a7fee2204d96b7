// vclock_serial.cpp - serialized mode (see vclock_serial.h): thread
// records, the turn, and the seeded choice of the next thread.
// Locks: vclock::g_mutex around everything; none while waiting for a turn.
#include "core/vclock_serial.h"

#include "core/waiter.h"

#include <atomic>
#include <cerrno>
#include <climits>
#include <linux/futex.h>
#include <new>
#include <sys/syscall.h>
#include <unistd.h>

namespace uepoll::core::vclock::serial {

struct ThreadRec {
  ThreadRec* prev = nullptr;
  ThreadRec* next = nullptr;
  uint64_t id = 0;
  SleepScope* sleep = nullptr;  // its registered sleep, or none
  // 1 while it holds the turn: the futex word it waits on (written under
  // g_mutex; the waiter's futex_wait compares it without the mutex, and the
  // kernel orders that with the FUTEX_WAKE that follows each store).
  std::atomic<int> turn{0};
};

namespace {

std::atomic<bool> g_on{false};  // set once, under g_mutex, before other threads are known
ThreadRec* g_head UEP_GUARDED_BY(g_mutex) = nullptr;  // by id
ThreadRec* g_tail UEP_GUARDED_BY(g_mutex) = nullptr;
ThreadRec* g_holder UEP_GUARDED_BY(g_mutex) = nullptr;  // the turn
uint64_t g_rng UEP_GUARDED_BY(g_mutex) = 0;
uint64_t g_next_id UEP_GUARDED_BY(g_mutex) = 0;
thread_local ThreadRec* tls_rec = nullptr;  // trivially destructible (thread_exit.h)

uint64_t next_random_locked() noexcept UEP_REQUIRES(g_mutex) {  // splitmix64
  uint64_t z = (g_rng += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

ThreadRec* make_locked() noexcept UEP_REQUIRES(g_mutex) {
  ThreadRec* r = new (std::nothrow) ThreadRec;
  if (!r) return nullptr;  // that thread is not serialized
  r->id = g_next_id++;
  r->prev = g_tail;
  (g_tail ? g_tail->next : g_head) = r;
  g_tail = r;
  return r;
}

void unlist_locked(ThreadRec* r) noexcept UEP_REQUIRES(g_mutex) {
  (r->prev ? r->prev->next : g_head) = r->next;
  (r->next ? r->next->prev : g_tail) = r->prev;
  if (g_holder == r) g_holder = nullptr;
  delete r;
}

bool runnable_locked(const ThreadRec* r, int64_t now) noexcept UEP_REQUIRES(g_mutex) {
  return !r->sleep || r->sleep->waiter->woken() || r->sleep->deadline <= now;
}

void give_locked(ThreadRec* r) noexcept UEP_REQUIRES(g_mutex) {
  g_holder = r;
  r->turn.store(1, std::memory_order_release);
  (void)syscall(SYS_futex, &r->turn, FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
}

}  // namespace

bool on() noexcept { return g_on.load(std::memory_order_relaxed); }

void enable_locked(uint64_t seed) noexcept {
  g_mutex.assert_held();
  if (on()) return;
  g_rng = seed;
  g_on.store(true, std::memory_order_relaxed);
  self_known_locked();
  if (tls_rec && !g_holder) give_locked(tls_rec);
}

void disable_locked() noexcept {
  g_mutex.assert_held();
  if (!on()) return;
  g_on.store(false, std::memory_order_relaxed);
  g_holder = nullptr;
  for (ThreadRec* r = g_head; r; r = r->next) give_locked(r);  // every waiter runs on
  g_holder = nullptr;
}

ThreadRec* spawn_locked() noexcept { return on() ? make_locked() : nullptr; }

void adopt_locked(ThreadRec* r) noexcept {
  g_mutex.assert_held();
  if (!r) return;
  tls_rec = r;
  sleep_end_locked();  // waits for its turn
}

void drop_locked(ThreadRec* r) noexcept {
  g_mutex.assert_held();
  if (r) unlist_locked(r);
}

void self_known_locked() noexcept {
  g_mutex.assert_held();
  if (on() && !tls_rec) tls_rec = make_locked();
}

void sleep_begin_locked(SleepScope* s) noexcept {
  g_mutex.assert_held();
  if (!tls_rec) return;
  tls_rec->sleep = s;
  if (g_holder == tls_rec) g_holder = nullptr;
}

// g_mutex is released while the thread waits for its turn, and held again
// when it returns.
void sleep_end_locked() noexcept {
  g_mutex.assert_held();
  ThreadRec* me = tls_rec;
  if (!me) return;
  me->sleep = nullptr;
  while (on() && g_holder != me) {
    if (!g_holder) {  // nobody was runnable when the turn was last given: an outside wakeup
      g_holder = me;
      me->turn.store(1, std::memory_order_relaxed);
      break;
    }
    me->turn.store(0, std::memory_order_relaxed);
    g_mutex.unlock();
    (void)syscall(SYS_futex, &me->turn, FUTEX_WAIT_PRIVATE, 0, nullptr, nullptr, 0);
    g_mutex.lock();
  }
}

void exit_locked() noexcept {
  g_mutex.assert_held();
  if (!tls_rec) return;
  unlist_locked(tls_rec);
  tls_rec = nullptr;
  schedule_locked();
}

void schedule_locked() noexcept {
  g_mutex.assert_held();
  if (!on() || g_holder) return;
  const int64_t now = vclock::now();
  uint64_t n = 0;
  for (ThreadRec* r = g_head; r; r = r->next) n += runnable_locked(r, now);
  if (n == 0) return;  // all asleep: the clock moves (automatic mode) or a driver moves it
  uint64_t k = next_random_locked() % n;
  for (ThreadRec* r = g_head; r; r = r->next) {
    if (!runnable_locked(r, now)) continue;
    if (k-- == 0) {
      give_locked(r);
      return;
    }
  }
}

void fork_child_locked() noexcept {
  g_mutex.assert_held();
  for (ThreadRec* r = g_head; r;) {
    ThreadRec* nx = r->next;
    if (r != tls_rec) delete r;
    r = nx;
  }
  g_head = g_tail = tls_rec;
  g_holder = tls_rec;
  if (tls_rec) {
    tls_rec->prev = tls_rec->next = nullptr;
    tls_rec->sleep = nullptr;
    tls_rec->turn.store(1, std::memory_order_relaxed);
  }
}

}  // namespace uepoll::core::vclock::serial
