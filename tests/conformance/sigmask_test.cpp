// sigmask_test.cpp - the calls that take a signal mask (ppoll, pselect,
// epoll_pwait, epoll_pwait2) with a signal pending that the mask unblocks:
// with nothing ready, ppoll and pselect return -1 EINTR and run the handler
// whatever the timeout (zero included: Linux do_poll/do_select check
// signal_pending() before they look at the clock), epoll_pwait and
// epoll_pwait2 only when they may sleep (ep_poll returns 0 first when the
// timeout is zero); with an event ready, every call returns it and the
// signal stays pending (the mask is restored before it could be delivered).
// Runs on Linux and uepoll; the traces must match.
#include "harness.h"

#include <pthread.h>
#include <sys/select.h>

namespace {

using conf::T;

volatile sig_atomic_t g_ran = 0;
void on_usr1(int) { g_ran = g_ran + 1; }

// SIGUSR1 blocked in this thread and pending for it (thread-directed, so no
// other thread of the test binary can take it).
void make_pending() {
  sigset_t b;
  sigemptyset(&b);
  sigaddset(&b, SIGUSR1);
  pthread_sigmask(SIG_BLOCK, &b, nullptr);
  g_ran = 0;
  pthread_kill(pthread_self(), SIGUSR1);
}

// Takes a signal left pending (the handler runs), so that the next case
// starts clean; reports whether one was left.
bool drain_pending() {
  sigset_t p;
  sigpending(&p);
  const bool left = sigismember(&p, SIGUSR1);
  if (left) {
    sigset_t none;
    sigemptyset(&none);
    sigsuspend(&none);
  }
  return left;
}

void log_case(T& t, const std::string& call, int r) {
  const int e = errno;
  const bool handled = g_ran != 0;
  const bool left = drain_pending();
  errno = e;
  t.log(call + " = " + t.res(r) + (handled ? " handler ran" : "") + (left ? " still pending" : ""));
}

struct Restore {
  struct sigaction old{};
  sigset_t mask{};
  Restore() {
    struct sigaction sa{};
    sa.sa_handler = on_usr1;
    sigaction(SIGUSR1, &sa, &old);
    pthread_sigmask(SIG_SETMASK, nullptr, &mask);
  }
  ~Restore() {
    pthread_sigmask(SIG_SETMASK, &mask, nullptr);
    sigaction(SIGUSR1, &old, nullptr);
  }
};

TEST(SignalMask, PendingSignalUnblockedByTheMask) {
  Restore restore;
  auto r = conf::differential([](T& t) {
    auto [rd, wr] = t.pipe2(O_NONBLOCK);
    int ep = t.epoll_create1();
    t.ctl(ep, EPOLL_CTL_ADD, rd, EPOLLIN, 7);
    int kp[2];  // pselect's sets name kernel descriptors on both sides
    if (::pipe2(kp, O_NONBLOCK) != 0) return;
    sigset_t empty;
    sigemptyset(&empty);
    const struct timespec zero{0, 0}, one_ns{0, 1}, long_wait{5, 0};
    const std::pair<const struct timespec*, const char*> timeouts[] = {
        {&zero, "0"}, {&one_ns, "1ns"}, {&long_wait, "5s"}};
    for (int ready = 0; ready < 2; ++ready) {
      if (ready) {
        t.write(wr, "x", 1);
        (void)!::write(kp[1], "x", 1);
      }
      for (auto [tmo, tn] : timeouts) {
        const std::string sfx = std::string(",") + tn + ",empty mask)";
        struct pollfd pfd = {rd, POLLIN, 0};
        make_pending();
        errno = 0;
        int n = t.is_linux() ? ::ppoll(&pfd, 1, tmo, &empty) : ::uep_ppoll(&pfd, 1, tmo, &empty);
        log_case(t, "ppoll(" + t.name(rd) + sfx, n);

        fd_set rs;
        FD_ZERO(&rs);
        FD_SET(kp[0], &rs);
        make_pending();
        errno = 0;
        n = t.is_linux() ? ::pselect(kp[0] + 1, &rs, nullptr, nullptr, tmo, &empty)
                         : ::uep_pselect(kp[0] + 1, &rs, nullptr, nullptr, tmo, &empty);
        log_case(t, "pselect(kernel pipe" + sfx, n);

        struct epoll_event ev;
        const int ms = tmo->tv_sec ? static_cast<int>(tmo->tv_sec * 1000) : (tmo->tv_nsec ? 1 : 0);
        make_pending();
        errno = 0;
        n = t.api.epoll_pwait(ep, &ev, 1, ms, &empty);
        log_case(t, "epoll_pwait(" + t.name(ep) + "," + std::to_string(ms) + "ms,empty mask)", n);

        make_pending();
        errno = 0;
        n = t.api.epoll_pwait2(ep, &ev, 1, tmo, &empty);
        log_case(t, "epoll_pwait2(" + t.name(ep) + sfx, n);
      }
    }
    // A mask that keeps the signal blocked: nothing is delivered.
    sigset_t usr1;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    t.read(rd, 1);
    struct pollfd pfd = {rd, POLLIN, 0};
    make_pending();
    errno = 0;
    int n = t.is_linux() ? ::ppoll(&pfd, 1, &zero, &usr1) : ::uep_ppoll(&pfd, 1, &zero, &usr1);
    log_case(t, "ppoll(" + t.name(rd) + ",0,mask with the signal)", n);
    ::close(kp[0]);
    ::close(kp[1]);
  });
  EXPECT_LINUX_SEQ(r, {"ppoll(fd0,0,empty mask) = -1 EINTR handler ran",
                       "pselect(kernel pipe,0,empty mask) = -1 EINTR handler ran",
                       "epoll_pwait(fd2,0ms,empty mask) = 0 still pending",
                       "epoll_pwait2(fd2,0,empty mask) = 0 still pending",
                       "ppoll(fd0,1ns,empty mask) = -1 EINTR handler ran",
                       "epoll_pwait(fd2,5000ms,empty mask) = -1 EINTR handler ran",
                       "ppoll(fd0,0,empty mask) = 1 still pending",
                       "epoll_pwait2(fd2,5s,empty mask) = 1 still pending",
                       "ppoll(fd0,0,mask with the signal) = 0 still pending"});
}

}  // namespace
