// main.cpp - uepoll-bench's driver: parses the command line, runs each
// selected case against Linux epoll and uepoll (and uepoll with the case's
// mechanism off) in the same process, alternating backends within every
// repetition after a warm-up, judges each row (judge()), then prints the
// table and writes JSON, CSV and SVG.  Progress goes to stderr; the table
// (or --table FILE) and then a summary in plain words (summary.cpp) to
// stdout.  Targets are shown (PASS/MISS), never asserted: the exit status is
// 0 unless a Linux run failed (a broken harness), the command line is wrong,
// an output file cannot be written, or --strict is given and a uepoll run
// failed (an error or a result Linux would not give).
#include "harness.h"
#include "report.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <deque>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include <sys/utsname.h>
#include <unistd.h>

namespace uepoll_bench {
namespace {

void usage(std::FILE* out) {
  std::fprintf(out,
               "usage: uepoll-bench [options]\n"
               "Runs each scenario against Linux epoll (kernel descriptors) and uepoll in the same\n"
               "process, alternating repetitions, and prints median [min-max] with the uepoll/Linux ratio.\n"
               "\n"
               "  --scenario NAME     scenario to run (repeatable, comma lists allowed; default: all)\n"
               "  --list              list the scenarios and exit\n"
               "  --quick             3 repetitions of 50 ms windows (smaller memory/scale sizes): well under a minute\n"
               "  --reps N            measured repetitions per backend (default 5, --quick 3)\n"
               "  --threads LIST      thread/worker/waiter counts, e.g. 1,2,4 (default: per scenario)\n"
               "  --producers LIST    stress producers (default 8,16)\n"
               "  --consumers LIST    stress consumer threads waiting on the one instance (default 1,4)\n"
               "  --mode flat|nested  ctl-pairs mode (repeatable; default both)\n"
               "  --topology shared|private  nested-wait topology (repeatable; default both)\n"
               "  --duration-ms MS    run each measured repetition for MS ms instead of fixed counts\n"
               "  --count N           operations per thread (pairs, waits) or herd rounds, all scenarios\n"
               "  --rounds N          herd rounds (default 20000, --quick 2000)\n"
               "  --writes N          stress total writes (default 2000000, --quick 200000)\n"
               "  --mem-n N           memory: registrations (default 1000000, --quick 100000)\n"
               "  --scale-n LIST      scale: instance sizes (default 10,1000,100000,1000000; --quick drops 10^6)\n"
               "  --backends LIST     linux,uepoll,uepoll-off (default all three)\n"
               "  --no-off            same as --backends linux,uepoll\n"
               "  --table FILE        write the table to FILE (stdout then has only the summary)\n"
               "  --json FILE         write every sample and statistic as JSON\n"
               "  --csv FILE          write one CSV line per case and backend\n"
               "  --svg FILE          draw throughput against threads (Linux, uepoll, uepoll mechanism off)\n"
               "  --strict            exit 1 when any uepoll run failed (wrong result or error), not only Linux\n"
               "  --help              this text\n");
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

long parse_long(const std::string& opt, const std::string& v) {
  char* end = nullptr;
  errno = 0;
  double d = std::strtod(v.c_str(), &end);  // accepts 1e6
  if (errno || end == v.c_str() || *end != '\0' || d < 0 || d > 1e15) {
    std::fprintf(stderr, "uepoll-bench: %s: bad number '%s'\n", opt.c_str(), v.c_str());
    std::exit(2);
  }
  return static_cast<long>(d);
}

template <class T>
std::vector<T> parse_list(const std::string& opt, const std::string& v) {
  std::vector<T> out;
  for (const auto& s : split(v)) {
    long n = parse_long(opt, s);
    if (n <= 0) {
      std::fprintf(stderr, "uepoll-bench: %s: values must be positive\n", opt.c_str());
      std::exit(2);
    }
    out.push_back(static_cast<T>(n));
  }
  if (out.empty()) {
    std::fprintf(stderr, "uepoll-bench: %s: empty list\n", opt.c_str());
    std::exit(2);
  }
  return out;
}

std::string now_utc() {
  std::time_t t = std::time(nullptr);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

std::string machine_text() {
  struct utsname u {};
  uname(&u);
  std::string model;
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("model name", 0) == 0) {
      auto c = line.find(':');
      if (c != std::string::npos) model = line.substr(c + 2);
      break;
    }
  }
  return std::string(u.machine) + ", " + std::to_string(std::thread::hardware_concurrency()) + " CPUs" +
         (model.empty() ? "" : ", " + model);
}

std::string loadavg() {
  std::ifstream f("/proc/loadavg");
  std::string a, b, c;
  f >> a >> b >> c;
  return a + " " + b + " " + c;
}

std::string kernel_text() {
  struct utsname u {};
  uname(&u);
  return u.release;
}

// CPU ns per operation a backend's side metrics hold (0: none).
double cpu_per_op(const VariantResult& v) {
  for (const char* key : {"cpu_ns/op", "cpu_ns/event", "cpu_ns/cmd"}) {
    auto it = v.extra.find(key);
    if (it != v.extra.end() && it->second > 0) return it->second;
  }
  return 0;
}

// A row's ratios and verdict.  A floor target (Case::floor_k) compares
// uepoll's CPU per operation with a floor of this run; any other target
// compares the medians with Linux's (Case::pass).
void judge(CaseResult& r, const Limits& lim) {
  const Case& c = *r.c;
  auto li = r.v.find("linux"), ui = r.v.find("uepoll");
  const bool lran = li != r.v.end() && li->second.ran, uran = ui != r.v.end() && ui->second.ran;
  if (uran) r.uepoll_cpu = cpu_per_op(ui->second);
  if (lran) r.linux_cpu = cpu_per_op(li->second);
  if (lran && uran && li->second.stats.median > 0) {
    r.ratio = ui->second.stats.median / li->second.stats.median;
    if (r.linux_cpu > 0 && r.uepoll_cpu > 0) r.cpu_ratio = r.linux_cpu / r.uepoll_cpu;
  }
  if (c.floor_k > 0) {
    const double floor = std::strcmp(c.floor_name, "wait") == 0 ? lim.wait_ns : lim.hash_pair_ns;
    if (uran && r.uepoll_cpu > 0 && floor > 0) {
      r.floor_multiple = r.uepoll_cpu / floor;
      bool ok = r.floor_multiple <= c.floor_k;
      if (c.pass) ok = ok && c.pass(lran ? li->second.stats.median : 0, ui->second.stats.median, ui->second.extra);
      r.verdict = ok ? 1 : 0;
    }
  } else if (c.pass && c.by_cpu) {
    if (r.cpu_ratio > 0) r.verdict = c.pass(1 / r.linux_cpu, 1 / r.uepoll_cpu, ui->second.extra) ? 1 : 0;
  } else if (c.pass && r.ratio > 0) {
    r.verdict = c.pass(li->second.stats.median, ui->second.stats.median, ui->second.extra) ? 1 : 0;
  }
}

// Whether uepoll is usable in this build: create and close one instance.
bool probe_uepoll(std::string& why) {
  int ep = uep_epoll_create1(0);
  if (ep < 0) {
    why = std::string("uep_epoll_create1 failed: ") + std::strerror(errno);
    return false;
  }
  uep_close(ep);
  long v = 0;
  if (uep_tuning_get("rcu_ctl", &v) != 0) why = "uep_tuning_get(rcu_ctl) failed; uepoll-off disabled";
  return true;
}

}  // namespace
}  // namespace uepoll_bench

int main(int argc, char** argv) {
  using namespace uepoll_bench;
  if (argc == 4 && std::strcmp(argv[1], "--memory-child") == 0)
    return memory_child_main(argv[2], std::atol(argv[3]));

  Options o;
  std::vector<std::string> chosen;
  std::string json, csv, svg, table;
  std::set<std::string> backends{"linux", "uepoll", "uepoll-off"};
  bool reps_given = false;
  bool strict = false;
  std::string command = "uepoll-bench";
  for (int i = 1; i < argc; ++i) command += std::string(" ") + argv[i];

  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    std::string val;
    auto eq = a.find('=');
    bool has_eq = a.rfind("--", 0) == 0 && eq != std::string::npos;
    if (has_eq) {
      val = a.substr(eq + 1);
      a = a.substr(0, eq);
    }
    auto need = [&]() -> std::string {
      if (has_eq) return val;
      if (i + 1 >= argc) {
        std::fprintf(stderr, "uepoll-bench: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--help" || a == "-h") {
      usage(stdout);
      return 0;
    } else if (a == "--list") {
      for (const auto& s : scenarios()) std::printf("%-12s %s\n", s.name.c_str(), s.summary.c_str());
      return 0;
    } else if (a == "--scenario") {
      for (const auto& s : split(need())) chosen.push_back(s);
    } else if (a == "--quick") {
      o.quick = true;
    } else if (a == "--reps") {
      o.reps = static_cast<int>(parse_long(a, need()));
      reps_given = true;
      if (o.reps < 1) o.reps = 1;
    } else if (a == "--threads") {
      o.threads = parse_list<int>(a, need());
    } else if (a == "--producers") {
      o.producers = parse_list<int>(a, need());
    } else if (a == "--consumers") {
      o.consumers = parse_list<int>(a, need());
    } else if (a == "--mode") {
      for (const auto& m : split(need())) {
        if (m != "flat" && m != "nested") {
          std::fprintf(stderr, "uepoll-bench: --mode is flat or nested\n");
          return 2;
        }
        o.modes.push_back(m);
      }
    } else if (a == "--topology") {
      for (const auto& t : split(need())) {
        if (t != "shared" && t != "private") {
          std::fprintf(stderr, "uepoll-bench: --topology is shared or private\n");
          return 2;
        }
        o.topologies.push_back(t);
      }
    } else if (a == "--duration-ms") {
      o.duration = std::chrono::milliseconds(parse_long(a, need()));
    } else if (a == "--count") {
      o.count = static_cast<uint64_t>(parse_long(a, need()));
    } else if (a == "--rounds") {
      o.rounds = static_cast<uint64_t>(parse_long(a, need()));
    } else if (a == "--writes") {
      o.writes = static_cast<uint64_t>(parse_long(a, need()));
    } else if (a == "--mem-n") {
      o.mem_n = parse_long(a, need());
    } else if (a == "--scale-n") {
      o.scale_n = parse_list<long>(a, need());
    } else if (a == "--backends") {
      backends.clear();
      for (const auto& b : split(need())) {
        if (b != "linux" && b != "uepoll" && b != "uepoll-off") {
          std::fprintf(stderr, "uepoll-bench: unknown backend '%s'\n", b.c_str());
          return 2;
        }
        backends.insert(b);
      }
    } else if (a == "--strict") {
      strict = true;
    } else if (a == "--no-off") {
      backends.erase("uepoll-off");
    } else if (a == "--table") {
      table = need();
    } else if (a == "--json") {
      json = need();
    } else if (a == "--csv") {
      csv = need();
    } else if (a == "--svg") {
      svg = need();
    } else {
      std::fprintf(stderr, "uepoll-bench: unknown option '%s' (try --help)\n", argv[i]);
      return 2;
    }
  }
  if (o.quick && !reps_given) o.reps = 3;
  // --quick measures time windows, not counts: each backend gets the same
  // 50 ms per repetition, so the faster one is not timed over a window short
  // enough for a scheduler tick to dominate.
  if (o.quick && o.duration.count() == 0 && o.count == 0 && o.rounds == 0 && o.writes == 0)
    o.duration = std::chrono::milliseconds(50);
  o.with_off = backends.count("uepoll-off") > 0;
  {
    char buf[4096];
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    o.self_exe = n > 0 ? std::string(buf, static_cast<size_t>(n)) : argv[0];
  }

  std::vector<const Scenario*> run;
  if (chosen.empty() || std::find(chosen.begin(), chosen.end(), "all") != chosen.end()) {
    for (const auto& s : scenarios()) run.push_back(&s);
  } else {
    for (const auto& name : chosen) {
      auto it = std::find_if(scenarios().begin(), scenarios().end(), [&](const Scenario& s) { return s.name == name; });
      if (it == scenarios().end()) {
        std::fprintf(stderr, "uepoll-bench: unknown scenario '%s' (try --list)\n", name.c_str());
        return 2;
      }
      if (std::find(run.begin(), run.end(), &*it) == run.end()) run.push_back(&*it);
    }
  }

  RunInfo info;
  info.command = command;
  info.date_utc = now_utc();
  info.kernel = kernel_text();
  info.machine = machine_text();
  info.quick = o.quick;
  info.reps = o.reps;
  info.malloc_hook = malloc_count::available();
  info.load_start = loadavg();
  std::fprintf(stderr, "measuring the floors (null syscall, hash pair, ready check, futex round trip)\n");
  info.limits = measure_limits();
  info.syscall_ns = info.limits.syscall_ns;
  std::string why;
  info.uepoll_available = probe_uepoll(why);
  bool knobs_ok = info.uepoll_available && why.empty();
  if (!info.uepoll_available) {
    info.uepoll_error = why;
    std::fprintf(stderr, "uepoll-bench: uepoll unavailable (%s); measuring Linux only\n", why.c_str());
  } else if (!why.empty()) {
    std::fprintf(stderr, "uepoll-bench: %s\n", why.c_str());
  }

  // Cases live in a deque so CaseResult::c stays valid.
  std::deque<Case> cases;
  std::vector<CaseResult> results;
  std::vector<Check> checks;
  std::vector<std::pair<const Scenario*, std::pair<size_t, size_t>>> spans;
  for (const Scenario* s : run) {
    size_t from = cases.size();
    for (auto& c : s->cases(o)) cases.push_back(std::move(c));
    spans.push_back({s, {from, cases.size()}});
  }
  auto t_start = std::chrono::steady_clock::now();
  bool linux_broken = false;
  bool uepoll_broken = false;
  size_t idx = 0;
  for (const auto& [sc, span] : spans) {
    std::vector<CaseResult> mine;
    for (size_t ci = span.first; ci < span.second; ++ci) {
      const Case& c = cases[ci];
      ++idx;
      CaseResult r;
      r.c = &c;
      // The backends this case runs, in alternation order.
      std::deque<Backend> bes;
      if (backends.count("linux")) bes.push_back(linux_backend());
      if (info.uepoll_available && backends.count("uepoll")) bes.push_back(uepoll_backend());
      if (info.uepoll_available && knobs_ok && o.with_off && c.knob) bes.push_back(uepoll_off_backend(c.knob));
      std::vector<RunFn> fns(bes.size());
      for (size_t k = 0; k < bes.size(); ++k) {
        VariantResult& vr = r.v[bes[k].name];
        try {
          fns[k] = c.prepare(bes[k]);
        } catch (const std::exception& e) {
          vr.error = e.what();
        }
      }
      int reps = c.reps ? c.reps : o.reps;
      std::fprintf(stderr, "[%zu/%zu] %s %s (%s)\n", idx, cases.size(), c.scenario.c_str(), c.label.c_str(),
                   c.unit.c_str());
      auto run_one = [&](size_t k, bool warm) {
        VariantResult& vr = r.v[bes[k].name];
        if (!fns[k]) return;
        try {
          Sample s = fns[k](warm);
          if (!warm) vr.samples.push_back(std::move(s));
        } catch (const std::exception& e) {
          vr.error = e.what();
          fns[k] = nullptr;  // a failed backend stops running for this case
          vr.samples.clear();
        }
      };
      if (c.warmup) {
        std::fprintf(stderr, "    warm-up\n");
        for (size_t k = 0; k < bes.size(); ++k) run_one(k, true);
      }
      for (int rep = 0; rep < reps; ++rep) {
        std::string line = "    rep " + std::to_string(rep + 1) + "/" + std::to_string(reps) + ":";
        for (size_t k = 0; k < bes.size(); ++k) {
          run_one(k, false);
          VariantResult& vr = r.v[bes[k].name];
          line += "  " + bes[k].name + " " + (vr.samples.empty() ? std::string("failed") : fmt_value(vr.samples.back().value));
        }
        std::fprintf(stderr, "%s\n", line.c_str());
      }
      fns.clear();  // drop prepared state (a million registrations) now
      for (auto& [name, vr] : r.v) {
        if (vr.samples.empty()) {
          if (vr.error.empty()) vr.error = "not run";
          continue;
        }
        vr.ran = true;
        std::vector<double> vals;
        std::map<std::string, std::vector<double>> ex;
        for (const auto& s : vr.samples) {
          vals.push_back(s.value);
          for (const auto& [k, v] : s.extra) ex[k].push_back(v);
          if (!s.note.empty()) vr.note = s.note;
        }
        vr.stats = stats_of(vals);
        for (auto& [k, v] : ex) vr.extra[k] = k == "lost" || k == "timeouts" ? *std::max_element(v.begin(), v.end())
                                                                              : stats_of(v).median;
      }
      for (const auto& [name, vr] : r.v)
        if (!vr.ran && !vr.error.empty()) std::fprintf(stderr, "    %s: %s\n", name.c_str(), vr.error.c_str());
      auto li = r.v.find("linux"), ui = r.v.find("uepoll");
      if (li != r.v.end() && !li->second.ran && !li->second.error.empty()) linux_broken = true;
      for (const char* vn : {"uepoll", "uepoll-off"}) {
        auto it = r.v.find(vn);
        if (it != r.v.end() && !it->second.ran && !it->second.error.empty()) uepoll_broken = true;
      }
      judge(r, info.limits);
      r.limit = limit_for(c, info.limits);
      if (r.limit > 0 && c.higher_is_better && ui != r.v.end() && ui->second.ran)
        r.limit_ratio = ui->second.stats.median / r.limit;
      mine.push_back(std::move(r));
    }
    if (sc->checks) {
      auto more = sc->checks(mine);
      checks.insert(checks.end(), more.begin(), more.end());
    }
    for (auto& r : mine) results.push_back(std::move(r));
  }
  double total_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
  std::fprintf(stderr, "done in %.1f s\n", total_s);
  info.seconds = total_s;
  info.load_end = loadavg();

  int rc = 0;
  if (table.empty()) {
    print_table(stdout, info, results, checks);
  } else if (std::FILE* f = std::fopen(table.c_str(), "w")) {
    print_table(f, info, results, checks);
    if (std::fclose(f) != 0) rc = 1;
  } else {
    rc = 1;
  }
  if (rc) std::fprintf(stderr, "uepoll-bench: cannot write %s\n", table.c_str());
  if (!json.empty() && !write_json(json, info, results, checks)) {
    std::fprintf(stderr, "uepoll-bench: cannot write %s\n", json.c_str());
    rc = 1;
  }
  if (!csv.empty() && !write_csv(csv, results)) {
    std::fprintf(stderr, "uepoll-bench: cannot write %s\n", csv.c_str());
    rc = 1;
  }
  if (!svg.empty() && !write_svg(svg, info, results)) {
    std::fprintf(stderr, "uepoll-bench: cannot write %s\n", svg.c_str());
    rc = 1;
  }
  Outputs files{table, json, csv, svg};
  print_summary(stdout, info, results, checks, files);
  std::fflush(stdout);
  if (linux_broken) {
    std::fprintf(stderr, "uepoll-bench: a Linux baseline run failed (see the table)\n");
    rc = 1;
  }
  if (strict && uepoll_broken) {
    std::fprintf(stderr, "uepoll-bench: --strict: a uepoll run failed (see the table)\n");
    rc = 1;
  }
  if (strict && !info.uepoll_available) {
    std::fprintf(stderr, "uepoll-bench: --strict: uepoll unavailable\n");
    rc = 1;
  }
  return rc;
}
