// report.h - turns measured cases into the text table (80 columns), JSON,
// CSV, an SVG chart (throughput against threads: Linux, uepoll, uepoll with
// the mechanism off) and a summary in plain words.  Pure formatting: nothing
// here measures.
#pragma once

#include "harness.h"
#include "floors.h"

#include <cstdio>
#include <string>
#include <vector>

namespace uepoll_bench {

struct RunInfo {
  std::string command;      // the exact command line
  std::string date_utc;     // ISO 8601
  std::string kernel;       // uname -r
  std::string machine;      // uname -m, CPU count, CPU model
  bool quick = false;
  int reps = 0;
  bool uepoll_available = false;
  std::string uepoll_error;  // why uepoll did not run, when it did not
  bool malloc_hook = false;
  std::string load_start, load_end;  // /proc/loadavg (1, 5, 15 min) around the run
  double seconds = 0;                // wall time of the whole run
  double syscall_ns = 0;             // CPU ns of one null system call (getppid)
  Limits limits;                     // the physical floors, measured at start (floors.cpp)
};

// Variant names in display order.
inline const char* const kVariants[] = {"linux", "uepoll", "uepoll-off"};

std::string fmt_value(double v);  // 1.23M, 456k, 12.3

// `text` filled into lines of at most `width` columns (a longer word stands
// alone), the first line starting with `first`, the others with `rest`.
std::string wrap(const std::string& text, size_t width, const std::string& first, const std::string& rest);

// The uepoll/Linux CPU ratio of a row had one system call cost `syscall_ns`
// instead of the run's measured cost: Linux's CPU per operation moved by
// Case::linux_syscalls times the difference (0: not projectable).
double ratio_at_syscall(const CaseResult& r, const RunInfo& info, double syscall_ns);

// Where the run's outputs went ("" for one not written; table "" = stdout).
struct Outputs {
  std::string table, json, csv, svg;
};

// The summary in plain words after the table (summary.cpp), at most 80
// columns: what uepoll did faster than Linux here and by how much, what it
// did not and why, the system-call cost and what it does to the ratios, the
// targets, and where the outputs are.
void print_summary(std::FILE* out, const RunInfo& info, const std::vector<CaseResult>& results,
                   const std::vector<Check>& checks, const Outputs& files);

void print_table(std::FILE* out, const RunInfo& info, const std::vector<CaseResult>& results,
                 const std::vector<Check>& checks);
bool write_json(const std::string& path, const RunInfo& info, const std::vector<CaseResult>& results,
                const std::vector<Check>& checks);
bool write_csv(const std::string& path, const std::vector<CaseResult>& results);
bool write_svg(const std::string& path, const RunInfo& info, const std::vector<CaseResult>& results);

}  // namespace uepoll_bench
