// harness_test.cpp - checks on the harness itself: the uepoll table really
// hands out uepoll descriptors (a table mix-up would make every differential
// test compare Linux with Linux), descriptor names hide raw numbers, and a
// divergence between the two traces is reported as a failure.  Also applies
// UEPOLL_CONF_KNOBS (uepoll tuning knobs) for whole-suite runs.
#include "harness.h"

#include <gtest/gtest-spi.h>
#include <uepoll/tuning.h>

namespace {

using conf::T;

// UEPOLL_CONF_KNOBS="knob=value,knob=value" sets uepoll tuning knobs before
// any test runs (tuning.h), so the whole suite can be run against each
// implementation variant (e.g. every scaling mechanism switched off).
const bool knobs_applied = [] {
  const char* spec = getenv("UEPOLL_CONF_KNOBS");
  if (!spec || !*spec) return true;
  std::string all(spec);
  size_t pos = 0;
  while (pos < all.size()) {
    size_t comma = all.find(',', pos);
    std::string item = all.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    pos = comma == std::string::npos ? all.size() : comma + 1;
    size_t eq = item.find('=');
    if (eq == std::string::npos) continue;
    std::string name = item.substr(0, eq);
    long value = strtol(item.c_str() + eq + 1, nullptr, 0);
    if (uep_tuning_set(name.c_str(), value) != 0) {
      fprintf(stderr, "UEPOLL_CONF_KNOBS: cannot set %s=%ld\n", name.c_str(), value);
      abort();
    }
    fprintf(stderr, "UEPOLL_CONF_KNOBS: %s=%ld\n", name.c_str(), value);
  }
  return true;
}();

TEST(Harness, TablesReachTheirImplementation) {
  if (conf::linux_only()) GTEST_SKIP() << "UEPOLL_CONF_LINUX_ONLY set";
  const auto& u = uepoll_test::uepoll_api();
  const auto& l = uepoll_test::linux_api();
  int ue = u.epoll_create1(0), ke = l.epoll_create1(0);
  int uf = u.eventfd(0, 0), kf = l.eventfd(0, 0);
  EXPECT_GE(ue, UEP_FD_BASE);
  EXPECT_GE(uf, UEP_FD_BASE);
  EXPECT_EQ(uep_is_uepoll_fd(ue), 1);
  EXPECT_EQ(uep_is_uepoll_fd(uf), 1);
  EXPECT_GE(ke, 0);
  EXPECT_LT(ke, UEP_FD_BASE);
  EXPECT_LT(kf, UEP_FD_BASE);
  EXPECT_EQ(uep_is_uepoll_fd(ke), 0);
  u.close(ue);
  u.close(uf);
  l.close(ke);
  l.close(kf);
}

TEST(Harness, NamesHideNumbers) {
  auto r = conf::differential([](T& t) {
    int a = t.eventfd(0);
    int b = t.dup(a);
    t.close(a);
    t.close(b);
    t.close(a);
  });
  EXPECT_LINUX_SEQ(r, {"eventfd(0,0) = fd0", "dup(fd0) = fd1", "close(fd0) = 0", "close(fd1) = 0",
                       "close(fd0) = -1 EBADF"});
}

TEST(Harness, DivergenceIsReported) {
  if (conf::linux_only()) GTEST_SKIP() << "UEPOLL_CONF_LINUX_ONLY set";
  EXPECT_NONFATAL_FAILURE(conf::differential([](T& t) { t.log(t.is_linux() ? "L" : "U"); }), "traces differ");
  EXPECT_NONFATAL_FAILURE(
      conf::differential([](T& t) { t.log(t.is_linux() ? "L" : "U"); }, /*forked=*/true), "traces differ");
}

TEST(Harness, ForkedCrashIsATraceLine) {
  UEPOLL_SKIP_UNDER_SANITIZERS("the sanitizer catches the deliberate crash");
  auto lines = conf::run_forked(uepoll_test::linux_api(), [](T& t) {
    t.log("before");
    raise(SIGSEGV);
  });
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0], "before");
  EXPECT_EQ(lines[1], "<killed by SIGSEGV>");
}

}  // namespace
