// lock_internals_test.cpp - the lock layer from inside (src/core): the lock
// checker's verdicts (lockdep builds only), a signal handler running on a
// thread that holds a uepoll lock (deterministic: the test takes an
// object's own queue lock, then raises the signal), and the fork gate.
// Links against the static library's internal symbols.
#include <gtest/gtest.h>

#include <uepoll/uepoll.h>

#include "core/alloc.h"
#include "core/file.h"
#include "core/lock_order.h"
#include "core/lock_state.h"
#include "core/mutex.h"
#include "core/spinlock.h"
#include "fd/table.h"

#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <fcntl.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

using namespace uepoll;
namespace lc = uepoll::core::lock_class;

// ---- the checker --------------------------------------------------------------

#if UEPOLL_LOCKDEP
TEST(LockdepDeathTest, OrderViolationNamesBothLocks) {
  EXPECT_DEATH(
      {
        core::SpinLock pipe_lock(lc::kPipe);
        core::Mutex shard(lc::kShard);
        pipe_lock.lock();
        shard.lock();
      },
      "lock order violation: acquiring 'Instance shard lock' \\(level 6\\) while holding 'Pipe::mu_' \\(level 14\\)");
}

TEST(LockdepDeathTest, WaitQueueUnderReadyLock) {
  EXPECT_DEATH(
      {
        core::SpinLock ready(lc::kReady);
        core::SpinLock wq(lc::kWaitQueue);
        ready.lock();
        wq.lock();
      },
      "acquiring 'WaitQueue::lock_' \\(level 11\\) while holding 'Instance::ready_lock_' \\(level 12\\)");
}

TEST(LockdepDeathTest, MutexUnderSpinLock) {
  EXPECT_DEATH(
      {
        core::SpinLock ready(lc::kReady);
        core::Mutex cache(lc::kItemCache);  // a leaf mutex, but a mutex: never under a SpinLock... by level
        core::Mutex scan(lc::kScan);
        ready.lock();
        scan.lock();
        (void)cache;
      },
      "acquiring 'Instance::scan_mutex_' \\(level 9\\) while holding 'Instance::ready_lock_' \\(level 12\\)");
}

TEST(LockdepDeathTest, AllocationUnderSpinLock) {
  EXPECT_DEATH(
      {
        core::SpinLock pipe_lock(lc::kPipe);
        pipe_lock.lock();
        void* p = core::raw_alloc(16);
        core::raw_free(p);
      },
      "core::raw_alloc under a SpinLock: 'Pipe::mu_' \\(level 14\\) is held");
}

TEST(LockdepDeathTest, RecursiveSpinLock) {
  EXPECT_DEATH(
      {
        core::SpinLock a(lc::kWaitQueue);
        a.lock();
        a.lock();
      },
      "recursive locking");
}

TEST(Lockdep, StatedExceptionsPass) {
  // Nested wait queues (a wakeup climbing the nesting), waiters_ inside
  // ready_lock_, nested scan mutexes, a leaf under everything.
  core::SpinLock leaf_wq(lc::kWaitQueue), child_wq(lc::kWaitQueue);
  core::SpinLock ready(lc::kReady), waiters(lc::kWaiters), pipe_lock(lc::kPipe);
  core::Mutex parent_scan(lc::kScan), child_scan(lc::kScan), shard(lc::kShard);
  shard.lock();
  parent_scan.lock();
  child_scan.lock();
  leaf_wq.lock();
  child_wq.lock();
  ready.lock();
  waiters.lock();
  waiters.unlock();
  ready.unlock();
  child_wq.unlock();
  leaf_wq.unlock();
  child_scan.unlock();
  parent_scan.unlock();
  shard.unlock();
  core::SpinLock rdq(lc::kWaitQueue);
  rdq.lock();
  pipe_lock.lock();
  pipe_lock.unlock();
  rdq.unlock();
  EXPECT_FALSE(core::thread_in_uepoll());
}
#endif  // UEPOLL_LOCKDEP

TEST(LockLayer, CountsEveryLockAndOwner) {
  core::SpinLock s(lc::kPipe);
  core::Mutex m(lc::kShard);
  EXPECT_FALSE(core::thread_in_uepoll());
  m.lock();
  EXPECT_TRUE(core::thread_in_uepoll());
  EXPECT_FALSE(core::thread_holds_spinlock());
  s.lock();
  EXPECT_TRUE(s.held_by_me());
  EXPECT_TRUE(core::thread_holds_spinlock());
  std::thread([&] { EXPECT_FALSE(s.held_by_me()); }).join();
  s.unlock();
  EXPECT_FALSE(s.held_by_me());
  m.unlock();
  EXPECT_FALSE(core::thread_in_uepoll());
}

// ---- a handler on a thread that holds a uepoll lock ----------------------------

int g_target = -1;
int g_target2 = -1;
std::atomic<long> g_handler_result{0};
std::atomic<long> g_handler_result2{0};

void write_one(int) {
  const int saved = errno;
  const uint64_t one = 1;
  g_handler_result.store(uep_write(g_target, &one, sizeof one));
  if (g_target2 >= 0) g_handler_result2.store(uep_write(g_target2, "z", 1));
  errno = saved;
}

void close_target(int) {
  const int saved = errno;
  g_handler_result.store(uep_close(g_target));
  errno = saved;
}

struct Handler {
  struct sigaction old {};
  explicit Handler(void (*fn)(int)) {
    struct sigaction sa {};
    sa.sa_handler = fn;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR2, &sa, &old);
  }
  ~Handler() { sigaction(SIGUSR2, &old, nullptr); }
};

// Holds the file's own wait-queue lock (its state lock, taken by every
// write and wakeup) while the handler writes it: before the lock layer this
// spun forever.  The wakeup must reach a waiter blocked on it once the
// lock is released.
TEST(SignalUnderLock, EventfdWriteWhileItsQueueLockIsHeld) {
  const int efd = uep_eventfd(0, EFD_NONBLOCK);
  const int ep = uep_epoll_create1(0);
  ASSERT_GE(efd, 0);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ASSERT_EQ(uep_epoll_ctl(ep, EPOLL_CTL_ADD, efd, &ev), 0);
  std::atomic<int> woke{-1};
  std::thread waiter([&] {
    epoll_event out[1];
    woke.store(uep_epoll_wait(ep, out, 1, 10000));
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // let it sleep
  Handler h(write_one);
  g_target = efd;
  g_target2 = -1;
  core::File* f = fd::lookup(efd);
  ASSERT_NE(f, nullptr);
  f->wq().lock();
  raise(SIGUSR2);  // runs now, on this thread, inside the lock
  EXPECT_EQ(g_handler_result.load(), 8);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(woke.load(), -1);  // the wakeup waits for our release
  f->wq().unlock();            // ... which performs it
  waiter.join();
  EXPECT_EQ(woke.load(), 1);
  uint64_t v = 0;
  EXPECT_EQ(uep_read(efd, &v, sizeof v), 8);
  EXPECT_EQ(v, 1u);
  f->put();
  uep_close(ep);
  uep_close(efd);
}

// A pipe written by a handler while its thread holds the read end's queue
// lock (a blocking reader's state), and an eventfd read from a handler.
TEST(SignalUnderLock, PipeWriteWhileReaderQueueLockIsHeld) {
  int p[2];
  ASSERT_EQ(uep_pipe2(p, O_NONBLOCK), 0);
  const int efd = uep_eventfd(0, EFD_NONBLOCK);
  Handler h(write_one);
  g_target = efd;
  g_target2 = p[1];
  core::File* rd = fd::lookup(p[0]);
  ASSERT_NE(rd, nullptr);
  rd->wq().lock();
  raise(SIGUSR2);
  rd->wq().unlock();
  EXPECT_EQ(g_handler_result2.load(), 1);
  char c = 0;
  EXPECT_EQ(uep_read(p[0], &c, 1), 1);
  EXPECT_EQ(c, 'z');
  rd->put();
  g_target2 = -1;
  uep_close(p[0]);
  uep_close(p[1]);
  uep_close(efd);
}

// close() from a handler while the thread holds a lock: the descriptor is
// gone at once, the release happens at the thread's last unlock.
TEST(SignalUnderLock, CloseWhileALockIsHeld) {
  int p[2];
  ASSERT_EQ(uep_pipe2(p, O_NONBLOCK), 0);
  Handler h(close_target);
  g_target = p[1];
  core::SpinLock any(lc::kWaitQueue);
  any.lock();
  raise(SIGUSR2);
  EXPECT_EQ(g_handler_result.load(), 0);
  EXPECT_EQ(uep_is_uepoll_fd(p[1]), 0);  // gone already
  char c;
  EXPECT_EQ(uep_read(p[0], &c, 1), -1);  // writer still open: EAGAIN, not EOF
  EXPECT_EQ(errno, EAGAIN);
  any.unlock();                          // the release runs here
  EXPECT_EQ(uep_read(p[0], &c, 1), 0);   // EOF: the write end is released
  const int again = uep_eventfd(0, 0);   // the index is free again
  EXPECT_EQ(again, p[1]);
  uep_close(again);
  uep_close(p[0]);
}

// ---- the fork gate ---------------------------------------------------------------

// Threads hammer ctl, write and wait on shared objects while the main thread
// forks again and again (the atfork handlers of core/fork.cpp run the gate
// around each fork()).  Each child must take lock-using paths (a write, a
// ctl, a wait on the inherited objects) and exit 0 in time: a lock copied
// while held would hang it.
TEST(ForkGate, ForkWhileOtherThreadsTakeLocks) {
  const int efd = uep_eventfd(0, EFD_NONBLOCK);
  const int ep = uep_epoll_create1(0);
  int p[2];
  ASSERT_EQ(uep_pipe2(p, O_NONBLOCK), 0);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ASSERT_EQ(uep_epoll_ctl(ep, EPOLL_CTL_ADD, efd, &ev), 0);
  std::atomic<bool> stop{false};
  std::vector<std::thread> ts;
  for (int t = 0; t < 3; ++t) {
    ts.emplace_back([&, t] {
      const uint64_t one = 1;
      epoll_event out[4];
      char buf[64];
      for (unsigned i = 0; !stop.load(std::memory_order_relaxed); ++i) {
        (void)uep_write(efd, &one, sizeof one);
        (void)uep_epoll_wait(ep, out, 4, 0);
        uint64_t v;
        (void)uep_read(efd, &v, sizeof v);
        epoll_event e{};
        e.events = EPOLLIN | EPOLLOUT;
        (void)uep_epoll_ctl(ep, (i + t) % 2 ? EPOLL_CTL_ADD : EPOLL_CTL_DEL, p[1], &e);
        (void)uep_write(p[1], "x", 1);
        (void)uep_read(p[0], buf, sizeof buf);
      }
    });
  }
  const int kForks = 40;
  for (int i = 0; i < kForks; ++i) {
    const pid_t pid = fork();
    if (pid == 0) {
      alarm(10);  // a hang in the child kills it: the parent sees a signal
      const uint64_t one = 1;
      epoll_event out[4];
      int ok = uep_write(efd, &one, sizeof one) == 8;
      ok &= uep_epoll_wait(ep, out, 4, 0) >= 1;
      epoll_event e{};
      e.events = EPOLLIN;
      (void)uep_epoll_ctl(ep, EPOLL_CTL_DEL, p[1], nullptr);
      ok &= uep_epoll_ctl(ep, EPOLL_CTL_ADD, p[1], &e) == 0 || errno == EEXIST;
      ok &= uep_write(p[1], "y", 1) == 1 || errno == EAGAIN;
      const int e2 = uep_eventfd(0, 0);
      ok &= e2 >= 0 && uep_close(e2) == 0;
      _exit(ok ? 0 : 1);
    }
    ASSERT_GT(pid, 0);
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status)) << "child " << i << " did not exit (hung on a lock?), status " << status;
    ASSERT_EQ(WEXITSTATUS(status), 0) << "child " << i;
  }
  stop.store(true);
  for (auto& t : ts) t.join();
  uep_close(ep);
  uep_close(efd);
  uep_close(p[0]);
  uep_close(p[1]);
}

}  // namespace
