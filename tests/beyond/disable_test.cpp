// disable_test.cpp - UEP_EPOLL_CTL_DISABLE: its contract, and a torture test
// of the use it exists for (threads waiting, handling, disabling and freeing
// connections; run under ASan to catch a use after free).
#include <uepoll/uepoll.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

namespace {

struct Ev {
  int ret, err;
};

int ctl(int ep, int op, int fd, uint32_t events, uint64_t data) {
  struct epoll_event e{};
  e.events = events;
  e.data.u64 = data;
  return uep_epoll_ctl(ep, op, fd, &e);
}

int disable(int ep, int fd) { return uep_epoll_ctl(ep, UEP_EPOLL_CTL_DISABLE, fd, nullptr); }

TEST(Disable, Contract) {
  const int ep = uep_epoll_create1(0);
  const int a = uep_eventfd(0, EFD_NONBLOCK), b = uep_eventfd(0, EFD_NONBLOCK);
  struct epoll_event out[4];
  // Not registered: ENOENT; not ONESHOT: EINVAL; bad fds: EBADF.
  EXPECT_EQ(disable(ep, a), -1);
  EXPECT_EQ(errno, ENOENT);
  ASSERT_EQ(ctl(ep, EPOLL_CTL_ADD, b, EPOLLIN, 2), 0);
  EXPECT_EQ(disable(ep, b), -1);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(disable(ep, UEP_FD_BASE + 99999), -1);
  EXPECT_EQ(errno, EBADF);
  EXPECT_EQ(disable(UEP_FD_BASE + 99999, a), -1);
  EXPECT_EQ(errno, EBADF);
  EXPECT_EQ(disable(a, b), -1);  // epfd not an instance
  EXPECT_EQ(errno, EINVAL);
  // A kernel instance does not know the op: Linux copies the event first
  // (EFAULT for NULL), then EINVAL.
  const int kep = ::epoll_create1(0), kfd = ::eventfd(0, 0);
  struct epoll_event ke{EPOLLIN | EPOLLONESHOT, {}};
  ASSERT_EQ(::epoll_ctl(kep, EPOLL_CTL_ADD, kfd, &ke), 0);
  EXPECT_EQ(uep_epoll_ctl(kep, UEP_EPOLL_CTL_DISABLE, kfd, nullptr), -1);
  EXPECT_EQ(errno, EFAULT);
  EXPECT_EQ(uep_epoll_ctl(kep, UEP_EPOLL_CTL_DISABLE, kfd, &ke), -1);
  EXPECT_EQ(errno, EINVAL);
  ::close(kep);
  ::close(kfd);
  ASSERT_EQ(ctl(ep, EPOLL_CTL_DEL, b, 0, 0), 0);

  // Armed, not ready: 0, and the event never comes.
  ASSERT_EQ(ctl(ep, EPOLL_CTL_ADD, a, EPOLLIN | EPOLLONESHOT, 1), 0);
  EXPECT_EQ(disable(ep, a), 0);
  uint64_t one = 1;
  ASSERT_EQ(uep_write(a, &one, 8), 8);
  EXPECT_EQ(uep_epoll_wait(ep, out, 4, 0), 0);
  // Disabled already counts as delivered: EBUSY.
  EXPECT_EQ(disable(ep, a), -1);
  EXPECT_EQ(errno, EBUSY);
  // Re-armed while ready: queued; disable takes it off the ready list.
  ASSERT_EQ(ctl(ep, EPOLL_CTL_MOD, a, EPOLLIN | EPOLLONESHOT, 1), 0);
  EXPECT_EQ(disable(ep, a), 0);
  EXPECT_EQ(uep_epoll_wait(ep, out, 4, 0), 0);
  // Delivered since armed: EBUSY.
  ASSERT_EQ(ctl(ep, EPOLL_CTL_MOD, a, EPOLLIN | EPOLLONESHOT, 1), 0);
  ASSERT_EQ(uep_epoll_wait(ep, out, 4, 0), 1);
  EXPECT_EQ(disable(ep, a), -1);
  EXPECT_EQ(errno, EBUSY);
  // fdinfo shows the disarmed mask (private bits only) as Linux's would.
  char buf[512];
  ASSERT_GT(uep_fdinfo(ep, buf, sizeof buf), 0);
  EXPECT_NE(std::string(buf).find("events: 40000000"), std::string::npos) << buf;
  uep_close(a);
  uep_close(b);
  uep_close(ep);
}

// Connections handled by several threads with EPOLLONESHOT, freed by a
// closer that uses DISABLE, with the RFC's protocol: the closer marks the
// connection closing and disables it; on 0 it frees it, on EBUSY the worker
// holding the event frees it instead of re-arming.  `mu` makes "check
// closing, then re-arm" atomic against "mark closing, then disable" (without
// it a re-arm could slip between the two and leave the connection to
// nobody).  Any event for a freed connection is a use after free of `Conn`.
struct Conn {
  static constexpr uint64_t kMagic = 0xC0FFEE1234567890ULL;
  uint64_t magic = kMagic;
  int fd = -1;
  std::mutex mu;
  bool closing = false;  // guarded by mu
};

TEST(Disable, TortureNoUseAfterFree) {
  const int ep = uep_epoll_create1(0);
  ASSERT_GE(ep, 0);
  constexpr int kConns = 64, kWorkers = 4;
  std::mutex mu;  // guards slots
  std::vector<Conn*> slots(kConns, nullptr);
  std::atomic<bool> stop{false};
  std::atomic<long> freed_by_closer{0}, freed_by_worker{0}, events{0};

  auto open_conn = [&](int i) {
    Conn* c = new Conn;
    c->fd = uep_eventfd(0, EFD_NONBLOCK);
    ASSERT_GE(c->fd, 0);
    slots[i] = c;
    struct epoll_event e{EPOLLIN | EPOLLONESHOT, {}};
    e.data.ptr = c;
    ASSERT_EQ(uep_epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &e), 0);
  };
  auto free_conn = [&](Conn* c) {
    ASSERT_EQ(c->magic, Conn::kMagic);
    ASSERT_EQ(uep_epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, nullptr), 0);
    uep_close(c->fd);
    c->magic = 0;
    delete c;
  };
  {
    std::lock_guard<std::mutex> g(mu);
    for (int i = 0; i < kConns; ++i) open_conn(i);
  }

  std::vector<std::thread> threads;
  for (int w = 0; w < kWorkers; ++w) {
    threads.emplace_back([&] {
      struct epoll_event out[4];
      while (!stop.load(std::memory_order_relaxed)) {
        const int n = uep_epoll_wait(ep, out, 4, 10);
        for (int k = 0; k < n; ++k) {
          Conn* c = static_cast<Conn*>(out[k].data.ptr);
          ASSERT_EQ(c->magic, Conn::kMagic);  // ASan: heap-use-after-free here
          events.fetch_add(1, std::memory_order_relaxed);
          uint64_t v;
          uep_read(c->fd, &v, 8);
          std::unique_lock<std::mutex> g(c->mu);
          if (c->closing) {
            g.unlock();
            free_conn(c);  // we hold its event: ours to free
            freed_by_worker.fetch_add(1);
            continue;
          }
          struct epoll_event e{EPOLLIN | EPOLLONESHOT, {}};
          e.data.ptr = c;
          ASSERT_EQ(uep_epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &e), 0);
          // Not ours any more once re-armed: c is not touched after this.
        }
      }
    });
  }
  // Producer: writes to random live connections (by descriptor number; a
  // stale number hits a closed or reused eventfd, which is harmless).
  threads.emplace_back([&] {
    std::mt19937 rng(1);
    std::vector<int> fds;
    while (!stop.load(std::memory_order_relaxed)) {
      {
        std::lock_guard<std::mutex> g(mu);
        fds.clear();
        for (Conn* c : slots)
          if (c) fds.push_back(c->fd);
      }
      for (int k = 0; k < 32 && !fds.empty(); ++k) {
        uint64_t one = 1;
        uep_write(fds[rng() % fds.size()], &one, 8);
      }
      std::this_thread::yield();
    }
  });
  // Closer: requests closes, frees what DISABLE hands it, opens new ones.
  std::mt19937 rng(2);
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(1500);
  long requests = 0;
  while (std::chrono::steady_clock::now() < end) {
    std::lock_guard<std::mutex> g(mu);
    const int i = static_cast<int>(rng() % kConns);
    Conn* c = slots[i];
    int r;
    {
      std::lock_guard<std::mutex> cg(c->mu);
      c->closing = true;
      // Make it ready first, so that a worker is often harvesting it at the
      // moment of the disable (the race the contract is about).
      uint64_t one = 1;
      uep_write(c->fd, &one, 8);
      for (unsigned spin = rng() % 2000; spin > 0; --spin) std::atomic_signal_fence(std::memory_order_seq_cst);
      r = disable(ep, c->fd);
      ASSERT_TRUE(r == 0 || errno == EBUSY) << errno;
    }
    if (r == 0) {
      free_conn(c);  // no worker holds its event, and none will get it
      freed_by_closer.fetch_add(1);
    }  // else the worker holding its event frees it (c is not touched again)
    ++requests;
    open_conn(i);  // the slot gets a new connection either way
  }
  stop.store(true);
  for (auto& t : threads) t.join();
  EXPECT_GT(freed_by_closer.load(), 0);
  EXPECT_GT(events.load(), 0);
  std::printf("close requests %ld, freed by closer %ld, by workers %ld, events %ld\n", requests,
              freed_by_closer.load(), freed_by_worker.load(), events.load());
  // Every connection marked closing was freed by the closer or by the
  // worker that held its event; the ones still in their slots are idle.
  for (Conn* c : slots) free_conn(c);
  uep_close(ep);
}

}  // namespace
