// fork_gate.cpp - see fork_gate.h.  Placeholder: the gate is not yet wired
// into the lock wrappers; these do nothing until it is.
#include "core/fork_gate.h"

namespace uepoll::core {

void fork_gate_prepare() noexcept {}
void fork_gate_parent() noexcept {}
void fork_gate_child() noexcept {}

}  // namespace uepoll::core
