// scenarios_memory.cpp - the memory scenario of uepoll-bench (split out of
// scenarios.cpp): bytes per registration with N registrations on one
// instance, measured in a fresh child process (memory_child_main).  Takes no
// uepoll lock of its own.
#include "scenario_util.h"
#include "support/forked_child.h"  // tests/support: fork, read the child's output

#include <fstream>
#include <sstream>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace uepoll_bench {

using namespace sc;

namespace {
// ------------------------------------------------------------------- memory
// Bytes per registration with N registrations on one instance.  Measured in a
// fresh child process (no heap left over from other scenarios): create N
// eventfds, read RSS, add all N to one instance, read RSS again.  For Linux
// the registrations live in kernel slabs, not in the process: the cost is the
// slab object sizes of eventpoll_epi + eventpoll_pwq (from /sys/kernel/slab or
// /proc/slabinfo, else the documented 128 + 64), cross-checked by the change
// of Slab: in /proc/meminfo.
long rss_bytes() {
  std::ifstream f("/proc/self/statm");
  long size = 0, res = 0;
  f >> size >> res;
  return res * sysconf(_SC_PAGESIZE);
}

long meminfo_kb(const char* key) {
  std::ifstream f("/proc/meminfo");
  std::string k;
  long v = 0;
  std::string unit;
  while (f >> k >> v) {
    std::getline(f, unit);
    if (k == std::string(key) + ":") return v;
  }
  return -1;
}

// Bytes of slab pages a kernel cache holds, from /proc/slabinfo (num_slabs x
// pagesperslab pages), or -1 when the file cannot be read (it is root-only).
long slab_bytes(const std::string& cache) {
  std::ifstream p("/proc/slabinfo");
  std::string line;
  while (std::getline(p, line)) {
    std::istringstream is(line);
    std::string name, colon, word;
    long active = 0, num = 0, objsize = 0, perslab = 0, pages = 0;
    if (!(is >> name >> active >> num >> objsize >> perslab >> pages) || name != cache) continue;
    // ": tunables L B S : slabdata active_slabs num_slabs sharedavail"
    long v[7] = {};
    std::string sep;
    if (is >> sep >> word >> v[0] >> v[1] >> v[2] >> sep >> word >> v[3] >> v[4])
      return v[4] * pages * sysconf(_SC_PAGESIZE);
    return -1;
  }
  return -1;
}

// Slab object size of a kernel cache and where it came from.
long slab_size(const std::string& cache, std::string& source) {
  std::ifstream s("/sys/kernel/slab/" + cache + "/slab_size");
  long v = 0;
  if (s >> v && v > 0) {
    source = "/sys/kernel/slab";
    return v;
  }
  std::ifstream p("/proc/slabinfo");
  std::string line;
  while (std::getline(p, line)) {
    std::istringstream is(line);
    std::string name;
    long active = 0, num = 0, objsize = 0;
    if (is >> name >> active >> num >> objsize && name == cache) {
      source = "/proc/slabinfo";
      return objsize;
    }
  }
  source = "documented";
  return cache == "eventpoll_epi" ? 128 : 64;
}

}  // namespace

int memory_child_main(const std::string& which, long n) {
  Backend b = which == "linux" ? linux_backend() : uepoll_backend();
  std::string note;
  if (!b.is_uepoll) {
    long room = linux_fd_room() - 1;
    if (room < n) {
      note = "N scaled down from " + fmt_count(n) + " to " + fmt_count(room) + " (RLIMIT_NOFILE)";
      n = room;
    }
  } else {
    // uepoll's own limits (the "max_fds" and "max_user_watches" knobs,
    // 2^20 descriptors by default) are raised in this child for N beyond
    // them (10^7); they are limits, not costs, and cost nothing when high.
    long have = 0;
    if (uep_tuning_get("max_fds", &have) == 0 && have < n + 16) uep_tuning_set("max_fds", n + 16);
    if (uep_tuning_get("max_user_watches", &have) == 0 && have < n) uep_tuning_set("max_user_watches", n);
  }
  try {
    Fds fds(b);
    fds.reserve(static_cast<size_t>(n) + 1);
    int ep = fds.epoll();
    std::vector<int> efd(static_cast<size_t>(n));
    for (long i = 0; i < n; ++i) efd[i] = fds.eventfd();
    long slab0 = meminfo_kb("Slab");
    long epi0 = slab_bytes("eventpoll_epi"), pwq0 = slab_bytes("eventpoll_pwq");
    long rss0 = rss_bytes();
    unsigned long long a0 = b.is_uepoll ? uep_debug_alloc_count() : 0;
    for (long i = 0; i < n; ++i) ctl(b, ep, EPOLL_CTL_ADD, efd[i], EPOLLIN, static_cast<uint64_t>(i));
    long rss1 = rss_bytes();
    long slab1 = meminfo_kb("Slab");
    long epi1 = slab_bytes("eventpoll_epi"), pwq1 = slab_bytes("eventpoll_pwq");
    double per_rss = static_cast<double>(rss1 - rss0) / static_cast<double>(n);
    std::printf("n=%ld rss_per_reg=%.2f", n, per_rss);
    if (b.is_uepoll) {
      std::printf(" value=%.2f allocs_per_reg=%.3f", per_rss,
                  static_cast<double>(uep_debug_alloc_count() - a0) / static_cast<double>(n));
      if (note.empty()) note = "source: process RSS delta";
    } else {
      // Measured: the growth of Slab: in /proc/meminfo over the N additions
      // (every cache, wherever the kernel merged eventpoll_pwq; machine-wide,
      // so other processes' allocations meanwhile add noise), with the
      // eventpoll_epi slab pages' own growth from /proc/slabinfo beside it.
      // The object sizes are printed either way.
      std::string s1, s2;
      long epi = slab_size("eventpoll_epi", s1), pwq = slab_size("eventpoll_pwq", s2);
      const double meminfo_delta =
          slab0 >= 0 && slab1 >= 0 ? static_cast<double>(slab1 - slab0) * 1024.0 / static_cast<double>(n) : -1.0;
      const double epi_delta =
          epi0 >= 0 && epi1 >= 0 ? static_cast<double>(epi1 - epi0) / static_cast<double>(n) : -1.0;
      const double pwq_delta =
          pwq0 >= 0 && pwq1 >= 0 ? static_cast<double>(pwq1 - pwq0) / static_cast<double>(n) : -1.0;
      double value = 0;
      std::string src;
      if (meminfo_delta > 0) {
        value = meminfo_delta;
        src = "measured: Slab: growth in /proc/meminfo per registration";
      } else if (epi_delta > 0 && pwq_delta >= 0) {
        value = epi_delta + pwq_delta;
        src = "measured: eventpoll_epi + eventpoll_pwq slab pages grown per registration (/proc/slabinfo)";
      } else {
        value = static_cast<double>(epi + pwq);
        src = "NOT measured (no slab counter grew or was readable): eventpoll_epi + eventpoll_pwq object sizes (" +
              s1 + ")";
      }
      std::printf(" epi_slab_delta_per_reg=%.2f", epi_delta);
      std::printf(" value=%.2f epi=%ld pwq=%ld", value, epi, pwq);
      note += std::string(note.empty() ? "" : "; ") + src;
    }
    std::printf("\nnote=%s\n", note.c_str());
  } catch (const std::exception& e) {
    std::printf("error=%s\n", e.what());
    return 1;
  }
  return 0;
}

namespace {

RunFn memory(const Backend& b, long n, std::string self_exe) {
  return [&b, n, self_exe](bool) {
    // Everything the child needs is built before fork(): between fork and
    // exec it only makes async-signal-safe calls.
    std::string ns = std::to_string(n);
    const char* which = b.is_uepoll ? "uepoll" : "linux";
    uepoll_support::ChildResult child = uepoll_support::run_in_child([&](int out) {
      dup2(out, 1);  // dup2 clears O_CLOEXEC on the copy
      execl(self_exe.c_str(), "uepoll-bench", "--memory-child", which, ns.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    });
    if (!child.started) fail(b, "pipe2/fork", child.error);
    const std::string& out = child.output;
    int status = child.status;
    Sample s;
    std::istringstream is(out);
    std::string line;
    bool have = false;
    while (std::getline(is, line)) {
      if (line.rfind("error=", 0) == 0) fail_msg(b, "memory child: " + line.substr(6));
      if (line.rfind("note=", 0) == 0) {
        s.note = line.substr(5);
        continue;
      }
      std::istringstream ls(line);
      std::string kv;
      while (ls >> kv) {
        auto eq = kv.find('=');
        if (eq == std::string::npos) continue;
        std::string k = kv.substr(0, eq);
        double v = std::atof(kv.c_str() + eq + 1);
        if (k == "value") {
          s.value = v;
          have = true;
        } else {
          s.extra[k] = v;
        }
      }
    }
    if (!have) fail_msg(b, "memory child exited with status " + std::to_string(status) + ", output: " + out);
    return s;
  };
}

}  // namespace

std::vector<Case> memory_cases(const Options& o) {
  Case c;
  long n = o.mem_n ? o.mem_n : (o.quick ? 100000 : 1000000);
  c.scenario = "memory";
  c.group = "memory";
  c.label = "N=" + fmt_count(n);
  c.x_name = "registrations";
  c.x = static_cast<double>(n);
  c.unit = "B/registration";
  c.higher_is_better = false;
  c.reps = 1;
  c.warmup = false;
  c.target = "uepoll <= 96 B (half of Linux)";
  c.why = "bytes per registration: the same on any 64-bit machine";
  c.pass = [](double, double u, const std::map<std::string, double>&) { return u > 0 && u <= 96; };
  std::string self = o.self_exe;
  c.prepare = [n, self](const Backend& b) { return memory(b, n, self); };
  return {c};
}

}  // namespace uepoll_bench
