// ctl_path_test.cpp - epoll_ctl conformance: the reverse path limits
// (EINVAL past Linux's path_limits, top-down and bottom-up, cached profiles
// following edge changes, diamonds, direct watchers).  Every scenario runs
// on Linux and on uepoll and the traces must match.
#include "harness.h"

namespace {

using conf::T;

constexpr uint32_t IN = EPOLLIN;

// ---- reverse path limits (EINVAL) ---------------------------------------
// path_limits = {1000, 500, 100, 50, 10}: a file may be reached from at most
// 500 root instances through paths of 2 instances, 100 of 3, 50 of 4, 10 of 5.
//
//   r0   r1  ...  rN        (roots: watched by nobody)
//     \   |      /
//      m[L-2]               (top of a chain of L-1 instances)
//        |
//       ...
//      m[0] -> efd
//
// Each root adds one path of L instances.  Adding root number limit+1 fails
// with EINVAL (top-down), and so does adding the file last (bottom-up).
struct PathCase {
  int length;  // instances on each path
  int limit;
};

void path_limit_topdown(T& t, PathCase pc) {
  int efd = t.eventfd(1);
  std::vector<int> m(pc.length - 1);
  for (int& x : m) x = t.epoll_create1();
  t.ctl(m[0], EPOLL_CTL_ADD, efd, IN, 0);
  for (size_t i = 1; i < m.size(); ++i) t.ctl(m[i], EPOLL_CTL_ADD, m[i - 1], IN, i);
  int ok = 0;
  int first_fail = -1;
  std::string err;
  std::vector<int> roots;
  {
    T::Quiet q(t);
    for (int i = 0; i < pc.limit + 3; ++i) {
      int root = t.epoll_create1();
      roots.push_back(root);
      if (t.ctl(root, EPOLL_CTL_ADD, m.back(), IN, 1000 + i) == 0) {
        ++ok;
      } else if (first_fail < 0) {
        first_fail = i;
        err = conf::errno_name(errno);
      }
    }
  }
  t.log("roots added: " + std::to_string(ok) + ", first failure at root " + std::to_string(first_fail) + " " +
        err);
  // Every registered root reports the ready file.
  int reporting = 0;
  {
    T::Quiet q(t);
    for (int root : roots) reporting += t.wait(root, 1, 0) == 1;
  }
  t.log("roots reporting: " + std::to_string(reporting));
  // A second file at the bottom is refused too (it would have limit+... paths).
  int efd2 = t.eventfd(1);
  t.ctl(m[0], EPOLL_CTL_ADD, efd2, IN, 7);
  // Removing one root makes room for one more.
  t.log("DEL of one root's item: " + t.res(t.api.epoll_ctl(roots[0], EPOLL_CTL_DEL, m.back(), nullptr)));
  t.log("re-adding the refused root: " + [&] {
    struct epoll_event ev {};
    ev.events = IN;
    return t.res(t.api.epoll_ctl(roots[first_fail < 0 ? 0 : first_fail], EPOLL_CTL_ADD, m.back(), &ev));
  }());
  {
    T::Quiet q(t);
    for (int root : roots) t.close(root);
  }
}

TEST(CtlPathLimits, TopDownLength2) {
  auto r = conf::differential([](T& t) { path_limit_topdown(t, {2, 500}); });
  EXPECT_LINUX_HAS(r, "roots added: 500, first failure at root 500 EINVAL");
  EXPECT_LINUX_HAS(r, "roots reporting: 500");
  EXPECT_LINUX_HAS(r, "ctl(fd1,ADD,fd505,IN,7) = 0");  // exactly 500 paths
  EXPECT_LINUX_HAS(r, "re-adding the refused root: 0");
}
TEST(CtlPathLimits, TopDownLength3) {
  auto r = conf::differential([](T& t) { path_limit_topdown(t, {3, 100}); });
  EXPECT_LINUX_HAS(r, "roots added: 100, first failure at root 100 EINVAL");
  EXPECT_LINUX_HAS(r, "roots reporting: 100");
}
TEST(CtlPathLimits, TopDownLength4) {
  auto r = conf::differential([](T& t) { path_limit_topdown(t, {4, 50}); });
  EXPECT_LINUX_HAS(r, "roots added: 50, first failure at root 50 EINVAL");
}
TEST(CtlPathLimits, TopDownLength5) {
  auto r = conf::differential([](T& t) { path_limit_topdown(t, {5, 10}); });
  EXPECT_LINUX_HAS(r, "roots added: 10, first failure at root 10 EINVAL");
  EXPECT_LINUX_HAS(r, "roots reporting: 10");
  EXPECT_LINUX_HAS(r, "re-adding the refused root: 0");
}

// Bottom-up: 11 roots over a chain of 4 instances, then the file is added
// at the bottom (11 paths of 5 instances): EINVAL.  With 10 roots: ok.
//   r0 .. r10 -> m3 -> m2 -> m1 -> m0 -> efd
TEST(CtlPathLimits, BottomUpLength5) {
  auto r = conf::differential([](T& t) {
    int m[4];
    for (int& x : m) x = t.epoll_create1();
    for (int i = 1; i < 4; ++i) t.ctl(m[i], EPOLL_CTL_ADD, m[i - 1], IN, i);
    std::vector<int> roots;
    for (int i = 0; i < 11; ++i) {
      roots.push_back(t.epoll_create1());
      t.ctl(roots.back(), EPOLL_CTL_ADD, m[3], IN, 100 + i);
    }
    int efd = t.eventfd(1);
    t.ctl(m[0], EPOLL_CTL_ADD, efd, IN, 0);  // 11 paths of 5: EINVAL
    auto [rd, wr] = t.pipe();
    t.ctl(m[0], EPOLL_CTL_ADD, rd, IN, 0);   // same
    t.ctl(m[1], EPOLL_CTL_ADD, efd, IN, 0);  // 11 paths of 4: ok
    t.ctl(roots[10], EPOLL_CTL_DEL, m[3], 0, 0);
    t.ctl(m[0], EPOLL_CTL_ADD, efd, IN, 0);  // 10 paths of 5: ok
    t.wait(roots[0], 4, 0);
    t.write(wr, "x", 1);
  });
  EXPECT_LINUX_SEQ(r, {"ctl(fd14,ADD,fd3,IN,110) = 0", "ctl(fd0,ADD,fd15,IN,0) = -1 EINVAL",
                       "ctl(fd0,ADD,fd16,IN,0) = -1 EINVAL", "ctl(fd1,ADD,fd15,IN,0) = 0",
                       "ctl(fd14,DEL,fd3,0,0) = 0", "ctl(fd0,ADD,fd15,IN,0) = 0", "wait(fd4,4,0) = 1 [IN:100]"});
}

// A leaf ADD into a watched instance reads a cached path profile of that
// instance (topology::leaf_path_check); every edge change must invalidate
// it: a root added (ADD of an instance), a root closed (no DEL), a DEL.
//   r0 .. r9 (+ r10) -> m3 -> m2 -> m1 -> m0 -> efd
TEST(CtlPathLimits, CachedProfileFollowsEdgeChanges) {
  auto r = conf::differential([](T& t) {
    int m[4];
    for (int& x : m) x = t.epoll_create1();
    for (int i = 1; i < 4; ++i) t.ctl(m[i], EPOLL_CTL_ADD, m[i - 1], IN, i);
    for (int i = 0; i < 10; ++i) t.ctl(t.epoll_create1(), EPOLL_CTL_ADD, m[3], IN, 100 + i);
    int e1 = t.eventfd(1), e2 = t.eventfd(1);
    t.ctl(m[0], EPOLL_CTL_ADD, e1, IN, 1);  // 10 paths of 5: ok
    t.ctl(m[0], EPOLL_CTL_DEL, e1, 0, 0);
    t.ctl(m[0], EPOLL_CTL_ADD, e1, IN, 1);  // again: ok
    t.ctl(m[0], EPOLL_CTL_DEL, e1, 0, 0);
    int r10 = t.epoll_create1();
    t.ctl(r10, EPOLL_CTL_ADD, m[3], IN, 110);  // a new edge, no leaf below
    t.ctl(m[0], EPOLL_CTL_ADD, e2, IN, 2);     // 11 paths of 5: EINVAL
    t.ctl(m[0], EPOLL_CTL_ADD, e1, IN, 1);     // EINVAL
    t.close(r10);                              // the edge goes with the file
    t.ctl(m[0], EPOLL_CTL_ADD, e2, IN, 2);     // 10 again: ok
    int r11 = t.epoll_create1();
    t.ctl(r11, EPOLL_CTL_ADD, m[3], IN, 111);  // 11 paths of 5 to e2: EINVAL
    t.ctl(m[0], EPOLL_CTL_DEL, e2, 0, 0);
    t.ctl(r11, EPOLL_CTL_ADD, m[3], IN, 111);  // no leaf below: ok
    t.ctl(m[1], EPOLL_CTL_ADD, e1, IN, 1);     // 11 paths of 4: ok
    t.ctl(r11, EPOLL_CTL_DEL, m[3], 0, 0);
    t.ctl(m[0], EPOLL_CTL_ADD, e2, IN, 2);     // 10 paths of 5: ok
    t.ctl(m[0], EPOLL_CTL_ADD, e1, IN, 1);     // e1 is in m1 too: 10 of 5 + 10 of 4: ok
    t.ctl(t.epoll_create1(), EPOLL_CTL_ADD, m[3], IN, 112);  // 11 paths of 5: EINVAL
  });
  EXPECT_LINUX_HAS(r, "ctl(fd0,ADD,fd15,IN,2) = -1 EINVAL");
  EXPECT_LINUX_HAS(r, "ctl(fd17,ADD,fd3,IN,111) = -1 EINVAL");
}

// Paths are counted per distinct route, through diamonds too: 2 middles
// (a, b) over m, 50 roots over each: 100 paths of 3 instances (the limit);
// one more root over a is refused.
//   r0..r49   r50..r99
//      \         /
//       a       b
//        \     /
//           m -> efd
TEST(CtlPathLimits, DiamondPathsCounted) {
  auto r = conf::differential([](T& t) {
    int efd = t.eventfd(1);
    int m = t.epoll_create1(), a = t.epoll_create1(), b = t.epoll_create1();
    t.ctl(m, EPOLL_CTL_ADD, efd, IN, 0);
    t.ctl(a, EPOLL_CTL_ADD, m, IN, 1);
    t.ctl(b, EPOLL_CTL_ADD, m, IN, 2);
    int ok = 0;
    std::vector<int> roots;
    {
      T::Quiet q(t);
      for (int i = 0; i < 100; ++i) {
        roots.push_back(t.epoll_create1());
        ok += t.ctl(roots.back(), EPOLL_CTL_ADD, i < 50 ? a : b, IN, 100 + i) == 0;
      }
    }
    t.log("roots added: " + std::to_string(ok));
    int extra = t.epoll_create1();
    t.ctl(extra, EPOLL_CTL_ADD, a, IN, 7);
    t.ctl(extra, EPOLL_CTL_ADD, m, IN, 8);  // a path of 2 instances: other limit
    t.ctl(roots[0], EPOLL_CTL_ADD, m, IN, 9);  // r0 is not a root any more? it is: nobody watches r0
    T::Quiet q(t);
    for (int x : roots) t.close(x);
  });
  EXPECT_LINUX_SEQ(r, {"roots added: 100", "ctl(fd104,ADD,fd2,IN,7) = -1 EINVAL", "ctl(fd104,ADD,fd1,IN,8) = 0",
                       "ctl(fd4,ADD,fd1,IN,9) = 0"});
}

// Paths of one instance are unlimited: one file in 1200 instances.
TEST(CtlPathLimits, DirectWatchersUnlimited) {
  auto r = conf::differential([](T& t) {
    int efd = t.eventfd(1);
    int ok = 0;
    std::vector<int> eps;
    {
      T::Quiet q(t);
      for (int i = 0; i < 1200; ++i) {
        eps.push_back(t.epoll_create1());
        ok += t.ctl(eps.back(), EPOLL_CTL_ADD, efd, IN, i) == 0;
      }
    }
    t.log("direct watchers added: " + std::to_string(ok));
    // A second level over one of them still works.
    int top = t.epoll_create1();
    t.ctl(top, EPOLL_CTL_ADD, eps[0], IN, 5);
    t.wait(top, 4, 0);
    T::Quiet q(t);
    for (int e : eps) t.close(e);
  });
  EXPECT_LINUX_HAS(r, "direct watchers added: 1200");
  EXPECT_LINUX_HAS(r, "wait(fd1201,4,0) = 1 [IN:5]");
}

}  // namespace
