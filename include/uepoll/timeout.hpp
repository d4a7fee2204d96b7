// timeout.hpp - uepoll::Timeout and uepoll::forever: the relative timeout
// the waits and poll take (any std::chrono::duration, `forever`,
// std::nullopt or an optional duration), and its conversions to
// epoll_pwait2's timespec and poll's milliseconds.  Header-only value
// types; takes no locks; calls nothing in the engine.
// Part of the C++ API: <uepoll/uepoll.hpp> includes this header and states
// the contract of the whole API once (try_x/x naming, thread safety,
// blocking, allocation, descriptors, timeouts); this header may also be
// included on its own.
#pragma once

#include <chrono>
#include <climits>
#include <ctime>
#include <optional>
#include <type_traits>

namespace uepoll {

// Tag type of `forever`: wait with no timeout.
struct Forever {
  explicit constexpr Forever(int) noexcept {}
};
inline constexpr Forever forever{0};

// A relative timeout: forever, or a non-negative number of nanoseconds.
// Implicit from any std::chrono::duration (rounded up to whole nanoseconds;
// negative or NaN clamps to zero; too large for nanoseconds saturates at
// nanoseconds::max(), about 292 years), from `forever`, std::nullopt, and
// std::optional<duration> (empty = forever).
class Timeout {
 public:
  constexpr Timeout(Forever) noexcept {}
  constexpr Timeout(std::nullopt_t) noexcept {}
  template <class Rep, class Period>
  constexpr Timeout(std::chrono::duration<Rep, Period> d) noexcept : ns_(to_ns(d)) {}
  template <class Rep, class Period>
  constexpr Timeout(const std::optional<std::chrono::duration<Rep, Period>>& d) noexcept {
    if (d) ns_ = to_ns(*d);
  }

  // Contract (all members): thread-compatible value type; noexcept; never
  // block; never allocate.
  constexpr bool is_forever() const noexcept { return !ns_.has_value(); }
  // Precondition: !is_forever().
  constexpr std::chrono::nanoseconds duration() const noexcept { return *ns_; }

  // As a timespec for epoll_pwait2 (nullptr means forever).
  const struct timespec* as_timespec(struct timespec& storage) const noexcept {
    if (!ns_) return nullptr;
    storage.tv_sec = static_cast<time_t>(ns_->count() / 1'000'000'000);
    storage.tv_nsec = static_cast<long>(ns_->count() % 1'000'000'000);
    return &storage;
  }
  // As milliseconds for poll: -1 forever; rounded up; clamped to INT_MAX.
  constexpr int as_poll_ms() const noexcept {
    if (!ns_) return -1;
    const std::chrono::milliseconds ms = std::chrono::ceil<std::chrono::milliseconds>(*ns_);
    return ms.count() > INT_MAX ? INT_MAX : static_cast<int>(ms.count());
  }

 private:
  template <class Rep, class Period>
  static constexpr std::chrono::nanoseconds to_ns(std::chrono::duration<Rep, Period> d) noexcept {
    using std::chrono::nanoseconds;
    // Compare in long double nanoseconds so no conversion can overflow.
    const std::chrono::duration<long double, std::nano> wide(d);
    if (!(wide.count() > 0)) return nanoseconds::zero();  // zero, negative, NaN
    if (wide.count() >= static_cast<long double>(nanoseconds::max().count())) return nanoseconds::max();
    if constexpr (std::is_floating_point_v<Rep>) {
      const long double c = wide.count();
      auto n = static_cast<nanoseconds::rep>(c);
      if (static_cast<long double>(n) < c) ++n;
      return nanoseconds(n);
    } else {
      return std::chrono::ceil<nanoseconds>(d);
    }
  }

  std::optional<std::chrono::nanoseconds> ns_;
};

}  // namespace uepoll
