// tests/cxx/fd_test.cpp - ownership: Fd and the typed owners close exactly
// once (destruction, reset, move-assignment), never after release() or a
// move, and report EBADF when their descriptor was closed behind their back.
// "Closed" and "still open" are checked on the raw number with
// uep_is_uepoll_fd (uepoll) or fcntl (kernel descriptors, which the engine
// forwards).  Double closes are caught by reusing the freed number: uepoll
// allocates lowest-free, so a stray second close would close the newcomer.
#include "support.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <type_traits>
#include <utility>

using cxxtest::is_open;
using uepoll::Epoll;
using uepoll::EventFd;
using uepoll::Fd;

namespace {

static_assert(!std::is_copy_constructible_v<Fd> && !std::is_copy_assignable_v<Fd>);
static_assert(std::is_nothrow_move_constructible_v<Fd> && std::is_nothrow_move_assignable_v<Fd>);
static_assert(!std::is_copy_constructible_v<Epoll> && std::is_nothrow_move_constructible_v<Epoll>);
static_assert(!std::is_copy_constructible_v<EventFd> && !std::is_copy_constructible_v<uepoll::TimerFd>);
static_assert(!std::is_copy_constructible_v<uepoll::Pipe> && !std::is_copy_constructible_v<uepoll::SocketPair>);
// Owners of different kinds do not convert into each other.
static_assert(!std::is_assignable_v<Epoll&, EventFd&&>);
static_assert(!std::is_constructible_v<Epoll, EventFd&&>);
// Everything converts to BorrowedFd.
static_assert(std::is_convertible_v<const Epoll&, uepoll::BorrowedFd>);
static_assert(std::is_convertible_v<const Fd&, uepoll::BorrowedFd>);
static_assert(std::is_convertible_v<int, uepoll::BorrowedFd>);

TEST(Fd, DefaultIsEmpty) {
  Fd f;
  EXPECT_FALSE(f);
  EXPECT_EQ(f.get(), -1);
  EXPECT_EQ(f.release(), -1);
  EXPECT_ERRC(f.try_dup(), EBADF);
  EXPECT_ERRC(f.try_close(), EBADF);
  Epoll e;
  EXPECT_FALSE(e);
  EXPECT_EQ(e.get(), -1);
}

TEST(Fd, DestructionCloses) {
  int raw;
  {
    Epoll ep = Epoll::create();
    raw = ep.get();
    EXPECT_GE(raw, UEP_FD_BASE);
    EXPECT_TRUE(ep);
    EXPECT_TRUE(is_open(raw));
  }
  EXPECT_FALSE(is_open(raw));
}

TEST(Fd, ReleaseDoesNotClose) {
  int raw;
  {
    Epoll ep = Epoll::create();
    raw = ep.release();
    EXPECT_FALSE(ep);
    EXPECT_EQ(ep.get(), -1);
  }
  EXPECT_TRUE(is_open(raw));
  EXPECT_EQ(uep_close(raw), 0);
  EXPECT_FALSE(is_open(raw));
}

TEST(Fd, MoveConstructionTransfersAndClosesOnce) {
  Epoll a = Epoll::create();
  const int raw = a.get();
  {
    Epoll b(std::move(a));
    EXPECT_FALSE(a);  // NOLINT(bugprone-use-after-move): moved-from is empty by contract
    EXPECT_EQ(a.get(), -1);
    EXPECT_EQ(b.get(), raw);
    { Epoll gone(std::move(a)); }  // destroying an empty owner closes nothing
    EXPECT_TRUE(is_open(raw));
  }
  EXPECT_FALSE(is_open(raw));
  // The number is free again and reused (lowest-free); destroying the
  // moved-from `a` now must not close the newcomer.
  Epoll c = Epoll::create();
  EXPECT_EQ(c.get(), raw);
  { Epoll moved_from = std::move(a); }
  EXPECT_TRUE(is_open(raw));
}

TEST(Fd, MoveAssignmentClosesTheOldTarget) {
  Epoll a = Epoll::create();
  Epoll b = Epoll::create();
  const int ra = a.get(), rb = b.get();
  b = std::move(a);
  EXPECT_FALSE(is_open(rb));
  EXPECT_TRUE(is_open(ra));
  EXPECT_EQ(b.get(), ra);
  EXPECT_FALSE(a);
  // Self-move keeps the descriptor.
  Epoll& alias = b;
  b = std::move(alias);
  EXPECT_EQ(b.get(), ra);
  EXPECT_TRUE(is_open(ra));
}

TEST(Fd, ResetClosesAndAdopts) {
  Fd f(Epoll::create().release());
  const int first = f.get();
  const int second = Epoll::create().release();
  f.reset(second);
  EXPECT_FALSE(is_open(first));
  EXPECT_TRUE(is_open(second));
  f.reset(second);  // resetting to the same number must not close it
  EXPECT_TRUE(is_open(second));
  f.reset();
  EXPECT_FALSE(f);
  EXPECT_FALSE(is_open(second));
}

TEST(Fd, TakeAndAdoptBetweenGenericAndTyped) {
  Epoll ep = Epoll::create();
  const int raw = ep.get();
  Fd generic = ep.take();
  EXPECT_FALSE(ep);
  EXPECT_EQ(generic.get(), raw);
  Epoll again(std::move(generic));
  EXPECT_EQ(again.get(), raw);
  EXPECT_TRUE(again.try_wait(std::span<epoll_event>(), std::chrono::milliseconds(0)).error() ==
              std::errc::invalid_argument);  // still an epoll (maxevents 0 -> EINVAL)
}

TEST(Fd, ClosedBehindItsBackGivesEbadf) {
  Epoll ep = Epoll::create();
  const int raw = ep.release();
  ASSERT_EQ(uep_close(raw), 0);
  Epoll stale{Fd(raw)};
  EXPECT_ERRC(stale.fd().try_dup(), EBADF);
  EXPECT_ERRC(stale.try_add(raw, EPOLLIN), EBADF);
  std::array<epoll_event, 1> out;
  EXPECT_ERRC(stale.try_wait(out, std::chrono::milliseconds(0)), EBADF);
  EXPECT_ERRC(stale.try_close(), EBADF);
  EXPECT_FALSE(stale);  // empty whatever close returned
  Epoll stale2{Fd(raw)};
  try {
    stale2.close();
    FAIL() << "close() of a closed descriptor did not throw";
  } catch (const std::system_error& e) {
    EXPECT_TRUE(e.code() == std::errc::bad_file_descriptor) << e.code().message();
  }
}

TEST(Fd, TryCloseSucceedsOnce) {
  Epoll ep = Epoll::create();
  const int raw = ep.get();
  EXPECT_OK(ep.try_close());
  EXPECT_FALSE(ep);
  EXPECT_FALSE(is_open(raw));
  EXPECT_ERRC(ep.try_close(), EBADF);
}

TEST(Fd, DupIsLowestFreeAndSharesTheObject) {
  Epoll ep = Epoll::create();
  EventFd ev = EventFd::create(1);
  Fd hole(Epoll::create().release());
  const int hole_number = hole.get();
  hole.reset();  // leaves a hole below the next free number
  Fd d = ep.fd().dup();
  EXPECT_EQ(d.get(), hole_number);
  EXPECT_TRUE(is_open(d.get()));
  // Same instance: an item added through the dup is visible through ep.
  Epoll via_dup(std::move(d));
  via_dup.add(ev, EPOLLIN, std::uint64_t{5});
  std::array<epoll_event, 2> out;
  auto got = ep.wait(out, std::chrono::milliseconds(0));
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(cxxtest::u64(got[0]), 5u);
  EXPECT_ERRC(ep.try_add(ev, EPOLLIN), EEXIST);
  // Closing the dup leaves the original open.
  const int dup_raw = via_dup.get();
  via_dup.reset();
  EXPECT_FALSE(is_open(dup_raw));
  EXPECT_TRUE(is_open(ep.get()));
  EXPECT_OK(ep.try_del(ev));
}

TEST(Fd, DupThrowsOnBadDescriptor) {
  Fd empty;
  try {
    (void)empty.dup();
    FAIL();
  } catch (const std::system_error& e) {
    EXPECT_EQ(e.code(), std::error_code(EBADF, std::system_category()));
  }
}

// Kernel descriptors: owners forward close and dup to the kernel.
TEST(Fd, KernelDescriptorsAreClosedOnceToo) {
  const int k = ::eventfd(0, 0);
  ASSERT_GE(k, 0);
  ASSERT_LT(k, UEP_FD_BASE);
  {
    Fd f(k);
    Fd d = f.dup();
    EXPECT_LT(d.get(), UEP_FD_BASE);
    EXPECT_NE(d.get(), k);
    EXPECT_TRUE(is_open(d.get()));
    Fd moved(std::move(f));
    EXPECT_TRUE(is_open(k));
  }
  EXPECT_FALSE(is_open(k));
}

}  // namespace
