// harness.h - the measuring machinery shared by all scenarios: how much work a
// run does (Budget), what a run returns (Sample), how threads are released
// together and timed, and what a scenario declares (Case).  Scenario code
// lives in scenarios.cpp; the driver that alternates backends and repetitions
// is in main.cpp; output formats are in report.cpp.
#pragma once

#include "backend.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace uepoll_bench {

using Clock = std::chrono::steady_clock;

// How much work one measured run does: `count` operations (per thread, or in
// total where the scenario says so), or, when `duration` is non-zero, as many
// as fit before the deadline.  Threads test it once per batch.
struct Budget {
  uint64_t count = 0;
  std::chrono::milliseconds duration{0};

  Budget scaled(double f) const {
    Budget b = *this;
    b.count = static_cast<uint64_t>(static_cast<double>(count) * f);
    if (b.count < 1) b.count = 1;
    b.duration = std::chrono::milliseconds(static_cast<long>(static_cast<double>(duration.count()) * f));
    if (duration.count() > 0 && b.duration.count() < 1) b.duration = std::chrono::milliseconds(1);
    return b;
  }
  bool timed() const { return duration.count() > 0; }
};

// One thread's view of a Budget, started when the thread is released.
class Stopper {
 public:
  explicit Stopper(const Budget& b)
      : timed_(b.timed()), target_(b.count), deadline_(Clock::now() + b.duration) {}
  bool more(uint64_t done) const { return timed_ ? Clock::now() < deadline_ : done < target_; }

 private:
  bool timed_;
  uint64_t target_;
  Clock::time_point deadline_;
};

// What one measured run returns: the headline value in the case's unit and any
// side metrics (allocations per pair, lost wakeups...).
struct Sample {
  double value = 0;
  std::map<std::string, double> extra;
  std::string note;  // e.g. "N capped at 19,900 by RLIMIT_NOFILE"
};

// Runs body(i) for i in [0, n) on n threads that start together; returns the
// seconds from their release to the last one's return, and in *cpu_secs (when
// given) the CPU time the n threads used, summed.  An exception thrown by any
// body is rethrown here after every thread has been joined.
double run_threads(int n, const std::function<void(int)>& body, double* cpu_secs = nullptr);

// The calling thread's CPU time (CLOCK_THREAD_CPUTIME_ID), in seconds.
double thread_cpu_seconds();

// A prepared run: called once per warm-up and once per repetition.  State that
// is costly to build (a million registrations) lives in the closure and is
// dropped after the case's last repetition.
using RunFn = std::function<Sample(bool warmup)>;

struct Options;

// One row of the results table: a scenario at one parameter point.
struct Case {
  std::string scenario;   // "ctl-pairs"
  std::string group;      // "flat", "nested", "shared"... (a chart line set)
  std::string label;      // "flat W=4"
  std::string x_name;     // "workers", "producers", "registrations"
  double x = 0;           // the parameter charted on the x axis
  std::string unit;       // "pairs/s"
  bool higher_is_better = true;
  const char* knob = nullptr;  // mechanism switched off for "uepoll-off"
  int reps = 0;           // 0: the --reps option; memory runs once
  bool warmup = true;
  std::string target;     // human text, "CPU/pair <= 64x hash floor"
  std::string why;        // the target's reason, printed beside it
  // A target against a floor measured in the same run, so that it means the
  // same on every machine: uepoll's CPU per operation (its cpu_ns/op,
  // cpu_ns/event or cpu_ns/cmd) at most floor_k times the floor named by
  // floor_name ("hash": the hash insert+erase, "wait": the ready check);
  // `pass`, when set, adds the row's other conditions.  floor_k 0: none.
  const char* floor_name = nullptr;
  double floor_k = 0;
  // System calls per operation Linux makes and uepoll does not (an ADD+DEL
  // pair: 2): the report projects the uepoll/Linux ratio to other
  // system-call costs from it.  0: not projected.
  double linux_syscalls = 0;
  // The Linux-relative verdict compares CPU per operation instead of the
  // medians (pass() then gets 1/CPU per op for each): what the load of a
  // shared machine distorts less, for rows whose both sides make the same
  // system calls.
  bool by_cpu = false;
  // Row verdict from the medians (linux, uepoll); empty function: no target
  // (unless floor_k is set).
  std::function<bool(double linux_med, double uepoll_med, const std::map<std::string, double>& uepoll_extra)> pass;
  std::function<RunFn(const Backend&)> prepare;
};

// A cross-row target (nested vs flat, 2 threads vs 1, 10 vs 10^6).
struct CaseResult;
struct Check {
  std::string scenario;
  std::string what;
  double value = 0;
  std::string target;
  bool pass = false;
};

struct Stats {
  double median = 0, min = 0, max = 0, q1 = 0, q3 = 0;
};
Stats stats_of(std::vector<double> v);

struct VariantResult {
  bool ran = false;          // false: skipped or failed
  std::string error;         // why it did not run
  std::vector<Sample> samples;
  Stats stats;
  std::map<std::string, double> extra;  // median of each side metric
  std::string note;
};

struct CaseResult {
  const Case* c = nullptr;
  std::map<std::string, VariantResult> v;  // keyed by backend name
  double ratio = 0;       // uepoll median / linux median (0: unknown)
  double cpu_ratio = 0;   // linux CPU time per op / uepoll's (0: unknown)
  double limit = 0;       // the case's physical floor in its unit (floors.cpp; 0: none)
  double limit_ratio = 0; // uepoll median / limit (1.0: at the floor; 0: unknown)
  double floor_multiple = 0;  // uepoll CPU per op / the case's floor_name floor (0: none)
  double linux_cpu = 0, uepoll_cpu = 0;  // CPU ns per op (0: not measured)
  int verdict = -1;       // -1 no target / n.a., 0 MISS, 1 PASS
};

// Options that shape the scenarios (filled by main.cpp).
struct Options {
  bool quick = false;
  int reps = 5;
  std::chrono::milliseconds duration{0};  // 0: fixed counts
  uint64_t count = 0;                     // 0: each scenario's default
  std::vector<int> threads;               // empty: each scenario's default
  std::vector<int> producers;             // stress
  std::vector<int> consumers;             // stress consumer threads (default 1,4)
  std::vector<std::string> modes;         // ctl-pairs: flat, nested
  std::vector<std::string> topologies;    // nested-wait: shared, private
  long mem_n = 0;                         // memory registrations (0: default)
  std::vector<long> scale_n;              // scale sizes (empty: default)
  uint64_t rounds = 0;                    // herd (0: default)
  uint64_t writes = 0;                    // stress total writes (0: default)
  bool with_off = true;                   // run the "uepoll-off" variant
  std::string self_exe;                   // for the memory child process
};

// Scenario registry (scenarios.cpp).
struct Scenario {
  std::string name;
  std::string summary;
  std::function<std::vector<Case>(const Options&)> cases;
  std::function<std::vector<Check>(const std::vector<CaseResult>&)> checks;  // may be empty
};
const std::vector<Scenario>& scenarios();
// Issue 10's scenarios (scenarios_beyond.cpp), appended by scenarios().
const std::vector<Scenario>& beyond_scenarios();

// The memory scenario measures in a fresh child process; main() hands
// "--memory-child BACKEND N" here and prints what it returns.
int memory_child_main(const std::string& backend, long n);

// malloc interposition (malloc_count.cpp).
namespace malloc_count {
bool available();
void enable(bool on);
uint64_t allocations();  // malloc/calloc/realloc/memalign calls while enabled
}  // namespace malloc_count

}  // namespace uepoll_bench
