// report.h - turns measured cases into the text table (stdout), JSON, CSV and
// an SVG chart (throughput against threads: Linux, uepoll, uepoll with the
// mechanism off).  Pure formatting: nothing here measures.
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

void print_table(std::FILE* out, const RunInfo& info, const std::vector<CaseResult>& results,
                 const std::vector<Check>& checks);
bool write_json(const std::string& path, const RunInfo& info, const std::vector<CaseResult>& results,
                const std::vector<Check>& checks);
bool write_csv(const std::string& path, const std::vector<CaseResult>& results);
bool write_svg(const std::string& path, const RunInfo& info, const std::vector<CaseResult>& results);

}  // namespace uepoll_bench
