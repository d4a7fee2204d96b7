// sig_restart.h - whether the signal handlers that may have interrupted a
// call let it restart (Linux handle_signal: -ERESTARTSYS becomes -EINTR for
// a handler installed without SA_RESTART).  Owned by core/; used where a
// sleep was ended by a handler that uepoll cannot name (ThreadWaiter's
// sleeps, a splice's wait for room in a kernel pipe).
//
// Locks: none (sigaction reads only).
#pragma once

#include <csignal>

namespace uepoll::core {

// True when no signal of `set` has a handler installed without SA_RESTART
// (SIG_DFL and SIG_IGN run none, and a stop, then SIGCONT, restarts).
// `unseen`: the signal that ran is not known, only that it came from
// outside this sleeping thread, so fault signals' handlers (a sanitizer's
// or a runtime's crash handler, installed without SA_RESTART) are left out.
bool handlers_restart(const sigset_t* set, bool unseen = false) noexcept;

// handlers_restart(unseen) for the signals the calling thread's mask lets
// through now: a call that slept with that mask in a system call that a
// handler ended (EINTR) is restarted when this is true.
bool unblocked_handlers_restart() noexcept;

}  // namespace uepoll::core
