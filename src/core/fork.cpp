// fork.cpp - the pthread_atfork handlers (see fork.h for what each step
// does and why).
//
// Registration: once per process, by whichever comes first of this file's
// static initializer and the first use of the descriptor table (fd/table.cpp
// calls install_fork_handlers(), which also makes the linker keep this file
// from a static libuepoll.a).  Early, at load time, rather than at the first
// fork-sensitive call, because pthread_atfork runs child handlers in
// registration order: a program whose own atfork child handler uses uepoll
// (registered after the library loaded) then finds uepoll already fixed.
// If pthread_atfork fails (ENOMEM) the handlers are missing and a forked
// child shares the parent's kernel descriptors (the state before them).
//
// Locks: see fork.h.
#include "core/fork.h"

#include "core/fork_gate.h"
#include "core/internal_call.h"
#include "core/own_fds.h"
#include "core/own_slot.h"
#include "core/vclock.h"
#include "core/vcond.h"

#include <pthread.h>

namespace uepoll::core {

namespace {

// Each handler's libc calls are uepoll's own (core/internal_call.h): under
// the preload a kernel timer rebuilt in the child is a kernel timer.
void prepare() {
  InternalCalls internal;
  fork_gate_prepare();
  vclock::fork_prepare();
  objects::timers_fork_prepare();
  fd::table_fork_prepare();
  epoll::item_cache_fork_prepare();  // the leaves in lock_order.h's order (9.0-9.3)
  reclaim::fork_prepare();
  waiters_fork_prepare();
  own_fds_hold();  // last: no child inherits a raised descriptor limit
}

void parent() {
  InternalCalls internal;
  own_fds_release();
  waiters_fork_parent();
  reclaim::fork_parent();
  epoll::item_cache_fork_parent();
  fd::table_fork_parent();
  objects::timers_fork_parent();
  vclock::fork_parent();
  fork_gate_parent();
}

void child() {
  InternalCalls internal;
  own_fds_release();
  own_slots_fork_child();  // before any slot is closed (waiters_fork_child)
  fork_gate_child();
  vclock::fork_child();
  vcond::fork_child();
  waiters_fork_child();
  reclaim::fork_child();
  epoll::item_cache_fork_child();
  fd::table_fork_child();
  objects::timers_fork_child();  // last: starts a thread
}

bool register_handlers() {
  (void)pthread_atfork(&prepare, &parent, &child);
  return true;
}

struct AtLoad {
  AtLoad() noexcept { install_fork_handlers(); }
} g_at_load;

}  // namespace

// A function-local static rather than pthread_once: the same once-only
// registration with later callers waiting for it, but no futex wake at
// every process start (pthread_once wakes unconditionally; the static's
// guard only when a thread waited).
void install_fork_handlers() noexcept {
  static const bool registered = register_handlers();
  (void)registered;
}

}  // namespace uepoll::core
