// handover_test.cpp - a file handed over to the kernel (core/handover.h)
// from inside the static library: sleepers whose caller can make their
// call again (uep__movable) leave with -1/EINTR, or their partial count,
// and uep__moved set; other sleepers sleep on and still get their data; a
// movable call that starts after the mark leaves at once, also one that
// would not sleep (a write, or a read or receive of data already there);
// a splice keeps what it read from a kernel source for its caller; a flag
// change leaves unmade; an eventfd's count taken for a move; a call with a deadline (a poll's, a
// socket's timeout) leaves its time left.  The preload's
// side (making the call again) is tests/preload/fork_program.c
// "sleepers".
#include "capi/preload_support.h"
#include "core/handover.h"

#include <uepoll/uepoll.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fcntl.h>
#include <functional>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <string>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

// The result of one call made on another thread.
struct Outcome {
  long r = 0;
  int err = 0;
  int moved = 0;
  struct timespec left = {0, 0};  // uep__moved_left after the call
};

// Runs call() on a thread, as a movable call when `movable`.
template <class Call>
std::thread run(Outcome* out, bool movable, std::atomic<bool>* done, Call call) {
  return std::thread([=] {
    uep__moved = 0;
    if (movable) ++uep__movable;
    errno = 0;
    out->r = call();
    out->err = errno;
    if (movable) --uep__movable;
    out->moved = uep__moved;
    out->left = uep__moved_left;
    uep__moved = 0;
    done->store(true);
  });
}

// Waits until fd has a sleeper of the kind asked for (movable or not).
bool wait_for_sleeper(int fd, bool movable) {
  for (int i = 0; i < 5000; ++i) {
    int fixed = 0, mov = 0;
    if (uep__sleepers(fd, &fixed, &mov) == 0 && (movable ? mov : fixed)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return false;
}

// A call that left its sleep for the hand-over, having moved nothing.
void expect_left(const Outcome& o) {
  EXPECT_EQ(o.r, -1);
  EXPECT_EQ(o.err, EINTR);
  EXPECT_EQ(o.moved, 1);
}

class Handover : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(uep_pipe2(p_, 0), 0); }
  void TearDown() override {
    uep_close(p_[0]);
    uep_close(p_[1]);
  }
  int p_[2] = {-1, -1};
};

TEST_F(Handover, MovableReaderLeaves) {
  Outcome o;
  std::atomic<bool> done{false};
  char c;
  std::thread t = run(&o, true, &done, [&] { return static_cast<long>(uep_read(p_[0], &c, 1)); });
  ASSERT_TRUE(wait_for_sleeper(p_[0], true));
  ASSERT_EQ(uep__hand_over(p_[0], 1), 0);
  t.join();
  expect_left(o);
  int fixed = -1, mov = -1;
  ASSERT_EQ(uep__sleepers(p_[0], &fixed, &mov), 0);
  EXPECT_EQ(fixed + mov, 0);
}

TEST_F(Handover, OtherReaderSleepsOnAndGetsItsData) {
  Outcome o;
  std::atomic<bool> done{false};
  char c = 0;
  std::thread t = run(&o, false, &done, [&] { return static_cast<long>(uep_read(p_[0], &c, 1)); });
  ASSERT_TRUE(wait_for_sleeper(p_[0], false));
  ASSERT_EQ(uep__hand_over(p_[0], 1), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(done.load());  // woken, found nothing, asleep again
  ASSERT_EQ(uep__hand_over(p_[0], 0), 0);
  ASSERT_EQ(uep_write(p_[1], "z", 1), 1);
  t.join();
  EXPECT_EQ(o.r, 1);
  EXPECT_EQ(c, 'z');
  EXPECT_EQ(o.moved, 0);
}

TEST_F(Handover, MovableWriterReturnsItsPartialCount) {
  Outcome o;
  std::atomic<bool> done{false};
  std::vector<char> big(200000, 'w');
  std::thread t = run(&o, true, &done, [&] { return static_cast<long>(uep_write(p_[1], big.data(), big.size())); });
  ASSERT_TRUE(wait_for_sleeper(p_[1], true));
  ASSERT_EQ(uep__hand_over(p_[1], 1), 0);
  t.join();
  EXPECT_EQ(o.r, 65536);  // the pipe's capacity, written before it slept
  EXPECT_EQ(o.moved, 1);
  ASSERT_EQ(uep_fcntl(p_[0], F_SETFL, O_NONBLOCK), 0);
  std::vector<char> back(200000);
  EXPECT_EQ(uep_read(p_[0], back.data(), back.size()), 65536);
}

// A poll leaves with the time it had left (none: tv_sec -1), which its
// caller's next poll gets.
TEST_F(Handover, MovablePollLeavesWithItsTimeLeft) {
  for (const int timeout : {20000, -1}) {
    Outcome o;
    std::atomic<bool> done{false};
    std::thread t = run(&o, true, &done, [&] {
      struct pollfd pf = {p_[0], POLLIN, 0};
      return static_cast<long>(uep_poll(&pf, 1, timeout));
    });
    ASSERT_TRUE(wait_for_sleeper(p_[0], true));
    ASSERT_EQ(uep__hand_over(p_[0], 1), 0);
    t.join();
    ASSERT_EQ(uep__hand_over(p_[0], 0), 0);
    expect_left(o);
    if (timeout < 0) {
      EXPECT_EQ(o.left.tv_sec, -1);
    } else {
      EXPECT_GE(o.left.tv_sec, 10);  // 20 s less the few ms it slept (a loaded machine: seconds)
      EXPECT_LT(o.left.tv_sec, 20);
    }
  }
}

// A socket call with SO_RCVTIMEO leaves with its timeout's time left, for
// the call made again on the kernel socket (src/preload/timed_redo.c); one
// without a timeout with none (tv_sec -1), whatever an earlier call left.
TEST(HandoverSocket, MovableRecvLeavesWithItsTimeoutsTimeLeft) {
  int sv[2];
  ASSERT_EQ(uep_socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  for (const bool timeout : {true, false}) {
    struct timeval tv = {timeout ? 20 : 0, 0};
    ASSERT_EQ(uep_setsockopt(sv[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv), 0);
    Outcome o;
    std::atomic<bool> done{false};
    char c;
    std::thread t = run(&o, true, &done, [&] {
      uep__moved_left = timespec{5, 0};  // a stale value from an earlier call
      return static_cast<long>(uep_recv(sv[0], &c, 1, 0));
    });
    ASSERT_TRUE(wait_for_sleeper(sv[0], true));
    ASSERT_EQ(uep__hand_over(sv[0], 1), 0);
    t.join();
    ASSERT_EQ(uep__hand_over(sv[0], 0), 0);
    expect_left(o);
    if (timeout) {
      EXPECT_GE(o.left.tv_sec, 10);  // 20 s less the few ms it slept (a loaded machine: seconds)
      EXPECT_LT(o.left.tv_sec, 20);
    } else {
      EXPECT_EQ(o.left.tv_sec, -1);
    }
  }
  uep_close(sv[0]);
  uep_close(sv[1]);
}

TEST_F(Handover, MovableCallAfterTheMarkLeavesAtOnce) {
  ASSERT_EQ(uep__hand_over(p_[0], 1), 0);
  Outcome o;
  std::atomic<bool> done{false};
  char c;
  std::thread t = run(&o, true, &done, [&] { return static_cast<long>(uep_read(p_[0], &c, 1)); });
  t.join();
  expect_left(o);
  // Data already there: a movable call leaves all the same (the conversion
  // moves that data); a call that is not movable reads it.
  ASSERT_EQ(uep_write(p_[1], "d", 1), 1);
  uep__moved = 0;
  ++uep__movable;
  errno = 0;
  EXPECT_EQ(uep_read(p_[0], &c, 1), -1);
  EXPECT_EQ(errno, EINTR);
  --uep__movable;
  EXPECT_EQ(uep__moved, 1);
  EXPECT_EQ(uep__moved_left.tv_sec, -1);
  uep__moved = 0;
  EXPECT_EQ(uep_read(p_[0], &c, 1), 1);
  EXPECT_EQ(uep__moved, 0);
  EXPECT_EQ(uep__hand_over(-1, 1), -1);
  EXPECT_EQ(errno, EBADF);
}

// A write that would not sleep leaves a marked pipe or pair before it
// queues anything (the conversion drains what is queued after the mark);
// one that is not movable writes.
TEST_F(Handover, MovableWriteLeavesBeforeQueueing) {
  int sv[2];
  ASSERT_EQ(uep_socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  int dg[2];
  ASSERT_EQ(uep_socketpair(AF_UNIX, SOCK_DGRAM, 0, dg), 0);
  for (const int fd : {p_[1], sv[0], dg[0]}) {
    ASSERT_EQ(uep__hand_over(fd, 1), 0);
    uep__moved = 0;
    ++uep__movable;
    errno = 0;
    EXPECT_EQ(uep_write(fd, "w", 1), -1) << fd;
    EXPECT_EQ(errno, EINTR);
    --uep__movable;
    EXPECT_EQ(uep__moved, 1);
    uep__moved = 0;
    EXPECT_EQ(uep_write(fd, "w", 1), 1);
    EXPECT_EQ(uep__moved, 0);
  }
  char c;
  EXPECT_EQ(uep_read(p_[0], &c, 1), 1);
  EXPECT_EQ(uep_read(sv[1], &c, 1), 1);
  EXPECT_EQ(uep_read(dg[1], &c, 1), 1);
  for (const int fd : {sv[0], sv[1], dg[0], dg[1]}) uep_close(fd);
}

// A receive, a peek or a splice out of a marked pair leaves with the data
// still queued (the conversion drains it into the kernel pair); a call that
// is not movable takes it.
TEST(HandoverSocket, MovableReceiveLeavesWithDataQueued) {
  int kp[2];
  ASSERT_EQ(::pipe2(kp, O_CLOEXEC | O_NONBLOCK), 0);
  for (const int type : {SOCK_STREAM, SOCK_DGRAM, SOCK_SEQPACKET}) {
    int sv[2];
    ASSERT_EQ(uep_socketpair(AF_UNIX, type | SOCK_NONBLOCK, 0, sv), 0);  // a taken byte fails, not hangs
    ASSERT_EQ(uep_write(sv[1], "d", 1), 1);
    ASSERT_EQ(uep__hand_over(sv[0], 1), 0);
    char c = 0;
    struct iovec v = {&c, 1};
    struct msghdr m = {};
    m.msg_iov = &v;
    m.msg_iovlen = 1;
    ++uep__movable;
    const std::vector<std::function<long()>> calls = {
        [&] { return static_cast<long>(uep_read(sv[0], &c, 1)); },
        [&] { return static_cast<long>(uep_recv(sv[0], &c, 1, MSG_PEEK)); },
        [&] { return static_cast<long>(uep_recvmsg(sv[0], &m, MSG_DONTWAIT)); },
        [&] { return static_cast<long>(uep_splice(sv[0], nullptr, kp[1], nullptr, 1, 0)); },
    };
    for (size_t i = 0; i < calls.size(); ++i) {
      if (type != SOCK_STREAM && i == 3) continue;  // splice out of a stream only
      uep__moved = 0;
      errno = 0;
      EXPECT_EQ(calls[i](), -1) << type << " call " << i;
      EXPECT_EQ(errno, EINTR) << type << " call " << i;
      EXPECT_EQ(uep__moved, 1) << type << " call " << i;
      EXPECT_EQ(uep__moved_left.tv_sec, -1);
    }
    --uep__movable;
    uep__moved = 0;
    EXPECT_EQ(uep_read(sv[0], &c, 1), 1) << type;
    EXPECT_EQ(c, 'd');
    EXPECT_EQ(uep__moved, 0);
    uep_close(sv[0]);
    uep_close(sv[1]);
  }
  char c;
  EXPECT_EQ(::read(kp[0], &c, 1), -1);  // the splice moved nothing
  ::close(kp[0]);
  ::close(kp[1]);
}

// A splice or tee out of a marked pipe leaves with the data still queued;
// a call that is not movable moves it.
TEST_F(Handover, MovableSpliceOutOfAPipeLeaves) {
  int kp[2];
  ASSERT_EQ(::pipe2(kp, O_CLOEXEC | O_NONBLOCK), 0);
  ASSERT_EQ(uep_write(p_[1], "d", 1), 1);
  ASSERT_EQ(uep__hand_over(p_[0], 1), 0);
  ++uep__movable;
  for (const bool tee : {false, true}) {
    uep__moved = 0;
    errno = 0;
    EXPECT_EQ(tee ? uep_tee(p_[0], kp[1], 1, 0) : uep_splice(p_[0], nullptr, kp[1], nullptr, 1, 0), -1) << tee;
    EXPECT_EQ(errno, EINTR) << tee;
    EXPECT_EQ(uep__moved, 1) << tee;
  }
  --uep__movable;
  uep__moved = 0;
  EXPECT_EQ(uep_splice(p_[0], nullptr, kp[1], nullptr, 1, 0), 1);
  EXPECT_EQ(uep__moved, 0);
  char c = 0;
  EXPECT_EQ(::read(kp[0], &c, 1), 1);
  EXPECT_EQ(c, 'd');
  ::close(kp[0]);
  ::close(kp[1]);
}

// A receive with SO_RCVTIMEO that leaves a marked pair with data queued
// (so without sleeping) notes the time its timeout had left, as one that
// slept does.
TEST(HandoverSocket, MovableReceiveNotesItsTimeoutsTimeLeft) {
  for (const int type : {SOCK_STREAM, SOCK_DGRAM}) {
    int sv[2];
    ASSERT_EQ(uep_socketpair(AF_UNIX, type, 0, sv), 0);
    struct timeval tv = {5, 0};
    ASSERT_EQ(uep_setsockopt(sv[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv), 0);
    ASSERT_EQ(uep_write(sv[1], "d", 1), 1);
    ASSERT_EQ(uep__hand_over(sv[0], 1), 0);
    char c;
    uep__moved = 0;
    ++uep__movable;
    EXPECT_EQ(uep_recv(sv[0], &c, 1, 0), -1);
    --uep__movable;
    EXPECT_EQ(uep__moved, 1);
    EXPECT_GE(uep__moved_left.tv_sec, 4) << type;
    EXPECT_LE(uep__moved_left.tv_sec, 5) << type;
    uep__moved = 0;
    uep_close(sv[0]);
    uep_close(sv[1]);
  }
}

// Waits until thread tid is inside the system call nr (its
// /proc/self/task/TID/syscall names it), for at most 5 s.
bool wait_in_syscall(pid_t tid, long nr) {
  const std::string path = "/proc/self/task/" + std::to_string(tid) + "/syscall";
  for (int i = 0; i < 5000; ++i) {
    std::FILE* f = std::fopen(path.c_str(), "r");
    long at = -1;
    if (f) {
      if (std::fscanf(f, "%ld", &at) != 1) at = -1;
      std::fclose(f);
    }
    if (at == nr) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return false;
}

// A splice from a kernel datagram socket into a pipe handed over while it
// read its source: the bytes it read, which the socket cannot take back,
// are kept and counted in its answer, and uep__put_moved_bytes writes them
// to the descriptor that shows the destination now (here a kernel pipe
// standing for the converted one); the uepoll destination gets nothing.
// From a stream socket (MSG_PEEK) or a kernel pipe (tee), into a pipe or a
// pair, the splice only looked at the source: it leaves having moved
// nothing, and the source keeps its bytes for the call made again.
TEST_F(Handover, MovableSpliceKeepsWhatItRead) {
  int sv[2];
  ASSERT_EQ(uep_socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
  ASSERT_EQ(uep_fcntl(p_[0], F_SETFL, O_NONBLOCK), 0);
  struct Case {
    int dest;
    int source;  // SOCK_DGRAM, SOCK_STREAM, or 0 for a pipe
  };
  for (const Case c : {Case{p_[1], SOCK_DGRAM}, Case{p_[1], SOCK_STREAM}, Case{p_[1], 0}, Case{sv[0], 0}}) {
    const int reader = c.dest == p_[1] ? p_[0] : sv[1];
    const bool keeps = c.source == SOCK_DGRAM;
    const std::string what = std::string(c.dest == p_[1] ? "pipe" : "pair") + " from " +
                             (c.source == SOCK_DGRAM ? "dgram" : c.source ? "stream" : "pipe");
    int src[2], now[2];
    if (c.source)
      ASSERT_EQ(::socketpair(AF_UNIX, c.source | SOCK_CLOEXEC, 0, src), 0);
    else
      ASSERT_EQ(::pipe2(src, O_CLOEXEC), 0);
    ASSERT_EQ(::pipe2(now, O_CLOEXEC | O_NONBLOCK), 0);  // nothing put fails, not hangs
    std::atomic<pid_t> tid{0};
    long put = 0;
    Outcome o;
    std::atomic<bool> done{false};
    std::thread t = run(&o, true, &done, [&] {
      tid.store(static_cast<pid_t>(::syscall(SYS_gettid)));
      const long r = static_cast<long>(uep_splice(src[0], nullptr, c.dest, nullptr, 64, 0));
      put = uep__put_moved_bytes(now[1]);  // the caller's part, on the same thread
      return r;
    });
    while (!tid.load()) std::this_thread::yield();
    const long nr = c.source == SOCK_DGRAM ? SYS_read : c.source ? SYS_recvfrom : SYS_tee;
    EXPECT_TRUE(wait_in_syscall(tid.load(), nr)) << what;
    ASSERT_EQ(uep__hand_over(c.dest, 1), 0);
    ASSERT_EQ(::write(src[1], "hello", 5), 5);
    t.join();
    EXPECT_EQ(o.moved, 1) << what;
    char got[8] = {};
    if (keeps) {
      EXPECT_EQ(o.r, 5) << what;
      EXPECT_EQ(put, 5) << what;
      EXPECT_EQ(::read(now[0], got, sizeof got), 5) << what;
    } else {
      EXPECT_EQ(o.r, -1) << what;
      EXPECT_EQ(o.err, EINTR) << what;
      EXPECT_EQ(put, 0) << what;
      ASSERT_EQ(::fcntl(src[0], F_SETFL, O_NONBLOCK), 0);  // nothing left fails, not hangs
      EXPECT_EQ(::read(src[0], got, sizeof got), 5) << what;
    }
    EXPECT_STREQ(got, "hello") << what;
    EXPECT_EQ(uep_read(reader, got, sizeof got), -1) << what;
    EXPECT_EQ(errno, EAGAIN) << what;
    EXPECT_EQ(uep__put_moved_bytes(now[1]), 0) << what;  // nothing kept any more
    ASSERT_EQ(uep__hand_over(c.dest, 0), 0);
    for (const int fd : {src[0], src[1], now[0], now[1]}) ::close(fd);
  }
  uep_close(sv[0]);
  uep_close(sv[1]);
}

// A status flag change (F_SETFL, FIONBIO, FIOASYNC) on a marked file
// leaves unmade, as the conversion has read the flags it carries; one that
// is not movable is made.
TEST_F(Handover, MovableFlagChangeLeaves) {
  const int before = uep_fcntl(p_[0], F_GETFL);
  ASSERT_EQ(before & O_NONBLOCK, 0);
  ASSERT_EQ(uep__hand_over(p_[0], 1), 0);
  int on = 1;
  const std::vector<std::function<int()>> calls = {
      [&] { return uep_fcntl(p_[0], F_SETFL, O_NONBLOCK); },
      [&] { return uep_ioctl(p_[0], FIONBIO, &on); },
      [&] { return uep_ioctl(p_[0], FIOASYNC, &on); },
  };
  for (size_t i = 0; i < calls.size(); ++i) {
    uep__moved = 0;
    ++uep__movable;
    errno = 0;
    EXPECT_EQ(calls[i](), -1) << i;
    EXPECT_EQ(errno, EINTR) << i;
    --uep__movable;
    EXPECT_EQ(uep__moved, 1) << i;
    EXPECT_EQ(uep_fcntl(p_[0], F_GETFL), before) << i;
  }
  uep__moved = 0;
  EXPECT_EQ(uep_fcntl(p_[0], F_SETFL, O_NONBLOCK), 0);
  EXPECT_EQ(uep__moved, 0);
  EXPECT_EQ(uep_fcntl(p_[0], F_GETFL), before | O_NONBLOCK);
}

// An eventfd whose count was taken for a move: a movable read or write
// leaves, any other fails with EBADF, poll sees nothing, and the count
// cannot be taken twice.
TEST_F(Handover, EventfdTakenForMove) {
  const int e = uep_eventfd(5, EFD_NONBLOCK);
  ASSERT_GE(e, 0);
  unsigned long long count = 0;
  int semaphore = -1;
  ASSERT_EQ(uep__eventfd_take_for_move(e, &count, &semaphore), 0);
  EXPECT_EQ(count, 5u);
  EXPECT_EQ(semaphore, 0);
  uint64_t v = 1;
  uep__moved = 0;
  ++uep__movable;
  errno = 0;
  EXPECT_EQ(uep_write(e, &v, sizeof v), -1);
  EXPECT_EQ(errno, EINTR);
  EXPECT_EQ(uep__moved, 1);
  uep__moved = 0;
  errno = 0;
  EXPECT_EQ(uep_read(e, &v, sizeof v), -1);
  EXPECT_EQ(errno, EINTR);
  EXPECT_EQ(uep__moved, 1);
  uep__moved = 0;
  --uep__movable;
  errno = 0;
  EXPECT_EQ(uep_write(e, &v, sizeof v), -1);
  EXPECT_EQ(errno, EBADF);
  struct pollfd p = {e, POLLIN | POLLOUT, 0};
  EXPECT_EQ(uep_poll(&p, 1, 0), 0);
  EXPECT_EQ(uep__eventfd_take_for_move(e, &count, &semaphore), -1);
  EXPECT_EQ(errno, EBADF);
  EXPECT_EQ(uep__eventfd_take_for_move(p_[0], &count, &semaphore), -1);
  EXPECT_EQ(errno, EINVAL);
  uep_close(e);
}

}  // namespace
