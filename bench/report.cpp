// report.cpp - output formats for uepoll-bench: the text table (80 columns:
// one line of medians and ratios per case, then its ranges, target with the
// reason and side metrics, wrapped), JSON (everything, every sample), CSV
// (one line per case and backend) and SVG (one panel per scenario group,
// throughput against threads on a log scale, three lines: Linux, uepoll,
// uepoll with the scenario's mechanism switched off).  Takes no lock.
#include "report.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

namespace uepoll_bench {

namespace {

std::string json_str(const std::string& s) {
  std::string o = "\"";
  for (char ch : s) {
    switch (ch) {
      case '"': o += "\\\""; break;
      case '\\': o += "\\\\"; break;
      case '\n': o += "\\n"; break;
      case '\t': o += "\\t"; break;
      default:
        if (static_cast<unsigned char>(ch) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", ch);
          o += buf;
        } else {
          o += ch;
        }
    }
  }
  return o + "\"";
}

std::string json_num(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string xml(const std::string& s) {
  std::string o;
  for (char ch : s) {
    if (ch == '<') o += "&lt;";
    else if (ch == '>') o += "&gt;";
    else if (ch == '&') o += "&amp;";
    else o += ch;
  }
  return o;
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string o = "\"";
  for (char ch : s) {
    if (ch == '"') o += '"';
    o += ch;
  }
  return o + "\"";
}

std::string extras_text(const std::map<std::string, double>& ex) {
  std::string o;
  for (const auto& [k, v] : ex) {
    if (!o.empty()) o += ' ';
    char buf[64];
    if ((v == std::floor(v) || std::fabs(v) >= 100) && std::fabs(v) < 1e15)
      std::snprintf(buf, sizeof buf, "%s=%.0f", k.c_str(), v);
    else std::snprintf(buf, sizeof buf, "%s=%.3g", k.c_str(), v);
    o += buf;
  }
  return o;
}

}  // namespace

std::string fmt_value(double v) {
  char buf[64];
  double a = std::fabs(v);
  if (a >= 1e9) std::snprintf(buf, sizeof buf, "%.2fG", v / 1e9);
  else if (a >= 1e6) std::snprintf(buf, sizeof buf, "%.2fM", v / 1e6);
  else if (a >= 1e4) std::snprintf(buf, sizeof buf, "%.1fk", v / 1e3);
  else if (a >= 100) std::snprintf(buf, sizeof buf, "%.0f", v);
  else std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

std::string wrap(const std::string& text, size_t width, const std::string& first, const std::string& rest) {
  std::string out, line = first;
  bool empty = true;
  std::istringstream words(text);
  std::string w;
  while (words >> w) {
    if (!empty && line.size() + 1 + w.size() > width) {
      out += line + "\n";
      line = rest;
      empty = true;
    }
    line += (empty ? "" : " ") + w;
    empty = false;
  }
  if (!empty) out += line + "\n";
  return out;
}

double ratio_at_syscall(const CaseResult& r, const RunInfo& info, double syscall_ns) {
  const double n = r.c->linux_syscalls;
  if (n <= 0 || r.linux_cpu <= 0 || r.uepoll_cpu <= 0 || info.syscall_ns <= 0) return 0;
  const double linux_there = r.linux_cpu + n * (syscall_ns - info.syscall_ns);
  return linux_there > 0 ? linux_there / r.uepoll_cpu : 0;
}

namespace {

const char* const kTableRow = "%-16s %9s %9s %9s %7s %7s %8s %s\n";

// The target line of a row: the target, the measured multiple of the floor
// for a floor target, and the reason unless the row before gave the same.
std::string target_text(const CaseResult& r, const std::string& last_why) {
  const Case& c = *r.c;
  if (c.target.empty()) return "";
  std::string t = "target: " + c.target;
  if (r.floor_multiple > 0) {
    char buf[48];
    std::snprintf(buf, sizeof buf, " (here %.0fx)", r.floor_multiple);
    t += buf;
  }
  if (!c.why.empty() && c.why != last_why) t += ": " + c.why;
  return t;
}

std::string range_text(const CaseResult& r) {
  std::string t = r.c->unit;
  bool any = false;
  for (const char* vn : kVariants) {
    auto it = r.v.find(vn);
    if (it == r.v.end() || !it->second.ran || it->second.samples.size() <= 1) continue;
    t += std::string(any ? ", " : "; min-max: ") + (std::strcmp(vn, "uepoll-off") == 0 ? "off" : vn) + " " +
         fmt_value(it->second.stats.min) + "-" + fmt_value(it->second.stats.max);
    any = true;
  }
  return t;
}

void print_row(std::FILE* out, const CaseResult& r, const std::string& last_why) {
  const Case& c = *r.c;
  char ratio[32] = "-", cpu_ratio[32] = "-", lim_ratio[32] = "-";
  if (r.ratio > 0) std::snprintf(ratio, sizeof ratio, "%.2fx", r.ratio);
  if (r.limit_ratio > 0) std::snprintf(lim_ratio, sizeof lim_ratio, "%.3f", r.limit_ratio);
  if (r.cpu_ratio > 0) std::snprintf(cpu_ratio, sizeof cpu_ratio, "%.2fx", r.cpu_ratio);
  auto median = [&](const char* vn) -> std::string {
    auto it = r.v.find(vn);
    if (it == r.v.end()) return "-";
    return it->second.ran ? fmt_value(it->second.stats.median) : "n/a";
  };
  const char* verdict = r.verdict == 1 ? "PASS" : r.verdict == 0 ? "MISS" : "";
  std::string label = c.label;
  if (label.size() > 16) {
    std::fprintf(out, "%s\n", label.c_str());
    label.clear();
  }
  std::fprintf(out, kTableRow, label.c_str(), median("linux").c_str(), median("uepoll").c_str(),
               median("uepoll-off").c_str(), ratio, cpu_ratio, lim_ratio, verdict);
  std::fputs(wrap(range_text(r), 80, "  ", "    ").c_str(), out);
  std::fputs(wrap(target_text(r, last_why), 80, "  ", "    ").c_str(), out);
  for (const char* vn : kVariants) {
    auto it = r.v.find(vn);
    if (it == r.v.end()) continue;
    const VariantResult& v = it->second;
    std::string t = v.ran ? extras_text(v.extra) : "";
    if (!v.note.empty()) t += (t.empty() ? "" : "; ") + v.note;
    if (!v.ran && !v.error.empty()) t = "error: " + v.error;
    if (!t.empty()) std::fputs(wrap(std::string(vn) + ": " + t, 80, "  ", "    ").c_str(), out);
  }
}

}  // namespace

namespace {

// The run's header: date, machine, command, load, system-call cost, floors.
void print_header(std::FILE* out, const RunInfo& info) {
  std::fprintf(out, "uepoll-bench  %s  Linux %s\n%s\n", info.date_utc.c_str(), info.kernel.c_str(),
               info.machine.c_str());
  std::fputs(wrap("command: " + info.command, 80, "", "    ").c_str(), out);
  char buf[512];
  std::snprintf(buf, sizeof buf, "load average at start: %s, at end: %s; run took %.0f s", info.load_start.c_str(),
                info.load_end.c_str(), info.seconds);
  std::fputs(wrap(buf, 80, "", "    ").c_str(), out);
  std::snprintf(buf, sizeof buf,
                "null system call (getppid): %.0f ns CPU; every Linux epoll call pays at least this, uepoll calls "
                "on uepoll descriptors none",
                info.syscall_ns);
  std::fputs(wrap(buf, 80, "", "    ").c_str(), out);
  const Limits& lim = info.limits;
  std::snprintf(buf, sizeof buf,
                "floors measured in this run (floors.cpp): hash insert+erase %.1f ns (ctl pair), ready flag + "
                "12-byte copy %.2f ns (wait), futex round trip %.0f ns (blocking handoff), %d CPUs",
                lim.hash_pair_ns, lim.wait_ns, lim.futex_rt_ns, lim.cpus);
  std::fputs(wrap(buf, 80, "", "    ").c_str(), out);
  std::fprintf(out, "%d repetitions per backend, alternating%s\n", info.reps, info.quick ? "; --quick" : "");
  if (!info.uepoll_available) std::fprintf(out, "uepoll NOT measured: %s\n", info.uepoll_error.c_str());
}

}  // namespace

void print_table(std::FILE* out, const RunInfo& info, const std::vector<CaseResult>& results,
                 const std::vector<Check>& checks) {
  print_header(out, info);
  char buf[512];
  std::fputs(wrap("Columns: linux, uepoll, off: the median of the repetitions in the row's unit (off: "
                  "\"uepoll-off\", uepoll with the scenario's mechanism switched off, the knob named on the "
                  "scenario's line set to 0); u/L: uepoll's median over Linux's (for B/registration lower is "
                  "better); cpu: Linux's CPU time per operation over uepoll's; u/limit: uepoll's median over the "
                  "floor of its path (1.000: at the floor); verdict: PASS or MISS against the target printed "
                  "under the row with its reason; then min-max of the repetitions and the side metrics.",
                  80, "\n", "")
                 .c_str(),
             out);
  std::string last, last_why;
  for (const auto& r : results) {
    const Case& c = *r.c;
    if (c.scenario != last) {
      last_why.clear();
      std::set<std::string> knobs;
      for (const auto& rr : results)
        if (rr.c->scenario == c.scenario && rr.c->knob) knobs.insert(rr.c->knob);
      std::string k;
      for (const auto& s : knobs) k += (k.empty() ? "" : ", ") + s;
      std::fprintf(out, "\n-- %s%s\n", c.scenario.c_str(), k.empty() ? "" : ("  (off: " + k + " = 0)").c_str());
      std::fprintf(out, kTableRow, "case", "linux", "uepoll", "off", "u/L", "cpu", "u/limit", "verdict");
      last = c.scenario;
    }
    print_row(out, r, last_why);
    last_why = c.why;
  }
  if (!checks.empty()) {
    std::fprintf(out, "\ncross-row checks (uepoll against itself: the same on any machine)\n");
    for (const auto& ck : checks) {
      std::snprintf(buf, sizeof buf, "%s %s: %.2f, target %s %s", ck.scenario.c_str(), ck.what.c_str(), ck.value,
                    ck.target.c_str(), ck.target == "(reference)" ? "" : ck.pass ? "PASS" : "MISS");
      std::fputs(wrap(buf, 80, "  ", "      ").c_str(), out);
    }
  }
  int pass = 0, miss = 0;
  std::string misses;
  for (const auto& r : results) {
    if (r.verdict == 1) ++pass;
    if (r.verdict == 0) {
      ++miss;
      misses += (misses.empty() ? "" : "; ") + r.c->scenario + " " + r.c->label;
    }
  }
  for (const auto& ck : checks) {
    if (ck.target == "(reference)") continue;
    if (ck.pass) ++pass;
    else {
      ++miss;
      misses += (misses.empty() ? "" : "; ") + ck.scenario + " " + ck.what;
    }
  }
  std::fputs(wrap("u/limit: pairs/s against the hash pair, waits/s against the ready check, round trips and rounds "
                  "against the futex round trip, times min(threads, CPUs). A target of the form \"CPU/op <= kx "
                  "floor\" compares uepoll's CPU time per operation with a floor measured in the same run, so it "
                  "means the same on a machine whose system calls cost 0.1 us and on one where they cost 1 us.",
                  80, "\n", "")
                 .c_str(),
             out);
  std::fprintf(out, "\ntargets: %d PASS, %d MISS (targets are reported, not asserted)\n", pass, miss);
  if (!misses.empty()) std::fputs(wrap("missed: " + misses, 80, "  ", "    ").c_str(), out);
}

bool write_json(const std::string& path, const RunInfo& info, const std::vector<CaseResult>& results,
                const std::vector<Check>& checks) {
  std::ofstream f(path);
  if (!f) return false;
  f << "{\n  \"tool\": \"uepoll-bench\",\n";
  f << "  \"command\": " << json_str(info.command) << ",\n";
  f << "  \"date\": " << json_str(info.date_utc) << ",\n";
  f << "  \"kernel\": " << json_str(info.kernel) << ",\n";
  f << "  \"machine\": " << json_str(info.machine) << ",\n";
  f << "  \"quick\": " << (info.quick ? "true" : "false") << ",\n";
  f << "  \"reps\": " << info.reps << ",\n";
  f << "  \"uepoll_available\": " << (info.uepoll_available ? "true" : "false") << ",\n";
  if (!info.uepoll_available) f << "  \"uepoll_error\": " << json_str(info.uepoll_error) << ",\n";
  f << "  \"load_start\": " << json_str(info.load_start) << ",\n";
  f << "  \"load_end\": " << json_str(info.load_end) << ",\n";
  f << "  \"seconds\": " << json_num(info.seconds) << ",\n";
  f << "  \"syscall_ns\": " << json_num(info.syscall_ns) << ",\n";
  f << "  \"limits\": {\"syscall_ns\": " << json_num(info.limits.syscall_ns)
    << ", \"hash_pair_ns\": " << json_num(info.limits.hash_pair_ns) << ", \"wait_ns\": " << json_num(info.limits.wait_ns)
    << ", \"futex_rt_ns\": " << json_num(info.limits.futex_rt_ns) << ", \"cpus\": " << info.limits.cpus << "},\n";
  f << "  \"malloc_hook\": " << (info.malloc_hook ? "true" : "false") << ",\n";
  f << "  \"cases\": [\n";
  for (size_t i = 0; i < results.size(); ++i) {
    const CaseResult& r = results[i];
    const Case& c = *r.c;
    f << "    {\"scenario\": " << json_str(c.scenario) << ", \"group\": " << json_str(c.group)
      << ", \"label\": " << json_str(c.label) << ", \"x_name\": " << json_str(c.x_name) << ", \"x\": " << json_num(c.x)
      << ", \"unit\": " << json_str(c.unit) << ", \"higher_is_better\": " << (c.higher_is_better ? "true" : "false")
      << ", \"knob\": " << (c.knob ? json_str(c.knob) : "null") << ", \"target\": " << json_str(c.target)
      << ", \"why\": " << json_str(c.why) << ", \"floor\": " << (c.floor_k > 0 ? json_str(c.floor_name) : "null")
      << ", \"floor_k\": " << (c.floor_k > 0 ? json_num(c.floor_k) : "null")
      << ", \"floor_multiple\": " << (r.floor_multiple > 0 ? json_num(r.floor_multiple) : "null")
      << ", \"linux_syscalls\": " << json_num(c.linux_syscalls) << ", \"by_cpu\": " << (c.by_cpu ? "true" : "false")
      << ", \"linux_cpu_ns\": " << (r.linux_cpu > 0 ? json_num(r.linux_cpu) : "null")
      << ", \"uepoll_cpu_ns\": " << (r.uepoll_cpu > 0 ? json_num(r.uepoll_cpu) : "null")
      << ", \"ratio_at_100ns\": " << (ratio_at_syscall(r, info, 100) > 0 ? json_num(ratio_at_syscall(r, info, 100)) : "null")
      << ", \"ratio_at_1us\": " << (ratio_at_syscall(r, info, 1000) > 0 ? json_num(ratio_at_syscall(r, info, 1000)) : "null")
      << ", \"ratio\": " << (r.ratio > 0 ? json_num(r.ratio) : "null")
      << ", \"cpu_ratio\": " << (r.cpu_ratio > 0 ? json_num(r.cpu_ratio) : "null")
      << ", \"limit\": " << (r.limit > 0 ? json_num(r.limit) : "null")
      << ", \"limit_ratio\": " << (r.limit_ratio > 0 ? json_num(r.limit_ratio) : "null")
      << ", \"limit_basis\": " << json_str(limit_basis(c)) << ", \"verdict\": "
      << (r.verdict == 1 ? "\"PASS\"" : r.verdict == 0 ? "\"MISS\"" : "null") << ",\n      \"backends\": {";
    bool first = true;
    for (const char* vn : kVariants) {
      auto it = r.v.find(vn);
      if (it == r.v.end()) continue;
      const VariantResult& v = it->second;
      f << (first ? "" : ",") << "\n        " << json_str(vn) << ": {\"ran\": " << (v.ran ? "true" : "false");
      first = false;
      if (!v.ran) {
        f << ", \"error\": " << json_str(v.error) << "}";
        continue;
      }
      f << ", \"median\": " << json_num(v.stats.median) << ", \"min\": " << json_num(v.stats.min)
        << ", \"max\": " << json_num(v.stats.max) << ", \"q1\": " << json_num(v.stats.q1)
        << ", \"q3\": " << json_num(v.stats.q3) << ", \"samples\": [";
      for (size_t k = 0; k < v.samples.size(); ++k) f << (k ? ", " : "") << json_num(v.samples[k].value);
      f << "], \"extra\": {";
      bool ef = true;
      for (const auto& [k, val] : v.extra) {
        f << (ef ? "" : ", ") << json_str(k) << ": " << json_num(val);
        ef = false;
      }
      f << "}";
      if (!v.note.empty()) f << ", \"note\": " << json_str(v.note);
      f << "}";
    }
    f << "\n      }}" << (i + 1 < results.size() ? "," : "") << "\n";
  }
  f << "  ],\n  \"checks\": [\n";
  for (size_t i = 0; i < checks.size(); ++i) {
    const Check& ck = checks[i];
    f << "    {\"scenario\": " << json_str(ck.scenario) << ", \"what\": " << json_str(ck.what)
      << ", \"value\": " << json_num(ck.value) << ", \"target\": " << json_str(ck.target)
      << ", \"pass\": " << (ck.pass ? "true" : "false") << "}" << (i + 1 < checks.size() ? "," : "") << "\n";
  }
  f << "  ]\n}\n";
  return static_cast<bool>(f);
}

bool write_csv(const std::string& path, const std::vector<CaseResult>& results) {
  std::ofstream f(path);
  if (!f) return false;
  f << "scenario,group,case,x_name,x,unit,backend,ran,reps,median,min,max,q1,q3,ratio_uepoll_linux,ratio_uepoll_limit,target,verdict,"
       "extra,note\n";
  for (const auto& r : results) {
    const Case& c = *r.c;
    for (const char* vn : kVariants) {
      auto it = r.v.find(vn);
      if (it == r.v.end()) continue;
      const VariantResult& v = it->second;
      f << csv_field(c.scenario) << ',' << csv_field(c.group) << ',' << csv_field(c.label) << ','
        << csv_field(c.x_name) << ',' << json_num(c.x) << ',' << csv_field(c.unit) << ',' << vn << ','
        << (v.ran ? 1 : 0) << ',' << v.samples.size() << ',';
      if (v.ran)
        f << json_num(v.stats.median) << ',' << json_num(v.stats.min) << ',' << json_num(v.stats.max) << ','
          << json_num(v.stats.q1) << ',' << json_num(v.stats.q3) << ',';
      else
        f << ",,,,,";
      f << (r.ratio > 0 ? json_num(r.ratio) : "") << ',' << (r.limit_ratio > 0 ? json_num(r.limit_ratio) : "") << ','
        << csv_field(c.target) << ','
        << (r.verdict == 1 ? "PASS" : r.verdict == 0 ? "MISS" : "") << ',' << csv_field(extras_text(v.extra))
        << ',' << csv_field(v.ran ? v.note : v.error) << '\n';
    }
  }
  return static_cast<bool>(f);
}

bool write_svg(const std::string& path, const RunInfo& info, const std::vector<CaseResult>& results) {
  // Panels: one per (scenario, group) with at least one throughput value.
  struct Panel {
    std::string title, x_name, unit;
    std::vector<const CaseResult*> rows;
  };
  std::vector<Panel> panels;
  std::map<std::string, size_t> index;
  for (const auto& r : results) {
    if (!r.c->higher_is_better) continue;  // memory is not a throughput
    std::string key = r.c->scenario + "/" + r.c->group;
    if (!index.count(key)) {
      index[key] = panels.size();
      std::string title = r.c->scenario == r.c->group ? r.c->scenario : r.c->scenario + " " + r.c->group;
      if (r.c->knob) title += "  (off: " + std::string(r.c->knob) + ")";
      panels.push_back({title, r.c->x_name, r.c->unit, {}});
    }
    panels[index[key]].rows.push_back(&r);
  }
  const int pw = 420, ph = 280, cols = 3, top = 70;
  const int rows = static_cast<int>((panels.size() + cols - 1) / cols);
  const int W = pw * cols, H = top + ph * std::max(rows, 1) + 10;
  std::ofstream f(path);
  if (!f) return false;
  f << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H
    << "\" font-family=\"sans-serif\" font-size=\"11\">\n";
  f << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  f << "<text x=\"10\" y=\"20\" font-size=\"15\" font-weight=\"bold\">uepoll-bench: throughput, Linux epoll vs uepoll "
       "(median, min-max bars, log scale)</text>\n";
  f << "<text x=\"10\" y=\"38\">" << xml(info.date_utc + "  Linux " + info.kernel + "  " + info.machine) << "  "
    << xml(info.command) << "</text>\n";
  const char* colors[] = {"#d62728", "#1f77b4", "#7f7f7f"};
  const char* dashes[] = {"", "", " stroke-dasharray=\"5,3\""};
  const char* names[] = {"Linux epoll", "uepoll", "uepoll, mechanism off"};
  for (int s = 0; s < 3; ++s) {
    int lx = 10 + s * 200;
    f << "<line x1=\"" << lx << "\" y1=\"55\" x2=\"" << lx + 24 << "\" y2=\"55\" stroke=\"" << colors[s]
      << "\" stroke-width=\"2\"" << dashes[s] << "/><text x=\"" << lx + 30 << "\" y=\"59\">" << names[s]
      << "</text>\n";
  }
  for (size_t p = 0; p < panels.size(); ++p) {
    const Panel& P = panels[p];
    int ox = static_cast<int>(p % cols) * pw, oy = top + static_cast<int>(p / cols) * ph;
    int L = ox + 62, R = ox + pw - 16, T = oy + 26, B = oy + ph - 42;
    // x: evenly spaced distinct values; y: log10 over all values shown.
    std::vector<double> xs;
    double lo = INFINITY, hi = -INFINITY;
    for (const auto* r : P.rows) {
      xs.push_back(r->c->x);
      for (const char* vn : kVariants) {
        auto it = r->v.find(vn);
        if (it == r->v.end() || !it->second.ran || it->second.stats.min <= 0) continue;
        lo = std::min(lo, it->second.stats.min);
        hi = std::max(hi, it->second.stats.max);
      }
    }
    std::sort(xs.begin(), xs.end());
    xs.erase(std::unique(xs.begin(), xs.end()), xs.end());
    f << "<g>\n<rect x=\"" << L << "\" y=\"" << T << "\" width=\"" << R - L << "\" height=\"" << B - T
      << "\" fill=\"none\" stroke=\"#999\"/>\n";
    f << "<text x=\"" << L << "\" y=\"" << oy + 18 << "\" font-weight=\"bold\">" << xml(P.title) << "</text>\n";
    f << "<text x=\"" << (L + R) / 2 << "\" y=\"" << B + 32 << "\" text-anchor=\"middle\">" << xml(P.x_name)
      << "</text>\n";
    f << "<text transform=\"translate(" << ox + 12 << "," << (T + B) / 2 << ") rotate(-90)\" text-anchor=\"middle\">"
      << xml(P.unit) << "</text>\n";
    if (!(lo < hi) && lo == hi) {
      lo /= 2;
      hi *= 2;
    }
    if (!std::isfinite(lo) || !std::isfinite(hi)) {
      f << "<text x=\"" << (L + R) / 2 << "\" y=\"" << (T + B) / 2 << "\" text-anchor=\"middle\">no data</text></g>\n";
      continue;
    }
    double ylo = std::floor(std::log10(lo)), yhi = std::ceil(std::log10(hi));
    if (yhi <= ylo) yhi = ylo + 1;
    auto Y = [&](double v) { return B - (std::log10(v) - ylo) / (yhi - ylo) * (B - T); };
    auto X = [&](double x) {
      size_t i = static_cast<size_t>(std::find(xs.begin(), xs.end(), x) - xs.begin());
      return xs.size() == 1 ? (L + R) / 2.0 : L + 30 + static_cast<double>(i) * (R - L - 60) / static_cast<double>(xs.size() - 1);
    };
    for (double d = ylo; d <= yhi + 1e-9; d += 1) {
      double y = Y(std::pow(10, d));
      f << "<line x1=\"" << L << "\" y1=\"" << y << "\" x2=\"" << R << "\" y2=\"" << y
        << "\" stroke=\"#eee\"/><text x=\"" << L - 4 << "\" y=\"" << y + 4 << "\" text-anchor=\"end\">"
        << fmt_value(std::pow(10, d)) << "</text>\n";
    }
    for (double x : xs) {
      char buf[32];
      if (x >= 1000) std::snprintf(buf, sizeof buf, "1e%d", static_cast<int>(std::lround(std::log10(x))));
      else std::snprintf(buf, sizeof buf, "%g", x);
      f << "<text x=\"" << X(x) << "\" y=\"" << B + 15 << "\" text-anchor=\"middle\">" << buf << "</text>\n";
    }
    for (int s = 0; s < 3; ++s) {
      std::string pts;
      for (const auto* r : P.rows) {
        auto it = r->v.find(kVariants[s]);
        if (it == r->v.end() || !it->second.ran || it->second.stats.median <= 0) continue;
        const Stats& st = it->second.stats;
        double x = X(r->c->x) + (s - 1) * 3;
        pts += std::to_string(x) + "," + std::to_string(Y(st.median)) + " ";
        f << "<line x1=\"" << x << "\" y1=\"" << Y(std::max(st.min, std::pow(10, ylo))) << "\" x2=\"" << x
          << "\" y2=\"" << Y(st.max) << "\" stroke=\"" << colors[s] << "\" stroke-width=\"1\"/>\n";
        f << "<circle cx=\"" << x << "\" cy=\"" << Y(st.median) << "\" r=\"3\" fill=\"" << colors[s]
          << "\"><title>" << kVariants[s] << " " << xml(r->c->label) << ": " << fmt_value(st.median) << " "
          << xml(r->c->unit) << "</title></circle>\n";
      }
      if (!pts.empty())
        f << "<polyline points=\"" << pts << "\" fill=\"none\" stroke=\"" << colors[s] << "\" stroke-width=\"2\""
          << dashes[s] << "/>\n";
    }
    f << "</g>\n";
  }
  f << "</svg>\n";
  return static_cast<bool>(f);
}

}  // namespace uepoll_bench
