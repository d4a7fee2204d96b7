// floors.h - the physical floors uepoll-bench measures at the start of every
// run, on the same machine and in the same process as the scenarios, so that
// every row can say how far uepoll is from the floor of its path as well as
// from Linux.  See floors.cpp.
#pragma once

#include "harness.h"

#include <string>

namespace uepoll_bench {

// Measured once per run (floors.cpp); all in CPU nanoseconds of one thread
// except the futex round trip, which is wall time for two threads.
struct Limits {
  double syscall_ns = 0;      // one null system call (getppid)
  double hash_pair_ns = 0;    // pointer-keyed open-addressing insert + erase: the ctl-pair floor
  double wait_ns = 0;         // ready-flag check (acquire load) + one 12-byte copy: the wait(0) floor
  double futex_rt_ns = 0;     // futex wake -> wait -> wake back between two threads: the blocking floor
  int cpus = 1;               // CPUs the threads of a row can run on at once
};

Limits measure_limits();

// The floor of a case in the case's own unit (0: no floor defined for it),
// and a short text saying which floor and how it was scaled.
double limit_for(const Case& c, const Limits& l);
std::string limit_basis(const Case& c);

}  // namespace uepoll_bench
