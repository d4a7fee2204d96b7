// user_ptr.h - the one user-pointer test the objects make themselves: the
// C API's access_ok() lets NULL and the first page through (as Linux's
// does), and Linux then fails the copy with EFAULT.  uepoll cannot see other
// unmapped user pages; see docs/linux-deviations.md.
#pragma once

#include <cstdint>

namespace uepoll::objects {

// True for pointers whose copy would fault on Linux no matter the mapping.
inline bool faulting_ptr(const void* p) noexcept { return reinterpret_cast<uintptr_t>(p) < 4096; }

}  // namespace uepoll::objects
