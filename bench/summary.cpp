// summary.cpp - the summary in plain words that uepoll-bench prints after
// its table (scripts/demo.sh shows only this): at most 80 columns, it says
// what uepoll did faster than Linux epoll on this machine and by how much,
// what it did about as fast or slower and why (each row's Case::why), what
// the measured system-call cost means for the ratios (with the ratios a
// machine with 0.1 us or 1 us system calls would give, projected from the
// CPU times of this run), the targets met and missed, and where the table,
// JSON, CSV and SVG went.  Pure formatting; takes no lock.
#include "report.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

namespace uepoll_bench {

namespace {

// What a scenario measures, in words (the scenario name when not listed).
std::string phrase(const std::string& scenario) {
  static const std::map<std::string, std::string> words = {
      {"ctl-pairs", "registration changes (ADD+DEL), a thread per instance"},
      {"readd", "re-adding one registration again and again"},
      {"nested-wait", "zero-timeout waits through a nested instance"},
      {"stress", "events from many writers to waiting readers"},
      {"herd", "waking a herd of blocked waiters"},
      {"shared-ctl", "registration changes, threads sharing an instance"},
      {"scale", "ctl and waits on instances of up to 10^5-10^6 entries"},
      {"kernel-fds", "on kernel descriptors (eventfd, TCP)"},
      {"busy-herd", "busy-polling waiters woken as a herd"},
      {"busy-pingpong", "busy-polling ping-pong between two threads"},
      {"ctl-batch", "ctl commands, one by one and batched"},
  };
  auto it = words.find(scenario);
  return it == words.end() ? scenario : it->second;
}

// The ratio the summary shows: CPU per operation for rows judged on it
// (Case::by_cpu), else the medians'.
double shown_ratio(const CaseResult& r) { return r.c->by_cpu && r.cpu_ratio > 0 ? r.cpu_ratio : r.ratio; }

// The reason a row is not faster when its case gives none.
std::string default_why(const Case& c) {
  if (c.unit == "rounds/s" || c.unit == "round trips/s")
    return "a blocking handoff is bound by the kernel's wakeup on both";
  return "";
}

std::string ratio_range(double lo, double hi) {
  char buf[64];
  auto one = [](double v) {
    char b[24];
    std::snprintf(b, sizeof b, v >= 10 ? "%.0f" : "%.2g", v);
    return std::string(b);
  };
  if (one(lo) == one(hi)) std::snprintf(buf, sizeof buf, "%sx", one(lo).c_str());
  else std::snprintf(buf, sizeof buf, "%s-%sx", one(lo).c_str(), one(hi).c_str());
  return buf;
}

struct Group {
  std::string scenario;
  std::string why;  // the rows' reason (Case::why or default_why)
  std::vector<const CaseResult*> rows;
  int total = 0;  // rows of the scenario compared with Linux
};

void print_group(std::FILE* out, const RunInfo& info, const Group& g, bool give_why) {
  double lo = 1e300, hi = 0, plo = 1e300, phi = 0, qlo = 1e300, qhi = 0;
  for (const CaseResult* r : g.rows) {
    lo = std::min(lo, shown_ratio(*r));
    hi = std::max(hi, shown_ratio(*r));
    double p = ratio_at_syscall(*r, info, 100), q = ratio_at_syscall(*r, info, 1000);
    if (p > 0 && q > 0) {
      plo = std::min(plo, p), phi = std::max(phi, p);
      qlo = std::min(qlo, q), qhi = std::max(qhi, q);
    }
  }
  std::string head = ratio_range(lo, hi);
  head.resize(std::max<size_t>(head.size(), 10), ' ');
  std::string rows = g.rows.size() == 1 && g.total == 1 ? "" : std::to_string(g.rows.size()) + " of " +
                                                                   std::to_string(g.total) + " rows";
  std::string more = rows;
  if (phi > 0)
    more += (more.empty() ? "" : "; ") + std::string("at 0.1 us system calls ") + ratio_range(plo, phi) +
            ", at 1 us " + ratio_range(qlo, qhi);
  if (g.rows.front()->c->by_cpu) more = "CPU time" + std::string(more.empty() ? "" : "; ") + more;
  std::string text = phrase(g.scenario) + (more.empty() ? "" : " (" + more + ")");
  if (give_why && !g.why.empty()) text += ": " + g.why;
  std::fputs(wrap(text, 80, "  " + head + " ", std::string(13, ' ')).c_str(), out);
}

// The targets met and missed, and where the outputs went.
void print_targets_and_files(std::FILE* out, const std::vector<CaseResult>& results,
                             const std::vector<Check>& checks, const Outputs& files) {
  char buf[1024];
  int pass = 0, miss = 0;
  std::string missed;
  for (const auto& r : results) {
    if (r.verdict < 0) continue;
    r.verdict ? ++pass : ++miss;
    if (!r.verdict) missed += (missed.empty() ? "" : "; ") + r.c->scenario + " " + r.c->label;
  }
  for (const auto& ck : checks) {
    if (ck.target == "(reference)") continue;
    ck.pass ? ++pass : ++miss;
    if (!ck.pass) missed += (missed.empty() ? "" : "; ") + ck.scenario + " " + ck.what;
  }
  std::snprintf(buf, sizeof buf,
                "Targets: %d PASS, %d MISS (reported, not asserted). Most are stated so that they mean the "
                "same on any machine: uepoll's CPU per operation within k times a floor measured in this run, "
                "uepoll against Linux where both pay the same kernel work, or uepoll against itself. The herd "
                "and busy-polling targets follow the kernel's wakeup cost and the load, which differ between "
                "machines (bench/RESULTS.md). The table gives each target's reason.",
                pass, miss);
  std::fputs(wrap(buf, 80, "\n", "").c_str(), out);
  if (!missed.empty()) std::fputs(wrap("Missed: " + missed + ".", 80, "", "  ").c_str(), out);

  std::fprintf(out, "\n");
  auto where = [&](const char* what, const std::string& path) {
    if (!path.empty()) std::fputs(wrap(std::string(what) + ": " + path, 80, "", "    ").c_str(), out);
  };
  where("Full table (80 columns, legend first)", files.table.empty() ? "above" : files.table);
  where("JSON (every sample)", files.json);
  where("CSV (a line per case and backend)", files.csv);
  where("SVG chart (throughput against threads)", files.svg);
}

}  // namespace

void print_summary(std::FILE* out, const RunInfo& info, const std::vector<CaseResult>& results,
                   const std::vector<Check>& checks, const Outputs& files) {
  std::fprintf(out, "\n===== summary: uepoll beside Linux epoll on this machine =====\n");
  if (!info.uepoll_available) {
    std::fputs(wrap("uepoll could not run here (" + info.uepoll_error + "): only Linux was measured.", 80, "", "")
                   .c_str(),
               out);
    return;
  }
  char buf[1024];
  std::snprintf(buf, sizeof buf,
                "A null system call costs %.0f ns of CPU here. Every Linux epoll call pays at least one; uepoll's "
                "calls on its own descriptors pay none, so uepoll's lead grows with the cost of a system call. "
                "Beside a ratio: what a machine whose system calls cost 0.1 us (bare metal, many VMs) or 1 us "
                "(a slow VM) would show, projected from the CPU times measured here.",
                info.syscall_ns);
  std::fputs(wrap(buf, 80, "", "").c_str(), out);
  const double load = std::atof(info.load_start.c_str());
  if (load > 0.5 * info.limits.cpus) {
    std::snprintf(buf, sizeof buf,
                  "The machine was busy (load average %.1f on %d CPUs at the start): the blocking and "
                  "busy-polling rows move most with the load; an idle machine gives steadier figures.",
                  load, info.limits.cpus);
    std::fputs(wrap(buf, 80, "", "").c_str(), out);
  }

  // Rows compared with Linux, grouped by scenario and by how they compare.
  std::vector<Group> faster, same, slower;
  std::map<std::string, int> totals;
  auto comparable = [](const CaseResult& r) {
    return r.c->higher_is_better && r.ratio > 0 && r.c->label.find("(vs ") == std::string::npos;
  };
  for (const auto& r : results)
    if (comparable(r)) ++totals[r.c->scenario];
  // Within a list, one group per scenario and reason.
  for (const auto& r : results) {
    if (!comparable(r)) continue;
    auto& list = shown_ratio(r) >= 1.1 ? faster : shown_ratio(r) > 0.9 ? same : slower;
    const std::string why = r.c->why.empty() ? default_why(*r.c) : r.c->why;
    auto g = std::find_if(list.begin(), list.end(), [&](const Group& x) {
      return x.scenario == r.c->scenario && (&list == &faster || x.why == why);
    });
    if (g == list.end()) g = list.insert(list.end(), Group{r.c->scenario, why, {}, totals[r.c->scenario]});
    g->rows.push_back(&r);
  }
  if (!faster.empty()) {
    std::fprintf(out, "\nFaster than Linux epoll here (uepoll / Linux, range over the rows):\n");
    for (const auto& g : faster) print_group(out, info, g, false);
  }
  if (!same.empty()) {
    std::fprintf(out, "\nAbout as fast as Linux epoll here (0.9-1.1x), and why:\n");
    for (const auto& g : same) print_group(out, info, g, true);
  }
  if (!slower.empty()) {
    std::fprintf(out, "\nSlower than Linux epoll here, and why:\n");
    for (const auto& g : slower) print_group(out, info, g, true);
  }
  for (const auto& r : results) {
    if (r.c->unit != "B/registration") continue;
    auto li = r.v.find("linux"), ui = r.v.find("uepoll");
    if (li == r.v.end() || ui == r.v.end() || !li->second.ran || !ui->second.ran) continue;
    std::snprintf(buf, sizeof buf, "Memory: uepoll %.0f bytes per registration, Linux %.0f (%.2fx).",
                  ui->second.stats.median, li->second.stats.median, r.ratio);
    std::fputs(wrap(buf, 80, "\n", "").c_str(), out);
  }

  print_targets_and_files(out, results, checks, files);
}

}  // namespace uepoll_bench
