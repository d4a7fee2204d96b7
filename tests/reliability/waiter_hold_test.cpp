// waiter_hold_test.cpp - core::ThreadWaiter::Hold from inside (the static
// library's internal symbols): a use of the thread's waiter nested in
// another (a signal handler's blocking call made while its thread was
// inside a wait) gives the interrupted use back the wakeup it may have
// taken, so the interrupted sleep does not lose a kick.  The signal
// handler itself is left out: each test plays the handler's call inline,
// at the point of the interrupted use where a handler may run.
#include "core/waiter.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <ctime>
#include <fstream>
#include <iterator>
#include <pthread.h>
#include <string>
#include <sys/syscall.h>
#include <thread>
#include <unistd.h>

namespace {

using uepoll::core::ThreadWaiter;

ThreadWaiter* waiter() {
  int err = 0;
  ThreadWaiter* w = ThreadWaiter::self(&err);
  EXPECT_NE(w, nullptr) << err;
  return w;
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// A signal handler's blocking call, played inline: a use nested in the
// thread's current one, which prepares, is kicked `kicks` times (the kick
// meant for the interrupted use's entry lands while it runs), and sleeps
// until nothing is left, taking every kick's edge.
void nested_call(ThreadWaiter* w, int kicks) {
  ThreadWaiter::Hold nested(w);
  w->prepare();
  for (int i = 0; i < kicks; ++i) w->kick();
  for (int left = kicks;; --left) {
    const timespec soon = uepoll::core::deadline_after_ms(1);
    const int s = w->sleep(&soon, nullptr);
    EXPECT_EQ(s, left > 0 ? 1 : 0);
    if (s == 0) return;
    w->prepare();  // goes round, finding nothing
  }
}

// The interrupted use is open (it sleeps with signals unblocked) and has
// prepared (its entry queued) but not announced its sleep; the kick meant
// for it lands while the nested use runs, which clears the woken flag and
// sleeps the kick's edge away.  The interrupted sleep must return at once,
// kicked.
TEST(WaiterHold, NestedUseGivesBackAKickItTook) {
  ThreadWaiter* w = waiter();
  ASSERT_NE(w, nullptr);
  ThreadWaiter::Hold outer(w);
  outer.open(true);
  w->prepare();
  nested_call(w, 1);
  const auto t0 = std::chrono::steady_clock::now();
  const timespec later = uepoll::core::deadline_after_ms(2000);
  EXPECT_EQ(w->sleep(&later, nullptr), 1) << "the interrupted sleep lost its kick";
  EXPECT_LT(ms_since(t0), 1000.0);
}

// A nested use with nothing to give back still ends the interrupted sleep:
// the interrupted use may have passed its look at the woken flag (it goes
// round on a spurious wakeup, as on any other).
TEST(WaiterHold, NestedUseEndsTheInterruptedSleepSpuriously) {
  ThreadWaiter* w = waiter();
  ASSERT_NE(w, nullptr);
  ThreadWaiter::Hold outer(w);
  outer.open(true);
  w->prepare();
  nested_call(w, 0);
  EXPECT_TRUE(w->woken());
}

// The interrupted use had announced its sleep (a signal waiter is always
// "asleep"): the nested use's end writes the eventfd, whose edge ends the
// system call the interrupted use may be about to make.
TEST(WaiterHold, NestedUseWritesForAnAnnouncedSleep) {
  int err = 0;
  ThreadWaiter* s = ThreadWaiter::acquire_signal(&err);
  ASSERT_NE(s, nullptr) << err;
  const uint64_t before = s->writes();
  {
    ThreadWaiter::Hold outer(s);
    outer.open(true);
    { ThreadWaiter::Hold nested(s); }
    EXPECT_EQ(s->writes(), before + 1);
  }
  EXPECT_EQ(s->writes(), before + 1);  // the outermost use's end gives nothing back
  s->release_signal();
}

// A handler that makes a blocking call of its own, on the thread's waiter.
ThreadWaiter* g_handler_waiter = nullptr;
std::atomic<int> g_handler_sleep{-1};

void on_usr1_nested_call(int) {
  ThreadWaiter::Hold nested(g_handler_waiter);
  g_handler_waiter->prepare();
  const timespec soon = uepoll::core::deadline_after_ms(1);
  g_handler_sleep.store(g_handler_waiter->sleep(&soon, nullptr));
}

// True once thread `tid` of this process is asleep (state S in its stat).
bool asleep(pid_t tid) {
  std::ifstream in("/proc/self/task/" + std::to_string(tid) + "/stat");
  const std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t p = stat.rfind(')');
  return p != std::string::npos && p + 2 < stat.size() && stat[p + 2] == 'S';
}

// A signal whose handler makes a blocking call ends an open sleep with
// EINTR, as any handler does: the wakeup that call gives back as it ends
// does not turn the interrupted sleep into a kicked one.
TEST(WaiterHold, HandlersCallInsideAnOpenSleepKeepsItsEintr) {
  ThreadWaiter* w = waiter();
  ASSERT_NE(w, nullptr);
  g_handler_waiter = w;
  g_handler_sleep.store(-1);
  struct sigaction sa {}, old {};
  sa.sa_handler = on_usr1_nested_call;
  sigemptyset(&sa.sa_mask);
  ASSERT_EQ(sigaction(SIGUSR1, &sa, &old), 0);
  const pthread_t self = pthread_self();
  const pid_t tid = static_cast<pid_t>(syscall(SYS_gettid));
  std::thread signaller([&] {
    for (int i = 0; i < 2000 && !asleep(tid); ++i) usleep(1000);
    pthread_kill(self, SIGUSR1);
  });
  int s;
  {
    ThreadWaiter::Hold outer(w);
    outer.open(true);
    w->prepare();
    const timespec later = uepoll::core::deadline_after_ms(3000);
    s = w->sleep(&later, nullptr);
  }
  signaller.join();
  ASSERT_EQ(sigaction(SIGUSR1, &old, nullptr), 0);
  EXPECT_EQ(g_handler_sleep.load(), 0);  // the handler's own sleep timed out
  EXPECT_EQ(s, -EINTR);
}

// A use that is not open (signals blocked until its sleep's system call,
// which a handler ends with EINTR) gets nothing back: its sleep keeps the
// EINTR.
TEST(WaiterHold, ClosedUseGetsNothingBack) {
  ThreadWaiter* w = waiter();
  ASSERT_NE(w, nullptr);
  ThreadWaiter::Hold outer(w);
  w->prepare();
  nested_call(w, 0);
  EXPECT_FALSE(w->woken());
}

// Uses that do not nest give nothing back: no spurious wakeup between two
// calls of one thread.
TEST(WaiterHold, SequentialUsesGiveNothingBack) {
  ThreadWaiter* w = waiter();
  ASSERT_NE(w, nullptr);
  {
    ThreadWaiter::Hold first(w);
    first.open(true);
  }
  w->prepare();
  { ThreadWaiter::Hold second(w); }
  EXPECT_FALSE(w->woken());
}

}  // namespace
