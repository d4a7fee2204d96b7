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
