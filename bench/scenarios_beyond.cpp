// scenarios_beyond.cpp - uepoll-bench scenarios for issue 10's extensions:
//   busy-herd      herd (W waiters, one instance, W ET eventfds fired at
//                  once) with EPIOCSPARAMS busy_poll_usecs 0 / 10 / 50
//   busy-pingpong  two threads bounce one event through two instances, same
//                  busy-poll values; rounds/s, round-trip p50/p99, CPU and
//                  sleeps per round; with no busy poll also both threads on
//                  one CPU (the CPU cost alone, with no cross-CPU wakeup);
//                  and at 0 / 50 us with kernel eventfds in both backends'
//                  instances (uepoll's spin polls its kernel side)
//   rr-dist        N idle workers, each with its own instance, watch one
//                  eventfd with EPOLLEXCLUSIVE (| UEP_EPOLLROUNDROBIN); one
//                  event at a time; the largest and smallest share
//   ctl-batch      T threads re-arm 64 ONESHOT eventfds each on one shared
//                  instance: 64 single epoll_ctl calls against one
//                  uep_epoll_ctl_batch of 64
// Linux runs the same code (the ioctl is Linux's own; on eventfds it has no
// effect; a kernel instance refuses the round-robin bit, so Linux's row is
// plain EPOLLEXCLUSIVE; the batch is one epoll_ctl(2) per command).
#include "harness.h"

#include <uepoll/uepoll.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>

namespace uepoll_bench {
namespace {

// Descriptors of one run, closed through the backend that made them.
struct Owned {
  const Backend& b;
  std::vector<int> fds;
  explicit Owned(const Backend& be) : b(be) {}
  ~Owned() {
    for (auto it = fds.rbegin(); it != fds.rend(); ++it) b->close(*it);
  }
  int keep(int fd, const char* what) {
    fds.push_back(must(fd, b, what));
    return fd;
  }
};

void add(const Backend& b, int ep, int fd, uint32_t events, uint64_t data) {
  struct epoll_event ev {};
  ev.events = events;
  ev.data.u64 = data;
  if (b->epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) != 0) fail(b, "epoll_ctl(ADD)", errno);
}

void post(const Backend& b, int fd) {
  uint64_t one = 1;
  if (b->write(fd, &one, sizeof one) != sizeof one) fail(b, "write(eventfd)", errno);
}

void set_busy_poll(const Backend& b, int ep, unsigned usecs) {
  struct epoll_params p {};
  p.busy_poll_usecs = usecs;
  if (uep_ioctl(ep, EPIOCSPARAMS, &p) != 0) fail(b, "ioctl(EPIOCSPARAMS)", errno);
}

double percentile(std::vector<double>& v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(p * static_cast<double>(v.size() - 1))];
}

uint64_t rounds_of(const Options& o, uint64_t full, uint64_t quick) {
  if (o.rounds) return o.rounds;
  if (o.count) return o.count;
  return o.quick ? quick : full;
}

void latency_extras(Sample& s, std::vector<double>& lat_us) {
  s.extra["p50_us"] = percentile(lat_us, 0.50);
  s.extra["p99_us"] = percentile(lat_us, 0.99);
}

// ------------------------------------------------------------------ busy-herd
RunFn busy_herd(const Backend& b, int waiters, unsigned bp, uint64_t rounds) {
  return [&b, waiters, bp, rounds](bool warmup) {
    const uint64_t want = warmup ? std::max<uint64_t>(1, rounds / 10) : rounds;
    Owned fds(b);
    const int ep = fds.keep(b->epoll_create1(0), "epoll_create1");
    set_busy_poll(b, ep, bp);
    std::vector<int> efd(waiters);
    for (int i = 0; i < waiters; ++i) {
      efd[i] = fds.keep(b->eventfd(0, EFD_NONBLOCK), "eventfd");
      add(b, ep, efd[i], EPOLLIN | EPOLLET, static_cast<uint64_t>(i));
    }
    std::atomic<bool> stop{false};
    std::atomic<uint64_t> consumed{0};
    std::vector<std::thread> th;
    for (int i = 0; i < waiters; ++i) {
      th.emplace_back([&] {
        struct epoll_event ev {};
        while (!stop.load(std::memory_order_acquire))
          if (b->epoll_wait(ep, &ev, 1, 100) == 1) consumed.fetch_add(1, std::memory_order_acq_rel);
      });
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    std::vector<double> lat;
    lat.reserve(want);
    uint64_t lost = 0;
    const auto t0 = Clock::now();
    for (uint64_t r = 0; r < want; ++r) {
      const uint64_t base = consumed.load(std::memory_order_acquire);
      const auto r0 = Clock::now();
      for (int i = 0; i < waiters; ++i) post(b, efd[i]);
      const auto deadline = r0 + std::chrono::seconds(1);
      while (consumed.load(std::memory_order_acquire) - base < static_cast<uint64_t>(waiters)) {
        if (Clock::now() > deadline) {
          ++lost;
          break;
        }
      }
      lat.push_back(std::chrono::duration<double, std::micro>(Clock::now() - r0).count());
    }
    const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
    stop.store(true, std::memory_order_release);
    for (auto& t : th) t.join();
    Sample s;
    s.value = static_cast<double>(want) / secs;
    latency_extras(s, lat);
    s.extra["timeouts"] = static_cast<double>(lost);
    return s;
  };
}

// -------------------------------------------------------------- busy-pingpong
// The calling thread's CPU seconds and voluntary context switches (sleeps).
struct ThreadUsage {
  double cpu = 0;
  double sleeps = 0;
  static ThreadUsage now() {
    ThreadUsage u;
    u.cpu = thread_cpu_seconds();
    struct rusage ru{};
    if (getrusage(RUSAGE_THREAD, &ru) == 0) u.sleeps = static_cast<double>(ru.ru_nvcsw);
    return u;
  }
  ThreadUsage since(const ThreadUsage& start) const { return {cpu - start.cpu, sleeps - start.sleeps}; }
};

// Pins the calling thread to the CPU it runs on (threads it creates inherit
// that) and restores its affinity when it ends.  Nothing when `on` is false
// or the affinity cannot be read or set.
class PinToOneCpu {
 public:
  explicit PinToOneCpu(bool on) {
    if (!on || pthread_getaffinity_np(pthread_self(), sizeof old_, &old_) != 0) return;
    const int cpu = sched_getcpu();
    if (cpu < 0) return;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    pinned_ = pthread_setaffinity_np(pthread_self(), sizeof one, &one) == 0;
  }
  ~PinToOneCpu() {
    if (pinned_) pthread_setaffinity_np(pthread_self(), sizeof old_, &old_);
  }
  PinToOneCpu(const PinToOneCpu&) = delete;
  PinToOneCpu& operator=(const PinToOneCpu&) = delete;

 private:
  cpu_set_t old_{};
  bool pinned_ = false;
};

// kernel_fds: both backends bounce the event through kernel eventfds
// (read and written with the system calls themselves).
RunFn busy_pingpong(const Backend& b, unsigned bp, uint64_t rounds, bool one_cpu, bool kernel_fds) {
  return [&b, bp, rounds, one_cpu, kernel_fds](bool warmup) {
    const uint64_t want = warmup ? std::max<uint64_t>(1, rounds / 10) : rounds;
    PinToOneCpu pin(one_cpu);
    Owned fds(b);
    const int epa = fds.keep(b->epoll_create1(0), "epoll_create1");
    const int epb = fds.keep(b->epoll_create1(0), "epoll_create1");
    auto make_eventfd = [&] { return kernel_fds ? ::eventfd(0, EFD_NONBLOCK) : b->eventfd(0, EFD_NONBLOCK); };
    const int efa = fds.keep(make_eventfd(), "eventfd");
    const int efb = fds.keep(make_eventfd(), "eventfd");
    auto post = [&](int fd) {
      const uint64_t one = 1;
      const ssize_t n = kernel_fds ? ::write(fd, &one, sizeof one) : b->write(fd, &one, sizeof one);
      if (n != sizeof one) fail(b, "write(eventfd)", errno);
    };
    auto drain = [&](int fd) {
      uint64_t v;
      return kernel_fds ? ::read(fd, &v, sizeof v) : b->read(fd, &v, sizeof v);
    };
    set_busy_poll(b, epa, bp);
    set_busy_poll(b, epb, bp);
    add(b, epa, efa, EPOLLIN, 1);
    add(b, epb, efb, EPOLLIN, 2);
    std::atomic<bool> stop{false};
    ThreadUsage peer_use;
    std::thread peer([&] {
      const ThreadUsage start = ThreadUsage::now();
      struct epoll_event ev {};
      for (;;) {
        if (b->epoll_wait(epb, &ev, 1, -1) != 1) continue;
        if (stop.load(std::memory_order_acquire)) break;
        drain(efb);
        post(efa);
      }
      peer_use = ThreadUsage::now().since(start);
    });
    std::vector<double> lat;
    lat.reserve(want);
    struct epoll_event ev {};
    const ThreadUsage start = ThreadUsage::now();
    const auto t0 = Clock::now();
    for (uint64_t r = 0; r < want; ++r) {
      const auto r0 = Clock::now();
      post(efb);
      while (b->epoll_wait(epa, &ev, 1, -1) != 1) {
      }
      drain(efa);
      lat.push_back(std::chrono::duration<double, std::micro>(Clock::now() - r0).count());
    }
    const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
    const ThreadUsage mine = ThreadUsage::now().since(start);
    stop.store(true, std::memory_order_release);
    post(efb);
    peer.join();
    Sample s;
    s.value = static_cast<double>(want) / secs;
    latency_extras(s, lat);
    // Both threads; the peer's count includes its wait for the stop.
    const double n = static_cast<double>(want);
    s.extra["cpu_ns/op"] = (mine.cpu + peer_use.cpu) * 1e9 / n;
    s.extra["sleeps/round"] = (mine.sleeps + peer_use.sleeps) / n;
    return s;
  };
}

std::vector<Case> busy_cases(const Options& o, bool herd) {
  std::vector<Case> out;
  const uint64_t rounds = rounds_of(o, 20000, 2000);
  const std::vector<int> ws = herd ? (o.threads.empty() ? std::vector<int>{4} : o.threads) : std::vector<int>{2};
  for (int w : ws) {
    // busy-pingpong also runs with no busy poll and both threads on one
    // CPU, and through kernel eventfds without and with the window.
    struct Variant {
      unsigned bp;
      bool one_cpu;
      bool kernel_fds;
    };
    std::vector<Variant> variants{{0, false, false}, {10, false, false}, {50, false, false}};
    if (!herd) {
      variants.push_back({0, true, false});
      variants.push_back({0, false, true});
      variants.push_back({50, false, true});
    }
    for (const Variant& v : variants) {
      const unsigned bp = v.bp;
      const bool one_cpu = v.one_cpu, kernel_fds = v.kernel_fds;
      Case c;
      c.scenario = herd ? "busy-herd" : "busy-pingpong";
      c.group = "bp=" + std::to_string(bp) + "us" + (one_cpu ? " 1 CPU" : "") + (kernel_fds ? " kernel fds" : "");
      c.label = (herd ? "W=" + std::to_string(w) + " " : std::string()) + c.group;
      c.x_name = herd ? "waiters" : "threads";
      c.x = w;
      c.unit = "rounds/s";
      auto judge = [&c](const char* target, const char* why, double k, bool by_cpu) {
        c.target = target;
        c.why = why;
        c.by_cpu = by_cpu;
        c.pass = [k](double l, double u, const std::map<std::string, double>&) { return l > 0 && u / l >= k; };
      };
      if (bp == 50 && kernel_fds)
        judge("uepoll >= 3x Linux",
              "a spin that polls the kernel side replaces the kernel's wakeup; Linux's window spins on NAPI queues only",
              3, false);
      else if (kernel_fds)
        judge("uepoll >= 0.9x Linux in CPU/op",
              "the same system calls on both: the kernel-fds wakeup row with this scenario's p99 and sleeps", 0.9, true);
      else if (bp == 50)
        judge("uepoll >= 3x Linux, p99 <= 1/3 Linux's",
              "a spin replaces the kernel's wakeup, whose cost is the futex floor", 3, false);
      else if (one_cpu)
        judge("uepoll >= 1.0x Linux in CPU/op",
              "a blocking round trip with nothing but the two threads' own work on the CPU", 1.0, true);
      c.prepare = [herd, w, bp, rounds, one_cpu, kernel_fds](const Backend& b) {
        return herd ? busy_herd(b, w, bp, rounds) : busy_pingpong(b, bp, rounds, one_cpu, kernel_fds);
      };
      out.push_back(std::move(c));
    }
  }
  return out;
}

// ------------------------------------------------------------------- rr-dist
RunFn rr_dist(const Backend& b, int n, bool rr, uint64_t rounds) {
  return [&b, n, rr, rounds](bool warmup) {
    const uint64_t want = warmup ? std::max<uint64_t>(1, rounds / 10) : rounds;
    Owned fds(b);
    const int efd = fds.keep(b->eventfd(0, EFD_NONBLOCK), "eventfd");
    std::vector<int> eps(n);
    const uint32_t extra = rr && b.is_uepoll ? UEP_EPOLLROUNDROBIN : 0;
    for (int i = 0; i < n; ++i) {
      eps[i] = fds.keep(b->epoll_create1(0), "epoll_create1");
      add(b, eps[i], efd, EPOLLIN | EPOLLEXCLUSIVE | extra, static_cast<uint64_t>(i));
    }
    std::vector<std::atomic<uint64_t>> wins(n);
    std::atomic<uint64_t> consumed{0};
    std::atomic<bool> stop{false};
    std::atomic<int> alive{n};
    std::vector<std::thread> th;
    for (int i = 0; i < n; ++i) {
      th.emplace_back([&, i] {
        struct epoll_event ev {};
        uint64_t v;
        for (;;) {
          const int r = b->epoll_wait(eps[i], &ev, 1, -1);
          if (stop.load(std::memory_order_acquire)) break;
          if (r == 1 && b->read(efd, &v, sizeof v) == sizeof v) {
            wins[i].fetch_add(1, std::memory_order_relaxed);
            consumed.fetch_add(1, std::memory_order_acq_rel);
          }
        }
        alive.fetch_sub(1);
      });
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    const auto t0 = Clock::now();
    for (uint64_t r = 0; r < want; ++r) {
      post(b, efd);
      const auto deadline = Clock::now() + std::chrono::seconds(1);
      while (consumed.load(std::memory_order_acquire) <= r && Clock::now() < deadline) std::this_thread::yield();
      // Light load: the winner goes back to sleep before the next event.
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
    stop.store(true, std::memory_order_release);
    while (alive.load() > 0) {
      post(b, efd);
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    for (auto& t : th) t.join();
    uint64_t total = 0, mx = 0, mn = ~0ULL;
    for (auto& w : wins) {
      const uint64_t x = w.load();
      total += x;
      mx = std::max(mx, x);
      mn = std::min(mn, x);
    }
    Sample s;
    s.value = total ? 100.0 * static_cast<double>(mx) / static_cast<double>(total) : 100;
    s.extra["min_share_pct"] = total ? 100.0 * static_cast<double>(mn) / static_cast<double>(total) : 0;
    s.extra["max_over_min"] = mn ? static_cast<double>(mx) / static_cast<double>(mn) : 0;  // 0: someone got none
    s.extra["events_per_s"] = static_cast<double>(total) / secs;
    return s;
  };
}

std::vector<Case> rr_cases(const Options& o) {
  std::vector<Case> out;
  const uint64_t rounds = rounds_of(o, 4000, 800);
  for (int n : (o.threads.empty() ? std::vector<int>{8} : o.threads)) {
    for (bool rr : {false, true}) {
      Case c;
      c.scenario = "rr-dist";
      c.group = rr ? "round robin" : "plain";
      c.label = "N=" + std::to_string(n) + (rr ? " rr" : " plain");
      c.x_name = "waiters";
      c.x = n;
      c.unit = "max share %";
      c.higher_is_better = false;
      if (rr) {
        c.target = "uepoll: every share in [" + std::to_string(80 / n) + "%, " + std::to_string(120 / n) + "%]";
        c.why = "shares of the events: the same on any machine";
        c.pass = [n](double, double u, const std::map<std::string, double>& ex) {
          auto mn = ex.find("min_share_pct");
          return u <= 120.0 / n && mn != ex.end() && mn->second >= 80.0 / n;
        };
      }
      c.prepare = [n, rr, rounds](const Backend& b) { return rr_dist(b, n, rr, rounds); };
      out.push_back(std::move(c));
    }
  }
  return out;
}

// ----------------------------------------------------------------- ctl-batch
constexpr int kBatch = 64;

RunFn ctl_batch(const Backend& b, int threads, bool batched, uint64_t iters) {
  return [&b, threads, batched, iters](bool warmup) {
    const uint64_t want = warmup ? std::max<uint64_t>(1, iters / 10) : iters;
    Owned fds(b);
    const int ep = fds.keep(b->epoll_create1(0), "epoll_create1");
    std::vector<std::vector<uep_ctl_cmd>> cmds(threads);
    for (int t = 0; t < threads; ++t) {
      for (int i = 0; i < kBatch; ++i) {
        const int fd = fds.keep(b->eventfd(0, EFD_NONBLOCK), "eventfd");
        add(b, ep, fd, EPOLLIN | EPOLLONESHOT, static_cast<uint64_t>(i));
        uep_ctl_cmd c{};
        c.op = EPOLL_CTL_MOD;
        c.fd = fd;
        c.event.events = EPOLLIN | EPOLLONESHOT;
        c.event.data.u64 = static_cast<uint64_t>(i);
        cmds[t].push_back(c);
      }
    }
    std::atomic<int> errs{0};
    double cpu = 0;
    const double secs = run_threads(threads, [&](int t) {
      std::vector<uep_ctl_cmd>& mine = cmds[t];
      for (uint64_t k = 0; k < want; ++k) {
        if (batched) {
          if (uep_epoll_ctl_batch(ep, mine.data(), kBatch) != kBatch) errs.fetch_add(1);
        } else {
          for (uep_ctl_cmd& c : mine)
            if (b->epoll_ctl(ep, c.op, c.fd, &c.event) != 0) errs.fetch_add(1);
        }
      }
    }, &cpu);
    if (errs.load()) fail_msg(b, "ctl-batch: a command failed");
    Sample s;
    const double ncmds = static_cast<double>(want) * kBatch * threads;
    s.value = ncmds / secs;
    s.extra["cpu_ns/cmd"] = cpu * 1e9 / ncmds;  // less distorted by a loaded machine than the wall rate
    return s;
  };
}

std::vector<Case> batch_cases(const Options& o) {
  std::vector<Case> out;
  const uint64_t iters = o.count ? o.count : (o.quick ? 2000 : 20000);
  for (int t : (o.threads.empty() ? std::vector<int>{1, 2} : o.threads)) {
    for (bool batched : {false, true}) {
      Case c;
      c.scenario = "ctl-batch";
      c.group = batched ? "batch64" : "single";
      c.label = std::string(batched ? "batch64" : "single") + " T=" + std::to_string(t);
      c.x_name = "threads";
      c.x = t;
      c.unit = "cmds/s";
      c.linux_syscalls = 1;  // one epoll_ctl per command
      c.prepare = [t, batched, iters](const Backend& b) { return ctl_batch(b, t, batched, iters); };
      out.push_back(std::move(c));
    }
  }
  return out;
}

// uepoll's batched rate over its single-call rate, per thread count.
std::vector<Check> batch_checks(const std::vector<CaseResult>& rs) {
  std::vector<Check> out;
  for (const CaseResult& single : rs) {
    if (single.c->group != "single") continue;
    for (const CaseResult& batch : rs) {
      if (batch.c->group != "batch64" || batch.c->x != single.c->x) continue;
      auto su = single.v.find("uepoll"), bu = batch.v.find("uepoll");
      if (su == single.v.end() || bu == batch.v.end() || !su->second.ran || !bu->second.ran) continue;
      Check ck;
      ck.scenario = "ctl-batch";
      ck.what = "uepoll batch64 / single, T=" + std::to_string(static_cast<int>(single.c->x));
      auto sc = su->second.extra.find("cpu_ns/cmd"), bc = bu->second.extra.find("cpu_ns/cmd");
      if (sc != su->second.extra.end() && bc != bu->second.extra.end() && bc->second > 0) {
        ck.value = sc->second / bc->second;  // CPU per command, single over batched
        ck.what += " (CPU/cmd)";
      } else {
        ck.value = su->second.stats.median > 0 ? bu->second.stats.median / su->second.stats.median : 0;
        ck.what += " (wall)";
      }
      ck.target = ">= 1.5";
      ck.pass = ck.value >= 1.5;
      out.push_back(ck);
    }
  }
  return out;
}

// busy-herd / busy-pingpong: p99 at 50 us against Linux's.
std::vector<Check> busy_checks(const std::vector<CaseResult>& rs) {
  std::vector<Check> out;
  for (const CaseResult& r : rs) {
    if (r.c->group != "bp=50us") continue;
    auto l = r.v.find("linux"), u = r.v.find("uepoll");
    if (l == r.v.end() || u == r.v.end() || !l->second.ran || !u->second.ran) continue;
    auto lp = l->second.extra.find("p99_us"), up = u->second.extra.find("p99_us");
    if (lp == l->second.extra.end() || up == u->second.extra.end() || lp->second <= 0) continue;
    Check ck;
    ck.scenario = r.c->scenario;
    ck.what = "uepoll p99 / Linux p99, " + r.c->label;
    ck.value = up->second / lp->second;
    ck.target = "<= 0.33";
    ck.pass = ck.value <= 1.0 / 3;
    out.push_back(ck);
  }
  return out;
}

}  // namespace

const std::vector<Scenario>& beyond_scenarios() {
  static const std::vector<Scenario> all{
      {"busy-herd", "beyond Linux: herd with EPIOCSPARAMS busy_poll_usecs 0/10/50",
       [](const Options& o) { return busy_cases(o, true); }, busy_checks},
      {"busy-pingpong", "beyond Linux: one event bounced between 2 threads, busy poll 0/10/50",
       [](const Options& o) { return busy_cases(o, false); }, busy_checks},
      {"rr-dist", "beyond Linux: N exclusive waiters, share of wakeups with/without round robin", rr_cases,
       nullptr},
      {"ctl-batch", "beyond Linux: 64 re-arms on one shared instance, single calls vs one batch", batch_cases,
       batch_checks},
  };
  return all;
}

}  // namespace uepoll_bench
