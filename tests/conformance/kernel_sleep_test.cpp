// kernel_sleep_test.cpp - a blocking epoll_wait on an instance holding
// kernel descriptors, against Linux (owned by the kernel-descriptor tests).
// uepoll sleeps in epoll_pwait2 on the instance's shadow kernel epoll and
// is woken for user-space events through a doorbell inside it
// (epoll/kernel_watch.h): these scenarios check that the doorbell never
// shows as readiness (poll, a parent, a zero-timeout wait after the event
// was taken), that a sleeper still wakes for every kind of event, and that
// it wakes when the instance is nested, gets a child with kernel
// descriptors or a kernel fd while it sleeps.
#include "harness.h"
#include "kernel_helpers.h"

#include <sys/eventfd.h>
#include <sys/wait.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace {

using conf::T;
using conf::write_byte;

constexpr uint32_t IN = EPOLLIN, ET = EPOLLET;

std::pair<int, int> kernel_pipe(T& t) {
  int p[2] = {-1, -1};
  if (::pipe2(p, O_CLOEXEC | O_NONBLOCK) != 0) return {-1, -1};
  for (int fd : p) {
    t.adopt(fd);
    t.log("kernel pipe end = " + t.res_fd(fd));
  }
  return {p[0], p[1]};
}

std::function<void()> write_counter(T& t, int fd) {
  return [&t, fd] {
    uint64_t v = 1;
    t.api.write(fd, &v, 8);
  };
}

// User-space events wake the sleeper (the first time, and again once a
// doorbell has rung), and once taken leave nothing behind: poll and a
// zero-timeout wait report nothing, a kernel event still wakes.
TEST(KernelSleep, UserEventsWakeAndLeaveNoReadiness) {
  auto r = conf::differential([](T& t) {
    int ep = t.epoll_create1();
    auto [rd, wr] = kernel_pipe(t);
    t.ctl(ep, EPOLL_CTL_ADD, rd, IN, 1);
    int efd = t.eventfd(0, EFD_NONBLOCK);
    t.ctl(ep, EPOLL_CTL_ADD, efd, IN | ET, 2);
    for (int round = 0; round < 3; ++round) {
      {
        conf::WhenBlocked later(write_counter(t, efd));
        t.wait(ep, 4, 5000);
      }
      t.read(efd, 8);
      t.poll({{ep, POLLIN}}, 0);
      t.wait(ep, 4, 0);
    }
    {
      conf::WhenBlocked later(write_byte(wr, 'k'));
      t.wait(ep, 4, 5000);
    }
    t.read(rd, 8);
    t.poll({{ep, POLLIN}}, 0);
    t.wait(ep, 4, 0);
  });
  EXPECT_LINUX_SEQ(r, {"wait(fd0,4,5000) = 1 [IN:2]", "poll(fd0,0) = 0 [0]", "wait(fd0,4,0) = 0",
                       "wait(fd0,4,5000) = 1 [IN:1]", "poll(fd0,0) = 0 [0]", "wait(fd0,4,0) = 0"});
}

// Two instances with kernel descriptors (their blocking waits sleep
// directly) hold one eventfd with EPOLLEXCLUSIVE.  e0's sleeper has come
// and gone (its doorbell entry stays on e0's sleeper queue, idle); then a
// write while a thread sleeps in e1 alone skips e0 (no sleeper: Linux's
// waitqueue_active) and wakes it, and still queues e0's item.
//   kpipe0 -> e0 -(EXCL)-> efd <-(EXCL)- e1 <- kpipe1      sleeper in e1
TEST(KernelSleep, ExclusiveSkipsInstanceWhoseDirectSleeperLeft) {
  auto r = conf::differential([](T& t) {
    int e0 = t.epoll_create1(), e1 = t.epoll_create1();
    auto [rd0, wr0] = kernel_pipe(t);
    auto [rd1, wr1] = kernel_pipe(t);
    (void)wr1;
    t.ctl(e0, EPOLL_CTL_ADD, rd0, IN, 1);
    t.ctl(e1, EPOLL_CTL_ADD, rd1, IN, 2);
    int efd = t.eventfd(0, EFD_NONBLOCK);
    t.ctl(e0, EPOLL_CTL_ADD, efd, IN | ET | EPOLLEXCLUSIVE, 10);
    t.ctl(e1, EPOLL_CTL_ADD, efd, IN | ET | EPOLLEXCLUSIVE, 11);
    {
      conf::WhenBlocked later(write_byte(wr0, 'k'));
      t.wait(e0, 4, 5000);
    }
    t.read(rd0, 8);
    {
      conf::WhenBlocked later(write_counter(t, efd));
      t.wait(e1, 4, 5000);
    }
    t.wait(e0, 4, 0);
  });
  EXPECT_LINUX_SEQ(r, {"wait(fd0,4,5000) = 1 [IN:1]", "wait(fd1,4,5000) = 1 [IN:11]", "wait(fd0,4,0) = 1 [IN:10]"});
}

// The sleeping instance gets a child whose kernel descriptor then becomes
// ready: the sleeper wakes with the child.
TEST(KernelSleep, SleeperWokenThroughChildAddedWhileAsleep) {
  auto r = conf::differential([](T& t) {
    int p = t.epoll_create1(), c = t.epoll_create1();
    auto [rd, wr] = kernel_pipe(t);
    auto [rd2, wr2] = kernel_pipe(t);
    t.ctl(p, EPOLL_CTL_ADD, rd, IN, 1);
    t.ctl(c, EPOLL_CTL_ADD, rd2, IN, 2);
    {
      conf::WhenBlocked later([&t, p = p, c = c, wr2 = wr2] {
        struct epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.u64 = 3;
        t.api.epoll_ctl(p, EPOLL_CTL_ADD, c, &ev);
        write_byte(wr2, 'c')();
      });
      t.wait(p, 4, 8000);
    }
    t.read(rd2, 8);
    t.wait(p, 4, 0);
  });
  EXPECT_LINUX_SEQ(r, {"wait(fd0,4,8000) = 1 [IN:3]", "wait(fd0,4,0) = 0"});
}

// The sleeping instance is nested into a parent while it sleeps, then its
// kernel descriptor becomes ready: the sleeper wakes, and the parent sees
// the child ready (level-triggered), once the sleeper has woken.
TEST(KernelSleep, NestedWhileAsleep) {
  auto r = conf::differential([](T& t) {
    int p = t.epoll_create1(), c = t.epoll_create1();
    auto [rd, wr] = kernel_pipe(t);
    t.ctl(c, EPOLL_CTL_ADD, rd, IN, 2);
    {
      conf::WhenBlocked later([&t, p = p, c = c, wr = wr] {
        struct epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.u64 = 3;
        t.api.epoll_ctl(p, EPOLL_CTL_ADD, c, &ev);
        write_byte(wr, 'c')();
      });
      t.wait(c, 4, 8000);
    }
    t.wait(p, 4, 5000);
    t.poll({{p, POLLIN}, {c, POLLIN}}, 0);
    t.read(rd, 8);
    t.wait(p, 4, 0);
    t.poll({{p, POLLIN}, {c, POLLIN}}, 0);
    {
      conf::WhenBlocked later(write_byte(wr, 'd'));
      t.wait(p, 4, 5000);  // the parent now wakes on the child's kernel event
    }
  });
  EXPECT_LINUX_SEQ(r, {"wait(fd1,4,8000) = 1 [IN:2]", "wait(fd0,4,5000) = 1 [IN:3]", "wait(fd0,4,0) = 0",
                       "wait(fd0,4,5000) = 1 [IN:3]"});
}

}  // namespace

namespace {

// The thread's mask after a blocking wait is the one it had, whether it
// blocked every signal (the sleep then skips its restore), some, or none;
// on a plain uepoll instance and on one with a kernel descriptor.
TEST(KernelSleep, WaitLeavesTheCallersMask) {
  int p[2];
  ASSERT_EQ(::pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
  const int plain = uep_epoll_create1(0), kern = uep_epoll_create1(0);
  ASSERT_GE(plain, 0);
  ASSERT_GE(kern, 0);
  struct epoll_event ev{};
  ev.events = EPOLLIN;
  ASSERT_EQ(uep_epoll_ctl(kern, EPOLL_CTL_ADD, p[0], &ev), 0);
  sigset_t old;
  ASSERT_EQ(pthread_sigmask(SIG_SETMASK, nullptr, &old), 0);
  sigset_t masks[3];
  sigfillset(&masks[0]);
  sigemptyset(&masks[1]);
  sigaddset(&masks[1], SIGUSR1);
  sigemptyset(&masks[2]);
  for (const sigset_t& m : masks) {
    sigset_t want;
    ASSERT_EQ(pthread_sigmask(SIG_SETMASK, &m, nullptr), 0);
    ASSERT_EQ(pthread_sigmask(SIG_SETMASK, nullptr, &want), 0);
    for (int ep : {plain, kern}) {
      struct epoll_event out;
      EXPECT_EQ(uep_epoll_wait(ep, &out, 1, 5), 0);
      sigset_t now;
      ASSERT_EQ(pthread_sigmask(SIG_SETMASK, nullptr, &now), 0);
      for (int sig = 1; sig <= SIGRTMAX; ++sig) EXPECT_EQ(sigismember(&now, sig), sigismember(&want, sig)) << sig;
    }
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  uep_close(plain);
  uep_close(kern);
  ::close(p[0]);
  ::close(p[1]);
}

}  // namespace

namespace {

// Several threads asleep on one instance with a kernel eventfd and a
// uepoll eventfd, both edge-triggered: one event of either kind is
// reported by exactly one of them (the others time out), and a producer
// that waits for each event to be taken before the next never stalls
// (a lost wakeup would leave an event unread until a sleeper's timeout).
TEST(KernelSleep, SeveralSleepersOneEventEachNoLostWakeup) {
  const int ep = uep_epoll_create1(0);
  const int kfd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  const int ufd = uep_eventfd(0, EFD_NONBLOCK);
  ASSERT_GE(ep, 0);
  ASSERT_GE(kfd, 0);
  ASSERT_GE(ufd, 0);
  struct epoll_event ev{};
  ev.events = EPOLLIN | EPOLLET;
  ev.data.u64 = 1;
  ASSERT_EQ(uep_epoll_ctl(ep, EPOLL_CTL_ADD, kfd, &ev), 0);
  ev.data.u64 = 2;
  ASSERT_EQ(uep_epoll_ctl(ep, EPOLL_CTL_ADD, ufd, &ev), 0);
  constexpr int kSleepers = 3;

  // One event each of the two kinds, with every sleeper asleep.
  for (int kind = 1; kind <= 2; ++kind) {
    std::atomic<int> events{0}, timeouts{0}, asleep{0};
    std::vector<std::thread> th;
    for (int i = 0; i < kSleepers; ++i)
      th.emplace_back([&] {
        struct epoll_event out[4];
        asleep.fetch_add(1);
        const int n = uep_epoll_wait(ep, out, 4, 400);
        (n > 0 ? events : timeouts).fetch_add(n > 0 ? n : 1);
      });
    while (asleep.load() < kSleepers) std::this_thread::yield();
    usleep(50000);  // all in the sleep
    uint64_t one = 1;
    if (kind == 1)
      ASSERT_EQ(::write(kfd, &one, 8), 8);
    else
      ASSERT_EQ(uep_write(ufd, &one, 8), 8);
    for (auto& t : th) t.join();
    EXPECT_EQ(events.load(), 1) << "kind " << kind;
    EXPECT_EQ(timeouts.load(), kSleepers - 1) << "kind " << kind;
    uint64_t v;
    EXPECT_EQ(kind == 1 ? ::read(kfd, &v, 8) : uep_read(ufd, &v, 8), 8);
  }

  // Ping-pong with a crowd: every event must be taken well before any
  // sleeper's timeout (10 s).  A lost wakeup leaves the event unread until
  // some sleeper's wait ends, so the producer gives each event 3 s.  One
  // sleeper may sleep through many rounds while the others take them (an
  // exclusive wakeup goes to one), which is not a stall.
  constexpr int kRounds = 400;
  std::atomic<int> taken{0}, exited{0};
  std::atomic<bool> stop{false}, stalled{false};
  std::vector<std::thread> th;
  for (int i = 0; i < kSleepers; ++i)
    th.emplace_back([&] {
      struct epoll_event out[4];
      while (!stop.load()) {
        const int n = uep_epoll_wait(ep, out, 4, 10000);
        for (int k = 0; k < n; ++k) {
          uint64_t v;
          const ssize_t r = out[k].data.u64 == 1 ? ::read(kfd, &v, 8) : uep_read(ufd, &v, 8);
          if (r == 8) taken.fetch_add(1);
        }
      }
      exited.fetch_add(1);
    });
  for (int i = 0; i < kRounds && !stalled.load(); ++i) {
    uint64_t one = 1;
    if (i % 2)
      ASSERT_EQ(::write(kfd, &one, 8), 8);
    else
      ASSERT_EQ(uep_write(ufd, &one, 8), 8);
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(3);
    while (taken.load() <= i && !stalled.load()) {
      if (std::chrono::steady_clock::now() > give_up) stalled.store(true);
      std::this_thread::yield();
    }
  }
  stop.store(true);
  while (exited.load() < kSleepers) {  // wake everyone to stop (each edge wakes one)
    uint64_t one = 1;
    uep_write(ufd, &one, 8);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  for (auto& t : th) t.join();
  EXPECT_FALSE(stalled.load());
  EXPECT_GE(taken.load(), kRounds);
  uep_close(ufd);
  uep_close(ep);
  ::close(kfd);
}

}  // namespace

namespace {

// A forked child's copy of an instance that has slept directly: its
// blocking waits still time out and still wake for kernel events (the
// doorbell belongs to the parent, so the child sleeps the classic way).
TEST(KernelSleep, ForkedChildStillSleeps) {
  int p[2];
  ASSERT_EQ(::pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
  const int ep = uep_epoll_create1(0);
  ASSERT_GE(ep, 0);
  struct epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = 7;
  ASSERT_EQ(uep_epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev), 0);
  struct epoll_event out;
  ASSERT_EQ(uep_epoll_wait(ep, &out, 1, 5), 0);  // a direct sleep in the parent
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    int rc = 0;
    if (uep_epoll_wait(ep, &out, 1, 20) != 0) rc |= 1;
    if (::write(p[1], "x", 1) != 1) rc |= 2;
    if (uep_epoll_wait(ep, &out, 1, 5000) != 1 || out.data.u64 != 7) rc |= 4;
    ::_exit(rc);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  uep_close(ep);
  ::close(p[0]);
  ::close(p[1]);
}

}  // namespace
