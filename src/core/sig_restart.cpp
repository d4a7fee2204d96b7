// sig_restart.cpp - see sig_restart.h.  Locks: none.
#include "core/sig_restart.h"

#include <pthread.h>

namespace uepoll::core {

namespace {

// The signals the kernel raises for a fault of the thread that made it
// (force_sig_fault): never the one that ends another thread's sleep.
bool fault_signal(int s) noexcept {
  return s == SIGSEGV || s == SIGBUS || s == SIGFPE || s == SIGILL || s == SIGTRAP || s == SIGSYS;
}

// sa_handler of `s`, or SIG_DFL when it cannot be read.
__sighandler_t handler_of(int s) noexcept {
  struct sigaction sa;
  return sigaction(s, nullptr, &sa) == 0 ? sa.sa_handler : SIG_DFL;
}

}  // namespace

bool discarded_at_send(const sigset_t* set) noexcept {
  for (int s = 1; s < NSIG; ++s) {
    if (!sigismember(set, s)) continue;
    const __sighandler_t h = handler_of(s);
    const bool ignore_by_default = s == SIGCHLD || s == SIGCONT || s == SIGURG || s == SIGWINCH;
    if (h != SIG_IGN && !(h == SIG_DFL && ignore_by_default)) return false;
  }
  return true;
}

bool any_handler(const sigset_t* set, bool unseen) noexcept {
  for (int s = 1; s < NSIG; ++s) {
    if (!sigismember(set, s) || (unseen && fault_signal(s))) continue;
    const __sighandler_t h = handler_of(s);
    if (h != SIG_DFL && h != SIG_IGN) return true;
  }
  return false;
}

bool handlers_restart(const sigset_t* set, bool unseen) noexcept {
  for (int s = 1; s < NSIG; ++s) {
    if (!sigismember(set, s) || (unseen && fault_signal(s))) continue;
    struct sigaction sa;
    if (sigaction(s, nullptr, &sa) == 0 && sa.sa_handler != SIG_DFL && sa.sa_handler != SIG_IGN &&
        !(sa.sa_flags & SA_RESTART))
      return false;
  }
  return true;
}

sigset_t let_through(const sigset_t* mask) noexcept {
  sigset_t let;
  sigemptyset(&let);
  for (int s = 1; s < NSIG; ++s)
    if (!sigismember(mask, s)) sigaddset(&let, s);
  return let;
}

bool unblocked_handlers_restart() noexcept {
  sigset_t mask;
  if (pthread_sigmask(SIG_SETMASK, nullptr, &mask) != 0) return false;
  const sigset_t let = let_through(&mask);
  return handlers_restart(&let, true);
}

}  // namespace uepoll::core
