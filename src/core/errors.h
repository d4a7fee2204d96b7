// errors.h - the one error model inside uepoll: functions return a negative
// errno (-EINVAL) or a non-negative result.  The C API turns it into -1 and
// errno at the edge; the C++ API into std::error_code.
#pragma once

#include <cerrno>

namespace uepoll::core {

inline bool is_err(long r) noexcept { return r < 0; }

}  // namespace uepoll::core
