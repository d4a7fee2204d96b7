// forked_child.h - run a function in a forked child and read its verdict:
// the child writes "" (success) or a message to a pipe and _exits; the
// parent collects it, killing a child that outlives the deadline.  Used by
// the fork and sandbox tests (each child is a process of its own).
#pragma once

#include <chrono>
#include <functional>
#include <poll.h>
#include <signal.h>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

namespace uepoll_test::rel {

// Started by the constructor; runs alongside the caller until join().
class ForkedChild {
 public:
  explicit ForkedChild(const std::function<std::string()>& fn) {
    int p[2];
    if (pipe(p) < 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      close(p[0]);
      std::string m = fn();
      if (m.empty()) m = "ok";
      if (write(p[1], m.data(), m.size())) {
      }
      _exit(m == "ok" ? 0 : 1);
    }
    close(p[1]);
    rd_ = p[0];
  }
  ForkedChild(const ForkedChild&) = delete;
  ForkedChild& operator=(const ForkedChild&) = delete;

  // "" when fn returned "" and the child exited 0; else what it reported,
  // "hung" (killed after timeout_ms) or the signal that killed it.
  std::string join(int timeout_ms = 30000) {
    if (pid_ < 0) return "fork failed";
    std::string out;
    bool hung = false;
    pollfd pf{rd_, POLLIN, 0};
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
      if (left.count() <= 0 || poll(&pf, 1, static_cast<int>(left.count())) <= 0) {
        hung = true;
        kill(pid_, SIGKILL);
        break;
      }
      char buf[256];
      const ssize_t n = read(rd_, buf, sizeof buf);
      if (n <= 0) break;
      out.append(buf, static_cast<size_t>(n));
    }
    close(rd_);
    int st = 0;
    waitpid(pid_, &st, 0);
    if (hung) return "hung" + (out.empty() ? "" : ": " + out);
    if (WIFSIGNALED(st)) return "killed by signal " + std::to_string(WTERMSIG(st)) + (out.empty() ? "" : ": " + out);
    if (out == "ok" && WIFEXITED(st) && WEXITSTATUS(st) == 0) return "";
    return out.empty() ? "child failed" : out;
  }

 private:
  pid_t pid_ = -1;
  int rd_ = -1;
};

// Runs fn in a child and waits for it.
inline std::string in_child(const std::function<std::string()>& fn, int timeout_ms = 20000) {
  return ForkedChild(fn).join(timeout_ms);
}

}  // namespace uepoll_test::rel
