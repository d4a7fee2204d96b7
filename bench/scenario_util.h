// scenario_util.h - helpers shared by the scenario families (scenarios_*.cpp):
// descriptors owned by one run (Fds), checked epoll_ctl and eventfd writes,
// budgets and thread lists from the options, the Linux descriptor room, timed
// worker threads.
// Takes no lock; nothing here measures.
#pragma once

#include "harness.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

namespace uepoll_bench {
namespace sc {

// Operations per second over all workers, and CPU time per operation.
template <class Counts>
Sample throughput_sample(const Counts& done, double secs, double cpu) {
  uint64_t total = 0;
  for (auto d : done) total += d;
  Sample s;
  s.value = static_cast<double>(total) / secs;
  s.extra["cpu_ns/op"] = cpu * 1e9 / static_cast<double>(total);
  return s;
}

constexpr uint64_t kBatch = 64;  // operations between two Budget checks

inline std::string fmt_count(long n) {
  std::string s = std::to_string(n), out;
  int k = 0;
  for (auto it = s.rbegin(); it != s.rend(); ++it) {
    if (k && k % 3 == 0) out.insert(out.begin(), ',');
    out.insert(out.begin(), *it);
    ++k;
  }
  return out;
}

// Descriptors owned by one run, closed through the backend that made them.
class Fds {
 public:
  explicit Fds(const Backend& b) : b_(b) {}
  ~Fds() {
    for (auto it = fds_.rbegin(); it != fds_.rend(); ++it) b_->close(*it);
  }
  int add(int fd) {
    fds_.push_back(fd);
    return fd;
  }
  int epoll(const char* what = "epoll_create1") { return add(must(b_->epoll_create1(0), b_, what)); }
  int eventfd(unsigned v = 0, int flags = EFD_NONBLOCK) {
    return add(must(b_->eventfd(v, flags), b_, "eventfd"));
  }
  void reserve(size_t n) { fds_.reserve(n); }
  Fds(const Fds&) = delete;
  Fds& operator=(const Fds&) = delete;

 private:
  const Backend& b_;
  std::vector<int> fds_;
};

inline void ctl(const Backend& b, int ep, int op, int fd, uint32_t events, uint64_t data = 0) {
  struct epoll_event ev {};
  ev.events = events;
  ev.data.u64 = data;
  if (b->epoll_ctl(ep, op, fd, &ev) != 0) {
    fail(b, std::string("epoll_ctl(") + (op == EPOLL_CTL_ADD ? "ADD" : op == EPOLL_CTL_DEL ? "DEL" : "MOD") + ")",
         errno);
  }
}

inline void write1(const Backend& b, int fd) {
  uint64_t one = 1;
  if (b->write(fd, &one, sizeof one) != sizeof one) fail(b, "write(eventfd)", errno);
}

inline uint64_t per_thread_count(const Options& o, uint64_t full, uint64_t quick) {
  if (o.count) return o.count;
  return o.quick ? quick : full;
}

inline Budget budget(const Options& o, uint64_t full, uint64_t quick) {
  Budget b;
  b.count = per_thread_count(o, full, quick);
  b.duration = o.duration;
  return b;
}

inline std::vector<int> thread_list(const Options& o, std::vector<int> dflt) {
  return o.threads.empty() ? dflt : o.threads;
}

inline bool ratio_at_least(double l, double u, double r) { return l > 0 && u / l >= r; }

// The target of an ADD+DEL pair on a uepoll descriptor: at most 64 hash
// floors of CPU, which is what "20x Linux" meant on the machine where that
// target was set (a 1.1 us system call: Linux's pair ~2.95 us, the hash
// floor 2.3 ns).  Linux makes two system calls per pair, uepoll none.
inline void pair_target(Case& c) {
  c.target = "CPU/pair <= 64x hash floor";
  c.why = "20x Linux where set (1.1 us syscalls); 2 calls of lookup+lock+table";
  c.floor_name = "hash";
  c.floor_k = 64;
  c.linux_syscalls = 2;
}

// The kernel descriptors this process may still open (soft limit raised to
// the hard limit first), minus headroom for everything else.
inline long linux_fd_room() {
  struct rlimit rl {};
  getrlimit(RLIMIT_NOFILE, &rl);
  if (rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
    getrlimit(RLIMIT_NOFILE, &rl);
  }
  long open_now = 0;
  for (int fd = 0; fd < 4096; ++fd)
    if (fcntl(fd, F_GETFD) != -1) ++open_now;
  long room = static_cast<long>(rl.rlim_cur) - open_now - 64;
  return room > 0 ? room : 0;
}

// Runs count(i) on n threads (run_threads) with the backend's knob off
// (KnobGuard, for "uepoll-off") and returns the operations per second over
// all of them (throughput_sample); count(i) returns the operations thread i
// made.  Rethrows what a thread threw, after all are joined.
inline Sample timed_workers(const Backend& b, int n, const std::function<uint64_t(int)>& count) {
  std::vector<uint64_t> done(n, 0);
  KnobGuard knob(b);
  double cpu = 0;
  double secs = run_threads(n, [&](int i) { done[i] = count(i); }, &cpu);
  return throughput_sample(done, secs, cpu);
}

// ADD then DEL of fd on ep until the budget is spent, kBatch pairs between
// two budget checks; returns the pairs made.  Fails the run on an error.
inline uint64_t ctl_pair_loop(const Backend& b, const Budget& use, int ep, int fd) {
  Stopper st(use);
  const Api& a = *b;
  struct epoll_event ev {};
  ev.events = EPOLLIN;
  uint64_t n = 0;
  while (st.more(n)) {
    for (uint64_t k = 0; k < kBatch; ++k) {
      if (a.epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) != 0) fail(b, "epoll_ctl(ADD)", errno);
      if (a.epoll_ctl(ep, EPOLL_CTL_DEL, fd, nullptr) != 0) fail(b, "epoll_ctl(DEL)", errno);
    }
    n += kBatch;
  }
  return n;
}

}  // namespace sc

// The scenario families (one file each) and their cross-row checks.
std::vector<Case> ctl_pairs_cases(const Options& o);
std::vector<Check> ctl_pairs_checks(const std::vector<CaseResult>& rs);
std::vector<Case> readd_cases(const Options& o);
std::vector<Case> shared_ctl_cases(const Options& o);
std::vector<Check> shared_ctl_checks(const std::vector<CaseResult>& rs);
// For each backend, its median at x = 2 over x = 1 among the rows of `group`
// (every row when empty): uepoll's checked against `target`, Linux's shown
// for reference.
std::vector<Check> two_over_one_checks(const std::vector<CaseResult>& rs, const std::string& scenario,
                                       const std::string& group, double target);
std::vector<Case> scale_cases(const Options& o);
std::vector<Check> scale_checks(const std::vector<CaseResult>& rs);
std::vector<Case> nested_wait_cases(const Options& o);
std::vector<Check> nested_wait_checks(const std::vector<CaseResult>& rs);
std::vector<Case> stress_cases(const Options& o);
std::vector<Case> herd_cases(const Options& o);
std::vector<Case> memory_cases(const Options& o);

}  // namespace uepoll_bench
