// tuning_api.cpp - uep_tuning_set/get (include/uepoll/tuning.h) and the test hooks
// (include/uepoll/testing.h).
// Locks: uep_debug_dump takes the instance's shard, scan and ready locks.
#include <uepoll/testing.h>
#include <uepoll/tuning.h>

#include "capi/edge.h"
#include "core/alloc.h"
#include "core/tuning.h"
#include "epoll/instance.h"
#include "epoll/watches.h"
#include "fd/table.h"

#include <cerrno>
#include <cstdint>
#include <cstring>

using uepoll::capi::to_c;

namespace {

std::atomic<bool>* bool_knob(const char* name) {
  auto& k = uepoll::core::knobs();
  struct Entry {
    const char* name;
    std::atomic<bool>* knob;
  } table[] = {
      {"rcu_ctl", &k.rcu_ctl},
      {"lockless_nested_poll", &k.lockless_nested_poll},
      {"exclusive_autoremove", &k.exclusive_autoremove},
      {"alloc_reuse", &k.alloc_reuse},
      {"parallel_nested_add", &k.parallel_nested_add},
      {"concurrent_ctl", &k.concurrent_ctl},
      {"burst_wake_chain", &k.burst_wake_chain},
  };
  for (const Entry& e : table)
    if (std::strcmp(e.name, name) == 0) return e.knob;
  return nullptr;
}

}  // namespace

extern "C" {

int uep_tuning_set(const char* knob, long value) {
  if (!knob) return to_c(-EINVAL);
  if (std::atomic<bool>* b = bool_knob(knob)) {
    if (value != 0 && value != 1) return to_c(-EINVAL);
    b->store(value != 0, std::memory_order_relaxed);
    return 0;
  }
  if (std::strcmp(knob, "max_user_watches") == 0) {
    if (value < 0) return to_c(-EINVAL);
    uepoll::epoll::watches::set_limit(value);
    return 0;
  }
  if (std::strcmp(knob, "max_fds") == 0) return to_c(uepoll::fd::set_max_fds(value));
  if (std::strcmp(knob, "busy_poll_usecs") == 0) {
    if (value < 0 || value > INT32_MAX) return to_c(-EINVAL);  // as EPIOCSPARAMS
    uepoll::core::knobs().busy_poll_usecs.store(value, std::memory_order_relaxed);
    return 0;
  }
  if (std::strcmp(knob, "fail_alloc_after") == 0) {
    if (value < -1) return to_c(-EINVAL);
    uepoll::core::alloc_stats().fail_after.store(value, std::memory_order_relaxed);
    return 0;
  }
  return to_c(-EINVAL);
}

int uep_tuning_get(const char* knob, long* value) {
  if (!knob || !value) return to_c(-EINVAL);
  if (std::atomic<bool>* b = bool_knob(knob)) {
    *value = b->load(std::memory_order_relaxed) ? 1 : 0;
    return 0;
  }
  if (std::strcmp(knob, "max_user_watches") == 0) {
    *value = uepoll::epoll::watches::limit();
    return 0;
  }
  if (std::strcmp(knob, "max_fds") == 0) {
    *value = uepoll::fd::max_fds();
    return 0;
  }
  if (std::strcmp(knob, "busy_poll_usecs") == 0) {
    *value = uepoll::core::knobs().busy_poll_usecs.load(std::memory_order_relaxed);
    return 0;
  }
  if (std::strcmp(knob, "fail_alloc_after") == 0) {
    *value = uepoll::core::alloc_stats().fail_after.load(std::memory_order_relaxed);
    return 0;
  }
  return to_c(-EINVAL);
}

long uep_debug_dump(int epfd, char* buf, unsigned long len) {
  uepoll::fd::FileRef f(uepoll::fd::lookup(epfd));
  if (!f) return to_c(-EBADF);
  if (!f->is_epoll()) return to_c(-EINVAL);
  std::string s;
  if (int r = static_cast<uepoll::epoll::Instance*>(f.get())->debug_dump(&s); r < 0) return to_c(r);
  if (buf && len) {
    size_t n = s.size() < len - 1 ? s.size() : len - 1;
    std::memcpy(buf, s.data(), n);
    buf[n] = '\0';
  }
  return static_cast<long>(s.size());
}

unsigned long long uep_debug_alloc_count(void) {
  return uepoll::core::alloc_stats().count.load(std::memory_order_relaxed);
}

}  // extern "C"
