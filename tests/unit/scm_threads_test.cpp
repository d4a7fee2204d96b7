// scm_threads_test.cpp - descriptor passing over a uepoll socket pair with
// threads racing: a sender, a blocking receiver and a peeker (MSG_PEEK
// duplicates the files of the message it reaches while the receiver takes
// them), then the pair closed with messages still queued.  Every file in
// flight must end up closed exactly once: the kernel descriptors open
// afterwards, and the uepoll descriptors (the lowest free one), are those of
// before.  Bounded: 1500 messages, a 20 s watchdog on the threads.
#include "unit/unit_common.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace {

// Kernel descriptors open below 512 (uepoll's own, made lazily by a
// blocking wait, live at the top of the range: core/own_fds.h).
int kernel_fd_count() {
  int n = 0;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (struct dirent* e = readdir(d))
      if (e->d_name[0] != '.' && atoi(e->d_name) < 512) ++n;
    closedir(d);
  }
  return n - 1;  // the directory's own descriptor
}

// Closes the descriptors of msg's SCM_RIGHTS (kernel or uepoll); returns
// their count.
int close_received(struct msghdr* m) {
  int n = 0;
  for (struct cmsghdr* c = CMSG_FIRSTHDR(m); c; c = CMSG_NXTHDR(m, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < k; ++i) {
      int fd;
      memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
      uep_close(fd);  // kernel descriptors pass through
      ++n;
    }
  }
  return n;
}

long recv_one(int s, int flags) {
  char buf[64];
  alignas(struct cmsghdr) char ctl[CMSG_SPACE(8 * sizeof(int))];
  struct iovec iov = {buf, sizeof buf};
  struct msghdr m = {};
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  m.msg_control = ctl;
  m.msg_controllen = sizeof ctl;
  const long r = uep_recvmsg(s, &m, flags);
  if (r >= 0) close_received(&m);
  return r;
}

TEST(ScmThreads, SendReceivePeekClose) {
  const int kernel_before = kernel_fd_count();
  const int probe_before = uep_eventfd(0, 0);
  ASSERT_GE(probe_before, 0);
  uep_close(probe_before);
  int sv[2];
  ASSERT_EQ(uep_socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  const int efd = uep_eventfd(0, 0);
  ASSERT_GE(efd, 0);
  constexpr int kMessages = 1500;
  std::atomic<bool> done{false};
  std::atomic<bool> receiver_done{false};
  std::atomic<long> received{0};
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  std::thread sender([&] {
    for (int i = 0; i < kMessages && std::chrono::steady_clock::now() < deadline; ++i) {
      int fds[2] = {p[1], efd};
      alignas(struct cmsghdr) char ctl[CMSG_SPACE(sizeof fds)] = {};
      char b = 'm';
      struct iovec iov = {&b, 1};
      struct msghdr m = {};
      m.msg_iov = &iov;
      m.msg_iovlen = 1;
      m.msg_control = ctl;
      m.msg_controllen = sizeof ctl;
      struct cmsghdr* c = CMSG_FIRSTHDR(&m);
      c->cmsg_level = SOL_SOCKET;
      c->cmsg_type = SCM_RIGHTS;
      c->cmsg_len = CMSG_LEN(sizeof fds);
      memcpy(CMSG_DATA(c), fds, sizeof fds);
      long r;
      while ((r = uep_sendmsg(sv[0], &m, MSG_DONTWAIT)) < 0 && errno == EAGAIN && !receiver_done.load() &&
             std::chrono::steady_clock::now() < deadline)
        std::this_thread::yield();
      if (r != 1) break;  // full, and nobody reads any more: the rest stays queued
    }
  });
  std::thread receiver([&] {
    while (received.load() < kMessages * 2 / 3 && std::chrono::steady_clock::now() < deadline) {
      const long r = recv_one(sv[1], MSG_DONTWAIT);
      if (r > 0) received += r;
      if (r < 0) std::this_thread::yield();
    }
    receiver_done = true;
  });
  std::thread peeker([&] {
    while (!done.load() && std::chrono::steady_clock::now() < deadline) recv_one(sv[1], MSG_PEEK | MSG_DONTWAIT);
  });
  sender.join();
  receiver.join();
  done = true;
  peeker.join();
  EXPECT_GE(received.load(), kMessages * 2 / 3);
  // The rest is still queued: closing the pair releases it.
  EXPECT_EQ(uep_close(sv[0]), 0);
  EXPECT_EQ(uep_close(sv[1]), 0);
  EXPECT_EQ(uep_close(efd), 0);
  ::close(p[1]);
  char c;
  EXPECT_EQ(::read(p[0], &c, 1), 0);  // every copy of the write end is closed
  ::close(p[0]);
  EXPECT_EQ(kernel_fd_count(), kernel_before);
  const int probe_after = uep_eventfd(0, 0);
  EXPECT_EQ(probe_after, probe_before);  // no uepoll descriptor left open
  uep_close(probe_after);
}

}  // namespace
