// tests/cxx/result_test.cpp - uepoll::Result<T>, Result<void> and Timeout:
// value/error access, the throwing value(), error_code comparisons with
// std::errc, and the duration -> timespec / poll-ms conversions (rounding
// up, clamping negatives, saturating huge values, forever).
#include "support.h"

#include <chrono>
#include <climits>
#include <limits>
#include <optional>
#include <string>

using namespace std::chrono_literals;
using uepoll::Result;
using uepoll::Timeout;

namespace {

std::error_code sys(int e) { return std::error_code(e, std::system_category()); }

TEST(Result, HoldsValue) {
  Result<int> r = 7;
  EXPECT_TRUE(r.has_value());
  EXPECT_TRUE(static_cast<bool>(r));
  EXPECT_EQ(r.value(), 7);
  EXPECT_EQ(*r, 7);
  EXPECT_FALSE(r.error());
  EXPECT_EQ(r.value_or(3), 7);
}

TEST(Result, HoldsErrorAndThrowsSystemError) {
  Result<int> r = sys(EBADF);
  EXPECT_FALSE(r.has_value());
  EXPECT_FALSE(static_cast<bool>(r));
  EXPECT_TRUE(r.error() == std::errc::bad_file_descriptor);
  EXPECT_EQ(r.error().category(), std::system_category());
  EXPECT_EQ(r.value_or(3), 3);
  try {
    (void)r.value();
    FAIL() << "value() did not throw";
  } catch (const std::system_error& e) {
    EXPECT_EQ(e.code(), sys(EBADF));
    EXPECT_TRUE(e.code() == std::errc::bad_file_descriptor);
  }
}

TEST(Result, ArrowAndMoveOnlyValue) {
  Result<std::string> r = std::string("abc");
  EXPECT_EQ(r->size(), 3u);
  Result<uepoll::Fd> f = uepoll::Fd();  // move-only payload
  ASSERT_TRUE(f.has_value());
  uepoll::Fd taken = std::move(f).value();
  EXPECT_FALSE(taken);
  Result<uepoll::Fd> g = sys(EMFILE);
  EXPECT_THROW((void)std::move(g).value(), std::system_error);
}

TEST(Result, Void) {
  Result<void> ok;
  EXPECT_TRUE(ok.has_value());
  EXPECT_NO_THROW(ok.value());
  Result<void> bad = sys(ENOENT);
  EXPECT_FALSE(bad);
  EXPECT_TRUE(bad.error() == std::errc::no_such_file_or_directory);
  EXPECT_THROW(bad.value(), std::system_error);
}

TEST(Timeout, Forever) {
  struct timespec ts;
  EXPECT_TRUE(Timeout(uepoll::forever).is_forever());
  EXPECT_TRUE(Timeout(std::nullopt).is_forever());
  EXPECT_TRUE(Timeout(std::optional<std::chrono::milliseconds>()).is_forever());
  EXPECT_EQ(Timeout(uepoll::forever).as_timespec(ts), nullptr);
  EXPECT_EQ(Timeout(uepoll::forever).as_poll_ms(), -1);
}

TEST(Timeout, DurationsConvertExactlyOrRoundUp) {
  struct timespec ts;
  const struct timespec* p = Timeout(1500ms).as_timespec(ts);
  ASSERT_EQ(p, &ts);
  EXPECT_EQ(ts.tv_sec, 1);
  EXPECT_EQ(ts.tv_nsec, 500'000'000);
  EXPECT_EQ(Timeout(1500ms).as_poll_ms(), 1500);
  EXPECT_EQ(Timeout(1ns).as_poll_ms(), 1);  // rounded up, never 0 (non-blocking)
  EXPECT_EQ(Timeout(1001us).as_poll_ms(), 2);
  EXPECT_EQ(Timeout(std::optional<std::chrono::seconds>(2s)).duration(), 2s);
  EXPECT_EQ(Timeout(std::chrono::duration<double>(0.5)).duration(), 500ms);
  EXPECT_EQ(Timeout(std::chrono::duration<long long, std::pico>(1)).duration(), 1ns);
  EXPECT_EQ(Timeout(std::chrono::duration<double, std::nano>(1.25)).duration(), 2ns);
}

TEST(Timeout, NegativeIsZeroAndHugeSaturates) {
  struct timespec ts;
  EXPECT_EQ(Timeout(-5ms).duration(), 0ns);
  ASSERT_NE(Timeout(-5ms).as_timespec(ts), nullptr);
  EXPECT_EQ(ts.tv_sec, 0);
  EXPECT_EQ(ts.tv_nsec, 0);
  EXPECT_EQ(Timeout(-5ms).as_poll_ms(), 0);
  EXPECT_EQ(Timeout(std::chrono::hours::max()).duration(), std::chrono::nanoseconds::max());
  EXPECT_EQ(Timeout(std::chrono::hours::max()).as_poll_ms(), INT_MAX);
  EXPECT_EQ(Timeout(std::chrono::duration<double>(1e300)).duration(), std::chrono::nanoseconds::max());
  EXPECT_EQ(Timeout(std::chrono::duration<double>(std::numeric_limits<double>::quiet_NaN())).duration(), 0ns);
  EXPECT_EQ(Timeout(std::chrono::duration<double>(std::numeric_limits<double>::infinity())).duration(),
            std::chrono::nanoseconds::max());
  EXPECT_EQ(Timeout(std::chrono::duration<double>(-std::numeric_limits<double>::infinity())).duration(), 0ns);
}

}  // namespace

namespace uepoll_header_example {
void example();
}

namespace {

// The example from uepoll.hpp's top comment runs and prints the eventfd
// count read after the wait.
TEST(HeaderExample, Runs) {
  ::testing::internal::CaptureStdout();
  EXPECT_NO_THROW(uepoll_header_example::example());
  EXPECT_EQ(::testing::internal::GetCapturedStdout(), "1\n");
}

}  // namespace
