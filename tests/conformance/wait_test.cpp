// wait_test.cpp - epoll_wait/epoll_pwait/epoll_pwait2 conformance: argument
// checks in Linux 6.18 order, timeouts, the order in which ready items are
// reported (ADD order, LT round robin, items not reached stay in front), the
// reported mask (re-polled at harvest time, ERR|HUP always), EPOLLET edges
// (per-object wakeup policy), EPOLLONESHOT, MOD re-arming, EPOLLRDHUP and
// EPOLLWAKEUP.  Every scenario runs on Linux and on uepoll; traces must match.
#include "harness.h"

#include <sys/mman.h>

#include <functional>
#include <initializer_list>
#include <thread>
#include <utility>

namespace {

using conf::T;

constexpr uint32_t IN = EPOLLIN;
constexpr uint32_t OUT = EPOLLOUT;
constexpr uint32_t ET = EPOLLET;

// One epoll_ctl(ep, op, fd, events) per {fd, data}, in the order given (the
// order the WaitOrder tests look at).
void ctl_items(T& t, int ep, int op, uint32_t events, std::initializer_list<std::pair<int, uint64_t>> items) {
  for (auto [fd, data] : items) t.ctl(ep, op, fd, events, data);
}

// Runs `call`, a wait that blocks until an event, while another thread writes
// 1 to the eventfd efd (untraced) once the caller sleeps; returns when both
// are done.
void woken_by_write(T& t, int efd, const std::function<void()>& call) {
  conf::WhenBlocked later([&t, efd] {
    uint64_t v = 1;
    t.api.write(efd, &v, 8);
  });
  call();
}

// Linux >= 6.15 (ep_check_params): EBADF, EINVAL(maxevents), EFAULT
// (access_ok), EINVAL(not an epoll).
TEST(WaitArgs, CheckOrder) {
  auto r = conf::differential([](T& t) {
    int ep = t.epoll_create1();
    int efd = t.eventfd(0);
    int gone = t.eventfd(0);
    int f = t.regular_file();
    t.close(gone);
    // In .bss (low addresses): buf + EP_MAX_EVENTS events stays below the
    // top of user space, unlike a stack buffer under ASLR.
    static struct epoll_event buf[4];
    auto* kern = static_cast<struct epoll_event*>(conf::kernel_address());
    t.wait_raw(gone, buf, -1, 0, "buf");  // EBADF first
    t.wait_raw(-1, kern, 0, 0, "kernel");
    t.wait_raw(ep, buf, 0, 0, "buf");
    t.wait_raw(ep, buf, -1, 0, "buf");
    t.wait_raw(ep, buf, INT_MIN, 0, "buf");
    t.wait_raw(ep, buf, conf::kEpMaxEvents + 1, 0, "buf");
    t.wait_raw(ep, buf, INT_MAX, 0, "buf");
    t.wait_raw(ep, kern, 0, 0, "kernel");  // maxevents before EFAULT
    t.wait_raw(ep, kern, 1, 0, "kernel");
    t.wait_raw(efd, kern, 1, 0, "kernel");  // EFAULT before "not an epoll"
    t.wait_raw(efd, buf, 1, 0, "buf");
    t.wait_raw(efd, buf, 0, 0, "buf");
    t.wait_raw(f, buf, 1, 0, "buf");
    t.wait_raw(ep, buf, conf::kEpMaxEvents, 0, "buf");  // largest valid maxevents
    t.wait_raw(ep, nullptr, 1, 0, "NULL");  // NULL passes access_ok; nothing ready: 0
    t.ctl(ep, EPOLL_CTL_ADD, efd, IN, 1);
    t.write_u64(efd, 1);
    t.wait_raw(ep, buf, conf::kEpMaxEvents, 0, "buf");
    // Huge buffer end: the range check fails.
    t.wait_raw(ep, reinterpret_cast<struct epoll_event*>(0x7ffffffff000ULL), 1000, 0, "near-top");
  }, /*forked=*/true);
  EXPECT_LINUX_SEQ(r, {"wait(fd2,buf,-1,0) = -1 EBADF",       "wait(-1,kernel,0,0) = -1 EBADF",
                       "wait(fd0,buf,0,0) = -1 EINVAL",       "wait(fd0,buf,-1,0) = -1 EINVAL",
                       "wait(fd0,buf,-2147483648,0) = -1 EINVAL",
                       "wait(fd0,buf,178956971,0) = -1 EINVAL", "wait(fd0,buf,2147483647,0) = -1 EINVAL",
                       "wait(fd0,kernel,0,0) = -1 EINVAL",    "wait(fd0,kernel,1,0) = -1 EFAULT",
                       "wait(fd1,kernel,1,0) = -1 EFAULT",    "wait(fd1,buf,1,0) = -1 EINVAL",
                       "wait(fd1,buf,0,0) = -1 EINVAL",       "wait(fd3,buf,1,0) = -1 EINVAL",
                       "wait(fd0,buf,178956970,0) = 0",       "wait(fd0,NULL,1,0) = 0",
                       "wait(fd0,buf,178956970,0) = 1 [IN:1]", "wait(fd0,near-top,1000,0) = -1 EFAULT"});
}

// The copy to a NULL buffer fails when an event is actually delivered: EFAULT
// (nothing copied yet), and the event stays queued.
TEST(WaitArgs, NullBufferWithReadyEvent) {
  auto r = conf::differential([](T& t) {
    int ep = t.epoll_create1();
    int efd = t.eventfd(1);
    t.ctl(ep, EPOLL_CTL_ADD, efd, IN | ET, 5);
    t.wait_raw(ep, nullptr, 1, 0, "NULL");
    t.wait(ep, 4, 0);  // still there (put back on the list)
    t.wait(ep, 4, 0);
  }, /*forked=*/true);
  EXPECT_LINUX_SEQ(r, {"wait(fd0,NULL,1,0) = -1 EFAULT", "wait(fd0,4,0) = 1 [IN:5]", "wait(fd0,4,0) = 0"});
}

// A read-only page passes access_ok but faults on copy (LTP epoll_wait03).
TEST(WaitArgs, ReadOnlyBufferWithReadyEvent) {
  auto r = conf::differential([](T& t) {
    void* page = mmap(nullptr, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(page, MAP_FAILED);
    int ep = t.epoll_create1();
    int efd = t.eventfd(1);
    t.wait_raw(ep, static_cast<struct epoll_event*>(page), 1, 0, "readonly");  // nothing to copy: 0
    t.ctl(ep, EPOLL_CTL_ADD, efd, IN, 5);
    t.wait_raw(ep, static_cast<struct epoll_event*>(page), 1, 0, "readonly");
    t.wait(ep, 4, 0);
    munmap(page, 4096);
  }, /*forked=*/true);
  EXPECT_LINUX_SEQ(r, {"wait(fd0,readonly,1,0) = 0", "wait(fd0,readonly,1,0) = -1 EFAULT",
                       "wait(fd0,4,0) = 1 [IN:5]"});
}

// A fault on the second event: the first is returned (count so far), the
// second stays queued for the next call.
TEST(WaitArgs, FaultAfterFirstEvent) {
  auto r = conf::differential([](T& t) {
    char* pages = static_cast<char*>(mmap(nullptr, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    ASSERT_NE(pages, MAP_FAILED);
    mprotect(pages + 4096, 4096, PROT_READ);
    auto* buf = reinterpret_cast<struct epoll_event*>(pages + 4096 - sizeof(struct epoll_event));
    int ep = t.epoll_create1();
    int a = t.eventfd(1), b = t.eventfd(1);
    t.ctl(ep, EPOLL_CTL_ADD, a, EPOLLIN | EPOLLET, 1);
    t.ctl(ep, EPOLL_CTL_ADD, b, EPOLLIN | EPOLLET, 2);
    t.wait_raw(ep, buf, 2, 0, "one-writable-slot");
    t.wait(ep, 4, 0);
    t.wait(ep, 4, 0);
    munmap(pages, 8192);
  }, /*forked=*/true);
  EXPECT_LINUX_SEQ(r, {"wait(fd0,one-writable-slot,2,0) = 1 [IN:1]", "wait(fd0,4,0) = 1 [IN:2]", "wait(fd0,4,0) = 0"});
}

// epoll_pwait2: the timespec is read and validated before anything else;
// epoll_pwait: the signal mask is copied before the descriptor checks.
TEST(WaitArgs, Pwait2TimespecAndPwaitMask) {
  auto r = conf::differential([](T& t) {
    int ep = t.epoll_create1();
    int gone = t.eventfd(0);
    t.close(gone);
    struct timespec bad_ns = {0, 1000000000};
    struct timespec neg_ns = {0, -1};
    struct timespec neg_s = {-1, 0};
    struct timespec zero = {0, 0};
    struct timespec big = {0, 20000000};
    t.pwait2(ep, 4, &bad_ns, "{0,1e9}");
    t.pwait2(ep, 4, &neg_ns, "{0,-1}");
    t.pwait2(ep, 4, &neg_s, "{-1,0}");
    t.pwait2(ep, 4, static_cast<struct timespec*>(conf::kernel_address()), "kernel");
    t.pwait2(gone, 4, &bad_ns, "{0,1e9}");  // before EBADF
    t.pwait2(gone, 0, static_cast<struct timespec*>(conf::kernel_address()), "kernel");
    t.pwait2(gone, 4, &zero, "{0,0}");      // EBADF
    t.pwait2(ep, 0, &zero, "{0,0}");        // EINVAL
    t.pwait2(ep, 4, &zero, "{0,0}");        // 0
    t.pwait2(ep, 4, &big, "{0,20ms}");  // valid: times out
    sigset_t* kmask = static_cast<sigset_t*>(conf::kernel_address());
    t.pwait(gone, 4, 0, kmask);  // mask copy fault before EBADF
    t.pwait(ep, 0, 0, kmask);
    sigset_t empty;
    sigemptyset(&empty);
    t.pwait(ep, 4, 0, &empty);
    t.pwait(gone, 4, 0, &empty);
    t.pwait(ep, 0, 0, nullptr);
  }, /*forked=*/true);
  EXPECT_LINUX_SEQ(r, {"pwait2(fd0,4,{0,1e9}) = -1 EINVAL", "pwait2(fd0,4,{0,-1}) = -1 EINVAL",
                       "pwait2(fd0,4,{-1,0}) = -1 EINVAL", "pwait2(fd0,4,kernel) = -1 EFAULT",
                       "pwait2(fd1,4,{0,1e9}) = -1 EINVAL", "pwait2(fd1,0,kernel) = -1 EFAULT",
                       "pwait2(fd1,4,{0,0}) = -1 EBADF", "pwait2(fd0,0,{0,0}) = -1 EINVAL",
                       "pwait2(fd0,4,{0,0}) = 0", "pwait2(fd0,4,{0,20ms}) = 0",
                       "pwait(fd1,4,0,mask) = -1 EFAULT", "pwait(fd0,0,0,mask) = -1 EFAULT",
                       "pwait(fd0,4,0,mask) = 0", "pwait(fd1,4,0,mask) = -1 EBADF",
                       "pwait(fd0,0,0,NULL) = -1 EINVAL"});
}

// Timeouts: elapsed time checked with tolerance (never exact).
std::string within(double ms, double lo, double hi) {
  if (ms < lo) return "too early (" + std::to_string(ms) + " ms)";
  if (ms > hi) return "too late (" + std::to_string(ms) + " ms)";
  return "in range";
}

TEST(WaitTimeout, MillisecondsAndNanoseconds) {
  auto r = conf::differential([](T& t) {
    int ep = t.epoll_create1();
    int efd = t.eventfd(0);
    t.ctl(ep, EPOLL_CTL_ADD, efd, IN, 1);
    double t0 = conf::now_ms();
    t.wait(ep, 4, 0);
    t.log("timeout 0: " + within(conf::now_ms() - t0, 0, 20));
    t0 = conf::now_ms();
    t.wait(ep, 4, 60);
    t.log("timeout 60 ms: " + within(conf::now_ms() - t0, 59, 260));
    struct timespec ts = {0, 40 * 1000 * 1000};
    t0 = conf::now_ms();
    t.pwait2(ep, 4, &ts, "{0,40ms}");
    t.log("pwait2 40 ms: " + within(conf::now_ms() - t0, 39, 240));
    ts = {0, 1};
    t0 = conf::now_ms();
    t.pwait2(ep, 4, &ts, "{0,1ns}");
    t.log("pwait2 1 ns: " + within(conf::now_ms() - t0, 0, 50));
    ts = {0, 0};
    t.pwait2(ep, 4, &ts, "{0,0}");
    t0 = conf::now_ms();
    t.pwait(ep, 4, 30, nullptr);
    t.log("pwait 30 ms: " + within(conf::now_ms() - t0, 29, 230));
    // Negative timeouts block until an event (-1 and -2 alike); pwait2 NULL too.
    for (int timeout : {-1, -2}) {
      woken_by_write(t, efd, [&] { t.wait(ep, 4, timeout); });  // sleeps until the write
      t.read_u64(efd);
    }
    woken_by_write(t, efd, [&] { t.pwait2(ep, 4, nullptr, "NULL"); });
    // An event already queued: no wait at all.
    t0 = conf::now_ms();
    t.wait(ep, 4, 5000);
    t.log("ready at entry: " + within(conf::now_ms() - t0, 0, 50));
  });
  EXPECT_LINUX_SEQ(r, {"wait(fd0,4,0) = 0", "timeout 0: in range", "wait(fd0,4,60) = 0",
                       "timeout 60 ms: in range", "pwait2(fd0,4,{0,40ms}) = 0", "pwait2 40 ms: in range",
                       "pwait2 1 ns: in range", "pwait 30 ms: in range", "wait(fd0,4,-1) = 1 [IN:1]",
                       "wait(fd0,4,-2) = 1 [IN:1]", "pwait2(fd0,4,NULL) = 1 [IN:1]", "wait(fd0,4,5000) = 1 [IN:1]",
                       "ready at entry: in range"});
}

// Ready items are queued in ADD order (if ready at ADD) or in the order they
// became ready, independent of descriptor numbers.
TEST(WaitOrder, AddOrderAndReadinessOrder) {
  auto r = conf::differential([](T& t) {
    int ep = t.epoll_create1();
    int a = t.eventfd(0), b = t.eventfd(0), c = t.eventfd(0);
    ctl_items(t, ep, EPOLL_CTL_ADD, OUT, {{c, 3}, {a, 1}, {b, 2}});
    t.wait(ep, 8, 0);
    ctl_items(t, ep, EPOLL_CTL_MOD, IN, {{a, 1}, {b, 2}, {c, 3}});
    t.wait(ep, 8, 0);
    t.write_u64(b, 1);
    t.write_u64(c, 1);
    t.write_u64(a, 1);
    t.write_u64(b, 1);  // already queued: stays in place
    t.wait(ep, 8, 0);
    t.wait(ep, 8, 0);  // LT: same order again
  });
  EXPECT_LINUX_SEQ(r, {"wait(fd0,8,0) = 3 [OUT:3 OUT:1 OUT:2]", "wait(fd0,8,0) = 0",
                       "wait(fd0,8,0) = 3 [IN:2 IN:3 IN:1]", "wait(fd0,8,0) = 3 [IN:2 IN:3 IN:1]"});
}

// Two items for one object (a descriptor and its dup) are called back in
// wait-queue order: the newer registration (at the head) is queued first.
TEST(WaitOrder, OneObjectTwoItems) {
  auto r = conf::differential([](T& t) {
    int ep = t.epoll_create1();
    int efd = t.eventfd(0);
    int d = t.dup(efd);
    t.ctl(ep, EPOLL_CTL_ADD, efd, IN, 1);
    t.ctl(ep, EPOLL_CTL_ADD, d, IN, 2);
    t.write_u64(efd, 1);
    t.wait(ep, 4, 0);
    auto [rd, wr] = t.pipe();
    int rd2 = t.dup(rd);
    t.ctl(ep, EPOLL_CTL_ADD, rd2, IN | EPOLLET, 3);
    t.ctl(ep, EPOLL_CTL_ADD, rd, IN | EPOLLET, 4);
    t.read_u64(efd);
    t.write(wr, "x", 1);
    t.wait(ep, 4, 0);
  });
  EXPECT_LINUX_SEQ(r, {"wait(fd0,4,0) = 2 [IN:2 IN:1]", "wait(fd0,4,0) = 2 [IN:4 IN:3]"});
}

// LT round robin (LTP epoll_wait14): 13 always-ready items, maxevents 3,
// 4 full rotations: each item reported exactly 4 times, in a fixed order.
TEST(WaitOrder, LevelTriggeredRoundRobin) {
  auto r = conf::differential([](T& t) {
    int ep = t.epoll_create1();
    std::vector<int> fds;
    for (int i = 0; i < 13; ++i) {
      auto [rd, wr] = t.pipe();
      t.write(wr, "x", 1);
      fds.push_back(rd);
      t.ctl(ep, EPOLL_CTL_ADD, rd, IN, i);
    }
    std::vector<int> count(13);
    int total = 0;
    while (total < 13 * 4) {
      int n = t.wait(ep, std::min(3, 13 * 4 - total), 0);
      if (n <= 0) break;
      for (auto& ev : t.last_events()) count[ev.data.u64]++;
      total += n;
    }
    std::string s = "counts:";
    for (int c : count) {
      s += ' ';  // not `" " + std::to_string()`: GCC 12 -O3 -Wrestrict false positive (PR 105329)
      s += std::to_string(c);
    }
    t.log(s);
    // Consuming one item's data drops it from the rotation at the next harvest.
    char c;
    t.api.read(fds[5], &c, 1);
    t.wait(ep, 13, 0);
  });
  EXPECT_LINUX_SEQ(r, {"wait(fd0,3,0) = 3 [IN:0 IN:1 IN:2]", "wait(fd0,3,0) = 3 [IN:3 IN:4 IN:5]",
                       "wait(fd0,3,0) = 3 [IN:12 IN:0 IN:1]", "counts: 4 4 4 4 4 4 4 4 4 4 4 4 4"});
  EXPECT_TRUE(r.linux_trace.back().find("= 12 [") != std::string::npos) << r.linux_trace.back();
}

// Items not reached because of maxevents stay in front; items that fire
// later go behind them.
TEST(WaitOrder, UnreachedItemsStayInFront) {
  auto r = conf::differential([](T& t) {
    int ep = t.epoll_create1();
    int a = t.eventfd(1), b = t.eventfd(1), c = t.eventfd(1);
    ctl_items(t, ep, EPOLL_CTL_ADD, IN | ET, {{a, 1}, {b, 2}, {c, 3}});
    t.wait(ep, 1, 0);
    t.write_u64(a, 1);
    t.wait(ep, 8, 0);
    t.wait(ep, 8, 0);
    // LT variant: delivered LT items go to the tail behind unreached ones.
    ctl_items(t, ep, EPOLL_CTL_MOD, IN, {{a, 1}, {b, 2}, {c, 3}});
    t.wait(ep, 2, 0);
    t.wait(ep, 2, 0);
    t.wait(ep, 2, 0);
  });
  EXPECT_LINUX_SEQ(r, {"wait(fd0,1,0) = 1 [IN:1]", "wait(fd0,8,0) = 3 [IN:2 IN:3 IN:1]", "wait(fd0,8,0) = 0",
                       "wait(fd0,2,0) = 2 [IN:1 IN:2]", "wait(fd0,2,0) = 2 [IN:3 IN:1]",
                       "wait(fd0,2,0) = 2 [IN:2 IN:3]"});
}

// MOD and DEL/ADD on queued items: MOD keeps the queue position and switches
// the re-queue policy; DEL + ADD puts the item at the tail.
TEST(WaitOrder, ModAndReAddOfQueuedItems) {
  auto r = conf::differential([](T& t) {
    int ep = t.epoll_create1();
    int a = t.eventfd(1), b = t.eventfd(1), c = t.eventfd(1);
    ctl_items(t, ep, EPOLL_CTL_ADD, IN, {{a, 1}, {b, 2}, {c, 3}});
    t.ctl(ep, EPOLL_CTL_MOD, a, IN | ET, 11);  // still first, now ET
    t.wait(ep, 8, 0);
    t.wait(ep, 8, 0);  // a not re-queued
    t.ctl(ep, EPOLL_CTL_DEL, b, 0, 0);
    t.ctl(ep, EPOLL_CTL_ADD, b, IN, 22);  // to the tail
    t.wait(ep, 8, 0);
    t.ctl(ep, EPOLL_CTL_MOD, c, IN | EPOLLONESHOT, 33);
    t.wait(ep, 1, 0);
    t.wait(ep, 8, 0);
  });
  EXPECT_LINUX_SEQ(r, {"wait(fd0,8,0) = 3 [IN:11 IN:2 IN:3]", "wait(fd0,8,0) = 2 [IN:2 IN:3]",
                       "wait(fd0,8,0) = 2 [IN:3 IN:22]", "wait(fd0,1,0) = 1 [IN:33]", "wait(fd0,8,0) = 1 [IN:22]"});
}

// Huge timeouts are accepted and behave as "very long": woken by an event.
TEST(WaitTimeout, HugeTimeouts) {
  auto r = conf::differential([](T& t) {
    int ep = t.epoll_create1();
    int efd = t.eventfd(0);
    t.ctl(ep, EPOLL_CTL_ADD, efd, IN | EPOLLET, 1);
    woken_by_write(t, efd, [&] { t.wait(ep, 4, INT_MAX); });
    struct timespec big = {LONG_MAX, 999999999};
    woken_by_write(t, efd, [&] { t.pwait2(ep, 4, &big, "{LONG_MAX,999999999}"); });
    struct timespec past_ns_range = {10000000000L, 0};  // 1e19 ns: beyond int64 nanoseconds
    woken_by_write(t, efd, [&] { t.pwait2(ep, 4, &past_ns_range, "{1e10,0}"); });
    struct timespec day = {86400, 0};
    woken_by_write(t, efd, [&] { t.pwait2(ep, 4, &day, "{86400,0}"); });
    woken_by_write(t, efd, [&] { t.pwait(ep, 4, INT_MAX, nullptr); });
  });
  EXPECT_LINUX_SEQ(r, {"wait(fd0,4,2147483647) = 1 [IN:1]", "pwait2(fd0,4,{LONG_MAX,999999999}) = 1 [IN:1]", "pwait2(fd0,4,{1e10,0}) = 1 [IN:1]",
                       "pwait2(fd0,4,{86400,0}) = 1 [IN:1]", "pwait(fd0,4,2147483647,NULL) = 1 [IN:1]"});
}

// The mask is the target's state at harvest time, masked by the interest set,
// not the wakeup that queued the item; stale entries are dropped.
TEST(WaitMask, RepolledAtHarvest) {
  auto r = conf::differential([](T& t) {
    int ep = t.epoll_create1();
    auto [rd, wr] = t.pipe();
    t.ctl(ep, EPOLL_CTL_ADD, rd, IN | ET, 1);
    t.write(wr, "abc", 3);
    char buf[8];
    t.api.read(rd, buf, sizeof buf);  // consumed before the harvest
    t.wait(ep, 4, 0);                 // dropped: nothing
    t.write(wr, "abc", 3);
    t.close(wr);                      // state now IN|HUP
    t.wait(ep, 4, 0);
    t.ctl(ep, EPOLL_CTL_MOD, rd, conf::kAllPollBits, 2);
    t.wait(ep, 4, 0);
    // LT: an item that stops being ready is dropped at the next harvest.
    int efd = t.eventfd(1);
    t.ctl(ep, EPOLL_CTL_ADD, efd, IN, 3);
    t.wait(ep, 4, 0);
    t.read_u64(efd);
    t.wait(ep, 4, 0);
    // Only the bits asked for (plus ERR|HUP).
    auto [s0, s1] = t.unix_stream();
    t.ctl(ep, EPOLL_CTL_ADD, s0, OUT, 4);
    t.write(s1, "x", 1);
    t.shutdown(s1, SHUT_WR);
    t.wait(ep, 8, 0);
    t.ctl(ep, EPOLL_CTL_MOD, s0, conf::kAllPollBits, 5);
    t.wait(ep, 8, 0);
  });
  EXPECT_LINUX_SEQ(r, {"wait(fd0,4,0) = 0", "wait(fd0,4,0) = 1 [IN|HUP:1]",
                       "wait(fd0,4,0) = 1 [IN|HUP|RDNORM:2]", "wait(fd0,4,0) = 2 [IN|HUP|RDNORM:2 IN:3]",
                       "read(fd3,8) = 8 value=1", "wait(fd0,4,0) = 1 [IN|HUP|RDNORM:2]"});
}

// EPOLLERR|EPOLLHUP are always reported, even with an empty interest mask.
TEST(WaitMask, ErrHupAlwaysReported) {
  auto r = conf::differential([](T& t) {
    int ep = t.epoll_create1();
    auto [rd, wr] = t.pipe();
    auto [rd2, wr2] = t.pipe();
    auto [s0, s1] = t.unix_stream();
    t.ctl(ep, EPOLL_CTL_ADD, rd, 0, 1);
    t.ctl(ep, EPOLL_CTL_ADD, wr2, 0, 2);
    t.ctl(ep, EPOLL_CTL_ADD, s0, 0, 3);
    t.ctl(ep, EPOLL_CTL_ADD, rd2, EPOLLET, 4);
    t.wait(ep, 8, 0);
    t.write(wr, "x", 1);
    t.write(wr2, "x", 1);
    t.write(s1, "x", 1);
    t.wait(ep, 8, 0);
    t.close(wr);   // rd: HUP
    t.close(rd2);  // wr2: ERR
    t.close(s1);   // s0: HUP
    t.wait(ep, 8, 0);
    t.wait(ep, 8, 0);  // LT: still there
    t.ctl(ep, EPOLL_CTL_MOD, rd, EPOLLOUT, 11);
    t.ctl(ep, EPOLL_CTL_MOD, s0, EPOLLOUT | EPOLLRDHUP, 13);
    t.wait(ep, 8, 0);
  });
  EXPECT_LINUX_SEQ(r, {"wait(fd0,8,0) = 0", "wait(fd0,8,0) = 0", "wait(fd0,8,0) = 3 [HUP:1 ERR:2 HUP:3]",
                       "wait(fd0,8,0) = 3 [HUP:1 ERR:2 HUP:3]"});
}

// EPOLLET: every wakeup the object issues is a new edge, even when it was
// already ready; wakeups whose key does not intersect the interest set are
// no edge.  The wakeup policy of each object type is observable here.
TEST(WaitEdge, EventfdEdges) {
  auto r = conf::differential([](T& t) {
    int ep = t.epoll_create1();
    int efd = t.eventfd(0, EFD_NONBLOCK);
    t.ctl(ep, EPOLL_CTL_ADD, efd, IN | ET, 1);
    t.wait(ep, 4, 0);
    t.write_u64(efd, 1);
    t.wait(ep, 4, 0);
    t.wait(ep, 4, 0);
    t.write_u64(efd, 1);  // already readable: still an edge
    t.wait(ep, 4, 0);
    t.write_u64(efd, 1);
    t.write_u64(efd, 1);  // two edges before a wait: one report
    t.wait(ep, 4, 0);
    t.wait(ep, 4, 0);
    t.write_u64(efd, 0);  // a zero write still wakes
    t.wait(ep, 4, 0);
    // OUT-only ET item: a write (key IN) is no edge, a read (key OUT) is.
    int efd2 = t.eventfd(0, EFD_NONBLOCK);
    t.ctl(ep, EPOLL_CTL_ADD, efd2, OUT | ET, 2);
    t.wait(ep, 4, 0);
    t.write_u64(efd2, 5);
    t.wait(ep, 4, 0);
    t.read_u64(efd2);
    t.wait(ep, 4, 0);
    t.read_u64(efd2);  // EAGAIN: no wakeup
    t.wait(ep, 4, 0);
    t.ctl(ep, EPOLL_CTL_MOD, efd2, IN | OUT | ET, 3);
    t.wait(ep, 4, 0);
    t.write_u64(efd2, 5);
    t.wait(ep, 4, 0);
  });
  EXPECT_LINUX_SEQ(r, {"wait(fd0,4,0) = 0", "wait(fd0,4,0) = 1 [IN:1]", "wait(fd0,4,0) = 0",
                       "wait(fd0,4,0) = 1 [IN:1]", "wait(fd0,4,0) = 1 [IN:1]", "wait(fd0,4,0) = 0",
                       "write_u64(fd1,0) = 8", "wait(fd0,4,0) = 1 [IN:1]"});
}

TEST(WaitEdge, PipeEdges) {
  auto r = conf::differential([](T& t) {
    int ep = t.epoll_create1();
    auto [rd, wr] = t.pipe2(O_NONBLOCK);
    t.ctl(ep, EPOLL_CTL_ADD, rd, IN | ET, 1);
    t.ctl(ep, EPOLL_CTL_ADD, wr, OUT | ET, 2);
    t.wait(ep, 4, 0);  // write end writable at ADD
    t.write(wr, "a", 1);
    t.wait(ep, 4, 0);
    t.write(wr, "b", 1);  // already readable: another edge (kselftest epoll66)
    t.wait(ep, 4, 0);
    t.read(rd, 1);  // pipe not full before: no writer wakeup
    t.wait(ep, 4, 0);
    t.read(rd, 8);
    t.wait(ep, 4, 0);
    t.read(rd, 8);  // EAGAIN
    t.wait(ep, 4, 0);
    t.close(wr);  // reader gets HUP edge
    t.wait(ep, 4, 0);
    t.wait(ep, 4, 0);
  });
  EXPECT_LINUX_SEQ(r, {"wait(fd0,4,0) = 1 [OUT:2]", "wait(fd0,4,0) = 1 [IN:1]", "wait(fd0,4,0) = 1 [IN:1]",
                       "read(fd1,8) = -1 EAGAIN", "wait(fd0,4,0) = 1 [HUP:1]", "wait(fd0,4,0) = 0"});
}

TEST(WaitEdge, SocketpairEdges) {
  auto r = conf::differential([](T& t) {
    int ep = t.epoll_create1();
    auto [s0, s1] = t.unix_stream(SOCK_NONBLOCK);
    t.ctl(ep, EPOLL_CTL_ADD, s0, IN | ET, 1);
    t.ctl(ep, EPOLL_CTL_ADD, s1, OUT | ET, 2);
    t.wait(ep, 4, 0);
    t.write(s1, "a", 1);
    t.wait(ep, 4, 0);
    t.write(s1, "b", 1);
    t.wait(ep, 4, 0);
    t.read(s0, 1);  // the peer's buffer shrinks: write-space wakeup on s1?
    t.wait(ep, 4, 0);
    t.read(s0, 8);
    t.wait(ep, 4, 0);
    t.shutdown(s1, SHUT_WR);
    t.wait(ep, 4, 0);
    t.ctl(ep, EPOLL_CTL_MOD, s0, IN | EPOLLRDHUP | ET, 3);
    t.wait(ep, 4, 0);
  });
  EXPECT_LINUX_SEQ(r, {"wait(fd0,4,0) = 1 [OUT:2]", "wait(fd0,4,0) = 1 [IN:1]", "wait(fd0,4,0) = 1 [IN:1]"});
}

// Zero-length writes and reads: an eventfd write of 0 wakes (an edge), a
// zero-length pipe or socket write does not; a zero-length read wakes no
// writer.
TEST(WaitEdge, ZeroLengthTransfers) {
  auto r = conf::differential([](T& t) {
    int ep = t.epoll_create1();
    auto [rd, wr] = t.pipe2(O_NONBLOCK);
    auto [s0, s1] = t.unix_stream(SOCK_NONBLOCK);
    t.ctl(ep, EPOLL_CTL_ADD, rd, IN | ET, 1);
    t.ctl(ep, EPOLL_CTL_ADD, s0, IN | ET, 2);
    t.ctl(ep, EPOLL_CTL_ADD, s1, OUT | ET, 3);
    t.wait(ep, 4, 0);
    t.write(wr, "", 0);
    t.write(s1, "", 0);
    t.wait(ep, 4, 0);
    t.write(wr, "a", 1);
    t.write(s1, "b", 1);
    t.wait(ep, 4, 0);
    t.write(wr, "", 0);
    t.write(s1, "", 0);
    t.wait(ep, 4, 0);
    t.read(s0, 0);
    t.read(rd, 0);
    t.wait(ep, 4, 0);
  });
  EXPECT_LINUX_SEQ(r, {"wait(fd0,4,0) = 1 [OUT:3]", "write(fd2,0) = 0", "write(fd4,0) = 0", "wait(fd0,4,0) = 0",
                       "wait(fd0,4,0) = 2 [IN:1 IN:2]", "wait(fd0,4,0) = 0", "read(fd3,0) = 0", "read(fd1,0) = 0"});
}

// EPOLLONESHOT: disabled after one report (ERR/HUP included) until MOD;
// MOD re-arms and re-reports if ready.
TEST(WaitOneshot, DisabledUntilMod) {
  auto r = conf::differential([](T& t) {
    int ep = t.epoll_create1();
    int efd = t.eventfd(0);
    t.ctl(ep, EPOLL_CTL_ADD, efd, IN | EPOLLONESHOT, 1);
    t.wait(ep, 4, 0);
    t.write_u64(efd, 1);
    t.wait(ep, 4, 0);
    t.wait(ep, 4, 0);
    t.write_u64(efd, 1);
    t.wait(ep, 4, 0);                                     // disabled
    t.ctl(ep, EPOLL_CTL_ADD, efd, IN | EPOLLONESHOT, 2);  // still registered: EEXIST
    t.ctl(ep, EPOLL_CTL_MOD, efd, IN | EPOLLONESHOT, 3);  // re-armed, ready: reported
    t.wait(ep, 4, 0);
    t.wait(ep, 4, 0);
    t.ctl(ep, EPOLL_CTL_MOD, efd, IN, 4);  // LT from now on
    t.wait(ep, 4, 0);
    t.wait(ep, 4, 0);
    t.ctl(ep, EPOLL_CTL_MOD, efd, IN | ET | EPOLLONESHOT, 5);
    t.wait(ep, 4, 0);
    t.write_u64(efd, 1);
    t.wait(ep, 4, 0);
    // HUP is not reported by a disabled item either.
    auto [rd, wr] = t.pipe();
    t.ctl(ep, EPOLL_CTL_ADD, rd, IN | EPOLLONESHOT, 6);
    t.write(wr, "x", 1);
    t.wait(ep, 4, 0);
    t.close(wr);
    t.wait(ep, 4, 0);
    t.ctl(ep, EPOLL_CTL_MOD, rd, EPOLLONESHOT, 7);
    t.wait(ep, 4, 0);
    t.wait(ep, 4, 0);
    t.ctl(ep, EPOLL_CTL_DEL, efd, 0, 0);
    t.ctl(ep, EPOLL_CTL_DEL, rd, 0, 0);
  });
  EXPECT_LINUX_SEQ(r, {"wait(fd0,4,0) = 0", "wait(fd0,4,0) = 1 [IN:1]", "wait(fd0,4,0) = 0", "wait(fd0,4,0) = 0",
                       "ctl(fd0,ADD,fd1,IN|ONESHOT,2) = -1 EEXIST", "wait(fd0,4,0) = 1 [IN:3]",
                       "wait(fd0,4,0) = 0", "wait(fd0,4,0) = 1 [IN:4]", "wait(fd0,4,0) = 1 [IN:4]",
                       "wait(fd0,4,0) = 1 [IN:5]", "wait(fd0,4,0) = 0", "wait(fd0,4,0) = 1 [IN:6]",
                       "wait(fd0,4,0) = 0", "wait(fd0,4,0) = 1 [HUP:7]", "wait(fd0,4,0) = 0"});
}

// MOD re-polls: a ready ET item is reported again, with the new data.
TEST(WaitMod, ModReReportsReadyEdgeItem) {
  auto r = conf::differential([](T& t) {
    int ep = t.epoll_create1();
    int efd = t.eventfd(1);
    t.ctl(ep, EPOLL_CTL_ADD, efd, IN | ET, 1);
    t.wait(ep, 4, 0);
    t.wait(ep, 4, 0);
    t.ctl(ep, EPOLL_CTL_MOD, efd, IN | ET, 2);
    t.wait(ep, 4, 0);
    t.wait(ep, 4, 0);
    t.ctl(ep, EPOLL_CTL_MOD, efd, OUT | ET, 3);
    t.wait(ep, 4, 0);
    t.ctl(ep, EPOLL_CTL_MOD, efd, EPOLLPRI | ET, 4);  // not ready for PRI: nothing
    t.wait(ep, 4, 0);
    // MOD of a queued item changes the data reported.
    t.ctl(ep, EPOLL_CTL_MOD, efd, IN, 5);
    t.ctl(ep, EPOLL_CTL_MOD, efd, IN, 0xfedcba9876543210ULL);
    t.wait(ep, 4, 0);
    // MOD to a mask the object does not satisfy: the queued entry is dropped.
    t.ctl(ep, EPOLL_CTL_MOD, efd, EPOLLPRI, 6);
    t.wait(ep, 4, 0);
  });
  EXPECT_LINUX_SEQ(r, {"wait(fd0,4,0) = 1 [IN:1]", "wait(fd0,4,0) = 0", "wait(fd0,4,0) = 1 [IN:2]",
                       "wait(fd0,4,0) = 0", "wait(fd0,4,0) = 1 [OUT:3]", "wait(fd0,4,0) = 0",
                       "wait(fd0,4,0) = 1 [IN:18364758544493064720]", "wait(fd0,4,0) = 0"});
}

// EPOLLRDHUP is reported when the peer shuts down writing, only if asked.
TEST(WaitMask, RdhupOnPeerShutdown) {
  auto r = conf::differential([](T& t) {
    int ep = t.epoll_create1();
    auto [s0, s1] = t.unix_stream();
    auto [s2, s3] = t.unix_stream();
    t.ctl(ep, EPOLL_CTL_ADD, s0, IN | EPOLLRDHUP, 1);
    t.ctl(ep, EPOLL_CTL_ADD, s2, IN, 2);
    t.wait(ep, 4, 0);
    t.shutdown(s1, SHUT_WR);
    t.shutdown(s3, SHUT_WR);
    t.wait(ep, 4, 0);
    t.read(s0, 8);  // EOF
    t.ctl(ep, EPOLL_CTL_MOD, s0, EPOLLRDHUP, 3);
    t.wait(ep, 4, 0);
  });
  EXPECT_LINUX_SEQ(r, {"wait(fd0,4,0) = 0", "wait(fd0,4,0) = 2 [IN|RDHUP:1 IN:2]", "read(fd1,8) = 0",
                       "wait(fd0,4,0) = 2 [RDHUP:3 IN:2]"});
}

// EPOLLWAKEUP is accepted (cleared silently without CAP_BLOCK_SUSPEND) and
// never reported.
TEST(WaitMask, WakeupAccepted) {
  auto r = conf::differential([](T& t) {
    int ep = t.epoll_create1();
    int efd = t.eventfd(1);
    t.ctl(ep, EPOLL_CTL_ADD, efd, IN | EPOLLWAKEUP, 1);
    t.wait(ep, 4, 0);
    t.ctl(ep, EPOLL_CTL_MOD, efd, IN | OUT | EPOLLWAKEUP | ET, 2);
    t.wait(ep, 4, 0);
    t.ctl(ep, EPOLL_CTL_MOD, efd, EPOLLWAKEUP, 3);
    t.wait(ep, 4, 0);
  });
  EXPECT_LINUX_SEQ(r, {"ctl(fd0,ADD,fd1,IN|WAKEUP,1) = 0", "wait(fd0,4,0) = 1 [IN:1]",
                       "ctl(fd0,MOD,fd1,IN|OUT|WAKEUP|ET,2) = 0", "wait(fd0,4,0) = 1 [IN|OUT:2]",
                       "ctl(fd0,MOD,fd1,WAKEUP,3) = 0", "wait(fd0,4,0) = 0"});
}

// EPOLLEXCLUSIVE, single-threaded parts: with no thread blocked in
// epoll_wait, an exclusive wakeup is not "consumed": every instance gets it.
//   e0 -(EXCL)-> efd <-(EXCL)- e1      e2 -> efd (non-exclusive)
TEST(WaitExclusive, NoWaiterEveryInstanceQueues) {
  auto r = conf::differential([](T& t) {
    int e0 = t.epoll_create1(), e1 = t.epoll_create1(), e2 = t.epoll_create1();
    int efd = t.eventfd(0);
    t.ctl(e0, EPOLL_CTL_ADD, efd, IN | EPOLLEXCLUSIVE, 10);
    t.ctl(e1, EPOLL_CTL_ADD, efd, IN | EPOLLEXCLUSIVE | ET, 11);
    t.ctl(e2, EPOLL_CTL_ADD, efd, IN, 12);
    t.write_u64(efd, 1);
    t.wait(e0, 4, 0);
    t.wait(e1, 4, 0);
    t.wait(e2, 4, 0);
    t.write_u64(efd, 1);
    t.wait(e1, 4, 0);
    t.wait(e1, 4, 0);
    t.read_u64(efd);
    t.wait(e0, 4, 0);
    t.ctl(e0, EPOLL_CTL_DEL, efd, 0, 0);
    t.ctl(e0, EPOLL_CTL_ADD, efd, OUT | EPOLLEXCLUSIVE, 13);
    t.wait(e0, 4, 0);
  });
  EXPECT_LINUX_SEQ(r, {"wait(fd0,4,0) = 1 [IN:10]", "wait(fd1,4,0) = 1 [IN:11]", "wait(fd2,4,0) = 1 [IN:12]",
                       "wait(fd1,4,0) = 1 [IN:11]", "wait(fd1,4,0) = 0", "wait(fd0,4,0) = 0",
                       "wait(fd0,4,0) = 1 [OUT:13]"});
}

}  // namespace
