// torture.h - what the torture tests (torture_test.cpp,
// torture_conservation_test.cpp, torture_nested_test.cpp) share: the
// failure collector (its own mutex, taken by any thread, nothing called
// under it), per-scenario duration, counters, CHECK_RET, the uepoll call
// table without item reuse, and the Torture fixture, parameterized by the
// call table (one instantiation, in torture_test.cpp).
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "rel_common.h"

namespace uepoll_test::torture {

using Clock = std::chrono::steady_clock;

// Collects the first few invariant violations from any thread.
struct Failures {
  std::mutex mu;
  std::vector<std::string> msgs;
  std::atomic<long> count{0};
  void add(const std::string& m) {
    if (count.fetch_add(1) < 8) {
      std::lock_guard<std::mutex> g(mu);
      msgs.push_back(m);
    }
  }
  std::string all() {
    std::lock_guard<std::mutex> g(mu);
    std::string s;
    for (auto& m : msgs) s += "  " + m + "\n";
    return s;
  }
};

inline double scenario_seconds() {
  double s = rel::env_seconds("UEPOLL_TORTURE_SECONDS");
  if (s > 0) return s;
  return 0.3;  // default tier: per scenario and implementation
}

// Thread-seconds accumulated (for docs/reliability.md).
inline std::atomic<long> g_thread_ms{0};

struct Stats {
  std::atomic<long> ops{0};
  std::atomic<long> events{0};
};

inline bool errno_in(int e, std::initializer_list<int> allowed) {
  for (int a : allowed)
    if (a == e) return true;
  return false;
}

#define CHECK_RET(fl, cond, what)                                                          \
  do {                                                                                   \
    if (!(cond)) (fl).add(std::string(what) + " -> errno " + rel::errno_name(errno));    \
  } while (0)

inline std::string dump(int ep) {
  char buf[8192];
  long n = uep_debug_dump(ep, buf, sizeof buf);
  if (n < 0) return "dump failed " + rel::errno_name(errno);
  return std::string(buf, static_cast<size_t>(n) < sizeof buf ? static_cast<size_t>(n) : sizeof buf);
}

// uepoll with alloc_reuse=0: items go back to malloc on free, so ASan sees
// a use after free that the per-thread item cache would otherwise hide.
inline const Api& uepoll_noreuse_api() {
  static const Api api = [] {
    Api a = uepoll_api();
    a.name = "uepoll_noreuse";
    return a;
  }();
  return api;
}

class Torture : public ::testing::TestWithParam<const Api*> {
 protected:
  long saved_reuse_ = 1;
  void SetUp() override {
    if (std::strcmp(GetParam()->name, "uepoll_noreuse") == 0) {
      uep_tuning_get("alloc_reuse", &saved_reuse_);
      uep_tuning_set("alloc_reuse", 0);
    }
  }
  void TearDown() override {
    if (std::strcmp(GetParam()->name, "uepoll_noreuse") == 0) uep_tuning_set("alloc_reuse", saved_reuse_);
  }
  const Api& api() { return *GetParam(); }
  bool uep() { return rel::is_uepoll_api(api()); }
  void run_threads(int n, const std::function<void(int, uint64_t)>& body) {
    std::vector<std::thread> ts;
    auto t0 = Clock::now();
    for (int i = 0; i < n; ++i) ts.emplace_back([&, i] { body(i, 0x1234567ULL * (i + 1)); });
    for (auto& t : ts) t.join();
    g_thread_ms += n * std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
  }
};

}  // namespace uepoll_test::torture
