// forked_child.h - run a function in a forked child and read what it wrote.
// Shared by the tests (conformance harness, reliability) and uepoll-bench,
// which all need the same thing: isolate something that may crash, hang or
// change process-wide state (rlimits, a half-initialised library) in a child,
// collect its output through a pipe, and learn how it ended.
// run_in_child forks and waits; start_child / finish_child let the child run
// alongside the caller.  ForkedChild and in_child (the fork and sandbox
// tests) add a verdict: the child reports "" (success) or a message.
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

// A child started by start_child and not yet reaped: its pid and the read
// end of its pipe (pid -1: pipe2() or fork() failed, errno in `error`).
struct StartedChild {
  pid_t pid = -1;
  int rd = -1;
  int error = 0;
};

// Forks; the child runs body(out_fd), where out_fd is the write end of a pipe
// (O_CLOEXEC: dup2 it to keep it across an exec), then _exit(0)s if body
// returns.  The parent returns at once; the child runs alongside it until
// finish_child.  stdout and stderr are flushed before the fork so that
// buffered output is not written twice.
template <class Body>
StartedChild start_child(Body&& body) {
  StartedChild c;
  std::fflush(stdout);
  std::fflush(stderr);
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) {
    c.error = errno;
    return c;
  }
  pid_t pid = ::fork();
  if (pid < 0) {
    c.error = errno;
    ::close(p[0]);
    ::close(p[1]);
    return c;
  }
  if (pid == 0) {
    ::close(p[0]);
    std::forward<Body>(body)(p[1]);
    _exit(0);
  }
  ::close(p[1]);
  c.pid = pid;
  c.rd = p[0];
  return c;
}

// Reads the pipe of a child from start_child until every write end is
// closed, then reaps the child.  timeout_ms >= 0 bounds the wait, counted
// from this call: past it the child is SIGKILLed and `timed_out` set; -1
// waits for ever.
inline ChildResult finish_child(const StartedChild& c, int timeout_ms = -1) {
  ChildResult r;
  if (c.pid < 0) {
    r.error = c.error;
    return r;
  }
  r.started = true;
  const long long deadline = timeout_ms >= 0 ? detail::monotonic_ms() + timeout_ms : -1;
  auto left_ms = [&]() -> int {
    if (deadline < 0) return -1;
    long long left = deadline - detail::monotonic_ms();
    return left > 0 ? static_cast<int>(left) : 0;
  };
  for (;;) {
    struct pollfd pf = {c.rd, POLLIN, 0};
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
    ssize_t got = ::read(c.rd, buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    r.output.append(buf, static_cast<size_t>(got));
  }
  ::close(c.rd);
  if (!r.timed_out && deadline >= 0) {
    // EOF comes just before the child is reapable; give it until the
    // deadline (at least 2 s) to exit.
    long long until = std::max(deadline, detail::monotonic_ms() + 2000);
    pid_t w;
    while ((w = ::waitpid(c.pid, &r.status, WNOHANG)) == 0 && detail::monotonic_ms() < until) ::usleep(1000);
    if (w == c.pid) return r;
    r.timed_out = true;
  }
  if (r.timed_out) ::kill(c.pid, SIGKILL);
  while (::waitpid(c.pid, &r.status, 0) < 0 && errno == EINTR) {
  }
  return r;
}

// start_child then finish_child: timeout_ms bounds the whole run.
template <class Body>
ChildResult run_in_child(Body&& body, int timeout_ms = -1) {
  return finish_child(start_child(std::forward<Body>(body)), timeout_ms);
}

// ---- verdicts: the child returns "" (success) or a message ----------------
// For the fork and sandbox tests: fn runs in the child and returns "" or what
// went wrong; the child writes "ok" or the message and _exits 0 or 1.

// Started by the constructor; the child runs alongside the caller until join().
class ForkedChild {
 public:
  template <class Fn>
  explicit ForkedChild(Fn&& fn)
      : child_(start_child([&fn](int out) {
          std::string m = fn();
          if (m.empty()) m = "ok";
          if (::write(out, m.data(), m.size())) {
          }
          _exit(m == "ok" ? 0 : 1);
        })) {}
  ForkedChild(const ForkedChild&) = delete;
  ForkedChild& operator=(const ForkedChild&) = delete;

  // "" when fn returned "" and the child exited 0; else what it reported,
  // "hung" (killed after timeout_ms) or the signal that killed it.
  std::string join(int timeout_ms = 30000) {
    if (child_.pid < 0) return "fork failed";
    ChildResult r = finish_child(child_, timeout_ms);
    const std::string& out = r.output;
    if (r.timed_out) return "hung" + (out.empty() ? "" : ": " + out);
    if (r.signal() != 0) return "killed by signal " + std::to_string(r.signal()) + (out.empty() ? "" : ": " + out);
    if (out == "ok" && r.exit_code() == 0) return "";
    return out.empty() ? "child failed" : out;
  }

 private:
  StartedChild child_;
};

// Runs fn in a child and waits for its verdict.
template <class Fn>
std::string in_child(Fn&& fn, int timeout_ms = 20000) {
  return ForkedChild(std::forward<Fn>(fn)).join(timeout_ms);
}

}  // namespace uepoll_support
