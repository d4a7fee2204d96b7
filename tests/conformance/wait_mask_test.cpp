// wait_mask_test.cpp - epoll_wait conformance: the reported mask (re-polled
// at harvest time, ERR|HUP always reported, EPOLLRDHUP on peer shutdown,
// EPOLLWAKEUP accepted).  Every scenario runs on Linux and on uepoll; traces
// must match.
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

}  // namespace
