// ctl_test.cpp - epoll_create/epoll_ctl conformance: validation order and
// errno (Linux 6.18 do_epoll_ctl: EFAULT, EBADF epfd, EBADF fd, EPERM, EINVAL
// same-file/not-epoll, EINVAL EPOLLEXCLUSIVE rules, EEXIST/ENOENT/bad op) and
// the (file, fd) key (dup'ed descriptors, closed and reused numbers).  The
// loop and depth checks are in ctl_loop_test.cpp, the reverse path limits in
// ctl_path_test.cpp.  Every scenario runs on Linux and on uepoll and the
// traces must match.
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

}  // namespace
