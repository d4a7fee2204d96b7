// variants.h - the mixed topologies of the differential harness (owned by
// the kernel-descriptor tests).  Every scenario that conf::differential()
// runs against Linux and uepoll also runs, unchanged, against these Api
// tables, and each trace must equal Linux's:
//
//   mixed      uepoll epoll instances watching the KERNEL's objects
//              (eventfd, pipes, socket pairs, timerfd from the kernel;
//              instances from uepoll): the kernel-descriptor support of
//              uep_epoll_ctl / uep_epoll_wait (epoll/kernel_watch.h).
//   kfd        uepoll instances and objects, but every blocking
//              epoll_wait goes through the kernel: poll() on
//              uep_epoll_kernel_fd(ep) until it is readable, then
//              uep_epoll_wait(ep, ..., 0): the "readable whenever a wait
//              would return events" guarantee, scenario by scenario.
//   mixed+kfd  both at once: kernel objects in uepoll instances reached
//              through their kernel descriptor.
//   user-files uepoll instances, and every eventfd a provider's file made
//              through the file interface (uep_file_create,
//              support/table_objects.h): what a built-in object does, a
//              user-defined file can do.
//
// A scenario whose trace cannot match in a variant for a documented reason
// (docs/linux-deviations.md, "Kernel descriptors in uepoll instances") is
// listed in variant_skips() with that reason; nothing else is skipped.
//
// Environment: UEPOLL_CONF_VARIANTS=0 runs only Linux and uepoll.
#pragma once

#include "harness.h"
#include "support/table_objects.h"

#include <cstring>
#include <poll.h>

namespace conf {

namespace variant_detail {

// epoll_wait through the instance's kernel descriptor (see above); errors
// and timeout 0 go straight to uep_epoll_wait.
inline int kfd_epoll_wait(int ep, struct epoll_event* evs, int maxevents, int timeout) {
  if (timeout == 0 || !uep_is_uepoll_fd(ep)) return uep_epoll_wait(ep, evs, maxevents, timeout);
  const int kfd = uep_epoll_kernel_fd(ep);
  if (kfd < 0) return uep_epoll_wait(ep, evs, maxevents, timeout);  // not an instance: its errno
  const double end = now_ms() + timeout;
  for (;;) {
    const int n = uep_epoll_wait(ep, evs, maxevents, 0);
    if (n != 0) return n;
    int left = -1;
    if (timeout > 0) {
      left = static_cast<int>(end - now_ms() + 0.999);
      if (left <= 0) return 0;
    }
    struct pollfd p = {kfd, POLLIN, 0};
    const int r = ::poll(&p, 1, left);
    if (r < 0) return -1;  // EINTR, as epoll_wait
    if (r == 0) return uep_epoll_wait(ep, evs, maxevents, 0);
  }
}

}  // namespace variant_detail

inline const Api& mixed_api() {
  static const Api api = [] {
    Api a = uepoll_test::uepoll_api();
    const Api& k = uepoll_test::linux_api();
    a.name = "mixed";
    a.eventfd = k.eventfd;
    a.pipe = k.pipe;
    a.pipe2 = k.pipe2;
    a.socketpair = k.socketpair;
    a.timerfd_create = k.timerfd_create;  // the uep_ calls forward the rest
    return a;
  }();
  return api;
}

inline const Api& kfd_api() {
  static const Api api = [] {
    Api a = uepoll_test::uepoll_api();
    a.name = "kfd";
    a.epoll_wait = &variant_detail::kfd_epoll_wait;
    return a;
  }();
  return api;
}

inline const Api& mixed_kfd_api() {
  static const Api api = [] {
    Api a = mixed_api();
    a.name = "mixed+kfd";
    a.epoll_wait = &variant_detail::kfd_epoll_wait;
    return a;
  }();
  return api;
}

inline const Api& user_files_api() { return uepoll_test::table_objects_api(uepoll_test::uepoll_api(), "user-files"); }

// "Suite.Test" -> {variant, reason}: scenarios that cannot match Linux in
// that variant, each for a reason written in docs/linux-deviations.md.
struct VariantSkip {
  const char* test;
  const char* variant;  // "mixed", "kfd", "mixed+kfd", "user-files", or "*"
  const char* reason;
};
inline const std::vector<VariantSkip>& variant_skips() {
  static const std::vector<VariantSkip> v = {
#include "variant_skips.inc"
  };
  return v;
}

inline const char* variant_skip_reason(const char* variant) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  if (!info) return nullptr;
  const std::string full = std::string(info->test_suite_name()) + "." + info->name();
  for (const VariantSkip& s : variant_skips())
    if (full == s.test && (std::strcmp(s.variant, "*") == 0 || std::strcmp(s.variant, variant) == 0)) return s.reason;
  return nullptr;
}

inline void run_variants(const Scenario& s, bool forked, const std::vector<std::string>& linux_trace) {
  const char* v = getenv("UEPOLL_CONF_VARIANTS");
  if (v && strcmp(v, "0") == 0) return;
  for (const Api* api : {&mixed_api(), &kfd_api(), &mixed_kfd_api(), &user_files_api()}) {
    if (variant_skip_reason(api->name)) continue;
    std::vector<std::string> tr = forked ? run_forked(*api, s) : run_one(*api, s);
    EXPECT_TRUE(linux_trace == tr) << "traces differ (L = Linux, U = uepoll variant \"" << api->name
                                   << "\", see tests/conformance/variants.h):\n"
                                   << format_traces(linux_trace, tr);
  }
}

}  // namespace conf
