// version_test.cpp - include/uepoll/version.h against the library: the
// macros, the string built from them and uep_version() agree.
#include <uepoll/uepoll.h>  // includes version.h
#include <uepoll/version.h>

#include <gtest/gtest.h>

#include <string>

namespace {

TEST(Version, RuntimeMatchesHeader) {
  ASSERT_NE(uep_version(), nullptr);
  EXPECT_STREQ(uep_version(), UEPOLL_VERSION_STRING);
  std::string expect = std::to_string(UEPOLL_VERSION_MAJOR) + "." + std::to_string(UEPOLL_VERSION_MINOR) + "." +
                       std::to_string(UEPOLL_VERSION_PATCH);
  EXPECT_EQ(std::string(UEPOLL_VERSION_STRING), expect);
  EXPECT_EQ(UEPOLL_VERSION, UEPOLL_VERSION_MAJOR * 10000 + UEPOLL_VERSION_MINOR * 100 + UEPOLL_VERSION_PATCH);
}

TEST(Version, StringIsStatic) {
  const char* a = uep_version();
  const char* b = uep_version();
  EXPECT_EQ(a, b);
}

}  // namespace
