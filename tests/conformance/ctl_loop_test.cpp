// ctl_loop_test.cpp - epoll_ctl conformance: the loop and depth checks
// (ELOOP: short and long cycles, the chain depth limit, the longest route,
// joined chains, diamonds).  Every scenario runs on Linux and on uepoll and
// the traces must match.
#include "harness.h"

namespace {

using conf::T;

constexpr uint32_t IN = EPOLLIN;

// ---- loops and depth (ELOOP) -------------------------------------------
// Notation: "eA -> eB" means eB is registered in eA (eA watches eB).

//   e0 -> e1 ; then e1 -> e0 closes a cycle.
//   e0 -> e1 -> e2 ; then e2 -> e0.
TEST(CtlLoop, ShortCycles) {
  auto r = conf::differential([](T& t) {
    int e0 = t.epoll_create1();
    int e1 = t.epoll_create1();
    int e2 = t.epoll_create1();
    t.ctl(e0, EPOLL_CTL_ADD, e1, IN, 1);
    t.ctl(e1, EPOLL_CTL_ADD, e0, IN, 2);  // ELOOP
    t.ctl(e1, EPOLL_CTL_ADD, e2, IN, 3);
    t.ctl(e2, EPOLL_CTL_ADD, e0, IN, 4);  // ELOOP
    t.ctl(e2, EPOLL_CTL_ADD, e1, IN, 5);  // ELOOP
    int d0 = t.dup(e0);
    t.ctl(e2, EPOLL_CTL_ADD, d0, IN, 6);  // ELOOP through a dup
    t.ctl(e0, EPOLL_CTL_ADD, e2, IN, 7);  // shortcut, no cycle: ok
    t.ctl(e0, EPOLL_CTL_ADD, e1, IN, 8);  // EEXIST
    t.ctl(e1, EPOLL_CTL_ADD, e0, EPOLLOUT | EPOLLET, 9);  // ELOOP (mask irrelevant)
  });
  EXPECT_LINUX_SEQ(r, {
                         "ctl(fd1,ADD,fd0,IN,2) = -1 ELOOP",
                         "ctl(fd2,ADD,fd0,IN,4) = -1 ELOOP",
                         "ctl(fd2,ADD,fd1,IN,5) = -1 ELOOP",
                         "ctl(fd2,ADD,fd3,IN,6) = -1 ELOOP",
                         "ctl(fd0,ADD,fd2,IN,7) = 0",
                         "ctl(fd0,ADD,fd1,IN,8) = -1 EEXIST",
                         "ctl(fd1,ADD,fd0,OUT|ET,9) = -1 ELOOP",
                     });
}

//   e0 -> e1 -> e2 -> e3      then e3 -> e0 (4-cycle)
//   e0 -> e1 -> e2 -> e3 -> e4 then e4 -> e0, e4 -> e2 (cycles)
TEST(CtlLoop, LongCycles) {
  auto r = conf::differential([](T& t) {
    int e[5];
    for (int& x : e) x = t.epoll_create1();
    for (int i = 0; i < 3; ++i) t.ctl(e[i], EPOLL_CTL_ADD, e[i + 1], IN, i);
    t.ctl(e[3], EPOLL_CTL_ADD, e[0], IN, 30);
    t.ctl(e[3], EPOLL_CTL_ADD, e[4], IN, 3);
    t.ctl(e[4], EPOLL_CTL_ADD, e[0], IN, 40);
    t.ctl(e[4], EPOLL_CTL_ADD, e[2], IN, 42);
    t.ctl(e[4], EPOLL_CTL_ADD, e[3], IN, 43);
  });
  EXPECT_LINUX_SEQ(r, {
                         "ctl(fd3,ADD,fd0,IN,30) = -1 ELOOP",
                         "ctl(fd3,ADD,fd4,IN,3) = 0",
                         "ctl(fd4,ADD,fd0,IN,40) = -1 ELOOP",
                         "ctl(fd4,ADD,fd2,IN,42) = -1 ELOOP",
                         "ctl(fd4,ADD,fd3,IN,43) = -1 ELOOP",
                     });
}

// At most 5 instances on any path (4 epoll->epoll edges), whichever end the
// new edge is added at.
//   e0 -> e1 -> e2 -> e3 -> e4 -> efd   (5 instances: ok)
//   e4 -> e5                            (6th at the bottom: ELOOP)
//   e5 -> e0                            (6th on top: ELOOP)
//   e6 -> e1 (5 instances on e6's path: ok), e7 -> e6 (6: ELOOP)
TEST(CtlLoop, ChainDepthLimit) {
  auto r = conf::differential([](T& t) {
    int e[8];
    for (int& x : e) x = t.epoll_create1();
    int efd = t.eventfd(1);
    t.ctl(e[4], EPOLL_CTL_ADD, efd, IN, 99);
    for (int i = 0; i < 4; ++i) t.ctl(e[i], EPOLL_CTL_ADD, e[i + 1], IN, i);
    t.ctl(e[4], EPOLL_CTL_ADD, e[5], IN, 45);  // bottom
    t.ctl(e[5], EPOLL_CTL_ADD, e[0], IN, 50);  // top
    t.ctl(e[6], EPOLL_CTL_ADD, e[1], IN, 61);  // parallel top, same depth
    t.ctl(e[7], EPOLL_CTL_ADD, e[6], IN, 76);  // too deep via e6
    t.ctl(e[7], EPOLL_CTL_ADD, e[4], IN, 74);  // shallow: ok
    t.wait(e[0], 4, 0);                        // efd ready: seen through 4 levels
    t.wait(e[6], 4, 0);
    t.wait(e[7], 4, 0);
    t.ctl(e[4], EPOLL_CTL_ADD, e[5], IN, 45);  // still ELOOP
    t.ctl(e[0], EPOLL_CTL_DEL, e[1], 0, 0);
    t.ctl(e[6], EPOLL_CTL_DEL, e[1], 0, 0);
    t.ctl(e[7], EPOLL_CTL_DEL, e[4], 0, 0);
    t.ctl(e[4], EPOLL_CTL_ADD, e[5], IN, 45);  // now e1..e5: ok
  });
  EXPECT_LINUX_SEQ(r, {
                         "ctl(fd3,ADD,fd4,IN,3) = 0",
                         "ctl(fd4,ADD,fd5,IN,45) = -1 ELOOP",
                         "ctl(fd5,ADD,fd0,IN,50) = -1 ELOOP",
                         "ctl(fd6,ADD,fd1,IN,61) = 0",
                         "ctl(fd7,ADD,fd6,IN,76) = -1 ELOOP",
                         "ctl(fd7,ADD,fd4,IN,74) = 0",
                         "wait(fd0,4,0) = 1 [IN:0]",
                         "ctl(fd4,ADD,fd5,IN,45) = -1 ELOOP",
                         "ctl(fd4,ADD,fd5,IN,45) = 0",
                     });
}

// The depth that counts is the longest route, whichever route was built
// first.
//   t -> a -> b -> c -> d      and t -> d (short route, built first)
//   d -> x : the long route makes t a b c d x = 6 instances: ELOOP
//   y -> t : y t a b c d = 6: ELOOP (downward depth of t is the long route)
TEST(CtlLoop, LongestRouteCounts) {
  auto r = conf::differential([](T& t) {
    int tt = t.epoll_create1(), a = t.epoll_create1(), b = t.epoll_create1(), c = t.epoll_create1(),
        d = t.epoll_create1(), x = t.epoll_create1(), y = t.epoll_create1();
    t.ctl(tt, EPOLL_CTL_ADD, d, IN, 1);
    t.ctl(c, EPOLL_CTL_ADD, d, IN, 2);
    t.ctl(b, EPOLL_CTL_ADD, c, IN, 3);
    t.ctl(a, EPOLL_CTL_ADD, b, IN, 4);
    t.ctl(tt, EPOLL_CTL_ADD, a, IN, 5);
    t.ctl(d, EPOLL_CTL_ADD, x, IN, 6);  // ELOOP
    t.ctl(y, EPOLL_CTL_ADD, tt, IN, 7);  // ELOOP
    t.ctl(y, EPOLL_CTL_ADD, d, IN, 8);   // short: ok
    t.ctl(tt, EPOLL_CTL_DEL, a, 0, 0);
    t.ctl(d, EPOLL_CTL_ADD, x, IN, 6);  // a b c d x: 5, t d x: 3: ok
    t.ctl(y, EPOLL_CTL_ADD, tt, IN, 7);  // y t d x: ok
    t.ctl(tt, EPOLL_CTL_ADD, a, IN, 5);  // y t a b c d x = 7: ELOOP
  });
  EXPECT_LINUX_SEQ(r, {"ctl(fd0,ADD,fd1,IN,5) = 0", "ctl(fd4,ADD,fd5,IN,6) = -1 ELOOP",
                       "ctl(fd6,ADD,fd0,IN,7) = -1 ELOOP", "ctl(fd6,ADD,fd4,IN,8) = 0", "ctl(fd4,ADD,fd5,IN,6) = 0",
                       "ctl(fd6,ADD,fd0,IN,7) = 0", "ctl(fd0,ADD,fd1,IN,5) = -1 ELOOP"});
}

// Joining two chains: the new path is (depth above) + 1 + (depth below).
//   c0 -> c1 -> c2   d0 -> d1 -> d2   : c2 -> d0 makes 6 instances: ELOOP
//   c0 -> c1 -> c2   d0 -> d1         : c2 -> d0 makes 5: ok
TEST(CtlLoop, JoinChains) {
  auto r = conf::differential([](T& t) {
    int c[3], d[3];
    for (int& x : c) x = t.epoll_create1();
    for (int& x : d) x = t.epoll_create1();
    t.ctl(c[0], EPOLL_CTL_ADD, c[1], IN, 1);
    t.ctl(c[1], EPOLL_CTL_ADD, c[2], IN, 2);
    t.ctl(d[0], EPOLL_CTL_ADD, d[1], IN, 3);
    t.ctl(d[1], EPOLL_CTL_ADD, d[2], IN, 4);
    t.ctl(c[2], EPOLL_CTL_ADD, d[0], IN, 5);  // ELOOP
    t.ctl(c[2], EPOLL_CTL_ADD, d[1], IN, 6);  // c0 c1 c2 d1 d2: ok
    t.ctl(d[1], EPOLL_CTL_DEL, d[2], 0, 0);
    t.ctl(c[2], EPOLL_CTL_ADD, d[0], IN, 7);  // c0 c1 c2 d0 d1: ok
    t.ctl(d[1], EPOLL_CTL_ADD, d[2], IN, 8);  // would make 6: ELOOP
  });
  EXPECT_LINUX_SEQ(r, {
                         "ctl(fd2,ADD,fd3,IN,5) = -1 ELOOP",
                         "ctl(fd2,ADD,fd4,IN,6) = 0",
                         "ctl(fd2,ADD,fd3,IN,7) = 0",
                         "ctl(fd4,ADD,fd5,IN,8) = -1 ELOOP",
                     });
}

// A diamond is not a cycle.  The order of the two reports shows the kernel's
// wait-queue order: e1 and e2 both wait on e3's poll queue; add_wait_queue()
// inserts at the head, so e2 (registered last) is called back first and e0's
// item for e2 is queued before e0's item for e1.
//        e0
//       /  \          .
//     e1    e2
//       \  /
//        e3 -> efd
TEST(CtlLoop, DiamondAllowed) {
  auto r = conf::differential([](T& t) {
    int e0 = t.epoll_create1(), e1 = t.epoll_create1(), e2 = t.epoll_create1(), e3 = t.epoll_create1();
    int efd = t.eventfd(0);
    t.ctl(e3, EPOLL_CTL_ADD, efd, IN, 9);
    t.ctl(e0, EPOLL_CTL_ADD, e1, IN, 1);
    t.ctl(e0, EPOLL_CTL_ADD, e2, IN, 2);
    t.ctl(e1, EPOLL_CTL_ADD, e3, IN, 13);
    t.ctl(e2, EPOLL_CTL_ADD, e3, IN, 23);
    t.ctl(e3, EPOLL_CTL_ADD, e0, IN, 30);  // ELOOP
    t.wait(e0, 4, 0);
    t.write_u64(efd, 1);
    t.wait(e0, 4, 0);
  });
  EXPECT_LINUX_SEQ(r, {
                         "ctl(fd1,ADD,fd3,IN,13) = 0",
                         "ctl(fd2,ADD,fd3,IN,23) = 0",
                         "ctl(fd3,ADD,fd0,IN,30) = -1 ELOOP",
                         "wait(fd0,4,0) = 0",
                         "wait(fd0,4,0) = 2 [IN:2 IN:1]",
                     });
}

}  // namespace
