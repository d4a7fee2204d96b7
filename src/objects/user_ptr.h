// user_ptr.h - the one user-pointer test the objects make themselves: the
// C API's access_ok() lets NULL and the first page through (as Linux's
// does), and Linux then fails the copy with EFAULT.  uepoll cannot see other
// unmapped user pages; see docs/linux-deviations.md.
#pragma once

#include "core/user_memory.h"

namespace uepoll::objects {

using core::faulting_ptr;  // NULL and the first page

}  // namespace uepoll::objects
