// wait_edge_test.cpp - epoll_wait conformance of the item modes: EPOLLET
// edges (the per-object wakeup policy of eventfd, pipes, socket pairs and
// zero-length transfers), EPOLLONESHOT, MOD re-arming, and EPOLLEXCLUSIVE
// with no waiter.  Every scenario runs on Linux and on uepoll; traces must
// match.
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
