// own_slot_test.cpp - core::OwnSlot and own_vacate from inside (the static
// library's internal symbols): a movable own descriptor keeps serving its
// users, sleepers included, while its number is handed over again and
// again, and no use ever reaches the file installed at an old number.
#include "core/own_fds.h"
#include "core/own_slot.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

using uepoll::core::OwnSlot;

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
  for (int i = 0; i < 2; ++i) {
    users.emplace_back([&] {
      while (!stop.load()) {
        OwnSlot::Use u(c.slot);
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
  // Pinned.
  c.slot.pin();
  EXPECT_EQ(uepoll::core::own_vacate(n), -EBUSY);
  c.slot.unpin();
  // The caller holds a use (a handler's dup2 would wait for itself).
  {
    OwnSlot::Use u(c.slot);
    EXPECT_EQ(uepoll::core::own_vacate(n), -EBUSY);
  }
  EXPECT_EQ(c.slot.peek(), n);
  EXPECT_TRUE(uepoll::core::is_own(n));
  // Free to move now.
  EXPECT_EQ(uepoll::core::own_vacate(n), 0);
  EXPECT_EQ(::fcntl(n, F_GETFD), -1);
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

}  // namespace
