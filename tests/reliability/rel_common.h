// rel_common.h - helpers shared by the reliability suite (tests/reliability/):
// tier sizing (default / long tiers, scaled down under sanitizers), readable
// names for errno values and event masks, a deterministic RNG, and probes of
// the descriptor tables (Linux and uepoll) used to normalise descriptor
// numbers.  Owns no state; checks nothing by itself.
#pragma once

#include <uepoll/testing.h>  // fail_alloc_after, uep_debug_*; includes tuning.h
#include <uepoll/uepoll.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <vector>
#include <sys/epoll.h>

#include "../support/api.h"
#include "../support/forked_child.h"

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define UEP_REL_TSAN 1
#endif
#if __has_feature(address_sanitizer)
#define UEP_REL_ASAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__) && !defined(UEP_REL_TSAN)
#define UEP_REL_TSAN 1
#endif
#if defined(__SANITIZE_ADDRESS__) && !defined(UEP_REL_ASAN)
#define UEP_REL_ASAN 1
#endif

namespace uepoll_test::rel {

// Multiplier for default-tier sizes: TSan runs ~5-10x slower, ASan ~2x.
// UEPOLL_REL_SCALE=<float> overrides (e.g. 10 for a 10x bigger default tier).
inline double tier_scale() {
  if (const char* s = std::getenv("UEPOLL_REL_SCALE")) {
    double v = std::atof(s);
    if (v > 0) return v;
  }
#if defined(UEP_REL_TSAN)
  return 0.1;
#elif defined(UEP_REL_ASAN)
  return 0.4;
#else
  return 1.0;
#endif
}

inline long scaled(long n, long min = 1) {
  long v = static_cast<long>(static_cast<double>(n) * tier_scale());
  return v < min ? min : v;
}

// Seconds requested by a long-tier env var (0 when unset).
inline double env_seconds(const char* var) {
  const char* s = std::getenv(var);
  return s ? std::atof(s) : 0.0;
}

inline long env_long(const char* var, long def) {
  const char* s = std::getenv(var);
  return s ? std::atol(s) : def;
}

// splitmix64: tiny, seedable, identical on every platform.
struct Rng {
  uint64_t s;
  explicit Rng(uint64_t seed) : s(seed) {}
  uint64_t next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  uint32_t below(uint32_t n) { return n ? static_cast<uint32_t>(next() % n) : 0; }
  bool chance(uint32_t percent) { return below(100) < percent; }
};

inline std::string errno_name(int e) {
  switch (e) {
#define E(x) \
  case x:    \
    return #x;
    E(EPERM) E(ENOENT) E(EINTR) E(EBADF) E(EAGAIN) E(ENOMEM) E(EFAULT) E(EEXIST) E(EINVAL)
    E(ENFILE) E(EMFILE) E(ENOSPC) E(EPIPE) E(ELOOP) E(ENOSYS) E(ENOTSOCK) E(EOPNOTSUPP)
    E(EAFNOSUPPORT) E(EPROTONOSUPPORT) E(ENOTCONN) E(EPROTOTYPE) E(ESOCKTNOSUPPORT)
    E(ENODEV) E(ESPIPE) E(EACCES) E(ENOBUFS)
#undef E
    default:
      return "errno" + std::to_string(e);
  }
}

inline std::string mask_name(uint32_t m) {
  static const struct {
    uint32_t bit;
    const char* name;
  } bits[] = {{EPOLLIN, "IN"},         {EPOLLPRI, "PRI"},         {EPOLLOUT, "OUT"},
              {EPOLLERR, "ERR"},       {EPOLLHUP, "HUP"},         {0x020u, "NVAL"},
              {EPOLLRDNORM, "RDNORM"}, {EPOLLRDBAND, "RDBAND"},   {EPOLLWRNORM, "WRNORM"},
              {EPOLLWRBAND, "WRBAND"}, {EPOLLMSG, "MSG"},         {EPOLLRDHUP, "RDHUP"},
              {EPOLLEXCLUSIVE, "EXCLUSIVE"}, {EPOLLWAKEUP, "WAKEUP"}, {EPOLLONESHOT, "ONESHOT"},
              {EPOLLET, "ET"}};
  std::string out;
  for (auto& b : bits) {
    if (m & b.bit) {
      if (!out.empty()) out += "|";
      out += b.name;
      m &= ~b.bit;
    }
  }
  if (m) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%s0x%x", out.empty() ? "" : "|", m);
    out += buf;
  }
  return out.empty() ? "0" : out;
}

// The descriptor numbers free at some moment, so that a run's descriptors
// can be named by their rank among them.  Both Linux and uepoll allocate the
// lowest free number, so while one single-threaded program is the only
// allocator, "rank among the initially free numbers" is identical in both
// even if the kernel table has holes (inherited descriptors such as 10 or
// 251 are common).
struct FreeMap {
  int base = 0;                // lowest free number
  std::vector<int> occupied;   // open numbers in [base, base + span)
  int span = 0;
  // Rank of `raw` among the free numbers (raw itself assumed free at start).
  long rank(long raw) const {
    long r = raw - base;
    for (int o : occupied)
      if (o < raw) --r;
    return r;
  }
  // A number that is free and far from anything the program allocates.
  int never_open(int (*is_open)(int)) const {
    int n = base + 4000;
    while (is_open(n)) ++n;
    return n;
  }
};

inline int linux_is_open(int fd) { return fcntl(fd, F_GETFD) != -1 ? 1 : 0; }
inline int uepoll_is_open(int fd) { return uep_is_uepoll_fd(fd); }

inline FreeMap probe_free(int (*is_open)(int), int first, int span) {
  FreeMap m;
  int lo = first;
  while (is_open(lo)) ++lo;
  m.base = lo;
  m.span = span;
  for (int i = lo + 1; i < lo + span; ++i)
    if (is_open(i)) m.occupied.push_back(i);
  return m;
}

// Number of open uepoll descriptors among the first `span` numbers.
inline int uepoll_open_count(int span = 4096) {
  int n = 0;
  for (int i = UEP_FD_BASE; i < UEP_FD_BASE + span; ++i) n += uep_is_uepoll_fd(i) ? 1 : 0;
  return n;
}

inline bool is_uepoll_api(const Api& api) { return std::strncmp(api.name, "uepoll", 6) == 0; }

// The six mechanism switches of tuning.h (each 0 or 1).
inline const char* const kMechanismKnobs[] = {"rcu_ctl",     "lockless_nested_poll", "exclusive_autoremove",
                                              "alloc_reuse", "parallel_nested_add",  "concurrent_ctl"};

// Sets mechanism knob i to bit i of `bits`.
inline void set_mechanism_knobs(unsigned bits) {
  for (unsigned i = 0; i < 6; ++i) uep_tuning_set(kMechanismKnobs[i], (bits >> i) & 1u);
}

// UEPOLL_REL_KNOBS="rcu_ctl=0,alloc_reuse=0" (or "all=0") applies knobs at
// start-up, so any reliability binary can be run under another mechanism mix.
inline bool apply_env_knobs() {
  const char* s = std::getenv("UEPOLL_REL_KNOBS");
  if (!s) return false;
  std::string all(s);
  size_t pos = 0;
  while (pos < all.size()) {
    size_t end = all.find(',', pos);
    if (end == std::string::npos) end = all.size();
    std::string kv = all.substr(pos, end - pos);
    size_t eq = kv.find('=');
    if (eq != std::string::npos) {
      std::string k = kv.substr(0, eq);
      long v = std::atol(kv.c_str() + eq + 1);
      if (k == "all") {
        for (const char* n : kMechanismKnobs) uep_tuning_set(n, v);
      } else if (uep_tuning_set(k.c_str(), v) != 0) {
        std::fprintf(stderr, "UEPOLL_REL_KNOBS: cannot set %s=%ld\n", k.c_str(), v);
      }
    }
    pos = end + 1;
  }
  std::fprintf(stderr, "[rel] knobs from UEPOLL_REL_KNOBS: %s\n", s);
  return true;
}
inline const bool kEnvKnobsApplied = apply_env_knobs();

}  // namespace uepoll_test::rel
