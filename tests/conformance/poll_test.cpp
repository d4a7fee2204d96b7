// poll_test.cpp - poll() over every object type (eventfd, both pipe ends,
// socket pair ends, timerfd, epoll) in their interesting states, the
// POLLNVAL/negative-fd/zero-events rules, and poll() timeouts and wakeups.
// Runs on Linux and uepoll (uep_poll); the revents must match.
#include "harness.h"

#include <csignal>
#include <thread>

namespace {

using conf::T;

constexpr short kAll = POLLIN | POLLPRI | POLLOUT | POLLRDNORM | POLLRDBAND | POLLWRNORM | POLLWRBAND | POLLRDHUP;

const bool sigpipe_ignored = [] {
  signal(SIGPIPE, SIG_IGN);
  return true;
}();

TEST(Poll, EveryObjectType) {
  auto r = conf::differential([](T& t) {
    int efd = t.eventfd(0, EFD_NONBLOCK);
    auto [rd, wr] = t.pipe2(O_NONBLOCK);
    auto [s0, s1] = t.unix_stream(SOCK_NONBLOCK);
    int tm = t.timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
    int ep = t.epoll_create1();
    std::vector<std::pair<int, short>> all = {{efd, kAll}, {rd, kAll}, {wr, kAll}, {s0, kAll},
                                              {s1, kAll},  {tm, kAll}, {ep, kAll}};
    t.poll(all, 0);  // idle
    t.write_u64(efd, 1);
    t.write(wr, "x", 1);
    t.write(s1, "y", 1);
    t.timerfd_settime(tm, 0, 1000, 0);  // 1 us
    usleep(2000);
    t.ctl(ep, EPOLL_CTL_ADD, efd, EPOLLIN, 1);
    t.poll(all, 0);  // readable
    t.poll(all, 10);
    // Only the requested bits (plus ERR/HUP/NVAL) come back.
    t.poll({{efd, POLLOUT}, {rd, POLLOUT}, {wr, POLLIN}, {s0, POLLRDHUP}, {tm, POLLOUT}, {ep, POLLOUT}}, 0);
    t.poll({{efd, 0}, {rd, 0}, {s0, 0}}, 0);
    // Hang-ups and errors.
    t.shutdown(s1, SHUT_WR);
    t.poll({{s0, kAll}, {s1, kAll}}, 0);
    t.close(s1);
    t.poll({{s0, kAll}, {s0, 0}}, 0);
    t.close(wr);
    t.poll({{rd, kAll}, {rd, 0}}, 0);
    auto [rd2, wr2] = t.pipe2(O_NONBLOCK);
    t.close(rd2);
    t.poll({{wr2, kAll}, {wr2, 0}}, 0);
    t.write_u64(efd, 0xfffffffffffffffeULL - 1);
    t.poll({{efd, kAll}}, 0);  // at the maximum: not writable
  });
  EXPECT_LINUX_SEQ(r, {"poll(fd0 fd1 fd2 fd3 fd4 fd5 fd6,0) = 4 [OUT 0 OUT|WRNORM OUT|WRNORM|WRBAND OUT|WRNORM|WRBAND 0 0]",
                       "poll(fd0 fd1 fd2 fd3 fd4 fd5 fd6,0) = 7 [IN|OUT IN|RDNORM OUT|WRNORM "
                       "IN|OUT|RDNORM|WRNORM|WRBAND OUT|WRNORM|WRBAND IN IN|RDNORM]",
                       "poll(fd0 fd1 fd2 fd3 fd5 fd6,0) = 1 [OUT 0 0 0 0 0]", "poll(fd0 fd1 fd3,0) = 0 [0 0 0]",
                       "poll(fd3 fd4,0) = 2 [IN|OUT|RDNORM|WRNORM|WRBAND|RDHUP OUT|WRNORM|WRBAND]",
                       "poll(fd3 fd3,0) = 2 [IN|OUT|HUP|RDNORM|WRNORM|WRBAND|RDHUP HUP]",
                       "poll(fd1 fd1,0) = 2 [IN|HUP|RDNORM HUP]", "poll(fd8 fd8,0) = 2 [OUT|ERR|WRNORM ERR]",
                       "poll(fd0,0) = 1 [IN]"});
}

// poll() never reports POLLNVAL for a negative fd (it is skipped); a closed
// descriptor gets POLLNVAL whatever was asked.
TEST(Poll, NvalAndNegative) {
  auto r = conf::differential([](T& t) {
    int efd = t.eventfd(1);
    int gone = t.eventfd(0);
    t.close(gone);
    t.poll({{-1, kAll}, {gone, kAll}, {gone, 0}, {efd, POLLIN}}, 0);
    t.poll({{-5, POLLIN}}, 0);
    t.poll({}, 0);
  });
  EXPECT_LINUX_SEQ(r, {"poll(-1 fd1 fd1 fd0,0) = 3 [0 NVAL NVAL IN]", "poll(-5,0) = 0 [0]", "poll(,0) = 0 []"});
}

TEST(Poll, TimeoutsAndWakeup) {
  auto r = conf::differential([](T& t) {
    int efd = t.eventfd(0);
    auto [rd, wr] = t.pipe();
    double t0 = conf::now_ms();
    t.poll({{efd, POLLIN}, {rd, POLLIN}}, 50);
    double el = conf::now_ms() - t0;
    t.log(el >= 49 && el < 500 ? "timed out after ~50 ms" : "wrong timeout " + std::to_string(el));
    t0 = conf::now_ms();
    t.poll({}, 30);
    el = conf::now_ms() - t0;
    t.log(el >= 29 && el < 500 ? "empty poll slept ~30 ms" : "wrong sleep " + std::to_string(el));
    {
      conf::WhenBlocked later([&, wr = wr] { t.api.write(wr, "z", 1); });
      t.poll({{efd, POLLIN}, {rd, POLLIN}}, -1);  // sleeps until the write
    }
    // An epoll instance in a blocking poll() is woken when an item in it
    // fires, and when a ready item is added to it.
    int ep = t.epoll_create1();
    t.ctl(ep, EPOLL_CTL_ADD, efd, EPOLLIN, 1);
    {
      conf::WhenBlocked later([&] {
        uint64_t v = 1;
        t.api.write(efd, &v, 8);
      });
      t.poll({{ep, POLLIN}}, 5000);
    }
    int ep2 = t.epoll_create1();
    {
      conf::WhenBlocked later([&] {
        struct epoll_event ev = {EPOLLIN, {.u64 = 2}};
        t.api.epoll_ctl(ep2, EPOLL_CTL_ADD, efd, &ev);
      });
      t.poll({{ep2, POLLIN}}, 5000);
    }
  });
  EXPECT_LINUX_SEQ(r, {"poll(fd0 fd1,50) = 0 [0 0]", "timed out after ~50 ms", "poll(,30) = 0 []",
                       "empty poll slept ~30 ms", "poll(fd0 fd1,-1) = 1 [0 IN]", "poll(fd3,5000) = 1 [IN]",
                       "poll(fd4,5000) = 1 [IN]"});
}

}  // namespace
