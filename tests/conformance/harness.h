// harness.h - the differential conformance harness (owned by the conformance
// suite).  A scenario is written once as `void scenario(conf::T& t)` and run
// twice: against real Linux descriptors (uepoll_test::linux_api()) and against
// uepoll (uepoll_test::uepoll_api()).  Every call made through `T` is recorded
// as one line of a trace:
//
//     ctl(fd0,ADD,fd1,IN|ET,7) = 0
//     wait(fd0,3,0) = 2 [IN:7 OUT|HUP:9]
//     read(fd2,8) = -1 EAGAIN
//
// Descriptors are replaced by names ("fd0", "fd1", ...) given in creation
// order, so the two traces are comparable although uepoll's descriptors start
// at UEP_FD_BASE.  `differential()` runs a scenario on both and EXPECT_EQs
// the traces, printing both (with the first difference marked) on mismatch.
// Absolute expectations on the Linux trace (so a scenario can fail even when
// both implementations agree) are written by the test with `has()`/`line()`.
//
// Environment:
//   UEPOLL_CONF_LINUX_ONLY=1  run only the Linux side (the oracle itself),
//                             e.g. before uepoll's core exists.
//   UEPOLL_CONF_VERBOSE=1     print every Linux trace.
#pragma once

// The sanitizers' interceptors read syscall arguments before the kernel
// does: a kernel-address pointer, or a pollfd array shorter than nfds, makes
// the interceptor crash or report instead of the kernel returning EFAULT or
// EINVAL, and ASan turns a deliberate SIGSEGV into exit(1).  Scenarios built
// on that run in the normal build only (UEPOLL_SKIP_UNDER_SANITIZERS).
// TSan also reports a close() racing a blocked call on the same kernel
// descriptor as a data race: those run without TSan (UEPOLL_SKIP_UNDER_TSAN);
// the uepoll side of such races is covered under TSan by
// tests/reliability/torture_test.cpp.
#if defined(__SANITIZE_THREAD__)
#define UEPOLL_SKIP_UNDER_TSAN(why) GTEST_SKIP() << "not under TSan: " << why
#else
#define UEPOLL_SKIP_UNDER_TSAN(why) (void)0
#endif
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define UEPOLL_SKIP_UNDER_SANITIZERS(why) GTEST_SKIP() << "not under a sanitizer: " << why
#else
#define UEPOLL_SKIP_UNDER_SANITIZERS(why) (void)0
#endif

// The vocabulary (errno and mask names, constants) is in harness_base.h, the
// recording call table conf::T in harness_trace.h; this header adds the
// thread sequencing, the runs (one side, forked, differential) and the
// checks on a trace.
#include "harness_trace.h"

namespace conf {

// ---- sequencing threads ----------------------------------------------------
// Scheduler state of one of our threads ('R', 'S', 'D', ...), from
// /proc/self/task/<tid>/stat; '?' if unreadable.
inline char task_state(pid_t tid) {
  char path[64];
  snprintf(path, sizeof path, "/proc/self/task/%d/stat", static_cast<int>(tid));
  FILE* f = fopen(path, "r");
  if (!f) return '?';
  char buf[512];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  const char* p = strrchr(buf, ')');
  return p && p[1] == ' ' ? p[2] : '?';
}
// Returns once thread `tid` (0 until the thread publishes it) has been seen
// sleeping in four samples 3 ms apart, or after 3 s.  Used before generating
// the event a blocked waiter is meant to receive.
inline void wait_until_sleeping(const std::atomic<pid_t>& tid) {
  double end = now_ms() + 3000;
  int streak = 0;
  while (now_ms() < end && streak < 4) {
    pid_t t = tid.load();
    streak = t != 0 && task_state(t) == 'S' ? streak + 1 : 0;
    usleep(3000);
  }
}

// Runs `fn` on a helper thread as soon as the constructing thread is asleep,
// i.e. blocked in the call it makes right after constructing this.  Joined
// by the destructor (or join()).  Makes "X blocks until Y" deterministic.
class WhenBlocked {
 public:
  explicit WhenBlocked(std::function<void()> fn)
      : tid_(static_cast<pid_t>(gettid())), th_([this, fn = std::move(fn)] {
          wait_until_sleeping(tid_);
          fn();
        }) {}
  ~WhenBlocked() { join(); }
  void join() {
    if (th_.joinable()) th_.join();
  }

 private:
  std::atomic<pid_t> tid_;
  std::thread th_;
};

using Scenario = std::function<void(T&)>;

struct Traces {
  std::vector<std::string> linux_trace;
  std::vector<std::string> uepoll_trace;
};

inline std::string format_traces(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  std::ostringstream o;
  size_t n = std::max(a.size(), b.size());
  size_t first = n;
  for (size_t i = 0; i < n; ++i) {
    if (i >= a.size() || i >= b.size() || a[i] != b[i]) {
      first = i;
      break;
    }
  }
  o << "  #  | linux / uepoll\n";
  for (size_t i = 0; i < n; ++i) {
    std::string la = i < a.size() ? a[i] : "<none>";
    std::string lb = i < b.size() ? b[i] : "<none>";
    char idx[32];
    snprintf(idx, sizeof idx, "%4zu", i);
    if (la == lb) {
      o << idx << " |   " << la << "\n";
    } else {
      o << idx << (i == first ? " |>L " : " | L ") << la << "\n";
      o << "     " << (i == first ? " |>U " : " | U ") << lb << "\n";
    }
  }
  return o.str();
}

inline std::vector<std::string> run_one(const Api& api, const Scenario& s) {
  T t(api);
  s(t);
  return std::move(t.lines);
}

// Runs `s` in a forked child, streaming the trace back line by line, so a
// crash (e.g. SIGSEGV on a bad pointer that Linux answers with EFAULT) ends
// the trace with a "<killed by SIG...>" line instead of ending the test
// binary.  Used for scenarios that pass invalid pointers.  The child has no
// threads but the one that forked: nothing in these scenarios needs others.
inline std::vector<std::string> run_forked(const Api& api, const Scenario& s) {
  uepoll_support::ChildResult c = uepoll_support::run_in_child(
      [&](int out) {
        // uepoll sleeps on kernel descriptors of its own (the thread's
        // waiter), created at a thread's first sleep; in a fresh child that
        // would take the number of a kernel descriptor the scenario has just
        // closed (docs/linux-deviations.md, descriptor numbers).  Create it
        // before the scenario starts.
        if (&api != &uepoll_test::linux_api()) {
          int ep = uep_epoll_create1(0);
          epoll_event ev;
          uep_epoll_wait(ep, &ev, 1, 1);
          uep_close(ep);
        }
        T t(api);
        t.set_sink(out);
        s(t);
      },
      20000);
  if (!c.started) return {"<pipe or fork failed: " + std::string(strerror(c.error)) + ">"};
  std::string data = std::move(c.output);
  if (c.timed_out) {
    data += "<hung: killed after 20 s>\n";
  } else if (int sig = c.signal()) {
    const char* ab = sigabbrev_np(sig);
    data += "<killed by " + (ab ? "SIG" + std::string(ab) : "signal " + std::to_string(sig)) + ">\n";
  }
  std::vector<std::string> lines;
  std::istringstream in(data);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

// variants.h: the same scenario against the mixed topologies (kernel
// objects in uepoll instances, waits through uep_epoll_kernel_fd).
inline void run_variants(const Scenario& s, bool forked, const std::vector<std::string>& linux_trace);

// Runs `s` on Linux then on uepoll (and the variants of variants.h) and
// expects identical traces.  With `forked`, each side runs in a child
// process (see run_forked).
inline Traces differential(const Scenario& s, bool forked = false) {
  Traces r;
  r.linux_trace = forked ? run_forked(uepoll_test::linux_api(), s) : run_one(uepoll_test::linux_api(), s);
  if (env_flag("UEPOLL_CONF_VERBOSE")) {
    std::string all;
    for (auto& l : r.linux_trace) all += "    " + l + "\n";
    printf("linux trace:\n%s", all.c_str());
  }
  if (linux_only()) return r;
  r.uepoll_trace = forked ? run_forked(uepoll_test::uepoll_api(), s) : run_one(uepoll_test::uepoll_api(), s);
  EXPECT_TRUE(r.linux_trace == r.uepoll_trace)
      << "traces differ (L = Linux, U = uepoll):\n"
      << format_traces(r.linux_trace, r.uepoll_trace);
  run_variants(s, forked, r.linux_trace);
  return r;
}

// Runs `s` on both without comparing: for the intentional differences listed
// in docs/linux-deviations.md, where the test asserts each side separately.
inline Traces both_sides(const Scenario& s) {
  Traces r;
  r.linux_trace = run_one(uepoll_test::linux_api(), s);
  if (!linux_only()) r.uepoll_trace = run_one(uepoll_test::uepoll_api(), s);
  return r;
}

// ---- absolute checks on a trace ------------------------------------------
inline bool has(const std::vector<std::string>& tr, const std::string& needle) {
  for (auto& l : tr)
    if (l.find(needle) != std::string::npos) return true;
  return false;
}
inline std::string dump(const std::vector<std::string>& tr) {
  std::string s;
  for (auto& l : tr) s += "    " + l + "\n";
  return s;
}
// EXPECT that some line of the Linux trace contains `needle`.
#define EXPECT_LINUX_HAS(traces, needle)                                                           \
  EXPECT_TRUE(::conf::has((traces).linux_trace, (needle)))                                         \
      << "Linux trace lacks \"" << (needle) << "\":\n"                                            \
      << ::conf::dump((traces).linux_trace)

// Index of the first line at or after `from` equal to `text`, or -1.
inline long find_line(const std::vector<std::string>& tr, const std::string& text, size_t from = 0) {
  for (size_t i = from; i < tr.size(); ++i)
    if (tr[i] == text) return static_cast<long>(i);
  return -1;
}
// Empty when `want` occurs in `tr` as a subsequence of whole lines (in
// order, gaps allowed); otherwise says which line is missing.
inline std::string subsequence(const std::vector<std::string>& tr, const std::vector<std::string>& want) {
  size_t from = 0;
  for (size_t k = 0; k < want.size(); ++k) {
    long i = find_line(tr, want[k], from);
    if (i < 0) return "expected line #" + std::to_string(k) + " not found (in order): \"" + want[k] + "\"";
    from = static_cast<size_t>(i) + 1;
  }
  return "";
}
// EXPECT that these exact lines appear in the Linux trace, in this order.
#define EXPECT_LINUX_SEQ(traces, ...)                                                               \
  do {                                                                                             \
    std::string why_ = ::conf::subsequence((traces).linux_trace, std::vector<std::string>__VA_ARGS__); \
    EXPECT_TRUE(why_.empty()) << why_ << "\nLinux trace:\n" << ::conf::dump((traces).linux_trace); \
  } while (0)

}  // namespace conf

#include "variants.h"  // IWYU pragma: export
