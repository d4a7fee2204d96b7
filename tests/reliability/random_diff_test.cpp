// random_diff_test.cpp - ctest tier of the differential random test: a fixed
// set of seeds (200 sequences x 200 operations by default, scaled down under
// sanitizers) run against Linux and uepoll with every outcome compared; on a
// divergence the sequence is shrunk and the minimal reproducer printed.
// UEPOLL_RANDOM_SECONDS=N adds a long mode over fresh seeds for N seconds.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>

#include "random_diff_engine.h"
#include "rel_common.h"

using namespace uepoll_test;
using namespace uepoll_test::rdiff;

namespace {

// Returns false (after reporting) on a divergence.
bool check_seed(uint64_t seed, int len) {
  Program p = generate(seed, len);
  int d = first_divergence(p);
  if (d < 0) return true;
  Program small = shrink(p);
  ADD_FAILURE() << "seed " << seed << " len " << len << ": Linux and uepoll diverge at op " << d
                << " (" << format_op(p[static_cast<size_t>(d)]) << ")\n"
                << "minimal reproducer (" << small.size() << " ops):\n"
                << format_program(small) << "replay: random_diff --seed " << seed << " --len " << len
                << " --count 1\n";
  return false;
}

}  // namespace

// The generator must only produce deterministic programs, otherwise a
// divergence could be noise: Linux run twice must agree with itself.
TEST(RandomDiff, LinuxIsDeterministic) {
  bool ok1 = true, ok2 = true;
  for (uint64_t seed = 1000; seed < 1000 + static_cast<uint64_t>(rel::scaled(30, 3)); ++seed) {
    Program p = generate(seed, 200);
    auto a = execute(linux_api(), p, &ok1);
    auto b = execute(linux_api(), p, &ok2);
    ASSERT_TRUE(ok1 && ok2) << "kernel descriptor table not dense; numbers unpredictable";
    ASSERT_EQ(a, b) << "seed " << seed;
  }
}

// Sanity: a program's Linux outcomes must contain successes and failures of
// several kinds (the generator is not degenerate).
TEST(RandomDiff, GeneratorCoversOutcomes) {
  Program p = generate(7, 400);
  auto out = execute(linux_api(), p);
  int ok = 0, errs = 0, events = 0;
  for (auto& s : out) {
    if (s.find(" E") != std::string::npos) ++errs;
    else ++ok;
    if (s.find("[IN") != std::string::npos || s.find("[OUT") != std::string::npos) ++events;
  }
  EXPECT_GT(ok, 100);
  EXPECT_GT(errs, 20);
  EXPECT_GT(events, 10);
}

TEST(RandomDiff, FixedSeeds) {
  const int seqs = static_cast<int>(rel::scaled(200, 10));
  const int len = 200;
  int failures = 0, n = 0;
  for (int s = 1; s <= seqs && failures < 3; ++s, ++n)
    if (!check_seed(static_cast<uint64_t>(s), len)) ++failures;
  std::printf("[random_diff] %d sequences x %d ops compared\n", n, len);
}

// Single-threaded semantics must not depend on the mechanism switches:
// every one of the 64 combinations of the six knobs, a few seeds each.
TEST(RandomDiff, EveryKnobCombination) {
  if (std::getenv("UEPOLL_REL_KNOBS")) GTEST_SKIP() << "knobs fixed by UEPOLL_REL_KNOBS";
  const int per = static_cast<int>(rel::scaled(3, 1));
  int failures = 0;
  for (unsigned bits = 0; bits < 64 && failures < 2; ++bits) {
    rel::set_mechanism_knobs(bits);
    for (int k = 0; k < per; ++k) {
      uint64_t seed = 100000 + bits * 16 + static_cast<uint64_t>(k);
      if (!check_seed(seed, 200)) {
        ADD_FAILURE() << "with knob bits 0x" << std::hex << bits
                      << " (bit i = rcu_ctl, lockless_nested_poll, exclusive_autoremove, alloc_reuse, "
                         "parallel_nested_add, concurrent_ctl)";
        ++failures;
      }
    }
  }
  rel::set_mechanism_knobs(63);
  std::printf("[random_diff] 64 knob combinations x %d sequences x 200 ops compared\n", per);
}

TEST(RandomDiff, LongMode) {
  double secs = rel::env_seconds("UEPOLL_RANDOM_SECONDS");
  if (secs <= 0) GTEST_SKIP() << "set UEPOLL_RANDOM_SECONDS=N for the long mode";
  auto start = std::chrono::steady_clock::now();
  uint64_t seed = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(start.time_since_epoch()).count());
  long n = 0;
  while (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < secs) {
    ++seed;
    ++n;
    if (!check_seed(seed, 300)) break;
  }
  std::printf("[random_diff] long mode: %ld sequences x 300 ops in %.0f s\n", n, secs);
}
