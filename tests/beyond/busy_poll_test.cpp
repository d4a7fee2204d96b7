// busy_poll_test.cpp - EPIOCSPARAMS / EPIOCGPARAMS: the argument checks
// against a real kernel epoll (differential), and the busy-poll wait on
// uepoll instances.
#include <uepoll/tuning.h>
#include <uepoll/uepoll.h>
#include <uepoll/uepoll.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

namespace {

struct Outcome {
  int ret;
  int err;
  bool operator==(const Outcome&) const = default;
};

Outcome do_ioctl(int (*fn)(int, unsigned long, void*), int fd, unsigned long req, void* arg) {
  errno = 0;
  const int r = fn(fd, req, arg);
  return {r, r < 0 ? errno : 0};
}

int kernel_ioctl(int fd, unsigned long req, void* arg) { return ::ioctl(fd, req, arg); }
// uep_ioctl is variadic, as ioctl(2).
int uepoll_ioctl(int fd, unsigned long req, void* arg) { return uep_ioctl(fd, req, arg); }

TEST(BusyPollParams, ConstantsMatchLinux) {
  EXPECT_EQ(EPIOCSPARAMS, 0x40088a01UL);
  EXPECT_EQ(EPIOCGPARAMS, 0x80088a02UL);
  EXPECT_EQ(sizeof(struct epoll_params), 8U);
}

// Every SET argument check and GET's result, on a kernel instance and on a
// uepoll one: same return value, errno and read-back.
TEST(BusyPollParams, ArgumentChecksMatchLinux) {
  const struct epoll_params cases[] = {
      {10, 8, 1, 0},          {10, 8, 1, 1},           {10, 8, 2, 0},  {0x80000000u, 8, 0, 0},
      {0x7fffffffu, 8, 0, 0}, {0x80000000u, 8, 2, 1},  {1, 64, 0, 0},  {1, 65, 0, 0},
      {1, 65535, 1, 0},       {0, 0, 0, 0},            {0, 0, 0, 255}, {0xffffffffu, 0, 0, 0},
  };
  const int kep = ::epoll_create1(EPOLL_CLOEXEC);
  const int uep = uep_epoll_create1(0);
  ASSERT_GE(kep, 0);
  ASSERT_GE(uep, 0);
  for (const auto& c : cases) {
    struct epoll_params a = c, b = c;
    EXPECT_EQ(do_ioctl(kernel_ioctl, kep, EPIOCSPARAMS, &a), do_ioctl(uepoll_ioctl, uep, EPIOCSPARAMS, &b))
        << c.busy_poll_usecs << " " << c.busy_poll_budget << " " << int(c.prefer_busy_poll) << " " << int(c.__pad);
    struct epoll_params ga, gb;
    std::memset(&ga, 0xa5, sizeof ga);
    std::memset(&gb, 0xa5, sizeof gb);
    EXPECT_EQ(do_ioctl(kernel_ioctl, kep, EPIOCGPARAMS, &ga), do_ioctl(uepoll_ioctl, uep, EPIOCGPARAMS, &gb));
    EXPECT_EQ(std::memcmp(&ga, &gb, sizeof ga), 0);
  }
  // Bad pointers: EFAULT, both ways; a read-only page is fine for SET only.
  void* ro = ::mmap(nullptr, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(ro, MAP_FAILED);
  void* ptrs[] = {nullptr, reinterpret_cast<void*>(1), ro, reinterpret_cast<void*>(0x7ffffffff000ULL)};
  for (void* p : ptrs)
    for (unsigned long req : {EPIOCSPARAMS, EPIOCGPARAMS})
      EXPECT_EQ(do_ioctl(kernel_ioctl, kep, req, p), do_ioctl(uepoll_ioctl, uep, req, p)) << p << " " << req;
  ::munmap(ro, 4096);
  // Other requests on an instance: EINVAL.
  struct epoll_params p{};
  for (unsigned long req : {0x1234UL, (unsigned long)_IOW(0x8A, 0x03, struct epoll_params), (unsigned long)FIONREAD})
    EXPECT_EQ(do_ioctl(kernel_ioctl, kep, req, &p), do_ioctl(uepoll_ioctl, uep, req, &p)) << req;
  ::close(kep);
  uep_close(uep);
}

TEST(BusyPollParams, NotAnInstanceMatchesLinux) {
  struct epoll_params p{};
  int kp[2], up[2], ks[2], us[2];
  ASSERT_EQ(::pipe(kp), 0);
  ASSERT_EQ(uep_pipe(up), 0);
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, ks), 0);
  ASSERT_EQ(uep_socketpair(AF_UNIX, SOCK_STREAM, 0, us), 0);
  const int ke = ::eventfd(0, 0), ue = uep_eventfd(0, 0);
  const int kt = ::timerfd_create(CLOCK_MONOTONIC, 0), ut = uep_timerfd_create(CLOCK_MONOTONIC, 0);
  const int pairs[][2] = {{kp[0], up[0]}, {kp[1], up[1]}, {ks[0], us[0]}, {ke, ue}, {kt, ut}};
  for (const auto& pr : pairs)
    for (unsigned long req : {EPIOCSPARAMS, EPIOCGPARAMS})
      for (void* arg : {static_cast<void*>(&p), static_cast<void*>(nullptr)})
        EXPECT_EQ(do_ioctl(kernel_ioctl, pr[0], req, arg), do_ioctl(uepoll_ioctl, pr[1], req, arg));
  // Closed descriptors: EBADF (a closed uepoll one, and a kernel one through uep_ioctl).
  EXPECT_EQ(do_ioctl(kernel_ioctl, 99999, EPIOCSPARAMS, &p), do_ioctl(uepoll_ioctl, UEP_FD_BASE + 99999, EPIOCSPARAMS, &p));
  EXPECT_EQ(do_ioctl(uepoll_ioctl, -1, EPIOCSPARAMS, &p), (Outcome{-1, EBADF}));
  for (int fd : {kp[0], kp[1], ks[0], ks[1], ke, kt}) ::close(fd);
  for (int fd : {up[0], up[1], us[0], us[1], ue, ut}) uep_close(fd);
}

TEST(BusyPollParams, KernelInstanceThroughUepIoctl) {
  const int kep = ::epoll_create1(0);
  struct epoll_params p{25, 4, 1, 0}, q{};
  ASSERT_EQ(uep_ioctl(kep, EPIOCSPARAMS, &p), 0);
  ASSERT_EQ(::ioctl(kep, EPIOCGPARAMS, &q), 0);
  EXPECT_EQ(q.busy_poll_usecs, 25U);
  ::close(kep);
}

TEST(BusyPollParams, KnobIsTheDefaultOfNewInstances) {
  ASSERT_EQ(uep_tuning_set("busy_poll_usecs", 77), 0);
  long v = 0;
  ASSERT_EQ(uep_tuning_get("busy_poll_usecs", &v), 0);
  EXPECT_EQ(v, 77);
  const int ep = uep_epoll_create1(0);
  ASSERT_EQ(uep_tuning_set("busy_poll_usecs", 0), 0);
  struct epoll_params p{};
  ASSERT_EQ(uep_ioctl(ep, EPIOCGPARAMS, &p), 0);
  EXPECT_EQ(p.busy_poll_usecs, 77U);
  const int ep2 = uep_epoll_create1(0);
  ASSERT_EQ(uep_ioctl(ep2, EPIOCGPARAMS, &p), 0);
  EXPECT_EQ(p.busy_poll_usecs, 0U);
  EXPECT_EQ(uep_tuning_set("busy_poll_usecs", -1), -1);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(uep_tuning_set("busy_poll_usecs", 0x80000000L), -1);
  uep_close(ep);
  uep_close(ep2);
}

extern "C" unsigned long long uep__thread_sleeps(void);  // src/capi/preload_support.h

// One uep_epoll_wait(ep, out, 4, 5 s) while another thread calls `write`
// 20 ms after the wait began; *slept: the sleeping system calls the wait
// made (uepoll's own count of the thread).
template <typename Write>
int wait_across_write(int ep, struct epoll_event* out, Write write, unsigned long long* slept) {
  std::atomic<bool> go{false};
  std::thread writer([&] {
    while (!go.load()) {
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    write();
  });
  const unsigned long long before = uep__thread_sleeps();
  go.store(true);
  const int n = uep_epoll_wait(ep, out, 4, 5000);
  *slept = uep__thread_sleeps() - before;
  writer.join();
  return n;
}

// An event that arrives while the waiter spins is returned without the
// waiter ever sleeping (no sleeping system call in its thread: uepoll's own
// count, not the kernel's context switches, which a page fault adds too).
TEST(BusyPollWait, EventDuringSpinNeedsNoSleep) {
  uepoll::Epoll ep = uepoll::Epoll::create();
  uepoll::EventFd ev = uepoll::EventFd::create(0, EFD_NONBLOCK);
  ep.add(ev, EPOLLIN, 5);
  ep.set_busy_poll({2000000, 0, 0, 0});  // 2 s: the event always comes first
  EXPECT_EQ(ep.busy_poll().busy_poll_usecs, 2000000U);
  for (int round = 0; round < 5; ++round) {
    struct epoll_event out[4];
    unsigned long long slept = 0;
    const int n = wait_across_write(ep.get(), out, [&] { ev.write(1); }, &slept);
    ASSERT_EQ(n, 1);
    EXPECT_EQ(out[0].data.u64, 5U);
    EXPECT_EQ(slept, 0U) << "the waiter slept";
    ev.read();
  }
}

// The spin sees the instance's kernel descriptors too (one poll() of its
// kernel side per look): an event of a kernel eventfd, or of a kernel
// socket pair, that comes while the waiter spins is returned without a
// sleep; level-triggered and edge-triggered, beside a uepoll object.
TEST(BusyPollWait, KernelEventDuringSpinNeedsNoSleep) {
  for (const bool et : {false, true}) {
    uepoll::Epoll ep = uepoll::Epoll::create();
    uepoll::EventFd own = uepoll::EventFd::create(0, EFD_NONBLOCK);
    const int kev = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    int sp[2];
    ASSERT_GE(kev, 0);
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sp), 0);
    const uint32_t mode = et ? uint32_t{EPOLLET} : 0U;
    ep.add(own, EPOLLIN, 1);
    struct epoll_event e{};
    e.events = EPOLLIN | mode;
    e.data.u64 = 2;
    ASSERT_EQ(uep_epoll_ctl(ep.get(), EPOLL_CTL_ADD, kev, &e), 0);
    e.data.u64 = 3;
    ASSERT_EQ(uep_epoll_ctl(ep.get(), EPOLL_CTL_ADD, sp[0], &e), 0);
    ep.set_busy_poll({2000000, 0, 0, 0});  // 2 s: the event always comes first
    for (int round = 0; round < 4; ++round) {
      const bool sock = round % 2 == 1;
      auto write = [&] {
        const uint64_t one = 1;
        if (sock)
          ASSERT_EQ(::write(sp[1], "x", 1), 1);
        else
          ASSERT_EQ(::write(kev, &one, 8), 8);
      };
      struct epoll_event out[4];
      unsigned long long slept = 0;
      const int n = wait_across_write(ep.get(), out, write, &slept);
      ASSERT_EQ(n, 1) << "et " << et << " round " << round;
      EXPECT_EQ(out[0].data.u64, sock ? 3U : 2U);
      EXPECT_EQ(out[0].events, static_cast<uint32_t>(EPOLLIN));
      EXPECT_EQ(slept, 0U) << "the waiter slept (et " << et << " round " << round << ")";
      if (et) {
        // The edge was delivered once: a second wait finds nothing (its spin
        // is bounded by the timeout), though the data is still unread.
        EXPECT_EQ(uep_epoll_wait(ep.get(), out, 4, 30), 0) << "round " << round;
      } else {
        // Level-triggered: still ready until read, as Linux.
        ASSERT_EQ(uep_epoll_wait(ep.get(), out, 4, 0), 1);
        EXPECT_EQ(out[0].data.u64, sock ? 3U : 2U);
      }
      char buf[8];
      ASSERT_EQ(::read(sock ? sp[0] : kev, buf, sizeof buf), sock ? 1 : 8);
    }
    struct epoll_event last[1];
    EXPECT_EQ(uep_epoll_wait(ep.get(), last, 1, 0), 0);  // everything read: nothing is left
    ::close(kev);
    ::close(sp[0]);
    ::close(sp[1]);
  }
}

// The count itself: a wait with nothing to find sleeps once.
TEST(BusyPollWait, SleepCountSeesASleep) {
  uepoll::Epoll ep = uepoll::Epoll::create();
  uepoll::EventFd ev = uepoll::EventFd::create(0, EFD_NONBLOCK);
  ep.add(ev, EPOLLIN, 5);
  struct epoll_event out[1];
  const unsigned long long before = uep__thread_sleeps();
  EXPECT_EQ(uep_epoll_wait(ep.get(), out, 1, 20), 0);
  EXPECT_GE(uep__thread_sleeps(), before + 1);
}

double thread_cpu_ms() {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

// Spins that keep ending without an event shrink the window (a machine
// with no spare CPU stops paying for them); an event found by a spin, or
// EPIOCSPARAMS, gives the whole window back.
TEST(BusyPollWait, WindowShrinksWhileSpinsMissAndRecovers) {
  uepoll::Epoll ep = uepoll::Epoll::create();
  uepoll::EventFd ev = uepoll::EventFd::create(0, EFD_NONBLOCK);
  ep.add(ev, EPOLLIN, 1);
  ep.set_busy_poll({20000, 0, 0, 0});  // 20 ms
  struct epoll_event out[1];
  // A fresh instance spins its whole window: a 30 ms wait with no event
  // burns up to 20 ms of CPU (less when the machine is loaded and the
  // spinner is preempted: the checks below compare, with margins).
  double c0 = thread_cpu_ms();
  EXPECT_EQ(uep_epoll_wait(ep.get(), out, 1, 30), 0);
  const double first = thread_cpu_ms() - c0;
  // Twelve more misses: the window is down to 20 ms >> 12 (5 us).
  for (int i = 0; i < 12; ++i) EXPECT_EQ(uep_epoll_wait(ep.get(), out, 1, 1), 0);
  c0 = thread_cpu_ms();
  EXPECT_EQ(uep_epoll_wait(ep.get(), out, 1, 30), 0);
  const double shrunk = thread_cpu_ms() - c0;
  EXPECT_LT(shrunk, 1.5) << "the window did not shrink";
  EXPECT_GT(first, 3 * shrunk) << "first wait " << first << " ms CPU, after 13 misses " << shrunk << " ms";
  // EPIOCSPARAMS restores the whole window.
  ep.set_busy_poll({20000, 0, 0, 0});
  c0 = thread_cpu_ms();
  EXPECT_EQ(uep_epoll_wait(ep.get(), out, 1, 30), 0);
  const double restored = thread_cpu_ms() - c0;
  EXPECT_GT(restored, 3 * shrunk) << "restored " << restored << " ms CPU, shrunk " << shrunk << " ms";
  for (int i = 0; i < 13; ++i) EXPECT_EQ(uep_epoll_wait(ep.get(), out, 1, 1), 0);
  struct epoll_params got;
  ASSERT_EQ(uep_ioctl(ep.get(), EPIOCGPARAMS, &got), 0);
  EXPECT_EQ(got.busy_poll_usecs, 20000U) << "adaptation never changes the reported parameter";
}

// The spin never outlasts the timeout, and after the spin the wait sleeps
// and is woken as usual.
TEST(BusyPollWait, SpinBoundedByTimeoutThenSleeps) {
  uepoll::Epoll ep = uepoll::Epoll::create();
  uepoll::EventFd ev = uepoll::EventFd::create(0, EFD_NONBLOCK);
  ep.add(ev, EPOLLIN, 1);
  ep.set_busy_poll({5000000, 0, 0, 0});
  struct epoll_event out[1];
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(uep_epoll_wait(ep.get(), out, 1, 30), 0);
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_GE(ms, 29);
  EXPECT_LT(ms, 1000);

  ep.set_busy_poll({1000, 0, 0, 0});  // 1 ms spin, then sleep
  std::thread writer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    ev.write(1);
  });
  EXPECT_EQ(uep_epoll_wait(ep.get(), out, 1, 5000), 1);
  writer.join();
  // Nonblocking waits never spin.
  ev.read();
  t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(uep_epoll_wait(ep.get(), out, 1, 0), 0);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(500));
}

}  // namespace
