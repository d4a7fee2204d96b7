// bad_buffer_test.cpp - EFAULT from each object's read and write with a
// NULL buffer, and what the failed call consumed: Linux copies after
// taking an eventfd count or timer ticks (they are lost) but before
// consuming pipe or socket data (it stays).  Runs on Linux and uepoll.
#include "unit/unit_common.h"

#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>

namespace {

class BadBuffer : public unit::ObjTest {};
UNIT_INSTANTIATE(BadBuffer);

TEST_P(BadBuffer, Eventfd) {
  int fd = api().eventfd(3, EFD_NONBLOCK);
  ASSERT_GE(fd, 0);
  EXPECT_EQ(api().write(fd, nullptr, 8), -1);
  EXPECT_EQ(errno, EFAULT);
  EXPECT_EQ(api().read(fd, nullptr, 8), -1);
  EXPECT_EQ(errno, EFAULT);
  uint64_t v;
  EXPECT_EQ(api().read(fd, &v, 8), -1);  // the count was consumed
  EXPECT_EQ(errno, EAGAIN);
  EXPECT_EQ(api().read(fd, nullptr, 4), -1);  // size is checked first
  EXPECT_EQ(errno, EINVAL);
  api().close(fd);
}

TEST_P(BadBuffer, Pipe) {
  int p[2];
  ASSERT_EQ(api().pipe2(p, O_NONBLOCK), 0);
  EXPECT_EQ(api().read(p[0], nullptr, 10), -1);  // empty: EAGAIN comes first
  EXPECT_EQ(errno, EAGAIN);
  ASSERT_EQ(api().write(p[1], "abc", 3), 3);
  EXPECT_EQ(api().read(p[0], nullptr, 10), -1);
  EXPECT_EQ(errno, EFAULT);
  char b[8];
  EXPECT_EQ(api().read(p[0], b, 8), 3);  // nothing was consumed
  EXPECT_EQ(api().write(p[1], nullptr, 0), 0);
  api().close(p[0]);
  p[0] = -1;
  {
    unit::SigpipeCatcher sig;
    EXPECT_EQ(api().write(p[1], nullptr, 5), -1);  // no reader beats EFAULT
    EXPECT_EQ(errno, EPIPE);
    EXPECT_TRUE(sig.take());
  }
  api().close(p[1]);
}

TEST_P(BadBuffer, PipeWrite) {
  int p[2];
  ASSERT_EQ(api().pipe2(p, O_NONBLOCK), 0);
  ASSERT_EQ(api().write(p[1], "x", 1), 1);
  EXPECT_EQ(api().write(p[1], nullptr, 5), -1);  // would merge: copy fails
  EXPECT_EQ(errno, EFAULT);
  char b[8];
  EXPECT_EQ(api().read(p[0], b, 8), 1);
  api().close(p[0]);
  api().close(p[1]);
}

TEST_P(BadBuffer, Socket) {
  int s[2];
  ASSERT_EQ(api().socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, s), 0);
  EXPECT_EQ(api().write(s[0], nullptr, 5), -1);
  EXPECT_EQ(errno, EFAULT);
  EXPECT_EQ(api().read(s[1], nullptr, 5), -1);  // empty: EAGAIN
  EXPECT_EQ(errno, EAGAIN);
  ASSERT_EQ(api().write(s[0], "abc", 3), 3);
  EXPECT_EQ(api().read(s[1], nullptr, 5), -1);
  EXPECT_EQ(errno, EFAULT);
  char b[8];
  EXPECT_EQ(api().read(s[1], b, 8), 3);
  api().close(s[0]);
  api().close(s[1]);
}

TEST_P(BadBuffer, Timerfd) {
  int fd = api().timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
  ASSERT_GE(fd, 0);
  itimerspec t{};
  t.it_value.tv_nsec = 1000000;
  ASSERT_EQ(api().timerfd_settime(fd, 0, &t, nullptr), 0);
  unit::sleep_ms(20);
  EXPECT_EQ(api().read(fd, nullptr, 8), -1);
  EXPECT_EQ(errno, EFAULT);
  uint64_t v;
  EXPECT_EQ(api().read(fd, &v, 8), -1);  // the ticks were taken
  EXPECT_EQ(errno, EAGAIN);
  api().close(fd);
}

}  // namespace
