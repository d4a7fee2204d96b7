// backend.h - what a benchmark scenario runs against.  A scenario is written
// once against `const Backend&` and run three ways in the same process:
//   "linux"       real system calls on kernel descriptors (the baseline),
//   "uepoll"      uep_* calls on uepoll descriptors, every mechanism on,
//   "uepoll-off"  the same with the scenario's scaling mechanism switched off
//                 through uep_tuning_set(knob, 0) (restored afterwards).
// The call table itself is tests/support/api.h, shared with the differential
// tests, so the benchmark and the tests exercise the very same entry points.
#pragma once

#include "../tests/support/api.h"

#include <uepoll/testing.h>  // fail_alloc_after, uep_debug_*; includes tuning.h

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

namespace uepoll_bench {

using uepoll_test::Api;

struct Backend {
  std::string name;         // "linux", "uepoll" or "uepoll-off"
  const Api* api;           // the call table
  bool is_uepoll;           // true for both uepoll variants
  const char* knob_off;     // knob held at 0 while this variant runs, or nullptr
  const Api& operator*() const { return *api; }
  const Api* operator->() const { return api; }
};

inline Backend linux_backend() { return {"linux", &uepoll_test::linux_api(), false, nullptr}; }
inline Backend uepoll_backend() { return {"uepoll", &uepoll_test::uepoll_api(), true, nullptr}; }
inline Backend uepoll_off_backend(const char* knob) {
  return {"uepoll-off", &uepoll_test::uepoll_api(), true, knob};
}

// A call failed where the scenario cannot go on: the message names the
// backend, the call and errno.
class BenchError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

[[noreturn]] inline void fail(const Backend& b, const std::string& what, int err) {
  throw BenchError(b.name + ": " + what + ": " + std::strerror(err));
}
[[noreturn]] inline void fail_msg(const Backend& b, const std::string& what) {
  throw BenchError(b.name + ": " + what);
}

// Returns r, or throws with errno when r < 0.
template <class T>
inline T must(T r, const Backend& b, const char* what) {
  if (r < 0) fail(b, what, errno);
  return r;
}

// Holds a knob at a value for a scope and restores the previous value.
class KnobGuard {
 public:
  KnobGuard(const Backend& b) {
    if (b.knob_off == nullptr) return;
    knob_ = b.knob_off;
    if (uep_tuning_get(knob_, &saved_) != 0) fail(b, std::string("uep_tuning_get(") + knob_ + ")", errno);
    if (uep_tuning_set(knob_, 0) != 0) fail(b, std::string("uep_tuning_set(") + knob_ + ", 0)", errno);
  }
  ~KnobGuard() {
    if (knob_ != nullptr) uep_tuning_set(knob_, saved_ == 0 ? 1 : saved_);
  }
  KnobGuard(const KnobGuard&) = delete;
  KnobGuard& operator=(const KnobGuard&) = delete;

 private:
  const char* knob_ = nullptr;
  long saved_ = 1;
};

}  // namespace uepoll_bench
