// stats.cpp - UEPOLL_STATS and the one-line warnings (see stats.h).
// UEPOLL_STATS=FILE: at exit each process appends one block to FILE ("%p"
// in the name is replaced by the process id).  Written by an atexit handler:
// a process that leaves through _exit() (a shell's exit, a forked child
// that _exits) writes none.  Locks: a std::mutex for the
// warnings' "already said" list; none on the counters.
#include "preload/stats.h"

#include "preload/preload.h"
#include "preload/real.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <mutex>
#include <string>
#include <unistd.h>
#include <vector>

namespace uepoll::preload {

Stats& stats() noexcept {
  static Stats* s = new Stats();  // never destroyed: used until the last atexit handler
  return *s;
}

void warn_once(const char* message) noexcept {
  if (uep_pl_stats_enabled()) count(stats().refused);
  static std::mutex mu;
  static std::vector<std::string>* said = new std::vector<std::string>();
  {
    std::lock_guard<std::mutex> g(mu);
    for (const std::string& s : *said)
      if (s == message) return;
    said->emplace_back(message);
  }
  std::fprintf(stderr, "uepoll: %s\n", message);
}

namespace {

const char* kind_name(int k) {
  static const char* names[] = {"kernel", "epoll", "eventfd", "pipe", "socketpair", "timerfd", "provider"};
  return names[k];
}

// UEPOLL_STATS as it was when the library loaded: programs may replace
// their environment later (nginx's workers keep only TZ), and the
// children they fork must still report.
const std::string* g_stats_path = nullptr;

void write_stats() {
  if (!g_stats_path) return;
  const char* path = g_stats_path->c_str();
  std::string name;
  for (const char* p = path; *p; ++p) {
    if (p[0] == '%' && p[1] == 'p') {
      name += std::to_string(getpid());
      ++p;
    } else {
      name += *p;
    }
  }
  const Stats& s = stats();
  std::string out = "uepoll-stats pid " + std::to_string(getpid()) + "\n";
  auto line = [&](const std::string& k, uint64_t v) { out += k + " " + std::to_string(v) + "\n"; };
  line("epoll_instances", s.created[static_cast<int>(Kind::kEpoll)].load());
  for (int k = 2; k < static_cast<int>(Kind::kProvider); ++k) line(std::string("objects_") + kind_name(k), s.created[k].load());
  line("provider_sockets", s.created[static_cast<int>(Kind::kProvider)].load());  // made by socket() or accept()
  for (int k = 0; k < static_cast<int>(Kind::kCount); ++k)
    line(std::string("registrations_") + kind_name(k), s.registrations[k].load());
  line("ctl_calls", s.ctl_calls.load());
  line("waits", s.waits.load());
  line("wakeups", s.wakeups.load());
  line("events", s.events.load());
  line("uepoll_calls", s.uepoll_calls.load());
  line("forwarded_to_kernel", s.forwarded.load());
  line("refused", s.refused.load());
  line("converted_at_fork", s.converted.load());
  line("eventfds_made_kernel", s.eventfds_kernel.load());
  const int fd = UEP_REAL(open)(name.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return;
  ssize_t unused = UEP_REAL(write)(fd, out.data(), out.size());
  (void)unused;
  UEP_REAL(close)(fd);
}

// UEPOLL_STATS if it names a file, else null.
const char* stats_path_env() noexcept {
  const char* path = std::getenv("UEPOLL_STATS");
  return path && *path ? path : nullptr;
}

// Registered first thing, so it runs after the program's own atexit work.
// The counters are allocated here, not at a first count that an
// interposer may make in a signal handler; and only when they will be
// written: a process without UEPOLL_STATS allocates nothing at start-up.
__attribute__((constructor)) void register_stats() {
  const char* path = stats_path_env();
  if (path) {
    stats();
    g_stats_path = new std::string(path);  // never freed: read at exit
  }
  __atomic_store_n(&uep_pl_stats_on_, path ? 1 : 0, __ATOMIC_RELAXED);
  std::atexit(write_stats);
}

}  // namespace

}  // namespace uepoll::preload

// ---- the C side (preload.h) --------------------------------------------------

extern "C" {
int uep_pl_stats_on_ = -1;

int uep_pl_stats_enabled(void) {
  int on = __atomic_load_n(&uep_pl_stats_on_, __ATOMIC_RELAXED);
  if (on < 0) {
    // A call before register_stats ran (another library's constructor).
    on = uepoll::preload::stats_path_env() ? 1 : 0;
    __atomic_store_n(&uep_pl_stats_on_, on, __ATOMIC_RELAXED);
  }
  return on;
}

void uep_pl_count_slow(int which, uint64_t n) {
  using uepoll::preload::count;
  using uepoll::preload::stats;
  if (!uep_pl_stats_enabled()) return;
  switch (which) {
    case UEP_PL_CTL: count(stats().ctl_calls, n); break;
    case UEP_PL_WAIT: count(stats().waits, n); break;
    case UEP_PL_WAKEUP: count(stats().wakeups); count(stats().events, n); break;
    case UEP_PL_UEPOLL_CALL: count(stats().uepoll_calls, n); break;
    case UEP_PL_CONVERTED: count(stats().converted, n); break;
    case UEP_PL_EVENTFD_CONVERTED: count(stats().eventfds_kernel, n); break;
    default: count(stats().forwarded, n); break;
  }
}
void uep_pl_count_created(int kind) {
  if (uep_pl_stats_enabled()) uepoll::preload::count(uepoll::preload::stats().created[kind]);
}
void uep_pl_count_registration(int kind) {
  if (uep_pl_stats_enabled()) uepoll::preload::count(uepoll::preload::stats().registrations[kind]);
}
void uep_pl_refuse(const char* message) { uepoll::preload::warn_once(message); }
}
