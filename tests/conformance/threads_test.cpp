// threads_test.cpp - conformance scenarios that need blocked waiters:
// EPOLLEXCLUSIVE (one exclusive instance with a sleeper is woken, the rest
// are skipped), one wakeup per event for ET with several waiters on one
// instance, waking a sleeper by ADD/MOD of a ready item, close(epfd) while a
// thread waits in it, EINTR from a signal handler, and liveness under a
// concurrent producer (events arriving during a harvest are kept).  The
// sequencing is made deterministic with generous sleeps (a waiter is given
// 60 ms to block before the event); only outcomes, never timings, go into the
// compared trace.
#include "harness.h"

#include <pthread.h>
#include <sys/eventfd.h>

#include <atomic>
#include <csignal>
#include <thread>
#include <vector>

namespace {

using conf::T;

constexpr uint32_t IN = EPOLLIN;
constexpr uint32_t ET = EPOLLET;
constexpr int kSettleUs = 60 * 1000;

// A thread blocked in epoll_wait(ep, 1, timeout); the constructor returns
// once the thread sleeps; `result()` joins it.
struct Waiter {
  Waiter(const conf::Api& api, int ep, int timeout_ms)
      : th([this, &api, ep, timeout_ms] {
          tid.store(static_cast<pid_t>(gettid()));
          n = api.epoll_wait(ep, &ev, 1, timeout_ms);
          err = errno;
          done.store(true);
        }) {
    conf::wait_until_sleeping(tid);
  }
  ~Waiter() {
    if (th.joinable()) th.join();
  }
  bool finished() const { return done.load(); }
  std::string result() {
    th.join();
    if (n < 0) return "-1 " + conf::errno_name(err);
    if (n == 0) return "0 (timed out)";
    return "1 [" + conf::mask_str(ev.events) + ":" + std::to_string(ev.data.u64) + "]";
  }
  struct epoll_event ev {};
  int n = -2;
  int err = 0;
  std::atomic<bool> done{false};
  std::atomic<pid_t> tid{0};
  std::thread th;
};

// After an event: waits (at most 3 s) until more than `before` of `ws` have
// returned, then 60 ms more so that a wrongly woken one would show too.
void settle(const std::vector<Waiter*>& ws, int before) {
  auto count = [&] {
    int c = 0;
    for (auto* w : ws) c += w->finished();
    return c;
  };
  double end = conf::now_ms() + 3000;
  while (count() <= before && conf::now_ms() < end) usleep(2000);
  usleep(kSettleUs);
}

// Two instances each hold the same eventfd with EPOLLEXCLUSIVE; a thread
// sleeps in each.  A write wakes only the first exclusive instance that has
// a sleeper (registration order); the next write skips the now sleeper-less
// first instance (it still queues the item) and wakes the second.
//   e0 -(EXCL)-> efd <-(EXCL)- e1      A sleeps in e0, B sleeps in e1
TEST(Threads, ExclusiveWakesOneInstance) {
  auto r = conf::differential([](T& t) {
    int e0 = t.epoll_create1(), e1 = t.epoll_create1();
    int efd = t.eventfd(0);
    t.ctl(e0, EPOLL_CTL_ADD, efd, IN | ET | EPOLLEXCLUSIVE, 10);
    t.ctl(e1, EPOLL_CTL_ADD, efd, IN | ET | EPOLLEXCLUSIVE, 11);
    auto a = std::make_unique<Waiter>(t.api, e0, 3000);
    auto b = std::make_unique<Waiter>(t.api, e1, 3000);
    t.write_u64(efd, 1);
    settle({a.get(), b.get()}, 0);
    t.log(std::string("after write 1: A ") + (a->finished() ? "woke" : "asleep") + ", B " +
          (b->finished() ? "woke" : "asleep"));
    t.log("A returned " + a->result());
    t.write_u64(efd, 1);
    settle({b.get()}, 0);
    t.log(std::string("after write 2: B ") + (b->finished() ? "woke" : "asleep"));
    t.log("B returned " + b->result());
    t.wait(e0, 4, 0);  // queued by write 2 although A was not woken
    t.wait(e1, 4, 0);
  });
  EXPECT_LINUX_SEQ(r, {"after write 1: A woke, B asleep", "A returned 1 [IN:10]", "after write 2: B woke",
                       "B returned 1 [IN:11]", "wait(fd0,4,0) = 1 [IN:10]", "wait(fd1,4,0) = 0"});
}

// Sleepers on one instance are woken newest first: ep_poll() queues a sleeper
// with __add_wait_queue_exclusive(), which inserts at the head of ep->wq
// (the reference notes say tail; Linux 6.18 observably wakes the newest).
TEST(Threads, SleepersWokenNewestFirst) {
  auto r = conf::differential([](T& t) {
    int ep = t.epoll_create1();
    int efd = t.eventfd(0);
    t.ctl(ep, EPOLL_CTL_ADD, efd, IN | ET, 1);
    std::vector<std::unique_ptr<Waiter>> w;
    for (int i = 0; i < 3; ++i) {  // A, B, C go to sleep in this order
      w.push_back(std::make_unique<Waiter>(t.api, ep, 3000));
      usleep(10 * 1000);
    }
    std::string order;
    for (int k = 0; k < 3; ++k) {
      t.write_u64(efd, 1);
      settle({w[0].get(), w[1].get(), w[2].get()}, k);
      std::string now;
      for (int i = 0; i < 3; ++i)
        if (w[i]->finished() && order.find(static_cast<char>('A' + i)) == std::string::npos) now += static_cast<char>('A' + i);
      order += now.empty() ? "-" : now.size() > 1 ? "(" + now + ")" : now;
    }
    t.log("wake order: " + order);
    for (int i = 0; i < 3; ++i) t.log(std::string(1, static_cast<char>('A' + i)) + " " + w[i]->result());
  });
  EXPECT_LINUX_SEQ(r, {"wake order: CBA", "A 1 [IN:1]", "B 1 [IN:1]", "C 1 [IN:1]"});
}

// An exclusive wakeup whose key carries both IN and OUT (a pipe's release
// wakes with IN|OUT|ERR|HUP) is not consumed by any exclusive entry: every
// exclusive instance's sleeper wakes.  A plain write (key IN) wakes one.
//   e0 -(EXCL)-> rd <-(EXCL)- e1      A sleeps in e0, B in e1
TEST(Threads, ExclusiveWakeWithInAndOutKeyWakesAll) {
  auto r = conf::differential([](T& t) {
    int e0 = t.epoll_create1(), e1 = t.epoll_create1();
    auto [rd, wr] = t.pipe2(O_NONBLOCK);
    t.ctl(e0, EPOLL_CTL_ADD, rd, IN | ET | EPOLLEXCLUSIVE, 10);
    t.ctl(e1, EPOLL_CTL_ADD, rd, IN | ET | EPOLLEXCLUSIVE, 11);
    {
      auto a = std::make_unique<Waiter>(t.api, e0, 3000);
      auto b = std::make_unique<Waiter>(t.api, e1, 3000);
      t.write(wr, "x", 1);
      settle({a.get(), b.get()}, 0);
      t.log(std::string("write woke: ") + (a->finished() ? "A" : "") + (b->finished() ? "B" : ""));
      t.log("A " + a->result());
      t.write(wr, "y", 1);  // release B
      t.log("B " + b->result());
    }
    t.read(rd, 8);
    t.wait(e0, 4, 0);
    t.wait(e1, 4, 0);
    {
      auto a = std::make_unique<Waiter>(t.api, e0, 3000);
      auto b = std::make_unique<Waiter>(t.api, e1, 3000);
      t.close(wr);
      settle({a.get(), b.get()}, 0);
      t.log(std::string("close of the writer woke: ") + (a->finished() ? "A" : "") + (b->finished() ? "B" : ""));
      t.log("A " + a->result() + ", B " + b->result());
    }
  });
  EXPECT_LINUX_SEQ(r, {"write woke: A", "A 1 [IN:10]", "B 1 [IN:11]", "close of the writer woke: AB",
                       "A 1 [HUP:10], B 1 [HUP:11]"});
}

// The non-exclusive contrast: one write wakes both instances' sleepers.
TEST(Threads, NonExclusiveWakesAll) {
  auto r = conf::differential([](T& t) {
    int e0 = t.epoll_create1(), e1 = t.epoll_create1();
    int efd = t.eventfd(0);
    t.ctl(e0, EPOLL_CTL_ADD, efd, IN | ET, 10);
    t.ctl(e1, EPOLL_CTL_ADD, efd, IN | ET, 11);
    Waiter a(t.api, e0, 3000), b(t.api, e1, 3000);
    usleep(kSettleUs);
    t.write_u64(efd, 1);
    t.log("A returned " + a.result());
    t.log("B returned " + b.result());
  });
  EXPECT_LINUX_SEQ(r, {"A returned 1 [IN:10]", "B returned 1 [IN:11]"});
}

// Several sleepers on one instance: an ET event wakes one sleeper (the other
// sleeps on until the next edge); an LT event is passed on to the next one.
TEST(Threads, SleepersOnOneInstance) {
  auto r = conf::differential([](T& t) {
    int ep = t.epoll_create1();
    int efd = t.eventfd(0);
    t.ctl(ep, EPOLL_CTL_ADD, efd, IN | ET, 1);
    {
      Waiter a(t.api, ep, 5000), b(t.api, ep, 5000);
      t.write_u64(efd, 1);
      settle({&a, &b}, 0);
      t.log("ET: " + std::to_string(a.finished() + b.finished()) + " of 2 sleepers woke");
      t.write_u64(efd, 1);  // a second edge for the other one
      settle({&a, &b}, 1);
      std::string ra = a.result(), rb = b.result();
      t.log("ET: after a second write both returned: " + ra + ", " + rb);
    }
    t.read_u64(efd);
    t.ctl(ep, EPOLL_CTL_MOD, efd, IN, 2);
    {
      // Both return as soon as the write lands; the timeout only bounds a
      // failure (and must outlast a loaded sanitizer run's stalls between
      // the sleepers' start and the write).
      Waiter a(t.api, ep, 5000), b(t.api, ep, 5000);
      usleep(kSettleUs);
      t.write_u64(efd, 1);
      std::string ra = a.result(), rb = b.result();
      t.log("LT: A " + ra + ", B " + rb);
    }
  });
  EXPECT_LINUX_SEQ(r, {"ET: 1 of 2 sleepers woke", "ET: after a second write both returned: 1 [IN:1], 1 [IN:1]", "LT: A 1 [IN:2], B 1 [IN:2]"});
}

// ADD of an already-ready descriptor wakes a sleeper (gVisor UnblockWithNewFD);
// so does MOD re-arming a ready ONESHOT item.
TEST(Threads, AddAndModWakeSleeper) {
  auto r = conf::differential([](T& t) {
    int ep = t.epoll_create1();
    int efd = t.eventfd(1);
    {
      Waiter a(t.api, ep, 3000);
      usleep(kSettleUs);
      t.ctl(ep, EPOLL_CTL_ADD, efd, IN | EPOLLONESHOT, 1);
      t.log("after ADD: " + a.result());
    }
    {
      Waiter a(t.api, ep, 3000);
      usleep(kSettleUs);
      t.log(std::string("disabled item: ") + (a.finished() ? "woke" : "asleep"));
      t.ctl(ep, EPOLL_CTL_MOD, efd, IN | EPOLLONESHOT, 2);
      t.log("after MOD: " + a.result());
    }
    // A nested instance: ADD into the child wakes a sleeper on the parent.
    int parent = t.epoll_create1();
    int child = t.epoll_create1();
    t.ctl(parent, EPOLL_CTL_ADD, child, IN, 3);
    {
      Waiter a(t.api, parent, 3000);
      usleep(kSettleUs);
      t.ctl(child, EPOLL_CTL_ADD, efd, IN, 4);
      t.log("after ADD into the child: " + a.result());
    }
  });
  EXPECT_LINUX_SEQ(r, {"after ADD: 1 [IN:1]", "disabled item: asleep", "after MOD: 1 [IN:2]",
                       "after ADD into the child: 1 [IN:3]"});
}

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

// A signal handler interrupts a blocked epoll_wait / epoll_pwait2 / poll with
// EINTR even with SA_RESTART, and a blocked read without SA_RESTART; events
// already available are returned.
std::atomic<int> g_signals{0};
void on_sigusr1(int) { g_signals++; }

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

// Liveness: a producer thread writes while the consumer harvests; every
// write is eventually seen (no wakeup lost while a harvest is in progress).
// Outcomes only: timings and interleavings are not compared.
void producer_consumer(T& t, bool nested, uint32_t mode) {
  const int kWrites = 20000;
  int ep = t.epoll_create1();
  int efd = t.eventfd(0, EFD_NONBLOCK);
  int top = ep;
  if (nested) {
    top = t.epoll_create1();
    t.ctl(top, EPOLL_CTL_ADD, ep, IN | ET, 2);
  }
  t.ctl(ep, EPOLL_CTL_ADD, efd, IN | mode, 1);
  std::thread producer([&] {
    uint64_t one = 1;
    for (int i = 0; i < kWrites; ++i) t.api.write(efd, &one, 8);
  });
  uint64_t sum = 0;
  int timeouts = 0;
  while (sum < static_cast<uint64_t>(kWrites) && timeouts == 0) {
    struct epoll_event ev[4];
    int n = t.api.epoll_wait(top, ev, 4, 3000);
    if (n == 0) {
      ++timeouts;
      break;
    }
    if (nested) t.api.epoll_wait(ep, ev, 4, 0);
    uint64_t v;
    if (t.api.read(efd, &v, 8) == 8) sum += v;
  }
  producer.join();
  t.log("consumed " + std::to_string(sum) + " of " + std::to_string(kWrites) + ", lost wakeups: " +
        std::to_string(timeouts));
}

TEST(Threads, ProducerConsumerEdgeTriggered) {
  auto r = conf::differential([](T& t) { producer_consumer(t, false, ET); });
  EXPECT_LINUX_SEQ(r, {"consumed 20000 of 20000, lost wakeups: 0"});
}
TEST(Threads, ProducerConsumerOneshotRearmed) {
  auto r = conf::differential([](T& t) {
    const int kWrites = 5000;
    int ep = t.epoll_create1();
    int efd = t.eventfd(0, EFD_NONBLOCK);
    t.ctl(ep, EPOLL_CTL_ADD, efd, IN | EPOLLONESHOT, 1);
    std::thread producer([&] {
      uint64_t one = 1;
      for (int i = 0; i < kWrites; ++i) t.api.write(efd, &one, 8);
    });
    uint64_t sum = 0;
    int timeouts = 0;
    while (sum < static_cast<uint64_t>(kWrites)) {
      struct epoll_event ev;
      if (t.api.epoll_wait(ep, &ev, 1, 3000) == 0) {
        ++timeouts;
        break;
      }
      uint64_t v;
      if (t.api.read(efd, &v, 8) == 8) sum += v;
      struct epoll_event mod = {IN | EPOLLONESHOT, {.u64 = 1}};
      t.api.epoll_ctl(ep, EPOLL_CTL_MOD, efd, &mod);
    }
    producer.join();
    t.log("consumed " + std::to_string(sum) + ", lost wakeups: " + std::to_string(timeouts));
  });
  EXPECT_LINUX_SEQ(r, {"consumed 5000, lost wakeups: 0"});
}
//   top -et-> ep -et-> efd      (producer writes efd, consumer waits on top)
TEST(Threads, ProducerConsumerNested) {
  auto r = conf::differential([](T& t) { producer_consumer(t, true, ET); });
  EXPECT_LINUX_SEQ(r, {"consumed 20000 of 20000, lost wakeups: 0"});
}

}  // namespace

namespace {

// Three instances, the second watched by the first (top -> ep), the third
// (`other`) for the test's own use; closed at the end.
struct WatchedInstance {
  int top = uep_epoll_create1(0);
  int ep = uep_epoll_create1(0);
  int other = uep_epoll_create1(0);
  WatchedInstance() {
    struct epoll_event ev {};
    ev.events = EPOLLIN;
    if (top < 0 || ep < 0 || other < 0 || uep_epoll_ctl(top, EPOLL_CTL_ADD, ep, &ev) != 0) ep = -1;
  }
  ~WatchedInstance() {
    uep_close(other);
    uep_close(ep);
    uep_close(top);
  }
};

// n ADD + DEL pairs of a new eventfd into ep (fewer once *stop is set),
// first registered in `side` when side >= 0.  Returns how many calls failed.
int leaf_ctl_pairs(int ep, int side, int n, const std::atomic<bool>* stop = nullptr) {
  const int efd = uep_eventfd(0, EFD_NONBLOCK);
  if (efd < 0) return 1;
  struct epoll_event e {};
  e.events = EPOLLIN;
  int failed = side >= 0 && uep_epoll_ctl(side, EPOLL_CTL_ADD, efd, &e) != 0;
  for (int i = 0; i < n && !(stop && stop->load()); ++i)
    failed += uep_epoll_ctl(ep, EPOLL_CTL_ADD, efd, &e) != 0 || uep_epoll_ctl(ep, EPOLL_CTL_DEL, efd, nullptr) != 0;
  uep_close(efd);
  return failed;
}

// An instance edge child -> parent added and removed: 0, or 1 if a call failed.
int edge_add_del(int parent, int child) {
  struct epoll_event ev {};
  ev.events = EPOLLIN;
  return uep_epoll_ctl(parent, EPOLL_CTL_ADD, child, &ev) != 0 ||
         uep_epoll_ctl(parent, EPOLL_CTL_DEL, child, nullptr) != 0;
}

// The topology lock's reader slots (epoll/topology.cpp): a thread owns one
// while it lives and gives it back at exit; threads beyond the 64 owned
// slots alive at once share RMW slots.  Leaf ADDs into a watched instance
// take the lock shared; an instance-into-instance ADD takes it exclusively
// and waits for every slot to drain, so a count left raised by a thread
// (a slot given back or shared wrongly) would hang the last ADD below.
// Each eventfd is also watched by `side`, so that the ADDs into ep cannot
// use the cached path profile (kCached, which takes no topology lock) and
// all take the lock shared.
// Topology: top -> ep -> efd <- side (per thread: its own eventfd, ADD +
// DEL into ep); top -> mid, added and removed meanwhile.
TEST(Threads, NestedLeafAddsAcrossManyThreadLifetimes) {
  WatchedInstance w;
  ASSERT_GE(w.ep, 0);
  const int side = w.other;
  std::atomic<int> failures{0};
  // Two waves of 80 concurrent threads (more than the owned slots), each
  // wave's slots given back at exit and claimed again by the next.
  for (int wave = 0; wave < 2; ++wave) {
    std::vector<std::thread> ts;
    for (int t = 0; t < 80; ++t) ts.emplace_back([&] { failures.fetch_add(leaf_ctl_pairs(w.ep, side, 20)); });
    const int mid = uep_epoll_create1(0);  // a writer meanwhile
    ASSERT_GE(mid, 0);
    EXPECT_EQ(edge_add_del(w.top, mid), 0);
    for (auto& t : ts) t.join();
    uep_close(mid);
  }
  EXPECT_EQ(failures.load(), 0);
  // Every slot drained: the writer gets the lock, and a reader after it, on
  // this (long-lived) thread.
  const int last = uep_epoll_create1(0);
  ASSERT_GE(last, 0);
  EXPECT_EQ(edge_add_del(w.top, last), 0);
  EXPECT_EQ(leaf_ctl_pairs(w.ep, side, 3), 0);
  uep_close(last);
}

// kCached (epoll/topology.cpp, cached_add_ok): nested leaf ADDs that take
// no topology lock, racing a writer that links and unlinks an instance
// edge above their instance (each ADD of mid -> ep walks ep's shards and
// bumps the edge generation: ADDs in flight then fall back to kShared, and
// the next one recomputes the profile).  Nothing is near a path limit, so
// every ADD and DEL succeeds, with or without the cache.
// Topology: top -> ep -> efd (one per thread); mid -> ep, added and removed.
TEST(Threads, CachedNestedAddsRaceEdgeChanges) {
  WatchedInstance w;
  ASSERT_GE(w.ep, 0);
  const int mid = w.other;
  std::atomic<int> failures{0};
  std::atomic<bool> stop{false};
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t) ts.emplace_back([&] { failures.fetch_add(leaf_ctl_pairs(w.ep, -1, 2000, &stop)); });
  for (int i = 0; i < 200; ++i) failures.fetch_add(edge_add_del(mid, w.ep));
  stop.store(true);
  for (auto& t : ts) t.join();
  EXPECT_EQ(failures.load(), 0);
}

}  // namespace
