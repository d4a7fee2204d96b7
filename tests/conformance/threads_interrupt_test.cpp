// threads_interrupt_test.cpp - conformance scenarios that end a blocked
// call: close(epfd) while a thread waits in it, close while blocked in
// read, EINTR from a signal handler, and epoll_pwait's signal mask.  The
// sequencing is made deterministic with generous sleeps; only outcomes,
// never timings, go into the compared trace.
#include "harness.h"
#include "threads_waiter.h"

#include <pthread.h>
#include <sys/eventfd.h>

#include <atomic>
#include <csignal>
#include <thread>
#include <vector>

namespace {

using conf::T;
using conf_threads::kSettleUs;
using conf_threads::Waiter;

constexpr uint32_t IN = EPOLLIN;

// A signal handler interrupts a blocked epoll_wait / epoll_pwait2 / poll with
// EINTR even with SA_RESTART, and a blocked read without SA_RESTART; events
// already available are returned.
std::atomic<int> g_signals{0};
void on_sigusr1(int) { g_signals++; }

// close(epfd) while a thread sleeps in epoll_wait on it neither wakes nor
// fails the sleeper: the instance lives until the wait returns.
TEST(Threads, CloseEpfdWhileWaiting) {
  UEPOLL_SKIP_UNDER_TSAN("close() of a kernel fd another thread waits on");
  auto r = conf::differential([](T& t) {
    int ep = t.epoll_create1();
    int efd = t.eventfd(0);
    t.ctl(ep, EPOLL_CTL_ADD, efd, IN, 1);
    {
      Waiter a(t.api, ep, 300);
      usleep(kSettleUs);
      t.close(ep);
      usleep(kSettleUs);
      t.log(std::string("after close: ") + (a.finished() ? "woke" : "still asleep"));
      t.log("sleeper returned " + a.result());
    }
    int ep2 = t.epoll_create1();
    t.ctl(ep2, EPOLL_CTL_ADD, efd, IN, 2);
    {
      Waiter a(t.api, ep2, 3000);
      usleep(kSettleUs);
      t.close(ep2);
      usleep(kSettleUs);
      t.write_u64(efd, 1);  // the closed instance still delivers to its sleeper
      t.log("sleeper returned " + a.result());
    }
    t.wait(ep2, 4, 0);  // EBADF now
  });
  EXPECT_LINUX_SEQ(r, {"after close: still asleep", "sleeper returned 0 (timed out)", "sleeper returned 1 [IN:2]",
                       "wait(fd2,4,0) = -1 EBADF"});
}

// close() of a descriptor while another thread is blocked reading it: the
// blocked call keeps the open file alive, so it is neither woken nor failed
// by the close, and a later write still reaches it.
TEST(Threads, CloseWhileBlockedInRead) {
  UEPOLL_SKIP_UNDER_TSAN("close() of a kernel fd another thread reads");
  auto r = conf::differential([](T& t) {
    auto [rd, wr] = t.pipe();
    std::string res;
    std::atomic<pid_t> tid{0};
    std::atomic<bool> done{false};
    std::thread th([&, rd = rd] {
      tid = static_cast<pid_t>(gettid());
      char buf[8];
      ssize_t n = t.api.read(rd, buf, sizeof buf);
      res = n < 0 ? "-1 " + conf::errno_name(errno) : std::to_string(n);
      done = true;
    });
    conf::wait_until_sleeping(tid);
    t.close(rd);
    usleep(kSettleUs);
    t.log(std::string("after close: reader ") + (done ? "returned " + res : "still blocked"));
    t.write(wr, "late", 4);  // the pipe still has its reader
    th.join();
    t.log("reader returned " + res);
    t.write(wr, "x", 1);  // now no reader is left: EPIPE
    int efd = t.eventfd(0);
    res.clear();
    tid = 0;
    done = false;
    std::thread th2([&] {
      tid = static_cast<pid_t>(gettid());
      uint64_t v;
      ssize_t n = t.api.read(efd, &v, 8);
      res = n < 0 ? "-1 " + conf::errno_name(errno) : "8 value=" + std::to_string(v);
      done = true;
    });
    conf::wait_until_sleeping(tid);
    int keep = t.dup(efd);
    t.close(efd);
    usleep(kSettleUs);
    t.log(std::string("eventfd after close: reader ") + (done ? "returned " + res : "still blocked"));
    t.write_u64(keep, 3);
    th2.join();
    t.log("eventfd reader returned " + res);
  });
  EXPECT_LINUX_SEQ(r, {"after close: reader still blocked", "write(fd1,4) = 4", "reader returned 4",
                       "write(fd1,1) = -1 EPIPE", "eventfd after close: reader still blocked",
                       "eventfd reader returned 8 value=3"});
}

TEST(Threads, SignalInterruptsBlockedCalls) {
  struct sigaction sa {};
  sa.sa_handler = on_sigusr1;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  struct sigaction old {};
  sigaction(SIGUSR1, &sa, &old);
  auto r = conf::differential([](T& t) {
    int ep = t.epoll_create1();
    int efd = t.eventfd(0);
    t.ctl(ep, EPOLL_CTL_ADD, efd, IN, 1);
    auto interrupt = [&](const std::function<std::string()>& call) {
      std::string res;
      std::atomic<bool> done{false};
      std::atomic<pid_t> tid{0};
      std::thread th([&] {
        tid = static_cast<pid_t>(gettid());
        res = call();
        done = true;
      });
      conf::wait_until_sleeping(tid);
      pthread_kill(th.native_handle(), SIGUSR1);
      for (int i = 0; i < 200 && !done; ++i) usleep(5000);
      if (!done) {  // not interrupted: release it
        uint64_t v = 1;
        t.api.write(efd, &v, 8);
      }
      th.join();
      return res;
    };
    auto outcome = [](long n) { return n < 0 ? "-1 " + conf::errno_name(errno) : std::to_string(n); };
    t.log("epoll_wait: " + interrupt([&] {
      struct epoll_event ev;
      return outcome(t.api.epoll_wait(ep, &ev, 1, 5000));
    }));
    t.log("epoll_pwait2(NULL): " + interrupt([&] {
      struct epoll_event ev;
      return outcome(t.api.epoll_pwait2(ep, &ev, 1, nullptr, nullptr));
    }));
    t.log("poll: " + interrupt([&] {
      struct pollfd p = {efd, POLLIN, 0};
      return outcome(t.api.poll(&p, 1, 5000));
    }));
    // Linux restarts a blocking read() under SA_RESTART (uepoll documents
    // returning EINTR instead), so reads are checked without SA_RESTART.
    struct sigaction no_restart {};
    no_restart.sa_handler = on_sigusr1;
    sigemptyset(&no_restart.sa_mask);
    sigaction(SIGUSR1, &no_restart, nullptr);
    t.log("eventfd read: " + interrupt([&] {
      uint64_t v;
      return outcome(t.api.read(efd, &v, 8));
    }));
    auto [rd, wr] = t.pipe();
    t.log("pipe read: " + interrupt([&, rd = rd] {
      char c;
      return outcome(t.api.read(rd, &c, 1));
    }));
    (void)wr;
    // Events available: returned even with a signal pending.
    t.write_u64(efd, 1);
    t.wait(ep, 4, 0);
  });
  sigaction(SIGUSR1, &old, nullptr);
  EXPECT_LINUX_SEQ(r, {"epoll_wait: -1 EINTR", "epoll_pwait2(NULL): -1 EINTR", "poll: -1 EINTR",
                       "eventfd read: -1 EINTR", "pipe read: -1 EINTR", "wait(fd0,4,0) = 1 [IN:1]"});
}

// epoll_pwait's mask is in force only during the wait: a signal blocked by
// it does not interrupt, and is delivered after the call returns; with
// timeout 0 and a pending signal that the temporary mask unblocks, the call
// returns 0 and the signal stays pending (epoll-shim epoll__epoll_pwait).
TEST(Threads, PwaitSignalMask) {
  struct sigaction sa {};
  sa.sa_handler = on_sigusr1;
  sigemptyset(&sa.sa_mask);
  struct sigaction old {};
  sigaction(SIGUSR1, &sa, &old);
  auto r = conf::differential([](T& t) {
    int ep = t.epoll_create1();
    sigset_t block_usr1;
    sigemptyset(&block_usr1);
    sigaddset(&block_usr1, SIGUSR1);
    std::string res;
    int during = -1, after = -1;
    std::atomic<pid_t> tid{0};
    std::thread th([&] {
      tid = static_cast<pid_t>(gettid());
      struct epoll_event ev;
      g_signals = 0;
      int n = t.api.epoll_pwait(ep, &ev, 1, 200, &block_usr1);
      res = n < 0 ? "-1 " + conf::errno_name(errno) : std::to_string(n);
      during = g_signals.load();
      usleep(10 * 1000);
      after = g_signals.load();
    });
    conf::wait_until_sleeping(tid);
    pthread_kill(th.native_handle(), SIGUSR1);
    th.join();
    (void)during;  // the handler runs as the call returns: not separable
    t.log("pwait with SIGUSR1 masked returned " + res + "; handler ran by the end: " + std::to_string(after));
    std::thread th2([&] {
      sigset_t old_mask;
      pthread_sigmask(SIG_BLOCK, &block_usr1, &old_mask);
      g_signals = 0;
      pthread_kill(pthread_self(), SIGUSR1);  // pending, blocked
      sigset_t empty;
      sigemptyset(&empty);
      struct epoll_event ev;
      int n = t.api.epoll_pwait(ep, &ev, 1, 0, &empty);
      res = n < 0 ? "-1 " + conf::errno_name(errno) : std::to_string(n);
      during = g_signals.load();
      sigset_t pending;
      sigpending(&pending);
      after = sigismember(&pending, SIGUSR1);
      pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);  // delivered here
    });
    th2.join();
    t.log("pwait timeout 0 with a pending unblocked signal returned " + res + "; delivered: " +
          std::to_string(during) + "; still pending: " + std::to_string(after));
  });
  sigaction(SIGUSR1, &old, nullptr);
  EXPECT_LINUX_SEQ(r, {"pwait with SIGUSR1 masked returned 0; handler ran by the end: 1",
                       "pwait timeout 0 with a pending unblocked signal returned 0; delivered: 0; still pending: 1"});
}

}  // namespace
