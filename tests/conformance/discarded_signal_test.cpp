// discarded_signal_test.cpp - a signal that Linux discards as it is sent
// (SIG_IGN, or SIG_DFL for SIGCHLD and SIGWINCH: kernel/signal.c
// sig_task_ignored) never ends a sleep with EINTR.  uepoll blocks every
// signal between a sleep's last check and its sleep system call, and the
// kernel keeps a blocked signal pending instead of discarding it: the sleep
// must tell such a signal from one with a handler.  A helper thread sends
// the sleeping thread one of these signals every 50 us while it makes short
// timed waits over and over; the count of EINTR must be Linux's, none.
// Runs on Linux and uepoll; the traces must match.
#include "harness.h"

#include <pthread.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <atomic>
#include <functional>
#include <thread>

namespace {

using conf::T;

// Calls `wait` (one short timed wait) for `ms` while another thread sends
// this one SIGCHLD, SIGWINCH, SIGCONT, SIGURG (at SIG_DFL) and SIGUSR2 (at
// SIG_IGN) in turn every 50 us; logs how many calls failed and with which
// errno.
void storm(T& t, const std::string& what, const std::function<int()>& wait, double ms = 300) {
  const pthread_t self = pthread_self();
  std::atomic<bool> stop{false};
  std::thread sender([&] {
    static const int kSigs[] = {SIGCHLD, SIGWINCH, SIGCONT, SIGURG, SIGUSR2};
    for (unsigned i = 0; !stop.load(); ++i) {
      pthread_kill(self, kSigs[i % 5]);
      usleep(50);
    }
  });
  int calls = 0, eintr = 0, other = 0, other_errno = 0;
  const double end = conf::now_ms() + ms;
  while (conf::now_ms() < end) {
    errno = 0;
    const int r = wait();
    ++calls;
    if (r < 0 && errno == EINTR)
      ++eintr;
    else if (r < 0) {
      ++other;
      other_errno = errno;
    }
  }
  stop = true;
  sender.join();
  std::string line = what + ": " + (calls > 20 ? "many calls" : "few calls (" + std::to_string(calls) + ")");
  line += ", EINTR " + std::to_string(eintr);
  if (other) line += ", other errors " + std::to_string(other) + " " + conf::errno_name(other_errno);
  t.log(line);
}

struct IgnoreUsr2 {
  struct sigaction old{};
  IgnoreUsr2() {
    struct sigaction sa{};
    sa.sa_handler = SIG_IGN;
    sigaction(SIGUSR2, &sa, &old);
  }
  ~IgnoreUsr2() { sigaction(SIGUSR2, &old, nullptr); }
};

TEST(DiscardedSignal, NeverInterruptsASleep) {
  UEPOLL_SKIP_UNDER_TSAN("signals a thread sleeping on kernel descriptors");
  IgnoreUsr2 ignore;
  auto r = conf::differential([](T& t) {
    const uepoll_test::Api& api = t.api;
    const auto ends = t.pipe();
    const int rd = ends.first;
    int ep = t.epoll_create1();
    t.ctl(ep, EPOLL_CTL_ADD, rd, EPOLLIN, 1);
    sigset_t empty;
    sigemptyset(&empty);
    struct epoll_event ev;
    storm(t, "epoll_wait(1 ms)", [&] { return api.epoll_wait(ep, &ev, 1, 1); });
    storm(t, "epoll_pwait(1 ms, empty mask)", [&] { return api.epoll_pwait(ep, &ev, 1, 1, &empty); });
    storm(t, "poll(pipe, 1 ms)", [&] {
      struct pollfd p = {rd, POLLIN, 0};
      return api.poll(&p, 1, 1);
    });
    storm(t, "ppoll(pipe, 1 ms, empty mask)", [&] {
      struct pollfd p = {rd, POLLIN, 0};
      const struct timespec ms{0, 1000000};
      return t.is_linux() ? ::ppoll(&p, 1, &ms, &empty) : ::uep_ppoll(&p, 1, &ms, &empty);
    });
    // A blocking read with a timeout (a socket pair's SO_RCVTIMEO).
    const int a = t.socketpair(AF_UNIX, SOCK_STREAM, 0).first;
    const struct timeval tv{0, 1000};
    const int set = t.is_linux() ? ::setsockopt(a, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv)
                                 : ::uep_setsockopt(a, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    t.log("setsockopt(SO_RCVTIMEO, 1 ms) = " + t.res(set));
    storm(t, "recv(pair, 1 ms timeout)", [&] {
      char c;
      const ssize_t n = t.is_linux() ? ::recv(a, &c, 1, 0) : ::uep_recv(a, &c, 1, 0);
      return n < 0 && errno == EAGAIN ? 0 : static_cast<int>(n);
    });
    // An instance with a kernel descriptor as well (its direct sleep).
    int kp[2];
    if (::pipe(kp) != 0) return;
    int kep = t.epoll_create1();
    t.ctl(kep, EPOLL_CTL_ADD, rd, EPOLLIN, 1);
    struct epoll_event kev{};
    kev.events = EPOLLIN;
    t.log("ctl(kernel pipe) = " + t.res(api.epoll_ctl(kep, EPOLL_CTL_ADD, kp[0], &kev)));
    storm(t, "epoll_wait(with a kernel pipe, 1 ms)", [&] { return api.epoll_wait(kep, &ev, 1, 1); });
    ::close(kp[0]);
    ::close(kp[1]);
  });
  EXPECT_LINUX_SEQ(r, {"epoll_wait(1 ms): many calls, EINTR 0", "recv(pair, 1 ms timeout): many calls, EINTR 0",
                       "epoll_wait(with a kernel pipe, 1 ms): many calls, EINTR 0"});
}

// The state letter of process `pid` ('S', 'T', ...) from /proc, '?' if
// unreadable.
char proc_state(pid_t pid) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/stat", static_cast<int>(pid));
  FILE* f = fopen(path, "r");
  if (!f) return '?';
  char buf[512];
  const size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  const char* p = strrchr(buf, ')');
  return p && p[1] == ' ' ? p[2] : '?';
}

// True once `pid` has shown `state` in four samples 3 ms apart (false
// after 3 s).
bool await_state(pid_t pid, char state) {
  const double end = conf::now_ms() + 3000;
  for (int streak = 0; conf::now_ms() < end;) {
    streak = proc_state(pid) == state ? streak + 1 : 0;
    if (streak == 4) return true;
    usleep(3000);
  }
  return false;
}

// One epoll_wait of `ms` on an instance with a pipe that stays empty,
// while a helper process sends this one `first` once it sleeps, then (if
// `cont`) SIGCONT once it is stopped.  Logs the result and whether it came
// before the timeout.
void wait_through(T& t, int ep, int first, bool cont, int ms) {
  const pid_t me = getpid();
  const pid_t helper = fork();
  if (helper == 0) {
    if (await_state(me, 'S')) {
      kill(me, first);
      if (cont && await_state(me, 'T')) kill(me, SIGCONT);
    }
    _exit(0);
  }
  struct epoll_event ev;
  const double t0 = conf::now_ms();
  errno = 0;
  const int n = t.api.epoll_wait(ep, &ev, 1, ms);
  const bool early = conf::now_ms() - t0 < ms - 50;
  const std::string name = sigabbrev_np(first);
  t.log("epoll_wait through SIG" + name + (cont ? " and SIGCONT" : "") + " = " + t.res(n) +
        (early ? ", before its timeout" : ""));
  int st;
  while (waitpid(helper, &st, 0) < 0 && errno == EINTR) {
  }
}

// A stop ends the sleep with EINTR once the process is continued (signal(7)
// lists epoll_wait among the calls that do so); SIGCONT alone, which Linux
// discards, does not.  SIGTSTP can be blocked, so uepoll's sleep sees it
// on its signalfd and delivers it itself.  Each side runs in a child
// process, which the stop stops.
TEST(DiscardedSignal, StopAndContinue) {
  UEPOLL_SKIP_UNDER_TSAN("stops and continues the process");
  auto r = conf::differential(
      [](T& t) {
        const int rd = t.pipe().first;
        const int ep = t.epoll_create1();
        t.ctl(ep, EPOLL_CTL_ADD, rd, EPOLLIN, 1);
        wait_through(t, ep, SIGCONT, false, 600);
        wait_through(t, ep, SIGTSTP, true, 5000);
        wait_through(t, ep, SIGSTOP, true, 5000);
      },
      true);
  EXPECT_LINUX_SEQ(r, {"epoll_wait through SIGCONT = 0", "epoll_wait through SIGTSTP and SIGCONT = -1 EINTR, before its timeout",
                       "epoll_wait through SIGSTOP and SIGCONT = -1 EINTR, before its timeout"});
}

}  // namespace
