// nr_open_test.cpp - if /proc/sys/fs/nr_open reaches UEP_FD_BASE, the kernel
// could hand out descriptors in uepoll's range: uepoll must then refuse to
// create descriptors with EMFILE from the first call (not abort the process)
// and keep answering everything else (lookups: EBADF; kernel descriptors:
// forwarded).
//
// The setting is faked for one child process only: a private mount namespace
// with a file bind-mounted over /proc/sys/fs/nr_open (needs CAP_SYS_ADMIN, as
// in CI; skipped otherwise).  The table reads nr_open once, on first use, so
// the check runs in a forked child of a process that has not used it: no
// other test in this executable may create a uepoll descriptor.
#include <uepoll/uepoll.h>

#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mount.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "support/forked_child.h"

namespace {

std::string outcome(long r, int err) { return r >= 0 ? "ok" : std::string("-1 ") + strerrorname_np(err); }

TEST(NrOpen, AboveFdBaseFailsCreationWithEmfile) {
  uepoll_support::ChildResult c = uepoll_support::run_in_child(
      [](int out) {
        auto say = [out](const std::string& s) {
          if (write(out, s.data(), s.size()) < 0) _exit(2);
        };
        char path[] = "/tmp/uepoll-nr_open.XXXXXX";
        int tmp = mkstemp(path);
        if (tmp < 0) return say("SKIP mkstemp failed");
        std::string value = std::to_string(static_cast<long>(UEP_FD_BASE) + 1) + "\n";
        bool wrote = write(tmp, value.data(), value.size()) == static_cast<ssize_t>(value.size());
        close(tmp);
        if (!wrote) return say("SKIP write failed");
        if (unshare(CLONE_NEWNS) != 0 || mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
            mount(path, "/proc/sys/fs/nr_open", nullptr, MS_BIND, nullptr) != 0) {
          int e = errno;
          unlink(path);
          return say(std::string("SKIP cannot fake nr_open in a mount namespace: ") + strerror(e));
        }
        unlink(path);
        std::string r;
        // Each call is made before errno is read (argument order is unspecified).
        auto rec = [&r](const char* what, long ret) { r += std::string(what) + " " + outcome(ret, errno) + "\n"; };
        int p[2], sv[2];
        rec("epoll_create1", uep_epoll_create1(0));
        rec("eventfd", uep_eventfd(0, 0));
        rec("pipe2", uep_pipe2(p, 0));
        rec("socketpair", uep_socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
        rec("timerfd_create", uep_timerfd_create(CLOCK_MONOTONIC, 0));
        rec("close", uep_close(UEP_FD_BASE));
        // Kernel descriptors still pass through.
        int kp[2];
        char ch = 'x';
        if (pipe(kp) == 0) rec("kernel write", uep_write(kp[1], &ch, 1));
        say(r);
      },
      30000);
  ASSERT_TRUE(c.started) << strerror(c.error);
  ASSERT_TRUE(c.exited()) << "child died (signal " << c.signal() << "), output: " << c.output;
  EXPECT_EQ(c.exit_code(), 0);
  if (c.output.rfind("SKIP", 0) == 0) GTEST_SKIP() << c.output;
  EXPECT_EQ(c.output,
            "epoll_create1 -1 EMFILE\n"
            "eventfd -1 EMFILE\n"
            "pipe2 -1 EMFILE\n"
            "socketpair -1 EMFILE\n"
            "timerfd_create -1 EMFILE\n"
            "close -1 EBADF\n"
            "kernel write ok\n");
}

}  // namespace
