// sig_restart.h - what the dispositions of the signals that may have ended
// a sleep say about the call: whether their handlers let it restart (Linux
// handle_signal: -ERESTARTSYS becomes -EINTR for a handler installed
// without SA_RESTART), and whether Linux would have discarded them
// unseen.  Owned by core/; used where a sleep was ended by signals that
// uepoll cannot name (ThreadWaiter's sleeps, a splice's wait for room in a
// kernel pipe) or that it blocked while Linux would not have.
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

// The signals `mask` lets through (the kernel's 64).
sigset_t let_through(const sigset_t* mask) noexcept;

// True when Linux discards every signal of `set` as it is sent to a thread
// that does not block it (kernel/signal.c sig_task_ignored): SIG_IGN, or
// SIG_DFL for SIGCHLD, SIGCONT, SIGURG and SIGWINCH.  Such a signal that
// arrives while uepoll blocks every signal stays pending instead; it must
// end no sleep that Linux's would not have.
bool discarded_at_send(const sigset_t* set) noexcept;

// True when a signal of `set` has a handler (`unseen`: as above).
bool any_handler(const sigset_t* set, bool unseen) noexcept;

}  // namespace uepoll::core
