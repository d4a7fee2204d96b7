// warn.h - one line on stderr, once per distinct message, for calls that
// uepoll answers differently from Linux on purpose (docs/linux-deviations.md).
// Locks: one leaf mutex (core/lock_order.h kWarnOnce) around the list of
// messages already printed.
#pragma once

namespace uepoll::core {

// Prints "uepoll: <what>" the first time `what` is seen.  Thread-safe;
// allocates the first time a message is seen.
void warn_once(const char* what) noexcept;

}  // namespace uepoll::core
