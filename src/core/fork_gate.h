// fork_gate.h - keeping fork() from splitting a uepoll critical section.
//
// The pthread_atfork handlers (core/fork.cpp) call these around fork():
//   fork_gate_prepare()  before fork: waits until no other thread holds any
//                        uepoll lock, and keeps new first acquisitions
//                        waiting until the gate is released, so the child
//                        starts with every uepoll lock free;
//   fork_gate_parent()   after fork, in the parent: releases the gate;
//   fork_gate_child()    after fork, in the child: resets the gate (the
//                        other threads do not exist there).
// The lock wrappers (core/spinlock.h and friends) check the gate when a
// thread takes its first uepoll lock.  Owner of the implementation: the
// lock layer (fork_gate.cpp).
#pragma once

namespace uepoll::core {

void fork_gate_prepare() noexcept;
void fork_gate_parent() noexcept;
void fork_gate_child() noexcept;

}  // namespace uepoll::core
