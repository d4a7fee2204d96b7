// ctl_test.cpp - epoll_create/epoll_ctl conformance: validation order and
// errno (Linux 6.18 do_epoll_ctl: EFAULT, EBADF epfd, EBADF fd, EPERM, EINVAL
// same-file/not-epoll, EINVAL EPOLLEXCLUSIVE rules, ELOOP, EEXIST/ENOENT/bad
// op), the loop and depth checks, the reverse path limits, and the
// (file, fd) key (dup'ed descriptors, closed and reused numbers).  Every
// scenario runs on Linux and on uepoll and the traces must match.
#include "harness.h"

namespace {

using conf::T;

constexpr uint32_t IN = EPOLLIN;

TEST(CtlCreate, CreateArguments) {
  auto r = conf::differential([](T& t) {
    t.epoll_create(0);
    t.epoll_create(-1);
    t.epoll_create(1);
    t.epoll_create(INT_MAX);
    t.epoll_create1(0);
    t.epoll_create1(EPOLL_CLOEXEC);
    t.epoll_create1(1);
    t.epoll_create1(O_NONBLOCK);
    t.epoll_create1(EPOLL_CLOEXEC | 1);
  });
  EXPECT_LINUX_SEQ(r, {
                         "epoll_create(0) = -1 EINVAL",
                         "epoll_create(-1) = -1 EINVAL",
                         "epoll_create1(0x1) = -1 EINVAL",
                         "epoll_create1(NONBLOCK) = -1 EINVAL",
                     });
}

// Step 1 of do_epoll_ctl: the event is copied for every op except DEL, before
// any descriptor is looked up.
TEST(CtlOrder, EfaultComesFirst) {
  auto r = conf::differential([](T& t) {
    int ep = t.epoll_create1();
    int efd = t.eventfd(0);
    int gone = t.eventfd(0);
    t.close(gone);
    t.ctl_ptr(ep, EPOLL_CTL_ADD, efd, nullptr, "NULL");
    t.ctl_ptr(ep, EPOLL_CTL_MOD, efd, nullptr, "NULL");
    t.ctl_ptr(ep, 42, efd, nullptr, "NULL");
    t.ctl_ptr(gone, EPOLL_CTL_ADD, gone, nullptr, "NULL");  // EFAULT before EBADF
    t.ctl_ptr(-1, 42, -1, nullptr, "NULL");
    t.ctl_ptr(ep, EPOLL_CTL_ADD, efd, static_cast<struct epoll_event*>(conf::kernel_address()), "kernel");
    t.ctl_ptr(ep, EPOLL_CTL_DEL, efd, nullptr, "NULL");  // DEL needs no event: ENOENT
    t.ctl_ptr(-1, EPOLL_CTL_DEL, -1, nullptr, "NULL");   // EBADF
    t.ctl_ptr(ep, EPOLL_CTL_DEL, efd, static_cast<struct epoll_event*>(conf::kernel_address()), "kernel");
  }, /*forked=*/true);
  EXPECT_LINUX_SEQ(r, {
                         "ctl(fd0,ADD,fd1,NULL) = -1 EFAULT",
                         "ctl(fd0,MOD,fd1,NULL) = -1 EFAULT",
                         "ctl(fd0,op42,fd1,NULL) = -1 EFAULT",
                         "ctl(fd2,ADD,fd2,NULL) = -1 EFAULT",
                         "ctl(fd0,ADD,fd1,kernel) = -1 EFAULT",
                         "ctl(fd0,DEL,fd1,NULL) = -1 ENOENT",
                         "ctl(-1,DEL,-1,NULL) = -1 EBADF",
                         "ctl(fd0,DEL,fd1,kernel) = -1 ENOENT",
                     });
}

TEST(CtlOrder, Ebadf) {
  auto r = conf::differential([](T& t) {
    int ep = t.epoll_create1();
    int efd = t.eventfd(0);
    int gone_ep = t.epoll_create1();
    int gone = t.eventfd(0);
    t.close(gone_ep);
    t.close(gone);
    // A number that was never handed out, in each implementation's range.
    int never = t.is_linux() ? 1000000 : UEP_FD_BASE + 1000000;
    t.ctl(gone_ep, EPOLL_CTL_ADD, efd, IN, 1);
    t.ctl(-1, EPOLL_CTL_ADD, efd, IN, 1);
    t.ctl(never, EPOLL_CTL_ADD, efd, IN, 1);
    t.ctl(ep, EPOLL_CTL_ADD, gone, IN, 1);
    t.ctl(ep, EPOLL_CTL_ADD, -1, IN, 1);
    t.ctl(ep, EPOLL_CTL_ADD, never, IN, 1);
    t.ctl(ep, EPOLL_CTL_MOD, gone, IN, 1);
    t.ctl(ep, EPOLL_CTL_DEL, gone, IN, 1);
    t.ctl(gone, 42, gone, IN, 1);  // EBADF before the bad op
    t.ctl(ep, 42, gone, IN, 1);
    t.ctl(gone_ep, EPOLL_CTL_ADD, gone, IN, 1);
    t.ctl(efd, EPOLL_CTL_ADD, gone, IN, 1);  // EBADF(fd) before EINVAL(not epoll)
  });
  for (int i = 6; i <= 17; ++i) {
    ASSERT_LT(static_cast<size_t>(i), r.linux_trace.size());
    EXPECT_NE(r.linux_trace[i].find("= -1 EBADF"), std::string::npos) << r.linux_trace[i];
  }
}

// EPERM: the target has no ->poll (a regular file).  On uepoll the target is a
// kernel descriptor handed to uep_epoll_ctl; the expected result is the same.
TEST(CtlOrder, EpermRegularFile) {
  auto r = conf::differential([](T& t) {
    int ep = t.epoll_create1();
    int efd = t.eventfd(0);
    int f = t.regular_file();
    t.ctl(ep, EPOLL_CTL_ADD, f, IN, 1);
    t.ctl(ep, EPOLL_CTL_MOD, f, IN, 1);
    t.ctl(ep, EPOLL_CTL_DEL, f, IN, 1);  // EPERM, not ENOENT
    t.ctl(ep, 42, f, IN, 1);             // EPERM before the bad op
    t.ctl(efd, EPOLL_CTL_ADD, f, IN, 1);  // EPERM before EINVAL(not epoll)
    t.ctl(ep, EPOLL_CTL_ADD, f, IN | EPOLLEXCLUSIVE | EPOLLPRI, 1);  // before EXCLUSIVE rules
    t.ctl_ptr(ep, EPOLL_CTL_ADD, f, nullptr, "NULL");  // EFAULT still first
  });
  EXPECT_LINUX_SEQ(r, {
                         "ctl(fd0,ADD,fd2,IN,1) = -1 EPERM",
                         "ctl(fd0,MOD,fd2,IN,1) = -1 EPERM",
                         "ctl(fd0,DEL,fd2,IN,1) = -1 EPERM",
                         "ctl(fd0,op42,fd2,IN,1) = -1 EPERM",
                         "ctl(fd1,ADD,fd2,IN,1) = -1 EPERM",
                         "ctl(fd0,ADD,fd2,IN|PRI|EXCL,1) = -1 EPERM",
                         "ctl(fd0,ADD,fd2,NULL) = -1 EFAULT",
                     });
}

TEST(CtlOrder, EinvalSameFileAndNotEpoll) {
  auto r = conf::differential([](T& t) {
    int ep = t.epoll_create1();
    int efd = t.eventfd(0);
    int efd2 = t.eventfd(0);
    auto [rd, wr] = t.pipe();
    int d = t.dup(ep);
    t.ctl(ep, EPOLL_CTL_ADD, ep, IN, 1);
    t.ctl(ep, EPOLL_CTL_ADD, d, IN, 1);  // same struct file
    t.ctl(d, EPOLL_CTL_ADD, ep, IN, 1);
    t.ctl(ep, EPOLL_CTL_DEL, ep, IN, 1);
    t.ctl(ep, EPOLL_CTL_MOD, d, IN, 1);
    t.ctl(ep, 42, ep, IN, 1);
    t.ctl(efd, EPOLL_CTL_ADD, efd2, IN, 1);
    t.ctl(efd, EPOLL_CTL_DEL, efd2, IN, 1);
    t.ctl(efd, EPOLL_CTL_ADD, efd, IN, 1);
    t.ctl(rd, EPOLL_CTL_ADD, efd, IN, 1);
    t.ctl(wr, EPOLL_CTL_ADD, ep, IN, 1);
    t.ctl(efd, EPOLL_CTL_ADD, ep, IN | EPOLLEXCLUSIVE, 1);
    // Bad ops on a valid pair.
    t.ctl(ep, 0, efd, IN, 1);
    t.ctl(ep, 4, efd, IN, 1);
    t.ctl(ep, -1, efd, IN, 1);
    t.ctl(ep, EPOLL_CTL_ADD, efd, IN, 1);
    t.ctl(ep, 42, efd, IN, 1);  // registered or not: EINVAL
    t.ctl(ep, 42, efd2, EPOLLEXCLUSIVE, 1);
    // The dup'ed epfd is the same instance.
    t.ctl(d, EPOLL_CTL_ADD, efd, IN, 1);  // EEXIST
    t.ctl(d, EPOLL_CTL_DEL, efd, IN, 1);
    t.ctl(ep, EPOLL_CTL_DEL, efd, IN, 1);  // ENOENT
  });
  for (int i = 5; i <= 22; ++i) {
    if (i == 20) continue;
    ASSERT_LT(static_cast<size_t>(i), r.linux_trace.size());
    EXPECT_NE(r.linux_trace[i].find("= -1 EINVAL"), std::string::npos) << r.linux_trace[i];
  }
  EXPECT_LINUX_SEQ(r, {
                         "ctl(fd0,ADD,fd1,IN,1) = 0",
                         "ctl(fd5,ADD,fd1,IN,1) = -1 EEXIST",
                         "ctl(fd5,DEL,fd1,IN,1) = 0",
                         "ctl(fd0,DEL,fd1,IN,1) = -1 ENOENT",
                     });
}

TEST(CtlExclusive, Rules) {
  auto r = conf::differential([](T& t) {
    int ep = t.epoll_create1();
    int ep2 = t.epoll_create1();
    int efd = t.eventfd(0);
    int efd2 = t.eventfd(0);
    t.ctl(ep, EPOLL_CTL_MOD, efd, IN | EPOLLEXCLUSIVE, 1);  // unregistered: EINVAL, not ENOENT
    t.ctl(ep, EPOLL_CTL_MOD, efd, IN, 1);                   // ENOENT
    t.ctl(ep, EPOLL_CTL_ADD, ep2, IN | EPOLLEXCLUSIVE, 1);  // epoll target
    const uint32_t forbidden[] = {EPOLLPRI,    EPOLLRDHUP,  EPOLLONESHOT, EPOLLRDNORM, EPOLLRDBAND,
                                  EPOLLWRNORM, EPOLLWRBAND, EPOLLMSG,     conf::kEpollNval,   1u << 20};
    for (uint32_t bit : forbidden) t.ctl(ep, EPOLL_CTL_ADD, efd, IN | EPOLLEXCLUSIVE | bit, 2);
    t.ctl(ep, EPOLL_CTL_ADD, efd,
          EPOLLIN | EPOLLOUT | EPOLLERR | EPOLLHUP | EPOLLWAKEUP | EPOLLET | EPOLLEXCLUSIVE, 3);
    t.ctl(ep, EPOLL_CTL_ADD, efd, IN | EPOLLEXCLUSIVE, 4);  // allowed bits: EEXIST
    t.ctl(ep, EPOLL_CTL_MOD, efd, IN, 5);                   // existing EXCLUSIVE item
    t.ctl(ep, EPOLL_CTL_MOD, efd, IN | EPOLLEXCLUSIVE, 6);
    t.ctl(ep, EPOLL_CTL_ADD, efd2, EPOLLEXCLUSIVE, 7);  // EXCLUSIVE alone
    t.ctl(ep, EPOLL_CTL_MOD, efd2, 0, 8);
    t.wait(ep, 8, 0);  // efd: OUT|ET, efd2: nothing asked -> only efd reports
    t.ctl(ep, EPOLL_CTL_DEL, efd, 0, 0);
    t.ctl(ep, EPOLL_CTL_MOD, efd, IN | EPOLLEXCLUSIVE, 9);  // deleted: still EINVAL
    t.ctl(ep, EPOLL_CTL_ADD, efd, IN, 10);
    t.ctl(ep, EPOLL_CTL_MOD, efd, IN | EPOLLEXCLUSIVE, 11);  // non-exclusive item: EINVAL
    t.ctl(ep, EPOLL_CTL_MOD, efd, EPOLLOUT, 12);
    t.wait(ep, 8, 0);
  });
  EXPECT_LINUX_SEQ(r, {
                         "ctl(fd0,MOD,fd2,IN|EXCL,1) = -1 EINVAL",
                         "ctl(fd0,MOD,fd2,IN,1) = -1 ENOENT",
                         "ctl(fd0,ADD,fd1,IN|EXCL,1) = -1 EINVAL",
                     });
  for (int i = 7; i < 17; ++i) EXPECT_NE(r.linux_trace[i].find("= -1 EINVAL"), std::string::npos) << r.linux_trace[i];
  EXPECT_LINUX_SEQ(r, {
                         "ctl(fd0,ADD,fd2,IN|OUT|ERR|HUP|EXCL|WAKEUP|ET,3) = 0",
                         "ctl(fd0,ADD,fd2,IN|EXCL,4) = -1 EEXIST",
                         "ctl(fd0,MOD,fd2,IN,5) = -1 EINVAL",
                         "ctl(fd0,MOD,fd2,IN|EXCL,6) = -1 EINVAL",
                         "ctl(fd0,ADD,fd3,EXCL,7) = 0",
                         "ctl(fd0,MOD,fd3,0,8) = -1 EINVAL",
                         "wait(fd0,8,0) = 1 [OUT:3]",
                         "ctl(fd0,MOD,fd2,IN|EXCL,9) = -1 EINVAL",
                         "ctl(fd0,MOD,fd2,OUT,12) = 0",
                         "wait(fd0,8,0) = 1 [OUT:12]",
                     });
}

// Unknown event bits are accepted by ADD and MOD when EXCLUSIVE is not set
// (LTP epoll_ctl03 MODs all combinations).
TEST(CtlMask, AnyBitsAcceptedWithoutExclusive) {
  auto r = conf::differential([](T& t) {
    int ep = t.epoll_create1();
    auto [s0, s1] = t.unix_stream();
    (void)s1;
    t.ctl(ep, EPOLL_CTL_ADD, s0, 0xffffffffu & ~EPOLLEXCLUSIVE, 1);
    int ok = 0;
    {
      T::Quiet q(t);
      const uint32_t bits[] = {EPOLLIN, EPOLLOUT, EPOLLPRI, EPOLLERR, EPOLLHUP, EPOLLET, EPOLLONESHOT, EPOLLRDHUP};
      for (unsigned c = 0; c < 256; ++c) {
        uint32_t m = 0;
        for (int b = 0; b < 8; ++b)
          if (c & (1u << b)) m |= bits[b];
        ok += t.ctl(ep, EPOLL_CTL_MOD, s0, m, c) == 0;
      }
    }
    t.log("256 MODs succeeded: " + std::to_string(ok));
    t.ctl(ep, EPOLL_CTL_MOD, s0, 0x0fff0000u, 7);
    t.wait(ep, 4, 0);
  });
  EXPECT_LINUX_SEQ(r, {
                         "256 MODs succeeded: 256",
                     });
}

TEST(CtlKey, EexistEnoent) {
  auto r = conf::differential([](T& t) {
    int ep = t.epoll_create1();
    int efd = t.eventfd(0);
    int other = t.eventfd(0);
    t.ctl(ep, EPOLL_CTL_MOD, efd, IN, 1);  // ENOENT
    t.ctl(ep, EPOLL_CTL_DEL, efd, IN, 1);  // ENOENT
    t.ctl(ep, EPOLL_CTL_ADD, efd, IN, 1);
    t.ctl(ep, EPOLL_CTL_ADD, efd, EPOLLOUT, 2);  // EEXIST, item unchanged
    t.ctl(ep, EPOLL_CTL_MOD, other, IN, 3);      // ENOENT
    t.write_u64(efd, 1);
    t.wait(ep, 4, 0);
    t.ctl(ep, EPOLL_CTL_DEL, efd, IN, 1);
    t.ctl(ep, EPOLL_CTL_DEL, efd, IN, 1);  // ENOENT
    t.ctl(ep, EPOLL_CTL_MOD, efd, IN, 1);  // ENOENT
    t.ctl(ep, EPOLL_CTL_ADD, efd, IN, 4);  // fresh
    t.wait(ep, 4, 0);
  });
  EXPECT_LINUX_SEQ(r, {
                         "ctl(fd0,MOD,fd1,IN,1) = -1 ENOENT",
                         "ctl(fd0,DEL,fd1,IN,1) = -1 ENOENT",
                         "ctl(fd0,ADD,fd1,OUT,2) = -1 EEXIST",
                         "wait(fd0,4,0) = 1 [IN:1]",
                         "ctl(fd0,DEL,fd1,IN,1) = -1 ENOENT",
                         "wait(fd0,4,0) = 1 [IN:4]",
                     });
}

// The key is (open file, fd number): a dup is a different item.
TEST(CtlKey, DupIsDistinctItem) {
  auto r = conf::differential([](T& t) {
    int ep = t.epoll_create1();
    int efd = t.eventfd(0);
    int d = t.dup(efd);
    t.ctl(ep, EPOLL_CTL_ADD, efd, IN, 1);
    t.ctl(ep, EPOLL_CTL_ADD, d, EPOLLOUT, 2);
    t.ctl(ep, EPOLL_CTL_ADD, d, IN, 3);  // EEXIST
    t.wait(ep, 4, 0);                    // only d (OUT) ready
    t.write_u64(efd, 5);
    t.wait(ep, 4, 0);  // both, ADD order
    t.ctl(ep, EPOLL_CTL_MOD, d, IN, 4);
    t.wait(ep, 4, 0);
    t.ctl(ep, EPOLL_CTL_DEL, efd, 0, 0);
    t.wait(ep, 4, 0);  // d still there
  });
  EXPECT_LINUX_SEQ(r, {
                         "wait(fd0,4,0) = 1 [OUT:2]",
                         "wait(fd0,4,0) = 2 [OUT:2 IN:1]", "wait(fd0,4,0) = 2 [IN:4 IN:1]",
                         "wait(fd0,4,0) = 1 [IN:4]",
                     });
}

// Closed numbers: DEL of a closed number is EBADF; once the number names a
// different file it is ENOENT, and the stale registration stays while a dup
// keeps the old file open.
TEST(CtlKey, ClosedAndReusedNumbers) {
  auto r = conf::differential([](T& t) {
    int ep = t.epoll_create1();
    int a = t.eventfd(1);
    t.ctl(ep, EPOLL_CTL_ADD, a, IN, 11);
    t.close(a);  // last reference: item removed silently
    t.ctl(ep, EPOLL_CTL_DEL, a, IN, 0);  // EBADF
    t.wait(ep, 4, 0);                    // nothing
    int b = t.eventfd(2);
    t.log("b reuses a's number: " + T::same(a, b));
    int bd = t.dup(b);
    t.ctl(ep, EPOLL_CTL_ADD, b, IN, 22);
    t.close(b);                          // bd keeps the file: item stays
    t.ctl(ep, EPOLL_CTL_DEL, b, IN, 0);  // EBADF
    t.wait(ep, 4, 0);                    // still reported with data 22
    int c = t.eventfd(3);
    t.log("c reuses b's number: " + T::same(b, c));
    t.ctl(ep, EPOLL_CTL_DEL, c, IN, 0);  // number names another file: ENOENT
    t.ctl(ep, EPOLL_CTL_MOD, c, IN, 0);  // ENOENT
    t.ctl(ep, EPOLL_CTL_ADD, c, IN, 33);  // same number, different file: a new item
    t.wait(ep, 4, 0);                     // 22 then 33
    t.close(bd);                          // last reference of b's file
    t.wait(ep, 4, 0);                     // 33 only
    t.ctl(ep, EPOLL_CTL_DEL, c, IN, 0);
    t.wait(ep, 4, 0);
  });
  EXPECT_LINUX_SEQ(r, {
                         "ctl(fd0,DEL,fd1,IN,0) = -1 EBADF",
                         "wait(fd0,4,0) = 0",
                         "b reuses a's number: same number",
                         "ctl(fd0,DEL,fd2,IN,0) = -1 EBADF",
                         "wait(fd0,4,0) = 1 [IN:22]",
                         "ctl(fd0,DEL,fd4,IN,0) = -1 ENOENT",
                         "wait(fd0,4,0) = 2 [IN:22 IN:33]",
                         "wait(fd0,4,0) = 1 [IN:33]",
                         "wait(fd0,4,0) = 0",
                     });
}

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
