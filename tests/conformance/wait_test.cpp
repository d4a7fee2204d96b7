// wait_test.cpp - epoll_wait/epoll_pwait/epoll_pwait2 conformance: argument
// checks in Linux 6.18 order (EBADF, EINVAL, EFAULT and faults part way
// through the buffer, pwait2's timespec and pwait's mask) and timeouts.
// The report order, masks and item modes are in wait_order_test.cpp,
// wait_mask_test.cpp and wait_edge_test.cpp.  Every scenario runs on Linux
// and on uepoll; traces must match.
#include "harness.h"

#include <sys/mman.h>

#include <functional>
#include <initializer_list>
#include <thread>
#include <utility>

namespace {

using conf::T;

constexpr uint32_t IN = EPOLLIN;
constexpr uint32_t ET = EPOLLET;

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

// Timeouts: elapsed time checked with tolerance (never exact).
std::string within(double ms, double lo, double hi) {
  if (ms < lo) return "too early (" + std::to_string(ms) + " ms)";
  if (ms > hi) return "too late (" + std::to_string(ms) + " ms)";
  return "in range";
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

}  // namespace
