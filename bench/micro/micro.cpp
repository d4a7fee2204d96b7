// micro.cpp - uepoll-micro: Google Benchmark microbenchmarks of uepoll's hot
// paths, each registered twice, beside the Linux system-call equivalent in the
// same binary (names end in /linux or /uepoll).  Written against the public API
// only (tests/support/api.h), so they measure what an application sees:
//   wake_callback    write on an eventfd watched by an instance (the wait-queue
//                    wake callback queues the item), then read to reset it.
//   wake_sleeper     ping-pong between two threads blocked in epoll_wait: one
//                    iteration = two wakeups of a sleeping waiter.
//   ready_transfer/K epoll_wait(timeout 0) on an instance with K ready LT items
//                    (the ready-list transfer to the caller), K per iteration.
//   lookup/N         EPOLL_CTL_MOD on an instance with N items (the item lookup).
// A call that fails or returns a wrong count stops the benchmark with an error.
#include "../../tests/support/api.h"

#include <benchmark/benchmark.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

using uepoll_test::Api;

// Descriptors made through one Api, closed through it.
struct Fds {
  const Api& a;
  std::vector<int> v;
  explicit Fds(const Api& api) : a(api) {}
  ~Fds() {
    for (auto it = v.rbegin(); it != v.rend(); ++it) a.close(*it);
  }
  int keep(int fd) {
    if (fd >= 0) v.push_back(fd);
    return fd;
  }
};

bool add(const Api& a, int ep, int fd, uint32_t events, uint64_t data) {
  struct epoll_event ev {};
  ev.events = events;
  ev.data.u64 = data;
  return a.epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) == 0;
}

std::string err(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

void wake_callback(benchmark::State& st, const Api* api) {
  const Api& a = *api;
  Fds fds(a);
  int ep = fds.keep(a.epoll_create1(0));
  int efd = fds.keep(a.eventfd(0, EFD_NONBLOCK));
  if (ep < 0 || efd < 0 || !add(a, ep, efd, EPOLLIN, 0)) return st.SkipWithError(err("setup").c_str());
  uint64_t one = 1, v = 0;
  for (auto _ : st) {
    if (a.write(efd, &one, sizeof one) != sizeof one) return st.SkipWithError(err("write").c_str());
    if (a.read(efd, &v, sizeof v) != sizeof v) return st.SkipWithError(err("read").c_str());
  }
}

void wake_sleeper(benchmark::State& st, const Api* api) {
  const Api& a = *api;
  Fds fds(a);
  int ep1 = fds.keep(a.epoll_create1(0)), ep2 = fds.keep(a.epoll_create1(0));
  int e1 = fds.keep(a.eventfd(0, EFD_NONBLOCK)), e2 = fds.keep(a.eventfd(0, EFD_NONBLOCK));
  if (ep1 < 0 || ep2 < 0 || e1 < 0 || e2 < 0 || !add(a, ep1, e1, EPOLLIN, 0) || !add(a, ep2, e2, EPOLLIN, 0))
    return st.SkipWithError(err("setup").c_str());
  std::atomic<bool> stop{false};
  // The echo thread: wait on ep1, reset e1, wake the main thread through e2.
  std::thread echo([&] {
    struct epoll_event ev {};
    uint64_t v, one = 1;
    while (!stop.load(std::memory_order_acquire)) {
      if (a.epoll_wait(ep1, &ev, 1, 100) != 1) continue;
      a.read(e1, &v, sizeof v);
      a.write(e2, &one, sizeof one);
    }
  });
  struct epoll_event ev {};
  uint64_t one = 1, v;
  for (auto _ : st) {
    a.write(e1, &one, sizeof one);
    int r;
    while ((r = a.epoll_wait(ep2, &ev, 1, 1000)) == 0) {
    }
    if (r != 1) {
      st.SkipWithError(err("epoll_wait").c_str());
      break;
    }
    a.read(e2, &v, sizeof v);
  }
  stop.store(true, std::memory_order_release);
  a.write(e1, &one, sizeof one);
  echo.join();
}

void ready_transfer(benchmark::State& st, const Api* api) {
  const Api& a = *api;
  const int k = static_cast<int>(st.range(0));
  Fds fds(a);
  int ep = fds.keep(a.epoll_create1(0));
  if (ep < 0) return st.SkipWithError(err("epoll_create1").c_str());
  for (int i = 0; i < k; ++i) {
    int fd = fds.keep(a.eventfd(1, EFD_NONBLOCK));
    if (fd < 0 || !add(a, ep, fd, EPOLLIN, static_cast<uint64_t>(i))) return st.SkipWithError(err("setup").c_str());
  }
  std::vector<struct epoll_event> evs(static_cast<size_t>(k));
  for (auto _ : st) {
    int r = a.epoll_wait(ep, evs.data(), k, 0);
    if (r != k) return st.SkipWithError(("epoll_wait returned " + std::to_string(r)).c_str());
    benchmark::DoNotOptimize(evs.data());
  }
  st.SetItemsProcessed(static_cast<int64_t>(st.iterations()) * k);
}

void lookup(benchmark::State& st, const Api* api) {
  const Api& a = *api;
  const int n = static_cast<int>(st.range(0));
  Fds fds(a);
  fds.v.reserve(static_cast<size_t>(n) + 1);
  int ep = fds.keep(a.epoll_create1(0));
  if (ep < 0) return st.SkipWithError(err("epoll_create1").c_str());
  int target = -1;
  for (int i = 0; i < n; ++i) {
    int fd = fds.keep(a.eventfd(0, EFD_NONBLOCK));
    if (fd < 0 || !add(a, ep, fd, EPOLLIN, static_cast<uint64_t>(i))) return st.SkipWithError(err("setup").c_str());
    if (i == n / 2) target = fd;
  }
  struct epoll_event ev {};
  uint32_t flip = 0;
  for (auto _ : st) {
    ev.events = (++flip & 1) ? (EPOLLIN | EPOLLOUT) : EPOLLIN;
    if (a.epoll_ctl(ep, EPOLL_CTL_MOD, target, &ev) != 0) return st.SkipWithError(err("epoll_ctl(MOD)").c_str());
  }
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  for (const Api* api : {&uepoll_test::linux_api(), &uepoll_test::uepoll_api()}) {
    std::string s = std::string("/") + api->name;
    benchmark::RegisterBenchmark(("wake_callback" + s).c_str(), wake_callback, api);
    benchmark::RegisterBenchmark(("wake_sleeper" + s).c_str(), wake_sleeper, api)->UseRealTime();
    benchmark::RegisterBenchmark(("ready_transfer" + s).c_str(), ready_transfer, api)->Arg(1)->Arg(16)->Arg(256);
    benchmark::RegisterBenchmark(("lookup" + s).c_str(), lookup, api)->Arg(16)->Arg(1024)->Arg(16384);
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
