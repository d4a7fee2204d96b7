// random_diff_main.cpp - the `random_diff` command: long runs of the
// differential random test (Linux vs uepoll) outside ctest.
//   random_diff --seconds N [--len L]          fresh seeds for N seconds
//   random_diff --seed S [--count C] [--len L] seeds S..S+C-1
//   random_diff --print --seed S [--len L]     print the program of one seed
//   --random-knobs  seed % 64 picks the six mechanism switches per sequence
//                   (bit i: rcu_ctl, lockless_nested_poll, exclusive_autoremove,
//                   alloc_reuse, parallel_nested_add, concurrent_ctl)
//   --knobs-on B    with --random-knobs: bits of B always on
//   --max-write 8   keep writes <= 8 bytes (explore past the eventfd
//                   >8-byte write divergence)
// On the first divergence it shrinks the sequence (delta debugging) and
// prints the minimal reproducer as C calls; exit status 1.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "random_diff_engine.h"
#include "rel_common.h"

using namespace uepoll_test::rdiff;

int main(int argc, char** argv) {
  double seconds = 0;
  unsigned long long seed = 0;
  bool have_seed = false, print = false, random_knobs = false;
  unsigned knobs_on = 0;
  long count = 1, len = 300;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto val = [&] { return i + 1 < argc ? argv[++i] : "0"; };
    if (a == "--seconds") seconds = std::atof(val());
    else if (a == "--seed") { seed = std::strtoull(val(), nullptr, 0); have_seed = true; }
    else if (a == "--count") count = std::atol(val());
    else if (a == "--len") len = std::atol(val());
    else if (a == "--print") print = true;
    else if (a == "--max-write") setenv("UEPOLL_RANDOM_MAX_WRITE", val(), 1);
    else if (a == "--random-knobs") random_knobs = true;
    else if (a == "--knobs-on") knobs_on = static_cast<unsigned>(std::strtoul(val(), nullptr, 0));
    else {
      std::fprintf(stderr, "usage: %s [--seconds N | --seed S [--count C]] [--len L] [--print]\n", argv[0]);
      return 2;
    }
  }
  if (print) {
    Program p = generate(seed, static_cast<int>(len));
    std::printf("%s", format_program(p).c_str());
    return 0;
  }
  auto start = std::chrono::steady_clock::now();
  if (!have_seed)
    seed = static_cast<unsigned long long>(start.time_since_epoch().count());
  long n = 0;
  for (;; ++seed) {
    double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (seconds > 0 ? el >= seconds : n >= count) break;
    ++n;
    unsigned knobs = static_cast<unsigned>(seed % 64) | knobs_on;
    if (random_knobs) uepoll_test::rel::set_mechanism_knobs(knobs);
    Program p = generate(seed, static_cast<int>(len));
    int d = first_divergence(p);
    if (d >= 0) {
      Program small = shrink(p);
      std::printf("DIVERGENCE: seed %llu len %ld at op %d: %s\nminimal reproducer (%zu ops):\n%s",
                  seed, len, d, format_op(p[static_cast<size_t>(d)]).c_str(), small.size(),
                  format_program(small).c_str());
      if (random_knobs) std::printf("mechanism knob bits 0x%x\n", knobs);
      std::printf("after %ld sequences (%ld ops)\n", n, n * len);
      return 1;
    }
  }
  double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("OK: %ld sequences x %ld ops = %ld operations compared in %.1f s, no divergence\n", n,
              len, n * len, el);
  return 0;
}
