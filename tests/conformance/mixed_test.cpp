// mixed_test.cpp - kernel descriptors handed to uepoll's calls: uep_read,
// uep_write, uep_close, uep_dup, uep_poll and (for kernel epoll instances)
// uep_epoll_ctl/uep_epoll_wait forward them to the kernel, so a program can
// route every descriptor call through uepoll.  The scenarios create real
// kernel objects on both sides (::pipe, ::epoll_create1) and use them through
// the Api table; on the Linux side that is plain Linux, on the uepoll side
// it exercises the forwarding, mixed with uepoll objects where allowed.
#include "harness.h"

#include <thread>

namespace {

using conf::T;

// A kernel pipe on both sides, named like any other descriptor.
std::pair<int, int> kernel_pipe(T& t) {
  int p[2];
  if (::pipe2(p, O_CLOEXEC | O_NONBLOCK) != 0) return {-1, -1};
  t.adopt(p[0]);
  t.adopt(p[1]);
  t.log("kernel pipe = [" + t.name(p[0]) + "," + t.name(p[1]) + "]");
  return {p[0], p[1]};
}

TEST(Mixed, KernelDescriptorsForwarded) {
  auto r = conf::differential([](T& t) {
    auto [rd, wr] = kernel_pipe(t);
    t.write(wr, "abc", 3);
    t.read(rd, 8);
    t.read(rd, 8);  // EAGAIN
    int d = t.dup(rd);
    t.log(std::string("dup of a kernel descriptor is a kernel descriptor: ") + (d >= 0 && d < UEP_FD_BASE ? "yes" : "no"));
    t.write(wr, "z", 1);
    t.poll({{rd, POLLIN}, {d, POLLIN}, {wr, POLLOUT}}, 0);
    t.close(d);
    t.close(d);  // EBADF
  });
  EXPECT_LINUX_SEQ(r, {"read(fd0,8) = 3", "read(fd0,8) = -1 EAGAIN",
                       "dup of a kernel descriptor is a kernel descriptor: yes",
                       "poll(fd0 fd2 fd1,0) = 3 [IN IN OUT]", "close(fd2) = 0",
                       "close(fd2) = -1 EBADF"});
}

// A kernel epoll instance driven through the table: ctl/wait are forwarded.
TEST(Mixed, KernelEpollInstanceForwarded) {
  auto r = conf::differential([](T& t) {
    int kep = ::epoll_create1(EPOLL_CLOEXEC);
    t.adopt(kep);
    t.log("kernel epoll = " + t.name(kep));
    auto [rd, wr] = kernel_pipe(t);
    t.ctl(kep, EPOLL_CTL_ADD, rd, EPOLLIN | EPOLLET, 7);
    t.ctl(kep, EPOLL_CTL_ADD, rd, EPOLLIN, 8);  // EEXIST
    t.wait(kep, 4, 0);
    t.write(wr, "x", 1);
    t.wait(kep, 4, 0);
    t.wait(kep, 4, 0);
    t.ctl(kep, EPOLL_CTL_MOD, rd, EPOLLIN, 9);
    t.wait(kep, 4, 0);
    t.ctl(kep, EPOLL_CTL_DEL, rd, 0, 0);
    t.wait(kep, 4, 0);
    t.wait(kep, 0, 0);  // EINVAL from the kernel
    t.read(kep, 8);     // EINVAL
  });
  EXPECT_LINUX_SEQ(r, {"ctl(fd0,ADD,fd1,IN|ET,7) = 0", "ctl(fd0,ADD,fd1,IN,8) = -1 EEXIST", "wait(fd0,4,0) = 0",
                       "wait(fd0,4,0) = 1 [IN:7]", "wait(fd0,4,0) = 0", "wait(fd0,4,0) = 1 [IN:9]",
                       "wait(fd0,4,0) = 0", "wait(fd0,0,0) = -1 EINVAL", "read(fd0,8) = -1 EINVAL"});
}

// poll() over a kernel pipe and an object of the implementation under test
// at once: either one wakes a blocking poll.
TEST(Mixed, PollOverBothKinds) {
  auto r = conf::differential([](T& t) {
    auto [rd, wr] = kernel_pipe(t);
    int efd = t.eventfd(0);
    t.poll({{rd, POLLIN}, {efd, POLLIN}}, 0);
    {
      conf::WhenBlocked later([&, wr = wr] {
        ssize_t n = ::write(wr, "k", 1);  // straight to the kernel
        (void)n;
      });
      t.poll({{rd, POLLIN}, {efd, POLLIN}}, 5000);
    }
    t.read(rd, 8);
    {
      conf::WhenBlocked later([&] {
        uint64_t v = 1;
        t.api.write(efd, &v, 8);
      });
      t.poll({{rd, POLLIN}, {efd, POLLIN}}, 5000);
    }
    t.poll({{rd, POLLIN}, {efd, POLLIN}, {-1, POLLIN}}, 20);
  });
  EXPECT_LINUX_SEQ(r, {"poll(fd0 fd2,0) = 0 [0 0]", "poll(fd0 fd2,5000) = 1 [IN 0]", "read(fd0,8) = 1",
                       "poll(fd0 fd2,5000) = 1 [0 IN]", "poll(fd0 fd2 -1,20) = 1 [0 IN 0]"});
}

// A uepoll instance watches a kernel descriptor as Linux's instance does
// (here: a kernel pipe on both sides).
TEST(Mixed, InstanceWatchesKernelDescriptor) {
  auto r = conf::differential([](T& t) {
    int ep = t.epoll_create1();
    auto [rd, wr] = kernel_pipe(t);
    t.ctl(ep, EPOLL_CTL_ADD, rd, EPOLLIN, 1);
    t.wait(ep, 4, 0);
    t.write(wr, "x", 1);
    t.wait(ep, 4, 0);
  });
  EXPECT_LINUX_SEQ(r, {"ctl(fd0,ADD,fd1,IN,1) = 0", "wait(fd0,4,0) = 0", "wait(fd0,4,0) = 1 [IN:1]"});
}

// Documented deviation (docs/linux-deviations.md, Descriptors): a kernel
// instance cannot watch a uepoll descriptor (uep_epoll_kernel_fd is the
// way): EPERM after Linux's EBADF and EINVAL checks; Linux, where both are
// kernel objects, accepts it.  Both sides asserted.
TEST(Mixed, KernelInstanceWatchingUepollFileDocumentedDeviation) {
  auto r = conf::both_sides([](T& t) {
    int kep = ::epoll_create1(EPOLL_CLOEXEC);
    t.adopt(kep);
    t.log("kernel epoll = " + t.name(kep));
    int efd = t.eventfd(0);
    t.ctl(kep, EPOLL_CTL_ADD, efd, EPOLLIN, 2);
    int kefd = ::eventfd(0, EFD_CLOEXEC);
    t.adopt(kefd);
    t.log("kernel eventfd = " + t.name(kefd));
    t.ctl(kefd, EPOLL_CTL_ADD, efd, EPOLLIN, 3);  // not an epoll: EINVAL on both
  });
  EXPECT_TRUE(conf::has(r.linux_trace, "ctl(fd0,ADD,fd1,IN,2) = 0")) << conf::dump(r.linux_trace);
  EXPECT_TRUE(conf::has(r.linux_trace, "ctl(fd2,ADD,fd1,IN,3) = -1 EINVAL")) << conf::dump(r.linux_trace);
  if (!conf::linux_only()) {
    EXPECT_TRUE(conf::has(r.uepoll_trace, "ctl(fd0,ADD,fd1,IN,2) = -1 EPERM")) << conf::dump(r.uepoll_trace);
    EXPECT_TRUE(conf::has(r.uepoll_trace, "ctl(fd2,ADD,fd1,IN,3) = -1 EINVAL")) << conf::dump(r.uepoll_trace);
  }
}

}  // namespace
