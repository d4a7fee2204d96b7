// interrupted.h - a blocking call interrupted by a signal handler, for the
// differential tests of SA_RESTART (restart_test.cpp, surface_lock_test.cpp):
// interrupted() runs the call in this thread with a SIGUSR1 handler
// installed with or without SA_RESTART; a helper thread signals this one
// once it is asleep (its /proc state is S), then runs `then`, which lets
// the call finish.  The trace line gives the call's result and whether the
// handler ran.
#pragma once

#include "harness.h"

#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <functional>
#include <string>
#include <thread>

namespace conf_interrupted {

using conf::T;

// Handler runs, read by the helper thread: a lock-free atomic (async-signal-safe).
inline std::atomic<int> g_handled{0};
inline void on_usr1(int) { g_handled.fetch_add(1, std::memory_order_relaxed); }

// True once thread `tid` of this process is asleep (state S in its stat).
inline bool asleep(pid_t tid) {
  char path[64];
  snprintf(path, sizeof path, "/proc/self/task/%d/stat", static_cast<int>(tid));
  std::ifstream in(path);
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t p = stat.rfind(')');
  return p != std::string::npos && p + 2 < stat.size() && stat[p + 2] == 'S';
}

// Runs `call` in this thread with a SIGUSR1 handler (SA_RESTART or not);
// another thread signals this one when it sleeps, then runs `then` (which
// lets the call finish).  Logs the call's result and whether the handler ran.
inline void interrupted(T& t, bool sa_restart, const std::string& what, const std::function<long()>& call,
                        const std::function<void()>& then) {
  struct sigaction sa{}, old{};
  sa.sa_handler = on_usr1;
  sa.sa_flags = sa_restart ? SA_RESTART : 0;
  sigaction(SIGUSR1, &sa, &old);
  g_handled.store(0, std::memory_order_relaxed);
  const pthread_t self = pthread_self();
  const pid_t tid = static_cast<pid_t>(syscall(SYS_gettid));
  std::atomic<bool> returned{false};
  std::thread helper([&] {
    for (int i = 0; i < 2000 && !asleep(tid); ++i) usleep(1000);
    usleep(10000);
    pthread_kill(self, SIGUSR1);
    // `then` runs once the handler has run and, without SA_RESTART, the
    // call has returned: a thread that the scheduler stalls past the
    // signal must not find room first (Linux's pipe_write then writes, as
    // it looks for room before it looks for signals).
    for (int i = 0; i < 5000 && !g_handled.load(std::memory_order_relaxed); ++i) usleep(1000);
    for (int i = 0; i < 30 && !returned; ++i) usleep(1000);
    then();
  });
  errno = 0;
  const long r = call();
  const int e = errno;
  returned = true;
  helper.join();
  sigaction(SIGUSR1, &old, nullptr);
  errno = e;
  t.log(what + (sa_restart ? " [SA_RESTART]" : " [no SA_RESTART]") + " = " + t.res(r) +
        (g_handled.load(std::memory_order_relaxed) ? " handler ran" : " no handler"));
}

}  // namespace conf_interrupted
