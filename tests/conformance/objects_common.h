// objects_common.h - what the objects_*_test.cpp files share: the mask of
// every poll bit, SIGPIPE ignored for the whole binary (EPIPE tests), and
// state(), which logs a descriptor's readiness through a scratch instance.
#pragma once

#include "harness.h"

#include <csignal>
#include <string>

namespace conf_objects {

inline constexpr uint32_t ALL = conf::kAllPollBits;

// Ignore SIGPIPE for the whole binary (EPIPE tests).
inline const bool sigpipe_ignored = [] {
  signal(SIGPIPE, SIG_IGN);
  return true;
}();

// Logs the current readiness of `fd` (all bits) through a scratch instance.
inline void state(conf::T& t, int fd, const char* label) {
  conf::T::Quiet q(t);
  int ep = t.epoll_create1();
  t.ctl(ep, EPOLL_CTL_ADD, fd, ALL, 0);
  int n = t.wait(ep, 1, 0);
  std::string m = n == 1 ? conf::mask_str(t.last_events()[0].events) : n == 0 ? "0" : "error";
  t.close(ep);
  t.lines.push_back(std::string("state ") + label + ": " + m);
}

}  // namespace conf_objects
