// forked_child.h - run a function in a forked child and read what it wrote.
// Shared by the tests (conformance harness, reliability) and uepoll-bench,
// which all need the same thing: isolate something that may crash, hang or
// change process-wide state (rlimits, a half-initialised library) in a child,
// collect its output through a pipe, and learn how it ended.
//
// Header-only; takes no lock.  The child is a copy of the calling process with
// only the forking thread: `body` must not need other threads, and should
// make only async-signal-safe calls if the parent has other threads (e.g. it
// prepares everything before the fork and then execs, as uepoll-bench does).
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <string>
#include <utility>

namespace uepoll_support {

struct ChildResult {
  bool started = false;    // false: pipe2() or fork() failed (errno in `error`)
  int error = 0;           // errno of the failed pipe2()/fork()
  std::string output;      // every byte the child wrote to its pipe end
  int status = 0;          // waitpid() status (when started)
  bool timed_out = false;  // the deadline passed: the child was SIGKILLed

  bool exited() const { return started && WIFEXITED(status); }
  int exit_code() const { return exited() ? WEXITSTATUS(status) : -1; }
  // The signal that ended the child, or 0 (SIGKILL after a timeout counts).
  int signal() const { return started && WIFSIGNALED(status) ? WTERMSIG(status) : 0; }
};

namespace detail {
inline long long monotonic_ms() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<long long>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}
}  // namespace detail

// Forks; the child runs body(out_fd), where out_fd is the write end of a pipe
// (O_CLOEXEC: dup2 it to keep it across an exec), then _exit(0)s if body
// returns.  The parent reads the pipe until every write end is closed, then
// reaps the child.  timeout_ms >= 0 bounds the whole run: past it the child
// is SIGKILLed and `timed_out` set; -1 waits for ever.  stdout and stderr are
// flushed before the fork so that buffered output is not written twice.
template <class Body>
ChildResult run_in_child(Body&& body, int timeout_ms = -1) {
  ChildResult r;
  std::fflush(stdout);
  std::fflush(stderr);
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) {
    r.error = errno;
    return r;
  }
  pid_t pid = ::fork();
  if (pid < 0) {
    r.error = errno;
    ::close(p[0]);
    ::close(p[1]);
    return r;
  }
  if (pid == 0) {
    ::close(p[0]);
    std::forward<Body>(body)(p[1]);
    _exit(0);
  }
  r.started = true;
  ::close(p[1]);
  const long long deadline = timeout_ms >= 0 ? detail::monotonic_ms() + timeout_ms : -1;
  auto left_ms = [&]() -> int {
    if (deadline < 0) return -1;
    long long left = deadline - detail::monotonic_ms();
    return left > 0 ? static_cast<int>(left) : 0;
  };
  for (;;) {
    struct pollfd pf = {p[0], POLLIN, 0};
    int left = left_ms();
    if (left == 0) {
      r.timed_out = true;
      break;
    }
    int n = ::poll(&pf, 1, left);
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) {
      r.timed_out = true;
      break;
    }
    if (n < 0) break;
    char buf[4096];
    ssize_t got = ::read(p[0], buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    r.output.append(buf, static_cast<size_t>(got));
  }
  ::close(p[0]);
  if (!r.timed_out && deadline >= 0) {
    // EOF comes just before the child is reapable; give it until the
    // deadline (at least 2 s) to exit.
    long long until = std::max(deadline, detail::monotonic_ms() + 2000);
    pid_t w;
    while ((w = ::waitpid(pid, &r.status, WNOHANG)) == 0 && detail::monotonic_ms() < until) ::usleep(1000);
    if (w == pid) return r;
    r.timed_out = true;
  }
  if (r.timed_out) ::kill(pid, SIGKILL);
  while (::waitpid(pid, &r.status, 0) < 0 && errno == EINTR) {
  }
  return r;
}

}  // namespace uepoll_support
