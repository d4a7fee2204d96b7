// scenarios_wait.cpp - the wait-path scenario family of uepoll-bench (split out
// of scenarios.cpp): nested-wait (2017 ep_call_nested removal), stress (2020,
// Roman Penyaev's stress-epoll) and herd (2020, selftest epoll60).  Each
// scenario is written once against a Backend and checks what the calls return.
// Takes no uepoll lock of its own.
#include "scenario_util.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace uepoll_bench {

using namespace sc;

namespace {
// -------------------------------------------------------------- nested-wait
// Seed (2017, epoll-test.c): T threads call epoll_wait(top, timeout 0) where
// top watches mid which watches an eventfd that stays readable (LT, never
// read).  "shared": one chain for all threads; "private": one per thread.
//
//   top -> mid -> efd(readable)
RunFn nested_wait(const Backend& b, bool shared, int threads, Budget bud) {
  return [&b, shared, threads, bud](bool warmup) {
    Budget use = warmup ? bud.scaled(0.1) : bud;
    Fds fds(b);
    int chains = shared ? 1 : threads;
    std::vector<int> top(chains);
    for (int i = 0; i < chains; ++i) {
      int efd = fds.eventfd(1);
      int mid = fds.epoll();
      top[i] = fds.epoll();
      ctl(b, mid, EPOLL_CTL_ADD, efd, EPOLLIN);
      ctl(b, top[i], EPOLL_CTL_ADD, mid, EPOLLIN);
    }
    return timed_workers(b, threads, [&](int i) {
      Stopper st(use);
      int ep = top[shared ? 0 : i];
      const Api& a = *b;
      struct epoll_event ev[4];
      uint64_t n = 0;
      while (st.more(n)) {
        for (uint64_t k = 0; k < kBatch; ++k) {
          int r = a.epoll_wait(ep, ev, 4, 0);
          if (r != 1) {
            if (r < 0) fail(b, "epoll_wait(top)", errno);
            fail_msg(b, "epoll_wait(top) returned " + std::to_string(r) + ", Linux returns 1");
          }
        }
        n += kBatch;
      }
      return n;
    });
  };
}

}  // namespace

std::vector<Case> nested_wait_cases(const Options& o) {
  std::vector<Case> out;
  std::vector<std::string> topo =
      o.topologies.empty() ? std::vector<std::string>{"shared", "private"} : o.topologies;
  Budget bud = budget(o, 300000, 30000);
  for (const auto& t : topo) {
    bool shared = t == "shared";
    for (int n : thread_list(o, {1, 2, 4})) {
      Case c;
      c.scenario = "nested-wait";
      c.group = t;
      c.label = t + " T=" + std::to_string(n);
      c.x_name = "threads";
      c.x = n;
      c.unit = "waits/s";
      c.knob = "lockless_nested_poll";
      c.target = "CPU/wait <= 64x ready-check floor";
      c.why = "20x Linux where set (1.1 us syscalls); one wait, two levels";
      c.floor_name = "wait";
      c.floor_k = 64;
      c.linux_syscalls = 1;  // epoll_wait on the top instance
      c.prepare = [shared, n, bud](const Backend& b) { return nested_wait(b, shared, n, bud); };
      out.push_back(std::move(c));
    }
  }
  return out;
}

// Issue 11: waiters sharing one topology scale (the read-mostly path).
std::vector<Check> nested_wait_checks(const std::vector<CaseResult>& rs) {
  return two_over_one_checks(rs, "nested-wait", "shared", 1.6);
}

namespace {

// ------------------------------------------------------------------- stress
// Seed (2020, stress-epoll): P producers each write their own level-triggered
// eventfd as fast as they can; C consumers wait on the one instance
// (maxevents 64) and read every ready eventfd they are given (several
// consumers, as Roman Penyaev's stress-epoll had, so that waking the
// instance's sleepers is on the path).  events/ms counts producer writes.  The
// values read must add up to the writes made: none may be lost.
RunFn stress(const Backend& b, int producers, int consumers, Budget bud) {
  return [&b, producers, consumers, bud](bool warmup) {
    Budget use = warmup ? bud.scaled(0.1) : bud;
    // The count is the total number of writes, split across producers.
    use.count = std::max<uint64_t>(1, use.count / static_cast<uint64_t>(producers));
    Fds fds(b);
    int ep = fds.epoll();
    std::vector<int> efd(producers);
    for (int i = 0; i < producers; ++i) {
      efd[i] = fds.eventfd();
      ctl(b, ep, EPOLL_CTL_ADD, efd[i], EPOLLIN, static_cast<uint64_t>(i));
    }
    std::vector<uint64_t> written(producers, 0);
    std::atomic<int> finished{0};
    std::atomic<uint64_t> consumed{0};
    KnobGuard knob(b);
    double cpu = 0;
    double secs = run_threads(producers + consumers, [&](int i) {
      const Api& a = *b;
      if (i < producers) {
        Stopper st(use);
        uint64_t one = 1, n = 0;
        while (st.more(n)) {
          for (uint64_t k = 0; k < kBatch; ++k)
            if (a.write(efd[i], &one, sizeof one) != sizeof one) fail(b, "write(eventfd)", errno);
          n += kBatch;
        }
        written[i] = n;
        finished.fetch_add(1, std::memory_order_release);
        return;
      }
      struct epoll_event ev[64];
      uint64_t mine = 0;
      for (;;) {
        bool all_done = finished.load(std::memory_order_acquire) == producers;
        int r = a.epoll_wait(ep, ev, 64, all_done ? 0 : 10);
        if (r < 0) {
          if (errno == EINTR) continue;
          fail(b, "epoll_wait", errno);
        }
        if (r == 0 && all_done) break;
        for (int k = 0; k < r; ++k) {
          uint64_t v = 0;
          ssize_t got = a.read(efd[ev[k].data.u64], &v, sizeof v);
          if (got == sizeof v) mine += v;
          else if (!(got < 0 && errno == EAGAIN)) fail(b, "read(eventfd)", errno);
        }
      }
      consumed.fetch_add(mine, std::memory_order_relaxed);
    }, &cpu);
    uint64_t total = 0;
    for (auto w : written) total += w;
    if (consumed.load() != total)
      fail_msg(b, "stress: consumers read " + std::to_string(consumed.load()) + " of " + std::to_string(total) +
                      " writes");
    Sample s;
    s.value = static_cast<double>(total) / (secs * 1000.0);
    s.extra["cpu_ns/event"] = cpu * 1e9 / static_cast<double>(total);
    return s;
  };
}

}  // namespace

std::vector<Case> stress_cases(const Options& o) {
  std::vector<Case> out;
  std::vector<int> ps = o.producers.empty() ? std::vector<int>{8, 16} : o.producers;
  std::vector<int> cs = o.consumers.empty() ? std::vector<int>{1, 4} : o.consumers;
  Budget bud;
  bud.count = o.writes ? o.writes : (o.quick ? 200000 : 2000000);
  bud.duration = o.duration;
  for (int cn : cs) {
    for (int p : ps) {
      Case c;
      c.scenario = "stress";
      c.group = "C=" + std::to_string(cn);
      c.label = "P=" + std::to_string(p) + " C=" + std::to_string(cn);
      c.x_name = "producers";
      c.x = p;
      c.unit = "events/ms";
      c.knob = "exclusive_autoremove";
      c.target = "CPU/event <= 128x hash floor";
      c.why = "an event: a write that wakes the instance, a share of a wait, a read";
      c.floor_name = "hash";
      c.floor_k = 128;
      c.prepare = [p, cn, bud](const Backend& b) { return stress(b, p, cn, bud); };
      out.push_back(std::move(c));
    }
  }
  return out;
}

namespace {

// --------------------------------------------------------------------- herd
// Seed (2020, selftest epoll60): W waiter threads block in epoll_wait with
// maxevents 1 on ONE instance holding W edge-triggered eventfds; a main thread
// fires all W at once, R rounds.  A round ends when W events were consumed, or
// after the round timeout; events still missing at the end are lost wakeups.
RunFn herd(const Backend& b, int waiters, uint64_t rounds, std::chrono::milliseconds duration) {
  return [&b, waiters, rounds, duration](bool warmup) {
    const uint64_t want_rounds = warmup ? std::max<uint64_t>(1, rounds / 10) : rounds;
    const auto run_for = warmup && duration.count() > 0
                             ? std::max(std::chrono::milliseconds(1), duration / 10)
                             : duration;
    const auto round_timeout = std::chrono::milliseconds(1000);
    Fds fds(b);
    int ep = fds.epoll();
    std::vector<int> efd(waiters);
    for (int i = 0; i < waiters; ++i) {
      efd[i] = fds.eventfd();
      ctl(b, ep, EPOLL_CTL_ADD, efd[i], EPOLLIN | EPOLLET, static_cast<uint64_t>(i));
    }
    KnobGuard knob(b);
    std::atomic<bool> stop{false};
    std::atomic<uint64_t> consumed{0};
    std::atomic<int> alive{0};
    std::vector<uint64_t> wakeups(waiters, 0);
    std::mutex err_mu;
    std::string err;  // guarded by err_mu
    std::vector<std::thread> th;
    for (int i = 0; i < waiters; ++i) {
      alive.fetch_add(1);
      th.emplace_back([&, i] {
        struct epoll_event ev {};
        for (;;) {
          int r = b->epoll_wait(ep, &ev, 1, -1);
          if (stop.load(std::memory_order_acquire)) break;
          if (r == 1) {
            ++wakeups[i];
            consumed.fetch_add(1, std::memory_order_acq_rel);
          } else if (r < 0 && errno != EINTR) {
            int e = errno;
            std::lock_guard<std::mutex> lk(err_mu);
            if (err.empty()) err = std::string("epoll_wait: ") + std::strerror(e);
            break;
          }
        }
        alive.fetch_sub(1);
      });
    }
    // Let the waiters reach epoll_wait before the first round.
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    uint64_t fired = 0, done_rounds = 0, timeouts = 0;
    auto t0 = Clock::now();
    auto end = t0 + run_for;
    for (;;) {
      if (run_for.count() > 0 ? Clock::now() >= end : done_rounds >= want_rounds) break;
      uint64_t base = consumed.load(std::memory_order_acquire);
      for (int i = 0; i < waiters; ++i) write1(b, efd[i]);
      fired += static_cast<uint64_t>(waiters);
      auto deadline = Clock::now() + round_timeout;
      bool timed_out = false;
      while (consumed.load(std::memory_order_acquire) - base < static_cast<uint64_t>(waiters)) {
        if (Clock::now() >= deadline) {
          timed_out = true;
          break;
        }
        std::this_thread::yield();
      }
      ++done_rounds;
      if (timed_out && ++timeouts >= 3) break;  // do not spend R seconds on a broken run
    }
    auto t1 = Clock::now();
    // Events that arrive late still count as delivered.
    auto settle = Clock::now() + std::chrono::milliseconds(timeouts ? 200 : 0);
    while (consumed.load() < fired && Clock::now() < settle) std::this_thread::yield();
    uint64_t got = consumed.load();
    stop.store(true, std::memory_order_release);
    while (alive.load() > 0) {
      for (int i = 0; i < waiters; ++i) write1(b, efd[i]);
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    for (auto& t : th) t.join();
    if (!err.empty()) fail_msg(b, "herd waiter: " + err);
    double secs = std::chrono::duration<double>(t1 - t0).count();
    Sample s;
    s.value = static_cast<double>(done_rounds) / secs;
    s.extra["lost"] = static_cast<double>(fired > got ? fired - got : 0);
    s.extra["timeouts"] = static_cast<double>(timeouts);
    auto [mn, mx] = std::minmax_element(wakeups.begin(), wakeups.end());
    s.extra["wake_min"] = static_cast<double>(*mn);
    s.extra["wake_max"] = static_cast<double>(*mx);
    return s;
  };
}

}  // namespace

std::vector<Case> herd_cases(const Options& o) {
  std::vector<Case> out;
  uint64_t rounds = o.rounds ? o.rounds : (o.count ? o.count : (o.quick ? 2000 : 20000));
  for (int w : thread_list(o, {2, 4, 8})) {
    Case c;
    c.scenario = "herd";
    c.group = "herd";
    c.label = "W=" + std::to_string(w);
    c.x_name = "waiters";
    c.x = w;
    c.unit = "rounds/s";
    c.knob = "exclusive_autoremove";
    c.target = "uepoll 0 lost, >= 1.5x Linux";
    c.why = "both wake W sleeping threads through the kernel each round";
    c.pass = [](double l, double u, const std::map<std::string, double>& ex) {
      auto lost = ex.find("lost");
      return ratio_at_least(l, u, 1.5) && lost != ex.end() && lost->second == 0;
    };
    auto dur = o.duration;
    c.prepare = [w, rounds, dur](const Backend& b) { return herd(b, w, rounds, dur); };
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace uepoll_bench
