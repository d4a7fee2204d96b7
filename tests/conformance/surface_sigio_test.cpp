// surface_sigio_test.cpp - signal-driven I/O (O_ASYNC, F_SETOWN,
// F_SETOWN_EX, F_SETSIG, FIOASYNC) on pipes, socket pairs and eventfds,
// Linux vs uepoll (surface_harness.h): the signals Linux's kill_fasync
// sends, and their siginfo (si_code, si_band, si_fd by name), collected with
// sigtimedwait while blocked.
#include "conformance/surface_harness.h"
#include "splice_calls.h"

#include <climits>
#include <sys/eventfd.h>
#include <sys/syscall.h>

namespace {

using conf::ST;

// The signals this file's scenarios use, blocked for the whole test.
sigset_t test_set() {
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, SIGIO);
  sigaddset(&s, SIGRTMIN + 1);
  sigaddset(&s, SIGRTMIN + 2);
  return s;
}

class SigioTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const sigset_t s = test_set();
    pthread_sigmask(SIG_BLOCK, &s, &saved_);
    drain();
  }
  void TearDown() override {
    drain();
    pthread_sigmask(SIG_SETMASK, &saved_, nullptr);
  }
  static void drain() {
    const sigset_t s = test_set();
    const timespec zero{0, 0};
    siginfo_t si;
    while (sigtimedwait(&s, &si, &zero) > 0) {
    }
  }
  sigset_t saved_;
};

// Logs every pending signal of the set, then how many.
void collect(ST& t, const char* what) {
  const sigset_t s = test_set();
  const timespec zero{0, 0};
  siginfo_t si;
  int n = 0;
  while (sigtimedwait(&s, &si, &zero) > 0) {
    char line[160];
    if (si.si_code > 0 && si.si_code < SI_KERNEL)
      snprintf(line, sizeof line, "%s: sig %d code %d band %#lx fd %s", what,
               si.si_signo == SIGIO ? 0 : si.si_signo - SIGRTMIN, si.si_code, static_cast<long>(si.si_band),
               t.n(si.si_fd).c_str());
    else
      snprintf(line, sizeof line, "%s: sig %d code %d", what, si.si_signo == SIGIO ? 0 : si.si_signo - SIGRTMIN,
               si.si_code);
    t.log(line);
    ++n;
  }
  t.log(std::string(what) + ": " + std::to_string(n) + " signal(s)");
}

TEST_F(SigioTest, PipeEnds) {
  auto tr = conf::surface_differential([](ST& t) {
    auto [r, w] = t.pipe();
    t.fcntl(r, F_SETOWN, static_cast<unsigned long>(getpid()), "F_SETOWN,self");
    t.setfl(r, O_ASYNC | O_NONBLOCK, "ASYNC|NONBLOCK");
    t.getfl(r);
    t.write(w, "ab", 2);
    t.write(w, "cd", 2);
    collect(t, "plain SIGIO");
    t.fcntl(r, F_SETSIG, static_cast<unsigned long>(SIGRTMIN + 1), "F_SETSIG,RT+1");
    t.write(w, "ef", 2);
    t.write(w, "", 0);
    collect(t, "F_SETSIG");
    t.fcntl(w, F_SETOWN, static_cast<unsigned long>(getpid()), "F_SETOWN,self");
    t.fcntl(w, F_SETSIG, static_cast<unsigned long>(SIGRTMIN + 2), "F_SETSIG,RT+2");
    t.ioctl_int(w, FIOASYNC, "FIOASYNC,1", 1);
    char buf[16];
    t.read(r, sizeof buf, buf);
    t.read(r, sizeof buf, buf);  // empty: EAGAIN, still a POLL_OUT
    collect(t, "reads");
    t.close(w);
    collect(t, "writer closed");
  });
  EXPECT_LINUX_HAS(tr, "F_SETSIG: 1 signal(s)");
}

TEST_F(SigioTest, ReaderClosesAndOwners) {
  auto tr = conf::surface_differential([](ST& t) {
    auto [r, w] = t.pipe();
    f_owner_ex ex{F_OWNER_TID, static_cast<pid_t>(syscall(SYS_gettid))};
    t.fcntl(w, F_SETOWN_EX, reinterpret_cast<unsigned long>(&ex), "F_SETOWN_EX,TID self");
    f_owner_ex got{};
    t.fcntl(w, F_GETOWN_EX, reinterpret_cast<unsigned long>(&got), "F_GETOWN_EX");
    t.log(std::string("owner type ") + std::to_string(got.type) + (got.pid == ex.pid ? " me" : " other"));
    t.fcntl(w, F_SETSIG, static_cast<unsigned long>(SIGRTMIN + 2), "F_SETSIG,RT+2");
    t.setfl(w, O_ASYNC, "ASYNC");
    t.close(r);
    collect(t, "reader closed");
    t.fcntl(w, F_SETSIG, 65, "F_SETSIG,65");
    t.fcntl(w, F_SETSIG, 64, "F_SETSIG,64");
    t.fcntl(w, F_GETSIG, 0, "F_GETSIG");
    t.fcntl(w, F_SETOWN, static_cast<unsigned long>(INT_MIN), "F_SETOWN,INT_MIN");
    t.fcntl(w, F_SETOWN, static_cast<unsigned long>(INT_MAX), "F_SETOWN,no such pid");
    f_owner_ex bad{static_cast<__pid_type>(7), 0};
    t.fcntl(w, F_SETOWN_EX, reinterpret_cast<unsigned long>(&bad), "F_SETOWN_EX,bad type");
    t.fcntl(w, F_SETOWN, static_cast<unsigned long>(-getpgrp()), "F_SETOWN,-pgrp");
    t.fcntl(w, F_GETOWN_EX, reinterpret_cast<unsigned long>(&got), "F_GETOWN_EX");
    t.log("owner type " + std::to_string(got.type));
  });
  EXPECT_LINUX_HAS(tr, "reader closed: 1 signal(s)");
}

TEST_F(SigioTest, SocketPair) {
  auto tr = conf::surface_differential([](ST& t) {
    auto [a, b] = t.unix_stream();
    t.fcntl(b, F_SETOWN, static_cast<unsigned long>(getpid()), "F_SETOWN,self");
    t.fcntl(b, F_SETSIG, static_cast<unsigned long>(SIGRTMIN + 1), "F_SETSIG,RT+1");
    t.setfl(b, O_ASYNC | O_NONBLOCK, "ASYNC|NONBLOCK");
    t.fcntl(a, F_SETOWN, static_cast<unsigned long>(getpid()), "F_SETOWN,self");
    t.fcntl(a, F_SETSIG, static_cast<unsigned long>(SIGRTMIN + 2), "F_SETSIG,RT+2");
    t.setfl(a, O_ASYNC | O_NONBLOCK, "ASYNC|NONBLOCK");
    t.write(a, "x", 1);
    t.write(a, "yz", 2);
    collect(t, "sends");
    char buf[8];
    t.read(b, sizeof buf, buf);
    collect(t, "read with room");
    t.shutdown(a, SHUT_WR);
    collect(t, "SHUT_WR");
    t.close(a);
    collect(t, "close");
  });
  EXPECT_LINUX_HAS(tr, "sends: 2 signal(s)");
}

// A splice out of a pair frees room as a read does: the writer that found
// its buffer full gets POLL_OUT (unix_write_space, from the splice's
// consume_skb).
TEST_F(SigioTest, SpliceOutOfPairSignalsRoom) {
  auto tr = conf::surface_differential([](ST& t) {
    const splice_conf::Calls c{t.is_linux()};
    int kp[2];
    if (::pipe2(kp, O_NONBLOCK) < 0) return;
    auto [a, b] = t.unix_stream(SOCK_NONBLOCK);
    t.fcntl(a, F_SETOWN, static_cast<unsigned long>(getpid()), "F_SETOWN,self");
    t.fcntl(a, F_SETSIG, static_cast<unsigned long>(SIGRTMIN + 2), "F_SETSIG,RT+2");
    t.setfl(a, O_ASYNC | O_NONBLOCK, "ASYNC|NONBLOCK");
    char chunk[4096] = {};
    long sends = 0;
    while (sends < 10000 && t.sa.send(a, chunk, sizeof chunk, MSG_DONTWAIT) > 0) ++sends;
    t.log("filled: " + t.res(-1));
    collect(t, "filled");
    // Room comes back below a quarter of the send buffer (unix_writable):
    // splice until the pair is empty, emptying the pipe each time.
    long moved = 0;
    ssize_t r = 0;
    for (int round = 0; round < 100; ++round) {
      r = c.splice(b, nullptr, kp[1], nullptr, 65536, SPLICE_F_NONBLOCK);
      if (r <= 0) break;
      moved += r;
      char sink[65536];
      while (::read(kp[0], sink, sizeof sink) > 0) {
      }
    }
    t.log("spliced until " + t.res(r) + ", " + (moved == sends * 4096L ? "every byte" : "bytes missing"));
    collect(t, "spliced");
    ::close(kp[0]);
    ::close(kp[1]);
  });
  EXPECT_LINUX_HAS(tr, "spliced: 1 signal(s)");
}

TEST_F(SigioTest, EventfdHasNoFasync) {
  auto tr = conf::surface_differential([](ST& t) {
    const int e = t.eventfd(0, EFD_NONBLOCK);
    t.fcntl(e, F_SETOWN, static_cast<unsigned long>(getpid()), "F_SETOWN,self");
    t.setfl(e, O_ASYNC | O_NONBLOCK, "ASYNC|NONBLOCK");
    t.getfl(e);
    t.write_u64(e, 1);
    collect(t, "eventfd");
  });
  EXPECT_LINUX_HAS(tr, "eventfd: 0 signal(s)");
}

}  // namespace
