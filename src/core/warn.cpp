// warn.cpp - warn_once (warn.h).  Locks: the kWarnOnce leaf mutex.
#include "core/warn.h"

#include "core/mutex.h"

#include <cstdio>
#include <string>
#include <vector>

namespace uepoll::core {

void warn_once(const char* what) noexcept {
  static Mutex mu{lock_class::kWarnOnce};
  static std::vector<std::string>* seen = new std::vector<std::string>();
  MutexLock g(mu);
  for (auto& s : *seen)
    if (s == what) return;
  try {
    seen->emplace_back(what);
  } catch (...) {
  }
  std::fprintf(stderr, "uepoll: %s\n", what);
}

}  // namespace uepoll::core
