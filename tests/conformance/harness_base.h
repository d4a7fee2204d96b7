// harness_base.h - the conformance harness's vocabulary (harness.h): the
// call tables (support/api.h), constants Linux defines and glibc does not,
// the names traces use for errno values, masks and ctl operations, the
// environment flags, and a monotonic clock in milliseconds.  Takes no lock.
#pragma once

#include "support/api.h"
#include "support/forked_child.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace conf {

using uepoll_test::Api;

// Linux: include/uapi/linux/eventpoll.h EPOLLNVAL (glibc does not define it).
inline constexpr uint32_t kEpollNval = 0x020;
// Linux: fs/eventpoll.c EP_MAX_EVENTS = INT_MAX / sizeof(struct epoll_event).
inline constexpr int kEpMaxEvents = static_cast<int>(INT_MAX / sizeof(struct epoll_event));
// Every bit a target's ->poll() can report; used to observe the full state.
inline constexpr uint32_t kAllPollBits = EPOLLIN | EPOLLPRI | EPOLLOUT | EPOLLRDNORM | EPOLLRDBAND |
                                         EPOLLWRNORM | EPOLLWRBAND | EPOLLMSG | EPOLLRDHUP;
// A kernel-half address: fails access_ok() on x86-64 (and is never mapped).
inline void* kernel_address() { return reinterpret_cast<void*>(0xffff888000000000ULL); }

inline std::string errno_name(int e) {
  const char* n = strerrorname_np(e);
  return n ? n : "E" + std::to_string(e);
}

inline std::string mask_str(uint32_t m) {
  static const std::pair<uint32_t, const char*> bits[] = {
      {EPOLLIN, "IN"},         {EPOLLPRI, "PRI"},       {EPOLLOUT, "OUT"},         {EPOLLERR, "ERR"},
      {EPOLLHUP, "HUP"},       {kEpollNval, "NVAL"},     {EPOLLRDNORM, "RDNORM"},   {EPOLLRDBAND, "RDBAND"},
      {EPOLLWRNORM, "WRNORM"}, {EPOLLWRBAND, "WRBAND"}, {EPOLLMSG, "MSG"},         {EPOLLRDHUP, "RDHUP"},
      {EPOLLEXCLUSIVE, "EXCL"}, {EPOLLWAKEUP, "WAKEUP"}, {EPOLLONESHOT, "ONESHOT"}, {EPOLLET, "ET"}};
  if (m == 0) return "0";
  std::string s;
  for (auto& [b, n] : bits) {
    if (m & b) {
      if (!s.empty()) s += "|";
      s += n;
      m &= ~b;
    }
  }
  if (m) {
    char buf[32];
    snprintf(buf, sizeof buf, "%s0x%x", s.empty() ? "" : "|", m);
    s += buf;
  }
  return s;
}

inline const char* op_str(int op) {
  switch (op) {
    case EPOLL_CTL_ADD: return "ADD";
    case EPOLL_CTL_DEL: return "DEL";
    case EPOLL_CTL_MOD: return "MOD";
    default: return nullptr;
  }
}

inline bool env_flag(const char* name) {
  const char* v = getenv(name);
  return v && *v && strcmp(v, "0") != 0;
}
inline bool linux_only() { return env_flag("UEPOLL_CONF_LINUX_ONLY"); }

inline double now_ms() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

}  // namespace conf
