// own_slot_test.cpp - core::OwnSlot and own_vacate from inside (the static
// library's internal symbols): a movable own descriptor keeps serving its
// users, sleepers included, while its number is handed over again and
// again, and no use ever reaches the file installed at an old number.
#include "core/own_fds.h"
#include "core/own_slot.h"

#include <uepoll/uepoll.h>

#include "support/forked_child.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fcntl.h>
#include <dirent.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/eventfd.h>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

using uepoll::core::LazyOwnSlot;
using uepoll::core::OwnSlot;

// uepoll's own descriptors now, lowest first.
std::vector<int> own_numbers() {
  std::vector<int> v;
  for (int n = uepoll::core::next_own(0); n >= 0; n = uepoll::core::next_own(n + 1)) v.push_back(n);
  return v;
}

// Those in `now` that are not in `before`.
std::vector<int> added(const std::vector<int>& before, const std::vector<int>& now) {
  std::vector<int> v;
  for (int n : now)
    if (std::find(before.begin(), before.end(), n) == before.end()) v.push_back(n);
  return v;
}

int open_descriptors() {
  int n = 0;
  DIR* d = ::opendir("/proc/self/fd");
  while (d && ::readdir(d)) ++n;
  if (d) ::closedir(d);
  return n;
}

// An eventfd in a slot; the kick (a write to it) ends a poll on it.
struct Counter {
  OwnSlot slot;
  Counter() {
    slot.open(uepoll::core::park_high(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)), &OwnSlot::write_one, &slot);
  }
  ~Counter() { slot.close(); }
};

TEST(OwnSlot, MovesUnderUsersAndSleepers) {
  Counter c;
  ASSERT_FALSE(c.slot.empty());
  int marker[2];
  ASSERT_EQ(::pipe2(marker, O_CLOEXEC | O_NONBLOCK), 0);
  std::atomic<bool> stop{false};
  std::atomic<long> writes{0}, bad{0}, sleeps{0};
  std::vector<std::thread> users;
  for (int i = 0; i < 3; ++i) {
    users.emplace_back([&, i] {
      while (!stop.load()) {
        OwnSlot::Use u(c.slot);
        // The third user lets the CPU go between reading the number and
        // writing to it: a move that does not wait for it would give the
        // number up under it.
        if (i == 2) std::this_thread::yield();
        const uint64_t two = 2;
        if (::write(u.fd(), &two, sizeof two) == sizeof two) ++writes;
        else ++bad;
      }
    });
  }
  users.emplace_back([&] {  // a sleeper: each poll is ended by a write or the mover's kick
    while (!stop.load()) {
      OwnSlot::Use u(c.slot);
      pollfd p{u.fd(), POLLIN, 0};
      if (::poll(&p, 1, 1000) < 0 || (p.revents & POLLNVAL)) ++bad;
      uint64_t v;
      ssize_t unused = ::read(u.fd(), &v, sizeof v);
      (void)unused;
      ++sleeps;
    }
  });
  // The moves start once the sleeper has been round once: on 2 CPUs the
  // three writers could otherwise take every move before it first runs.
  while (sleeps.load() == 0) std::this_thread::yield();
  int moved = 0;
  for (int round = 0; round < 200; ++round) {
    // Each move meets users at work: wait for their next few writes.
    for (const long w = writes.load(); writes.load() < w + 4;) std::this_thread::yield();
    const int n = c.slot.peek();
    ASSERT_EQ(uepoll::core::own_vacate(n), 0) << "round " << round;
    ASSERT_FALSE(uepoll::core::is_own(n));
    ASSERT_NE(c.slot.peek(), n);
    // The program takes the number: a use that read it now would write
    // into the marker pipe.
    ASSERT_EQ(::dup2(marker[1], n), n);
    ++moved;
    if (round % 8 == 7) ::close(n);  // and sometimes gives it back
  }
  stop.store(true);
  for (auto& t : users) t.join();
  EXPECT_EQ(moved, 200);
  EXPECT_EQ(bad.load(), 0);
  EXPECT_GT(writes.load(), 0);
  EXPECT_GT(sleeps.load(), 0);
  char byte;
  EXPECT_EQ(::read(marker[0], &byte, 1), -1) << "a use wrote to the program's file";
  ::close(marker[0]);
  ::close(marker[1]);
}

TEST(OwnSlot, RefusesWhatCannotMove) {
  Counter c;
  const int n = c.slot.peek();
  // Not a slot's number.
  EXPECT_EQ(uepoll::core::own_vacate(0), -EBUSY);
  EXPECT_EQ(uepoll::core::own_vacate(-1), -EBUSY);
  // Pinned, twice: one unpin leaves it pinned.
  c.slot.pin();
  c.slot.pin();
  EXPECT_EQ(uepoll::core::own_vacate(n), -EBUSY);
  c.slot.unpin();
  EXPECT_EQ(uepoll::core::own_vacate(n), -EBUSY);
  c.slot.unpin();
  // The caller holds a use (a handler's dup2 would wait for itself).
  {
    OwnSlot::Use u(c.slot);
    EXPECT_EQ(uepoll::core::own_vacate(n), -EBUSY);
  }
  EXPECT_EQ(c.slot.peek(), n);
  EXPECT_TRUE(uepoll::core::is_own(n));
  // Free to move now: n is given up, still open for the caller's dup2.
  EXPECT_EQ(uepoll::core::own_vacate(n), 0);
  EXPECT_FALSE(uepoll::core::is_own(n));
  EXPECT_GE(::fcntl(n, F_GETFD), 0);
  EXPECT_NE(c.slot.peek(), n);
  ::close(n);
}

// A number given up by a move stays open until the caller's dup2 replaces
// it, so that uepoll's descriptors made meanwhile in other threads
// (park_high takes the highest free numbers) never land on it.
TEST(OwnSlot, GivenUpNumberIsNotTakenMeanwhile) {
  Counter c;
  int marker[2];
  ASSERT_EQ(::pipe2(marker, O_CLOEXEC | O_NONBLOCK), 0);
  std::atomic<bool> stop{false};
  std::atomic<long> made{0}, bad{0};
  std::thread maker([&] {
    while (!stop.load()) {
      const int fd = uepoll::core::park_high(::eventfd(0, EFD_CLOEXEC));
      struct stat st{};
      // Still the eventfd it made (an anonymous inode), not the marker pipe.
      if (fd < 0 || ::fstat(fd, &st) != 0 || S_ISFIFO(st.st_mode)) ++bad;
      ++made;
      uepoll::core::close_own(fd);
    }
  });
  for (int round = 0; round < 300; ++round) {
    for (const long m = made.load(); made.load() < m + 2;) std::this_thread::yield();
    const int n = c.slot.peek();
    ASSERT_EQ(uepoll::core::own_vacate(n), 0);
    std::this_thread::yield();  // the maker's park may run here
    ASSERT_EQ(::dup2(marker[1], n), n);
    ::close(n);
  }
  stop.store(true);
  maker.join();
  EXPECT_EQ(bad.load(), 0);
  ::close(marker[0]);
  ::close(marker[1]);
}

// A closed slot leaves the registry: its old number is no longer found.
TEST(OwnSlot, ClosedSlotIsNotFound) {
  int n;
  {
    Counter c;
    n = c.slot.peek();
  }
  const int other = ::eventfd(0, EFD_CLOEXEC);
  ASSERT_GE(other, 0);
  if (::dup2(other, n) == n) {
    EXPECT_EQ(uepoll::core::own_vacate(n), -EBUSY);
    EXPECT_GE(::fcntl(n, F_GETFD), 0);  // the program's file stays
    ::close(n);
  }
  ::close(other);
}

// First calls racing to make a lazily made descriptor: one slot for all,
// and the losers' descriptors closed.
TEST(OwnSlot, LazySlotIsMadeOnce) {
  LazyOwnSlot lazy;
  EXPECT_EQ(lazy.made(), nullptr);
  const int open_before = open_descriptors();
  std::atomic<int> makes{0};
  std::atomic<bool> go{false};
  std::vector<OwnSlot*> got(8, nullptr);
  std::vector<std::thread> ts;
  for (int i = 0; i < 8; ++i) {
    ts.emplace_back([&, i] {
      while (!go.load()) {
      }
      long err = 0;
      got[i] = lazy.get(
          [&] {
            ++makes;
            return ::eventfd(0, EFD_CLOEXEC);
          },
          &err);
    });
  }
  go = true;
  for (auto& t : ts) t.join();
  ASSERT_NE(got[0], nullptr);
  for (OwnSlot* s : got) EXPECT_EQ(s, got[0]);
  EXPECT_EQ(lazy.made(), got[0]);
  EXPECT_GE(makes.load(), 1);
  EXPECT_EQ(open_descriptors(), open_before + 1);
  const int n = got[0]->peek();
  EXPECT_TRUE(uepoll::core::is_own(n));
  // It moves like any slot, and its release closes the new number.
  EXPECT_EQ(uepoll::core::own_vacate(n), 0);
  ::close(n);  // the caller's, given up
  const int m = got[0]->peek();
  EXPECT_NE(m, n);
  lazy.release();
  EXPECT_EQ(lazy.made(), nullptr);
  EXPECT_EQ(::fcntl(m, F_GETFD), -1);
  EXPECT_EQ(open_descriptors(), open_before);
  // A failed make leaves nothing made.
  long err = 0;
  EXPECT_EQ(lazy.get([] { return -EMFILE; }, &err), nullptr);
  EXPECT_EQ(err, -EMFILE);
  EXPECT_EQ(lazy.made(), nullptr);
}

// A pipe's lock descriptors move while only flock locks are held through
// them (they belong to the open file, which both numbers name); once a
// record lock is set through either end, neither moves: closing the old
// number would drop the process's record locks on the inode.
TEST(OwnSlot, LockDescriptorsMoveUntilARecordLock) {
  int p[2];
  ASSERT_EQ(uep_pipe(p), 0);
  const std::vector<int> before = own_numbers();
  ASSERT_EQ(uep_flock(p[0], LOCK_EX), 0);
  const std::vector<int> made = added(before, own_numbers());
  ASSERT_EQ(made.size(), 2u);  // the kernel pipe's two ends
  for (int n : made) {
    EXPECT_EQ(uepoll::core::own_vacate(n), 0);
    ::close(n);  // as the program's dup2 onto it would
  }
  EXPECT_EQ(uep_flock(p[1], LOCK_EX | LOCK_NB), -1);  // the read end's lock is still held
  EXPECT_EQ(errno, EWOULDBLOCK);
  struct flock fl{};
  fl.l_type = F_WRLCK;
  fl.l_whence = SEEK_SET;
  fl.l_len = 1;
  ASSERT_EQ(uep_fcntl(p[1], F_SETLK, &fl), 0);
  const std::vector<int> moved = added(before, own_numbers());
  ASSERT_EQ(moved.size(), 2u);
  for (int n : moved) EXPECT_EQ(uepoll::core::own_vacate(n), -EBUSY);
  EXPECT_EQ(added(before, own_numbers()), moved);
  EXPECT_EQ(uep_close(p[0]), 0);
  EXPECT_EQ(uep_close(p[1]), 0);
  EXPECT_EQ(own_numbers(), before);
}

// A kernel descriptor in flight in SCM_RIGHTS is held by uepoll while the
// message is queued; it moves, and the receiver gets the same file.
TEST(OwnSlot, InFlightDescriptorMoves) {
  int sv[2];
  ASSERT_EQ(uep_socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  const int efd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  ASSERT_GE(efd, 0);
  const std::vector<int> before = own_numbers();
  char byte = 'x';
  struct iovec iov{&byte, 1};
  union {
    struct cmsghdr align;
    char buf[CMSG_SPACE(sizeof(int))];
  } ctl{};
  struct msghdr m{};
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  m.msg_control = ctl.buf;
  m.msg_controllen = sizeof ctl.buf;
  struct cmsghdr* c = CMSG_FIRSTHDR(&m);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(c), &efd, sizeof(int));
  ASSERT_EQ(uep_sendmsg(sv[0], &m, 0), 1);
  const std::vector<int> flying = added(before, own_numbers());
  ASSERT_EQ(flying.size(), 1u);
  EXPECT_EQ(uepoll::core::own_vacate(flying[0]), 0);
  ::close(flying[0]);  // the caller's, given up
  const std::vector<int> moved = added(before, own_numbers());
  ASSERT_EQ(moved.size(), 1u);
  EXPECT_NE(moved[0], flying[0]);
  const uint64_t five = 5;
  ASSERT_EQ(::write(efd, &five, sizeof five), static_cast<ssize_t>(sizeof five));
  ::close(efd);  // the queued message keeps the file
  std::memset(&ctl, 0, sizeof ctl);
  m.msg_controllen = sizeof ctl.buf;
  ASSERT_EQ(uep_recvmsg(sv[1], &m, 0), 1);
  c = CMSG_FIRSTHDR(&m);
  ASSERT_NE(c, nullptr);
  ASSERT_EQ(c->cmsg_type, SCM_RIGHTS);
  int got = -1;
  std::memcpy(&got, CMSG_DATA(c), sizeof(int));
  uint64_t v = 0;
  EXPECT_EQ(::read(got, &v, sizeof v), static_cast<ssize_t>(sizeof v));
  EXPECT_EQ(v, 5u);  // the same eventfd
  ::close(got);
  EXPECT_EQ(own_numbers(), before);  // received: uepoll's duplicate closed
  uep_close(sv[0]);
  uep_close(sv[1]);
}

// A dozen uses nested on one thread, ended in an order that is not the
// reverse of their start: a move waits for every one of them, and
// completes once the last has ended.
TEST(OwnSlot, MoveWaitsForDeepAndUnorderedUses) {
  Counter c;
  const int n = c.slot.peek();
  constexpr int kDepth = 12;
  std::atomic<bool> holding{false}, release{false}, released{false};
  std::thread user([&] {
    std::vector<unsigned> halves(kDepth);
    for (int i = 0; i < kDepth; ++i) EXPECT_EQ(c.slot.enter(&halves[i]), n);
    holding.store(true);
    while (!release.load()) std::this_thread::yield();
    // All but the first two, evens then odds, then the first before the
    // second.
    for (int i = 2; i < kDepth; i += 2) c.slot.leave(halves[i]);
    for (int i = 3; i < kDepth; i += 2) c.slot.leave(halves[i]);
    released.store(true);  // two still held: the move must wait on
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    c.slot.leave(halves[0]);
    c.slot.leave(halves[1]);
  });
  while (!holding.load()) std::this_thread::yield();
  std::atomic<int> result{1};
  std::atomic<bool> done{false};
  std::thread mover([&] {
    result.store(uepoll::core::own_vacate(n));
    done.store(true);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(done.load()) << "moved while " << kDepth << " uses were held";
  release.store(true);
  while (!released.load()) std::this_thread::yield();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(done.load()) << "moved while two uses were held";
  user.join();
  mover.join();
  EXPECT_EQ(result.load(), 0);
  EXPECT_NE(c.slot.peek(), n);
  ::close(n);  // given up for the caller's dup2
}

// A child of fork() has only the forking thread: a use another thread of
// the parent held at the fork does not keep a move in the child waiting.
TEST(OwnSlot, ChildMovesPastParentThreadsUses) {
  Counter c;
  const int n = c.slot.peek();
  std::atomic<bool> holding{false}, release{false};
  std::thread user([&] {
    OwnSlot::Use u(c.slot);
    holding.store(true);
    while (!release.load()) std::this_thread::yield();
  });
  while (!holding.load()) std::this_thread::yield();
  const std::string verdict = uepoll_support::in_child([&]() -> std::string {
    const long long start = uepoll_support::detail::monotonic_ms();
    const int r = uepoll::core::own_vacate(n);
    const long long ms = uepoll_support::detail::monotonic_ms() - start;
    if (r != 0) return "own_vacate: " + std::to_string(r);
    if (ms >= 1000) return "the child's move waited " + std::to_string(ms) + " ms for a parent thread's use";
    return "";
  });
  release.store(true);
  user.join();
  EXPECT_EQ(verdict, "");
  EXPECT_EQ(c.slot.peek(), n);  // the parent's slot did not move
}

}  // namespace
