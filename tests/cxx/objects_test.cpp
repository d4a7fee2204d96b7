// tests/cxx/objects_test.cpp - EventFd, Pipe, SocketPair/Socket, TimerFd and
// the free functions read/write/poll/shutdown: successes, Linux's errors
// (EINVAL, EAGAIN, EPIPE, EBADF, ENOTCONN...), blocking calls woken from
// another thread, and the throwing variants.  BothBackends runs each body
// against Linux descriptors adopted into the owners and against uepoll's.
#include "support.h"

#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>

using namespace std::chrono_literals;
class ObjectsBoth : public cxxtest::BothBackends {};
using cxxtest::bytes;
using cxxtest::str;
using uepoll::EventFd;
using uepoll::Pipe;
using uepoll::SocketPair;
using uepoll::TimerFd;
using Clock = std::chrono::steady_clock;

namespace {

// EPIPE tests must not die of SIGPIPE.
const bool g_sigpipe_ignored = [] { return signal(SIGPIPE, SIG_IGN) != SIG_ERR; }();

std::error_code sys(int e) { return std::error_code(e, std::system_category()); }

template <class F>
std::error_code thrown_code(F&& f) {
  try {
    f();
  } catch (const std::system_error& e) {
    return e.code();
  }
  return {};
}

// ---- EventFd ------------------------------------------------------------

TEST_P(ObjectsBoth, EventFdCounter) {
  EventFd ev = std::move(make.eventfd(5, EFD_NONBLOCK)).value();
  EXPECT_EQ(ev.read(), 5u);
  EXPECT_ERRC(ev.try_read(), EAGAIN);
  EXPECT_OK(ev.try_write(2));
  EXPECT_OK(ev.try_write(3));
  EXPECT_EQ(ev.read(), 5u);
  EXPECT_ERRC(ev.try_write(0xffffffffffffffffull), EINVAL);
  EXPECT_OK(ev.try_write(0xfffffffffffffffeull));
  EXPECT_ERRC(ev.try_write(1), EAGAIN);  // would overflow
  // A short buffer through the free functions: EINVAL.
  std::array<std::byte, 4> small{};
  EXPECT_ERRC(uepoll::try_read(ev, small), EINVAL);
  EXPECT_ERRC(uepoll::try_write(ev, std::span<const std::byte>(small)), EINVAL);
  std::array<std::byte, 8> full{};
  auto n = uepoll::try_read(ev, full);
  ASSERT_OK(n);
  EXPECT_EQ(*n, 8u);
  std::uint64_t v;
  std::memcpy(&v, full.data(), 8);
  EXPECT_EQ(v, 0xfffffffffffffffeull);
}

TEST_P(ObjectsBoth, EventFdSemaphoreAndFlags) {
  EventFd sem = std::move(make.eventfd(2, EFD_SEMAPHORE | EFD_NONBLOCK | EFD_CLOEXEC)).value();
  EXPECT_EQ(sem.read(), 1u);
  EXPECT_EQ(sem.read(), 1u);
  EXPECT_ERRC(sem.try_read(), EAGAIN);
  EXPECT_ERRC(make.eventfd(0, 0x1234567), EINVAL);
}

TEST_P(ObjectsBoth, EventFdBlockingReadWokenByWrite) {
  EventFd ev = std::move(make.eventfd()).value();
  std::atomic<bool> returned{false};
  std::uint64_t got = 0;
  std::thread reader([&] {
    got = ev.read();
    returned = true;
  });
  std::this_thread::sleep_for(30ms);
  EXPECT_FALSE(returned.load());
  ev.write(9);
  reader.join();
  EXPECT_EQ(got, 9u);
}

// ---- Pipe ---------------------------------------------------------------

TEST_P(ObjectsBoth, PipeReadWriteEofEpipe) {
  Pipe p = std::move(make.pipe(O_NONBLOCK)).value();
  std::array<std::byte, 16> buf{};
  EXPECT_ERRC(uepoll::try_read(p.read_end, buf), EAGAIN);
  EXPECT_EQ(uepoll::write(p.write_end, bytes("hello")), 5u);
  const std::size_t n = uepoll::read(p.read_end, buf);
  EXPECT_EQ(str(std::span(buf).first(n)), "hello");
  // Reading into an empty span returns 0 without consuming anything.
  EXPECT_EQ(uepoll::write(p.write_end, bytes("x")), 1u);
  EXPECT_EQ(uepoll::read(p.read_end, std::span<std::byte>()), 0u);
  EXPECT_EQ(uepoll::read(p.read_end, buf), 1u);
  // Wrong direction: EBADF.
  EXPECT_ERRC(uepoll::try_write(p.read_end, bytes("x")), EBADF);
  EXPECT_ERRC(uepoll::try_read(p.write_end, buf), EBADF);
  // Write end closed: EOF.  Read end closed: EPIPE.
  p.write_end.reset();
  EXPECT_EQ(uepoll::read(p.read_end, buf), 0u);
  Pipe q = std::move(make.pipe()).value();
  q.read_end.reset();
  EXPECT_ERRC(uepoll::try_write(q.write_end, bytes("x")), EPIPE);
  EXPECT_EQ(thrown_code([&] { (void)uepoll::write(q.write_end, bytes("x")); }), sys(EPIPE));
  ASSERT_TRUE(g_sigpipe_ignored);
}

TEST_P(ObjectsBoth, PipeFlags) {
  EXPECT_OK(make.pipe(O_CLOEXEC | O_NONBLOCK));
  EXPECT_ERRC(make.pipe(0x40000000), EINVAL);
}

TEST_P(ObjectsBoth, PipeFillsThenEagain) {
  Pipe p = std::move(make.pipe(O_NONBLOCK)).value();
  std::array<std::byte, 4096> chunk{};
  std::size_t total = 0;
  for (;;) {
    auto r = uepoll::try_write(p.write_end, chunk);
    if (!r) {
      EXPECT_ERRC(r, EAGAIN);
      break;
    }
    total += *r;
    ASSERT_LT(total, 16u << 20) << "pipe never filled";
  }
  EXPECT_EQ(total, 65536u);  // Linux's default pipe capacity (16 pages)
}

// ---- SocketPair ---------------------------------------------------------

TEST_P(ObjectsBoth, SocketPairBothWaysAndShutdown) {
  SocketPair sp = std::move(make.socketpair(SOCK_STREAM | SOCK_NONBLOCK)).value();
  std::array<std::byte, 16> buf{};
  EXPECT_EQ(uepoll::write(sp.first, bytes("ping")), 4u);
  EXPECT_EQ(str(std::span(buf).first(uepoll::read(sp.second, buf))), "ping");
  EXPECT_EQ(uepoll::write(sp.second, bytes("pong")), 4u);
  EXPECT_EQ(str(std::span(buf).first(uepoll::read(sp.first, buf))), "pong");
  EXPECT_ERRC(uepoll::try_read(sp.first, buf), EAGAIN);
  EXPECT_ERRC(sp.first.try_shutdown(42), EINVAL);
  EXPECT_EQ(thrown_code([&] { sp.first.shutdown(-1); }), sys(EINVAL));
  // SHUT_WR: the peer reads EOF, writing here gives EPIPE.
  sp.first.shutdown(SHUT_WR);
  EXPECT_EQ(uepoll::read(sp.second, buf), 0u);
  EXPECT_ERRC(uepoll::try_write(sp.first, bytes("x")), EPIPE);
  // The other direction still works.
  EXPECT_EQ(uepoll::write(sp.second, bytes("ok")), 2u);
  EXPECT_EQ(uepoll::read(sp.first, buf), 2u);
  EXPECT_OK(uepoll::try_shutdown(sp.second, SHUT_RDWR));
}

TEST_P(ObjectsBoth, SocketPairErrors) {
  EXPECT_ERRC(make.socketpair(AF_INET, SOCK_STREAM, 0), EOPNOTSUPP);
  EXPECT_ERRC(make.socketpair(SOCK_STREAM | 0x10000000), EINVAL);
  // shutdown of something that is not a socket.
  EventFd ev = std::move(make.eventfd()).value();
  EXPECT_ERRC(uepoll::try_shutdown(ev, SHUT_RD), ENOTSOCK);
  EXPECT_ERRC(uepoll::try_shutdown(-1, SHUT_RD), EBADF);
}

TEST_P(ObjectsBoth, SocketPairWithEpollRdhup) {
  auto ep = std::move(make.epoll()).value();
  SocketPair sp = std::move(make.socketpair()).value();
  ep.add(sp.second, EPOLLIN | EPOLLRDHUP, 1);
  std::array<epoll_event, 2> out;
  EXPECT_TRUE(ep.wait(out, 0ms).empty());
  sp.first.shutdown(SHUT_WR);
  auto got = ep.wait(out, 1s);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(cxxtest::events(got[0]), static_cast<std::uint32_t>(EPOLLIN | EPOLLRDHUP));
}

// ---- TimerFd ------------------------------------------------------------

TEST_P(ObjectsBoth, TimerFdCreateErrors) {
  EXPECT_ERRC(make.timerfd(12345), EINVAL);
  EXPECT_ERRC(make.timerfd(CLOCK_MONOTONIC, 0x1234), EINVAL);
  EXPECT_OK(make.timerfd(CLOCK_REALTIME, TFD_NONBLOCK | TFD_CLOEXEC));
}

TEST_P(ObjectsBoth, TimerFdOneShotAndGettime) {
  TimerFd t = std::move(make.timerfd(CLOCK_MONOTONIC, TFD_NONBLOCK)).value();
  EXPECT_EQ(t.gettime(), TimerFd::Setting{});
  EXPECT_ERRC(t.try_read(), EAGAIN);
  const TimerFd::Setting old = t.settime(30ms);
  EXPECT_EQ(old, TimerFd::Setting{});
  const TimerFd::Setting cur = t.gettime();
  EXPECT_GT(cur.initial, 0ns);
  EXPECT_LE(cur.initial, 30ms);
  EXPECT_EQ(cur.interval, 0ns);
  std::this_thread::sleep_for(40ms);
  EXPECT_EQ(t.read(), 1u);
  EXPECT_EQ(t.gettime(), TimerFd::Setting{});  // one-shot: disarmed
  EXPECT_ERRC(t.try_read(), EAGAIN);
}

TEST_P(ObjectsBoth, TimerFdPeriodicBlockingReadAndDisarm) {
  TimerFd t = std::move(make.timerfd()).value();
  t.settime(10ms, 10ms);
  const auto t0 = Clock::now();
  const std::uint64_t first = t.read();  // blocks until the first expiry
  EXPECT_GE(Clock::now() - t0, 9ms);
  EXPECT_GE(first, 1u);
  std::this_thread::sleep_for(35ms);
  EXPECT_GE(t.read(), 2u);
  const TimerFd::Setting before = t.disarm();
  EXPECT_EQ(before.interval, 10ms);
  EXPECT_GT(before.initial, 0ns);
  EXPECT_EQ(t.gettime(), TimerFd::Setting{});
}

TEST_P(ObjectsBoth, TimerFdAbsoluteAndErrors) {
  TimerFd t = std::move(make.timerfd(CLOCK_MONOTONIC, TFD_NONBLOCK)).value();
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  const auto abs = std::chrono::seconds(now.tv_sec) + std::chrono::nanoseconds(now.tv_nsec) + 20ms;
  EXPECT_OK(t.try_settime(abs, 0ns, TFD_TIMER_ABSTIME));
  const auto left = t.gettime().initial;  // gettime is relative
  EXPECT_GT(left, 0ns);
  EXPECT_LE(left, 20ms);
  auto ep = std::move(make.epoll()).value();
  ep.add(t, EPOLLIN, 5);
  std::array<epoll_event, 1> out;
  auto got = ep.wait(out, 2s);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(cxxtest::u64(got[0]), 5u);
  EXPECT_EQ(t.read(), 1u);
  // A time in the past expires at once.
  EXPECT_OK(t.try_settime(1ns, 0ns, TFD_TIMER_ABSTIME));
  EXPECT_EQ(ep.wait(out, 2s).size(), 1u);
  EXPECT_EQ(t.read(), 1u);
  // Errors.
  EXPECT_ERRC(t.try_settime(-1ms), EINVAL);
  EXPECT_ERRC(t.try_settime(1ms, -1ns), EINVAL);
  EXPECT_ERRC(t.try_settime(1ms, 0ns, 0x100), EINVAL);
  EXPECT_EQ(thrown_code([&] { (void)t.settime(-1s); }), sys(EINVAL));
  EventFd ev = std::move(make.eventfd()).value();
  TimerFd not_timer(ev.take());
  EXPECT_ERRC(not_timer.try_gettime(), EINVAL);
  EXPECT_ERRC(not_timer.try_settime(1ms), EINVAL);
  TimerFd empty;
  EXPECT_ERRC(empty.try_gettime(), EBADF);
}

// ---- poll -----------------------------------------------------------------

TEST_P(ObjectsBoth, PollReportsReadinessAndTimesOut) {
  EventFd ev = std::move(make.eventfd()).value();
  Pipe p = std::move(make.pipe()).value();
  std::array<struct pollfd, 3> fds{};
  fds[0] = {ev.get(), POLLIN, 0};
  fds[1] = {p.write_end.get(), POLLOUT, 0};
  fds[2] = {p.read_end.get(), POLLIN, 0};
  EXPECT_EQ(uepoll::poll(fds, 0ms), 1u);
  EXPECT_EQ(fds[0].revents, 0);
  EXPECT_EQ(fds[1].revents, POLLOUT);
  EXPECT_EQ(fds[2].revents, 0);
  const auto t0 = Clock::now();
  EXPECT_EQ(uepoll::poll(std::span(fds).first(1), 30ms), 0u);
  EXPECT_GE(Clock::now() - t0, 29ms);
  std::thread writer([&] {
    std::this_thread::sleep_for(20ms);
    ev.write(1);
  });
  EXPECT_EQ(uepoll::poll(std::span(fds).first(1), uepoll::forever), 1u);
  writer.join();
  EXPECT_EQ(fds[0].revents, POLLIN);
  // A closed descriptor: POLLNVAL, counted.
  fds[0].fd = -1;  // negative: ignored
  EventFd gone = std::move(make.eventfd()).value();
  fds[2].fd = gone.get();
  gone.reset();
  auto n = uepoll::try_poll(fds, 0ms);
  ASSERT_OK(n);
  EXPECT_EQ(*n, 2u);
  EXPECT_EQ(fds[0].revents, 0);
  EXPECT_EQ(fds[2].revents, POLLNVAL);
}

TEST(ObjectsThrowing, CreatesThrowSystemError) {
  EXPECT_EQ(thrown_code([] { (void)EventFd::create(0, -1); }), sys(EINVAL));
  EXPECT_EQ(thrown_code([] { (void)Pipe::create(-1); }), sys(EINVAL));
  EXPECT_EQ(thrown_code([] { (void)SocketPair::create(AF_INET, SOCK_STREAM, 0); }), sys(EOPNOTSUPP));
  EXPECT_EQ(thrown_code([] { (void)TimerFd::create(-1); }), sys(EINVAL));
  EventFd ev = EventFd::create(0, EFD_NONBLOCK);
  EXPECT_GE(ev.get(), UEP_FD_BASE);
  EXPECT_EQ(thrown_code([&] { (void)ev.read(); }), sys(EAGAIN));
  EXPECT_EQ(thrown_code([&] { ev.write(~0ull); }), sys(EINVAL));
  Pipe p = Pipe::create();
  EXPECT_GE(p.read_end.get(), UEP_FD_BASE);
  EXPECT_GE(p.write_end.get(), UEP_FD_BASE);
  SocketPair sp = SocketPair::create();
  EXPECT_GE(sp.first.get(), UEP_FD_BASE);
  TimerFd t = TimerFd::create(CLOCK_MONOTONIC, TFD_NONBLOCK);
  EXPECT_EQ(thrown_code([&] { (void)t.read(); }), sys(EAGAIN));
}

// Owners of every kind close on destruction and not after release().
TEST(ObjectsOwnership, EveryOwnerClosesItsDescriptors) {
  int ev_raw, r_raw, w_raw, a_raw, b_raw, t_raw;
  {
    EventFd ev = EventFd::create();
    Pipe p = Pipe::create();
    SocketPair sp = SocketPair::create();
    TimerFd t = TimerFd::create();
    ev_raw = ev.get();
    r_raw = p.read_end.get();
    w_raw = p.write_end.get();
    a_raw = sp.first.get();
    b_raw = sp.second.get();
    t_raw = t.get();
    for (int fd : {ev_raw, r_raw, w_raw, a_raw, b_raw, t_raw}) EXPECT_TRUE(cxxtest::is_open(fd)) << fd;
    Pipe moved = std::move(p);
    EXPECT_FALSE(p.read_end);
    EXPECT_EQ(moved.read_end.get(), r_raw);
  }
  for (int fd : {ev_raw, r_raw, w_raw, a_raw, b_raw, t_raw}) EXPECT_FALSE(cxxtest::is_open(fd)) << fd;
}

INSTANTIATE_TEST_SUITE_P(Cxx, ObjectsBoth,
                         ::testing::Values(cxxtest::Backend::Linux, cxxtest::Backend::Uepoll), cxxtest::backend_name);

}  // namespace

namespace {

// The two backends really are different: Linux's descriptors are below
// UEP_FD_BASE, uepoll's at or above it, for every kind of owner.
TEST_P(ObjectsBoth, DescriptorRangesMatchTheBackend) {
  auto ep = std::move(make.epoll()).value();
  auto ev = std::move(make.eventfd()).value();
  auto p = std::move(make.pipe()).value();
  auto sp = std::move(make.socketpair()).value();
  auto t = std::move(make.timerfd()).value();
  for (int fd : {ep.get(), ev.get(), p.read_end.get(), p.write_end.get(), sp.first.get(), sp.second.get(), t.get()}) {
    EXPECT_EQ(fd >= UEP_FD_BASE, uepoll_side()) << fd;
    EXPECT_EQ(uep_is_uepoll_fd(fd) == 1, uepoll_side()) << fd;
  }
}

}  // namespace
