// api.h - one table of descriptor calls with two implementations: real Linux
// system calls and uepoll's C API.  A differential test writes its scenario
// once against `const Api&` and runs it with both tables, then compares what
// each call returned (value and errno), which events came back and in what
// order.  Descriptor numbers differ between the two (uepoll's start at
// UEP_FD_BASE), so compare them through FdNamer-style normalisation, not raw.
#pragma once

#include <uepoll/uepoll.h>

#include <cerrno>
#include <cstdlib>
#include <string>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

namespace uepoll_test {

struct Api {
  const char* name;
  int (*epoll_create)(int);
  int (*epoll_create1)(int);
  int (*epoll_ctl)(int, int, int, struct epoll_event*);
  int (*epoll_wait)(int, struct epoll_event*, int, int);
  int (*epoll_pwait)(int, struct epoll_event*, int, int, const sigset_t*);
  int (*epoll_pwait2)(int, struct epoll_event*, int, const struct timespec*, const sigset_t*);
  int (*eventfd)(unsigned int, int);
  int (*pipe)(int[2]);
  int (*pipe2)(int[2], int);
  int (*socketpair)(int, int, int, int[2]);
  int (*shutdown)(int, int);
  int (*timerfd_create)(int, int);
  int (*timerfd_settime)(int, int, const struct itimerspec*, struct itimerspec*);
  int (*timerfd_gettime)(int, struct itimerspec*);
  ssize_t (*read)(int, void*, size_t);
  ssize_t (*write)(int, const void*, size_t);
  int (*close)(int);
  int (*dup)(int);
  int (*poll)(struct pollfd*, nfds_t, int);
};

namespace detail {
inline int linux_epoll_pwait2(int epfd, struct epoll_event* ev, int n, const struct timespec* ts,
                              const sigset_t* mask) {
  return ::epoll_pwait2(epfd, ev, n, ts, mask);
}
inline int linux_eventfd(unsigned int v, int f) { return ::eventfd(v, f); }
inline int linux_pipe(int p[2]) { return ::pipe(p); }
inline int linux_pipe2(int p[2], int f) { return ::pipe2(p, f); }
inline int linux_socketpair(int d, int t, int p, int sv[2]) { return ::socketpair(d, t, p, sv); }
inline int uep_pipe_(int p[2]) { return ::uep_pipe(p); }
inline int uep_pipe2_(int p[2], int f) { return ::uep_pipe2(p, f); }
inline int uep_socketpair_(int d, int t, int p, int sv[2]) { return ::uep_socketpair(d, t, p, sv); }
}  // namespace detail

inline const Api& linux_api() {
  static const Api api{"linux",          ::epoll_create,   ::epoll_create1,
                       ::epoll_ctl,      ::epoll_wait,     ::epoll_pwait,
                       detail::linux_epoll_pwait2,         detail::linux_eventfd,
                       detail::linux_pipe,                 detail::linux_pipe2,
                       detail::linux_socketpair,           ::shutdown,
                       ::timerfd_create, ::timerfd_settime, ::timerfd_gettime,
                       ::read,           ::write,          ::close,
                       ::dup,            ::poll};
  return api;
}

inline const Api& user_eventfd_api(const Api& base);  // support/user_objects.h

// UEPOLL_TEST_USER_EVENTFD=1 swaps uepoll's eventfd for a user-defined file
// with eventfd semantics (support/user_objects.h), for whole-suite runs.
inline const Api& uepoll_api() {
  static const Api api{"uepoll",             ::uep_epoll_create,    ::uep_epoll_create1,
                       ::uep_epoll_ctl,      ::uep_epoll_wait,      ::uep_epoll_pwait,
                       ::uep_epoll_pwait2,   ::uep_eventfd,         detail::uep_pipe_,
                       detail::uep_pipe2_,   detail::uep_socketpair_, ::uep_shutdown,
                       ::uep_timerfd_create, ::uep_timerfd_settime, ::uep_timerfd_gettime,
                       ::uep_read,           ::uep_write,           ::uep_close,
                       ::uep_dup,            ::uep_poll};
  static const char* user = getenv("UEPOLL_TEST_USER_EVENTFD");
  static const Api& chosen = user && *user && *user != '0' ? user_eventfd_api(api) : api;
  return chosen;
}

// A call's outcome: return value (descriptors normalised by the caller) and
// errno when it failed.
struct Outcome {
  long ret;
  int err;
  bool operator==(const Outcome&) const = default;
};

inline std::string to_string(const Outcome& o) {
  return o.ret < 0 ? "-1/" + std::to_string(o.err) : std::to_string(o.ret);
}

}  // namespace uepoll_test

#include "user_objects.h"  // defines user_eventfd_api() (same directory)
