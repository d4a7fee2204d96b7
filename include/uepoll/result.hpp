// result.hpp - uepoll::Result<T> and Result<void>: the value-or-error type
// every try_ call of the C++ API returns (std::expected is C++23), and the
// detail helpers that turn the engine's negative errno into it
// (detail::errc_from, result_of, void_result_of) or into a thrown
// std::system_error (detail::value_or_throw).  Header-only; takes no locks;
// never reads or writes errno; calls nothing in the engine.
// Part of the C++ API: <uepoll/uepoll.hpp> includes this header and states
// the contract of the whole API once (try_x/x naming, thread safety,
// blocking, allocation, descriptors, timeouts); this header may also be
// included on its own.
#pragma once

#include <cassert>
#include <system_error>
#include <type_traits>
#include <utility>
#include <variant>

namespace uepoll {

namespace detail {

// Negative errno from the engine -> std::error_code in the system category.
inline std::error_code errc_from(long negative_errno) noexcept {
  return std::error_code(static_cast<int>(-negative_errno), std::system_category());
}

}  // namespace detail

template <class T>
class [[nodiscard]] Result {
  static_assert(!std::is_reference_v<T>, "Result<T&> is not supported");
  static_assert(!std::is_same_v<std::remove_cv_t<T>, std::error_code>, "Result<std::error_code> is ambiguous");

 public:
  using value_type = T;

  // A value.  Contract: noexcept iff T's move is; never allocates itself.
  Result(const T& v) noexcept(std::is_nothrow_copy_constructible_v<T>) : v_(std::in_place_index<0>, v) {}
  Result(T&& v) noexcept(std::is_nothrow_move_constructible_v<T>) : v_(std::in_place_index<0>, std::move(v)) {}
  // An error; a default (zero) error_code is a precondition violation.
  Result(std::error_code ec) noexcept : v_(std::in_place_index<1>, ec) { assert(ec); }

  // Contract (all observers): not thread-safe against a concurrent move or
  // assignment of *this; never block; never allocate, except value(), which
  // allocates the std::system_error it throws on error.
  bool has_value() const noexcept { return v_.index() == 0; }
  explicit operator bool() const noexcept { return has_value(); }

  // The value; throws std::system_error(error()) if this holds an error.
  T& value() & {
    check();
    return *std::get_if<0>(&v_);
  }
  const T& value() const& {
    check();
    return *std::get_if<0>(&v_);
  }
  T&& value() && {
    check();
    return std::move(*std::get_if<0>(&v_));
  }

  // The value, or `other` converted to T if this holds an error.
  template <class U>
  T value_or(U&& other) const& {
    return has_value() ? *std::get_if<0>(&v_) : static_cast<T>(std::forward<U>(other));
  }
  template <class U>
  T value_or(U&& other) && {
    return has_value() ? std::move(*std::get_if<0>(&v_)) : static_cast<T>(std::forward<U>(other));
  }

  // The error, or a default (false) error_code if this holds a value.
  std::error_code error() const noexcept {
    const std::error_code* ec = std::get_if<1>(&v_);
    return ec ? *ec : std::error_code();
  }

  // Unchecked access: precondition has_value() (asserted in debug builds).
  T& operator*() & noexcept { return *get(); }
  const T& operator*() const& noexcept { return *get(); }
  T&& operator*() && noexcept { return std::move(*get()); }
  T* operator->() noexcept { return get(); }
  const T* operator->() const noexcept { return get(); }

 private:
  void check() const {
    if (!has_value()) throw std::system_error(*std::get_if<1>(&v_));
  }
  T* get() noexcept {
    assert(has_value());
    return std::get_if<0>(&v_);
  }
  const T* get() const noexcept {
    assert(has_value());
    return std::get_if<0>(&v_);
  }

  std::variant<T, std::error_code> v_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  // Success.
  Result() noexcept = default;
  // An error; a default (zero) error_code is a precondition violation.
  Result(std::error_code ec) noexcept : ec_(ec) { assert(ec); }

  // Contract: as Result<T>'s observers.
  bool has_value() const noexcept { return !ec_; }
  explicit operator bool() const noexcept { return has_value(); }
  // Throws std::system_error(error()) if this holds an error.
  void value() const {
    if (ec_) throw std::system_error(ec_);
  }
  std::error_code error() const noexcept { return ec_; }

 private:
  std::error_code ec_;
};

namespace detail {

// Engine result (>= 0 or -errno) -> Result<T>, T constructed from the count.
template <class T>
Result<T> result_of(long r) noexcept {
  if (r < 0) return errc_from(r);
  return static_cast<T>(r);
}
inline Result<void> void_result_of(long r) noexcept {
  if (r < 0) return errc_from(r);
  return {};
}
template <class T>
T value_or_throw(Result<T>&& r) {
  return std::move(r).value();
}
inline void value_or_throw(Result<void>&& r) { r.value(); }

}  // namespace detail

}  // namespace uepoll
