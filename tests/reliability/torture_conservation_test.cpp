// torture_conservation_test.cpp - torture scenario C (torture.h): in ET and
// ONESHOT mode, with writers and waiters racing, every byte / count written
// is read exactly once, nothing is left unread (no lost edge), and a
// ONESHOT item is never delivered twice before it is re-armed.  Run
// against Linux and against uepoll.
#include "torture.h"

using namespace uepoll_test;
using namespace uepoll_test::torture;

namespace {

// --- C: ET / ONESHOT conservation: every write read exactly once ----------
void conservation(const Api& a, bool oneshot, Failures& fl, long* moved) {
  constexpr int kPipes = 4, kEfds = 2, kItems = kPipes + kEfds;
  int E = a.epoll_create1(0);
  ASSERT_GE(E, 0);
  int rd[kItems], wr[kItems];
  for (int i = 0; i < kPipes; ++i) {
    int p[2];
    ASSERT_EQ(a.pipe2(p, O_NONBLOCK), 0);
    rd[i] = p[0];
    wr[i] = p[1];
  }
  for (int i = kPipes; i < kItems; ++i) ASSERT_GE(rd[i] = wr[i] = a.eventfd(0, EFD_NONBLOCK), 0);
  for (int i = 0; i < kItems; ++i) {
    struct epoll_event ev {};
    ev.events = EPOLLIN | (oneshot ? EPOLLONESHOT : EPOLLET);
    ev.data.u64 = static_cast<uint64_t>(i);
    ASSERT_EQ(a.epoll_ctl(E, EPOLL_CTL_ADD, rd[i], &ev), 0);
  }
  std::atomic<long> produced{0}, consumed{0};
  std::atomic<int> producers_left{2};
  std::atomic<int> in_service[kItems];
  for (auto& x : in_service) x.store(0);
  const auto end = Clock::now() + std::chrono::duration<double>(scenario_seconds());
  std::atomic<bool> drained{false};
  Clock::time_point give_up{};
  std::mutex give_up_mu;
  std::vector<std::thread> ts;
  auto t0 = Clock::now();
  for (int p = 0; p < 2; ++p) {
    ts.emplace_back([&, p] {
      rel::Rng r(77 + p);
      while (Clock::now() < end) {
        int i = static_cast<int>(r.below(kItems));
        if (i < kPipes) {
          char b[4] = {1, 1, 1, 1};
          int n = 1 + static_cast<int>(r.below(4));
          ssize_t w = a.write(wr[i], b, static_cast<size_t>(n));
          if (w > 0) produced += w;
          else if (errno != EAGAIN) fl.add("pipe write " + rel::errno_name(errno));
        } else {
          uint64_t v = 1 + r.below(3);
          if (a.write(wr[i], &v, 8) == 8) produced += static_cast<long>(v);
          else fl.add("eventfd write " + rel::errno_name(errno));
        }
        if (r.chance(10)) std::this_thread::yield();
      }
      producers_left--;
    });
  }
  for (int c = 0; c < 3; ++c) {
    ts.emplace_back([&] {
      while (!drained.load()) {
        struct epoll_event evs[3];
        int rc = a.epoll_wait(E, evs, 3, 5);
        if (rc < 0) {
          fl.add("wait " + rel::errno_name(errno));
          return;
        }
        for (int k = 0; k < rc; ++k) {
          int i = static_cast<int>(evs[k].data.u64);
          if (oneshot && in_service[i].exchange(1) != 0)
            fl.add("ONESHOT item " + std::to_string(i) + " delivered twice before re-arm");
          // Drain to EAGAIN (the ET contract).
          for (;;) {
            if (i < kPipes) {
              char b[64];
              ssize_t n = a.read(rd[i], b, sizeof b);
              if (n > 0) {
                consumed += n;
                continue;
              }
              if (n < 0 && errno != EAGAIN) fl.add("pipe read " + rel::errno_name(errno));
            } else {
              uint64_t v;
              ssize_t n = a.read(rd[i], &v, 8);
              if (n == 8) {
                consumed += static_cast<long>(v);
                continue;
              }
              if (n < 0 && errno != EAGAIN) fl.add("efd read " + rel::errno_name(errno));
            }
            break;
          }
          if (oneshot) {
            in_service[i].store(0);
            struct epoll_event ev {};
            ev.events = EPOLLIN | EPOLLONESHOT;
            ev.data.u64 = static_cast<uint64_t>(i);
            if (a.epoll_ctl(E, EPOLL_CTL_MOD, rd[i], &ev) != 0) fl.add("MOD re-arm " + rel::errno_name(errno));
          }
        }
        if (producers_left.load() == 0 && consumed.load() == produced.load()) drained = true;
        if (producers_left.load() == 0) {
          std::lock_guard<std::mutex> g(give_up_mu);
          if (give_up == Clock::time_point{}) give_up = Clock::now() + std::chrono::seconds(3);
          if (Clock::now() > give_up) return;  // lost wakeup: data left, nobody woken
        }
      }
    });
  }
  for (auto& t : ts) t.join();
  g_thread_ms += 5 * std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
  if (consumed.load() != produced.load())
    fl.add("conservation broken: produced " + std::to_string(produced.load()) + ", consumed " +
           std::to_string(consumed.load()) + " (an edge was lost: data left unread with no event)");
  *moved = produced.load();
  for (int i = 0; i < kPipes; ++i) {
    a.close(rd[i]);
    a.close(wr[i]);
  }
  for (int i = kPipes; i < kItems; ++i) a.close(rd[i]);
  a.close(E);
}

TEST_P(Torture, EdgeTriggeredConservation) {
  Failures fl;
  long moved = 0;
  conservation(api(), false, fl, &moved);
  EXPECT_EQ(fl.count.load(), 0) << fl.all();
  std::printf("[torture %s] ET conservation: %ld units moved\n", api().name, moved);
}

TEST_P(Torture, OneshotConservation) {
  Failures fl;
  long moved = 0;
  conservation(api(), true, fl, &moved);
  EXPECT_EQ(fl.count.load(), 0) << fl.all();
  std::printf("[torture %s] ONESHOT conservation: %ld units moved\n", api().name, moved);
}

}  // namespace
