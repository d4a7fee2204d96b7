// descriptors_test.cpp - the generic descriptor calls on every object type:
// close/dup/read/write/shutdown/poll errno (bad descriptors, bad buffers,
// wrong object types), run in a forked child because they pass invalid
// pointers (Linux answers EFAULT; a crash shows up as a trace line).
#include "harness.h"

#include <sys/resource.h>

namespace {

using conf::T;

TEST(Descriptors, BadDescriptors) {
  auto r = conf::differential([](T& t) {
    int gone = t.eventfd(0);
    t.close(gone);
    int never = t.is_linux() ? 1000000 : UEP_FD_BASE + 1000000;
    t.close(-1);
    t.close(gone);
    t.close(never);
    t.dup(-1);
    t.dup(gone);
    t.dup(never);
    t.read(gone, 8);
    t.write(gone, "12345678", 8);
    t.read(-1, 8);
    t.shutdown(gone, SHUT_RDWR);
    struct itimerspec cur;
    t.timerfd_gettime(-1, &cur);
    t.timerfd_settime(never, 0, 1000, 0);
  });
  for (size_t i = 3; i < r.linux_trace.size(); ++i)
    EXPECT_NE(r.linux_trace[i].find("-1 EBADF"), std::string::npos) << r.linux_trace[i];
}

TEST(Descriptors, WrongObjectType) {
  auto r = conf::differential([](T& t) {
    int ep = t.epoll_create1();
    int efd = t.eventfd(0);
    auto [rd, wr] = t.pipe();
    int tm = t.timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
    t.shutdown(efd, SHUT_WR);
    t.shutdown(rd, SHUT_WR);
    t.shutdown(ep, SHUT_WR);
    t.shutdown(tm, SHUT_WR);
    struct itimerspec cur;
    t.timerfd_gettime(ep, &cur);
    t.timerfd_gettime(wr, &cur);
    t.timerfd_settime(efd, 0, 1000, 0);
    t.write(tm, "12345678", 8);
    (void)rd;
  });
  EXPECT_LINUX_SEQ(r, {"shutdown(fd1,WR) = -1 ENOTSOCK", "shutdown(fd2,WR) = -1 ENOTSOCK",
                       "shutdown(fd0,WR) = -1 ENOTSOCK", "shutdown(fd4,WR) = -1 ENOTSOCK",
                       "timerfd_gettime(fd0) = -1 EINVAL", "timerfd_gettime(fd3) = -1 EINVAL",
                       "timerfd_settime(fd1,0,value,interval) = -1 EINVAL", "write(fd4,8) = -1 EINVAL"});
}

// Bad buffers: EFAULT where Linux copies.  Pipe and socket data stay; an
// eventfd or timerfd count is consumed before the failed copy (Linux 6.18).
TEST(Descriptors, BadBuffers) {
  auto r = conf::differential([](T& t) {
    void* kern = conf::kernel_address();
    auto log = [&](const std::string& what, long n) { t.log(what + " = " + t.res(n)); };
    int efd = t.eventfd(5, EFD_NONBLOCK);
    log("read(eventfd,NULL,8)", t.api.read(efd, nullptr, 8));
    log("read(eventfd,kernel,8)", t.api.read(efd, kern, 8));
    log("write(eventfd,NULL,8)", t.api.write(efd, nullptr, 8));
    t.read_u64(efd);  // Linux consumed the count before the failed copy: EAGAIN
    auto [rd, wr] = t.pipe2(O_NONBLOCK);
    log("write(pipe,NULL,4)", t.api.write(wr, nullptr, 4));
    log("write(pipe,kernel,4)", t.api.write(wr, kern, 4));
    t.write(wr, "abcd", 4);
    log("read(pipe,NULL,4)", t.api.read(rd, nullptr, 4));
    log("read(pipe,kernel,4)", t.api.read(rd, kern, 4));
    t.read(rd, 8);  // still abcd
    log("read(empty pipe,NULL,4)", t.api.read(rd, nullptr, 4));  // EAGAIN first
    auto [s0, s1] = t.unix_stream(SOCK_NONBLOCK);
    log("write(socket,NULL,4)", t.api.write(s0, nullptr, 4));
    t.write(s0, "abcd", 4);
    log("read(socket,NULL,4)", t.api.read(s1, nullptr, 4));
    t.read(s1, 8);
    int tm = t.timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
    t.timerfd_settime(tm, 0, 1000, 0);
    usleep(2000);
    log("read(timerfd,NULL,8)", t.api.read(tm, nullptr, 8));
    t.read_u64(tm);  // the expiry count was consumed too: EAGAIN
    log("pipe(NULL)", t.api.pipe(nullptr));
    log("pipe2(kernel,0)", t.api.pipe2(static_cast<int*>(kern), 0));
    log("socketpair(AF_UNIX,SOCK_STREAM,0,NULL)", t.api.socketpair(AF_UNIX, SOCK_STREAM, 0, nullptr));
  }, /*forked=*/true);
  EXPECT_LINUX_SEQ(r, {"read(eventfd,NULL,8) = -1 EFAULT", "read(eventfd,kernel,8) = -1 EFAULT",
                       "write(eventfd,NULL,8) = -1 EFAULT", "read(fd0,8) = -1 EAGAIN",
                       "write(pipe,NULL,4) = -1 EFAULT", "write(pipe,kernel,4) = -1 EFAULT",
                       "read(pipe,NULL,4) = -1 EFAULT", "read(pipe,kernel,4) = -1 EFAULT", "read(fd1,8) = 4",
                       "read(empty pipe,NULL,4) = -1 EAGAIN", "write(socket,NULL,4) = -1 EFAULT",
                       "read(socket,NULL,4) = -1 EFAULT", "read(fd4,8) = 4", "read(timerfd,NULL,8) = -1 EFAULT",
                       "read(fd5,8) = -1 EAGAIN", "pipe(NULL) = -1 EFAULT", "pipe2(kernel,0) = -1 EFAULT",
                       "socketpair(AF_UNIX,SOCK_STREAM,0,NULL) = -1 EFAULT"});
}

// poll(): nfds above RLIMIT_NOFILE is EINVAL before the array is read.
TEST(Descriptors, PollNfdsAboveLimit) {
  UEPOLL_SKIP_UNDER_SANITIZERS("pollfd array shorter than nfds");
  auto r = conf::differential([](T& t) {
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    struct pollfd one = {-1, POLLIN, 0};
    t.log("poll(1 entry, nfds=RLIMIT_NOFILE+1) = " + t.res(t.api.poll(&one, rl.rlim_cur + 1, 0)));
  }, /*forked=*/true);
  EXPECT_LINUX_SEQ(r, {"poll(1 entry, nfds=RLIMIT_NOFILE+1) = -1 EINVAL"});
}

// poll(): a bad array is EFAULT; NULL with nfds 0 is fine; a negative
// timeout other than -1 is infinite too.
TEST(Descriptors, PollArguments) {
  UEPOLL_SKIP_UNDER_SANITIZERS("kernel-address pollfd array");
  auto r = conf::differential([](T& t) {
    auto log = [&](const std::string& what, long n) { t.log(what + " = " + t.res(n)); };
    log("poll(NULL,0)", t.api.poll(nullptr, 0, 0));
    int efd = t.eventfd(1);
    t.poll({{efd, POLLIN}}, -7);
    log("poll(NULL,1)", t.api.poll(nullptr, 1, 0));
    log("poll(kernel,1)", t.api.poll(static_cast<struct pollfd*>(conf::kernel_address()), 1, 0));
  }, /*forked=*/true);
  EXPECT_LINUX_SEQ(r, {"poll(NULL,0) = 0", "poll(fd0,-7) = 1 [IN]", "poll(NULL,1) = -1 EFAULT",
                       "poll(kernel,1) = -1 EFAULT"});
}

}  // namespace
