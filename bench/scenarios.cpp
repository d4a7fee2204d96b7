// scenarios.cpp - the scenario registry of uepoll-bench and the measuring
// machinery every scenario uses (run_threads, stats_of).  The scenarios live
// in one file per family: scenarios_ctl.cpp (ctl-pairs, readd, shared-ctl,
// scale), scenarios_wait.cpp (nested-wait, stress, herd), scenarios_memory.cpp
// (memory), kernel_fds.cpp (kernel-fds) and scenarios_beyond.cpp (issue 10's
// beyond-Linux rows); floors.cpp measures the physical floors.  Each one
// reproduces a measurement from a kernel scaling patch (the seeds under
// /work/shared/reference/seeds) or a target beyond Linux.  Takes no lock.
#include "harness.h"
#include "kernel_fds.h"
#include "scenario_util.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <exception>
#include <thread>
#include <vector>

#include <time.h>

namespace uepoll_bench {

const std::vector<Scenario>& scenarios() {
  static const std::vector<Scenario> all{
      {"ctl-pairs", "2026 seed: W workers ADD+DEL own eventfd on own instance (flat|nested)", ctl_pairs_cases,
       ctl_pairs_checks},
      {"readd", "2024 seed: ADD then DEL of one file on one instance; allocations per pair", readd_cases, nullptr},
      {"nested-wait", "2017 seed: T threads wait(timeout 0) on top -> mid -> ready eventfd", nested_wait_cases,
       nested_wait_checks},
      {"stress", "2020 seed (stress-epoll): P producers write LT eventfds, one consumer", stress_cases, nullptr},
      {"herd", "2020 seed (epoll60): W waiters, maxevents 1, W ET eventfds fired at once", herd_cases, nullptr},
      {"shared-ctl", "beyond Linux: T threads ADD+DEL different files on one instance", shared_ctl_cases,
       shared_ctl_checks},
      {"memory", "bytes per registration, N registrations on one instance", memory_cases, nullptr},
      {"scale", "ctl pair and wait(timeout 0) cost, 1 ready among N registrations", scale_cases, scale_checks},
      {"kernel-fds", "kernel eventfd / loopback TCP in a uepoll instance vs kernel epoll: ctl pair, wakeup round trip, "
       "the instance in a kernel event loop",
       kernel_fds_cases, nullptr},
  };
  static const std::vector<Scenario> with_beyond = [] {
    std::vector<Scenario> v = all;
    v.insert(v.end(), beyond_scenarios().begin(), beyond_scenarios().end());
    return v;
  }();
  return with_beyond;
}

double thread_cpu_seconds() {
  struct timespec ts {};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

double run_threads(int n, const std::function<void(int)>& body, double* cpu_secs) {
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::exception_ptr first;
  std::atomic<bool> have_error{false};
  std::vector<double> cpu(static_cast<size_t>(n), 0.0);
  std::vector<std::thread> th;
  th.reserve(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    th.emplace_back([&, i] {
      ready.fetch_add(1, std::memory_order_acq_rel);
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      double c0 = thread_cpu_seconds();
      try {
        body(i);
      } catch (...) {
        if (!have_error.exchange(true)) first = std::current_exception();
      }
      cpu[static_cast<size_t>(i)] = thread_cpu_seconds() - c0;
    });
  }
  while (ready.load(std::memory_order_acquire) < n) std::this_thread::yield();
  auto t0 = Clock::now();
  go.store(true, std::memory_order_release);
  for (auto& t : th) t.join();
  auto t1 = Clock::now();
  if (first) std::rethrow_exception(first);
  if (cpu_secs) {
    *cpu_secs = 0;
    for (double c : cpu) *cpu_secs += c;
  }
  return std::chrono::duration<double>(t1 - t0).count();
}

Stats stats_of(std::vector<double> v) {
  Stats s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  auto q = [&](double p) {
    double idx = p * static_cast<double>(v.size() - 1);
    size_t lo = static_cast<size_t>(std::floor(idx)), hi = static_cast<size_t>(std::ceil(idx));
    return v[lo] + (v[hi] - v[lo]) * (idx - static_cast<double>(lo));
  };
  s.min = v.front();
  s.max = v.back();
  s.median = q(0.5);
  s.q1 = q(0.25);
  s.q3 = q(0.75);
  return s;
}

}  // namespace uepoll_bench
