// call_flags.h - per-call modifiers that send()/recv() flags put on the
// object operations of the calling thread (owned by the descriptor surface,
// src/capi/socket_api.cpp).
//
// MSG_DONTWAIT makes one call non-blocking without touching the open file's
// O_NONBLOCK (Linux: sock_rcvtimeo/sock_sndtimeo with the flag), and
// MSG_NOSIGNAL suppresses the SIGPIPE of one call.  Both live in the calling
// thread only, set for the duration of the call by CallFlagsScope; no lock,
// no atomics (thread-local).
#pragma once

namespace uepoll::core {

struct CallFlags {
  bool dontwait = false;    // File::nonblocking() reports true
  bool no_sigpipe = false;  // objects::raise_sigpipe() does nothing
};

inline CallFlags& call_flags() noexcept {
  static thread_local CallFlags f;
  return f;
}

// Sets the flags for one call and restores the previous ones.
class CallFlagsScope {
 public:
  CallFlagsScope(bool dontwait, bool no_sigpipe) noexcept : saved_(call_flags()) {
    call_flags().dontwait = saved_.dontwait || dontwait;
    call_flags().no_sigpipe = saved_.no_sigpipe || no_sigpipe;
  }
  ~CallFlagsScope() { call_flags() = saved_; }
  CallFlagsScope(const CallFlagsScope&) = delete;
  CallFlagsScope& operator=(const CallFlagsScope&) = delete;

 private:
  CallFlags saved_;
};

}  // namespace uepoll::core
