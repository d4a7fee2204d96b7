// surface_oob_test.cpp - out-of-band data on AF_UNIX stream pairs
// (MSG_OOB, SIOCATMARK, SO_OOBINLINE, EPOLLPRI, SIGURG), Linux 6.18 with
// CONFIG_AF_UNIX_OOB vs uepoll (surface_harness.h).  Each scenario logs
// every return value, errno, byte and readiness mask on both sides.
//
// One difference is left out on purpose: after an ordinary read passes an
// unread out-of-band byte (and drops it), Linux's FIONREAD stays one too
// high for good (unix_sk(sk)->inq_len is not lowered for the dropped
// byte); uepoll counts what is queued.  No scenario reads FIONREAD after
// such a read (docs/linux-deviations.md).
#include "conformance/surface_harness.h"
#include "splice_calls.h"

#include <csignal>
#include <sys/epoll.h>
#include <sys/ioctl.h>

namespace {

using conf::ST;
using conf::BlockSigpipe;

const struct timespec kZero{0, 0};

// Takes a pending SIGPIPE (blocked by BlockSigpipe).
bool sigpipe_taken() {
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, SIGPIPE);
  siginfo_t si;
  return sigtimedwait(&s, &si, &kZero) == SIGPIPE;
}

void mark(ST& t, int fd) { t.ioctl_int(fd, SIOCATMARK, "SIOCATMARK"); }
void readiness(ST& t, int fd) { t.ppoll({{fd, POLLIN | POLLPRI | POLLOUT}}, &kZero, "0"); }

// recvmsg of up to `len` bytes into two segments, the first empty, with a
// control buffer: the count, the bytes, msg_flags and msg_controllen.
void recvmsg_oob(ST& t, int fd, size_t len, int flags, const char* fdesc) {
  char b[16] = {};
  char ctl[64];
  struct iovec iov[2] = {{b, 0}, {b, len}};
  struct msghdr m{};
  m.msg_iov = iov;
  m.msg_iovlen = 2;
  m.msg_control = ctl;
  m.msg_controllen = sizeof ctl;
  errno = 0;
  const ssize_t r = t.sa.recvmsg(fd, &m, flags);
  const int e = errno;
  std::string s = "recvmsg(" + t.n(fd) + ",[0," + std::to_string(len) + "]," + fdesc + ") = " + (errno = e, t.res(r));
  if (r >= 0)
    s += " [" + std::string(b, static_cast<size_t>(r)) + "] msg_flags=" + std::to_string(m.msg_flags) +
         " controllen=" + std::to_string(m.msg_controllen);
  t.log(s);
}

TEST(SurfaceOob, MarkReadPeekAndSpentByte) {
  auto tr = conf::surface_differential([](ST& t) {
    auto [a, b] = t.unix_stream(SOCK_NONBLOCK);
    readiness(t, b);
    t.send(a, 2, 0, "0", 'a');
    t.send(a, 1, MSG_OOB, "OOB", 'o');
    t.send(a, 2, 0, "0", 'd');
    readiness(t, b);
    t.ioctl_int(b, FIONREAD, "FIONREAD");
    mark(t, b);
    t.recv(b, 16, MSG_PEEK, "PEEK");  // stops before the out-of-band byte
    t.recv(b, 16, MSG_OOB | MSG_PEEK, "OOB|PEEK");
    t.recv(b, 16, 0, "0");  // "aa", at the mark
    mark(t, b);
    t.ioctl_int(b, FIONREAD, "FIONREAD");
    recvmsg_oob(t, b, 4, MSG_OOB | MSG_CMSG_CLOEXEC, "OOB|CMSG_CLOEXEC");
    t.recv(b, 16, MSG_OOB, "OOB");  // none left: EINVAL
    mark(t, b);                     // the spent skb at the head
    readiness(t, b);
    t.ioctl_int(b, FIONREAD, "FIONREAD");
    t.recv(b, 16, 0, "0");
    t.recv(b, 16, 0, "0");
    t.ioctl_int(b, FIONREAD, "FIONREAD");
    mark(t, b);
    // A byte read with MSG_OOB in the middle: ordinary reads stop where
    // it was, then go on.
    t.send(a, 2, 0, "0", 'a');
    t.send(a, 2, MSG_OOB, "OOB", 'p');
    t.send(a, 2, 0, "0", 'e');
    t.recv(b, 16, MSG_OOB, "OOB");
    mark(t, b);
    t.recv(b, 16, MSG_PEEK, "PEEK");
    t.recv(b, 16, 0, "0");
    mark(t, b);
    t.recv(b, 16, MSG_PEEK, "PEEK");
    t.recv(b, 16, 0, "0");
    t.ioctl_int(b, FIONREAD, "FIONREAD");
    // Alone in the queue, a spent skb still makes the socket readable,
    // until a read drops it.
    t.send(a, 1, MSG_OOB, "OOB", 'q');
    t.recv(b, 0, MSG_OOB, "OOB");  // no room: taken all the same
    readiness(t, b);
    mark(t, b);
    t.recv(b, 16, 0, "0");
    readiness(t, b);
    mark(t, b);
  });
  EXPECT_LINUX_HAS(tr, "msg_flags=1073741825");
}

TEST(SurfaceOob, PassedOverReplacedAndInline) {
  auto tr = conf::surface_differential([](ST& t) {
    auto [a, b] = t.unix_stream(SOCK_NONBLOCK);
    // An ordinary read at the mark drops the unread byte.
    t.send(a, 1, MSG_OOB, "OOB", 'o');
    t.send(a, 2, 0, "0", 'd');
    t.recv(b, 16, MSG_PEEK, "PEEK");
    readiness(t, b);
    t.recv(b, 16, 0, "0");
    t.recv(b, 16, MSG_OOB, "OOB");
    readiness(t, b);
    // A second out-of-band byte makes the first ordinary data.
    t.send(a, 1, MSG_OOB, "OOB", 'x');
    t.send(a, 1, MSG_OOB, "OOB", 'y');
    mark(t, b);
    t.recv(b, 16, 0, "0");
    mark(t, b);
    t.recv(b, 16, MSG_OOB, "OOB");
    t.recv(b, 16, 0, "0");
    // A byte read with MSG_OOB right after a spent one takes it along.
    t.send(a, 1, MSG_OOB, "OOB", 'u');
    t.recv(b, 16, MSG_OOB, "OOB");
    t.send(a, 1, MSG_OOB, "OOB", 'v');
    mark(t, b);
    t.recv(b, 16, MSG_OOB, "OOB");
    mark(t, b);
    t.recv(b, 16, 0, "0");
    readiness(t, b);
    // SO_OOBINLINE: the byte is ordinary data, reads still stop at it.
    const int on = 1;
    errno = 0;
    t.rec("setsockopt(" + t.n(b) + ",SO_OOBINLINE,1)", t.sa.setsockopt(b, SOL_SOCKET, SO_OOBINLINE, &on, sizeof on));
    t.getsockopt_int(b, SOL_SOCKET, SO_OOBINLINE, "SO_OOBINLINE");
    t.send(a, 2, 0, "0", 'a');
    t.send(a, 1, MSG_OOB, "OOB", 'X');
    t.send(a, 2, 0, "0", 'c');
    readiness(t, b);
    t.recv(b, 16, MSG_OOB, "OOB");
    t.recv(b, 16, MSG_PEEK, "PEEK");
    t.recv(b, 16, 0, "0");
    mark(t, b);
    t.recv(b, 16, MSG_PEEK, "PEEK");
    t.recv(b, 16, 0, "0");
    readiness(t, b);
  });
  EXPECT_LINUX_HAS(tr, "SO_OOBINLINE");
}

// MSG_WAITALL stops at the mark; a blocking MSG_OOB receive never waits.
TEST(SurfaceOob, WaitallStopsAndErrors) {
  auto tr = conf::surface_differential([](ST& t) {
    BlockSigpipe nosig;
    auto [a, b] = t.unix_stream();  // blocking
    sigpipe_taken();
    t.send(a, 3, MSG_OOB, "OOB", 'w');
    t.recv(b, 16, MSG_WAITALL, "WAITALL");
    t.recv(b, 16, MSG_OOB, "OOB");
    t.recv(b, 16, MSG_OOB, "OOB");
    t.send(a, 0, MSG_OOB, "OOB");
    t.send(a, 0, MSG_OOB | MSG_DONTWAIT, "OOB|DONTWAIT");
    // A shut peer: the bytes before the out-of-band one are refused
    // first (EPIPE and SIGPIPE), a lone out-of-band byte without SIGPIPE.
    t.shutdown(b, SHUT_RD);
    t.send(a, 3, MSG_OOB, "OOB");
    t.log(std::string("SIGPIPE pending: ") + (sigpipe_taken() ? "yes" : "no"));
    t.send(a, 1, MSG_OOB, "OOB");
    t.log(std::string("SIGPIPE pending: ") + (sigpipe_taken() ? "yes" : "no"));
  });
  EXPECT_LINUX_HAS(tr, "SIGPIPE pending: yes");
}

// A splice out of the pair reads as recv does: it stops at the mark,
// passes over an unread byte at the head and drops a spent one.
TEST(SurfaceOob, SpliceStopsAtTheMark) {
  auto tr = conf::surface_differential([](ST& t) {
    const splice_conf::Calls c{t.is_linux()};
    int kp[2];
    if (::pipe2(kp, O_NONBLOCK) < 0) return;
    auto drain = [&] {
      char b[16];
      const ssize_t r = ::read(kp[0], b, sizeof b);
      t.log("pipe holds " + (r > 0 ? "[" + std::string(b, static_cast<size_t>(r)) + "]" : t.res(r)));
    };
    auto splice = [&](int from) {
      errno = 0;
      t.rec("splice(" + t.n(from) + ",pipe,16,NONBLOCK)", c.splice(from, nullptr, kp[1], nullptr, 16, SPLICE_F_NONBLOCK));
    };
    auto [a, b] = t.unix_stream(SOCK_NONBLOCK);
    t.send(a, 2, 0, "0", 'a');
    t.send(a, 1, MSG_OOB, "OOB", 'o');
    t.send(a, 2, 0, "0", 'd');
    splice(b);
    drain();
    mark(t, b);
    splice(b);
    drain();
    t.send(a, 1, MSG_OOB, "OOB", 'x');
    t.recv(b, 1, MSG_OOB, "OOB");
    t.send(a, 2, 0, "0", 'y');
    splice(b);
    drain();
    splice(b);
    ::close(kp[0]);
    ::close(kp[1]);
  });
  EXPECT_LINUX_HAS(tr, "pipe holds [dd]");
}

// The receiver's readiness through epoll, edge-triggered: the send of an
// out-of-band byte is one wakeup with EPOLLPRI.
TEST(SurfaceOob, EpollPri) {
  auto tr = conf::surface_differential([](ST& t) {
    auto [a, b] = t.unix_stream(SOCK_NONBLOCK);
    const int ep = t.epoll_create1();
    t.ctl(ep, EPOLL_CTL_ADD, b, EPOLLIN | EPOLLPRI | EPOLLET, 1);
    t.wait(ep, 4, 0);
    t.send(a, 1, MSG_OOB, "OOB", 'o');
    t.wait(ep, 4, 0);
    t.wait(ep, 4, 0);
    t.recv(b, 1, MSG_OOB, "OOB");
    t.wait(ep, 4, 0);
    t.ctl(ep, EPOLL_CTL_MOD, b, EPOLLIN | EPOLLPRI, 1);
    t.wait(ep, 4, 0);
    t.recv(b, 16, 0, "0");
    t.wait(ep, 4, 0);
  });
  EXPECT_LINUX_HAS(tr, "PRI");
}

// SIGURG to the receiver's owner (O_ASYNC or not), and with O_ASYNC and
// F_SETSIG that signal for POLL_PRI, before the POLL_IN one.
TEST(SurfaceOob, Sigurg) {
  auto tr = conf::surface_differential([](ST& t) {
    sigset_t set, saved;
    sigemptyset(&set);
    sigaddset(&set, SIGURG);
    sigaddset(&set, SIGIO);
    sigaddset(&set, SIGRTMIN + 1);
    pthread_sigmask(SIG_BLOCK, &set, &saved);
    auto collect = [&](const char* what) {
      siginfo_t si;
      int n = 0;
      while (sigtimedwait(&set, &si, &kZero) > 0) {
        const char* name = si.si_signo == SIGURG ? "SIGURG" : si.si_signo == SIGIO ? "SIGIO" : "RT+1";
        t.log(std::string(what) + ": " + name + " code " + std::to_string(si.si_code) +
              (si.si_code > 0 && si.si_code < SI_KERNEL ? " band " + std::to_string(si.si_band) : ""));
        ++n;
      }
      t.log(std::string(what) + ": " + std::to_string(n) + " signal(s)");
    };
    auto [a, b] = t.unix_stream(SOCK_NONBLOCK);
    collect("before");
    t.send(a, 1, MSG_OOB, "OOB", 'o');
    collect("no owner");
    t.fcntl(b, F_SETOWN, static_cast<unsigned long>(getpid()), "F_SETOWN,self");
    t.send(a, 1, MSG_OOB, "OOB", 'p');
    collect("owner");
    t.setfl(b, O_ASYNC | O_NONBLOCK, "ASYNC|NONBLOCK");
    t.send(a, 1, MSG_OOB, "OOB", 'q');
    collect("owner, O_ASYNC");
    t.fcntl(b, F_SETSIG, static_cast<unsigned long>(SIGRTMIN + 1), "F_SETSIG,RT+1");
    t.send(a, 1, MSG_OOB, "OOB", 'r');
    collect("owner, O_ASYNC, F_SETSIG");
    t.close(a);  // the peer's close is a POLL_HUP for b: taken while blocked
    t.close(b);
    collect("closed");
    pthread_sigmask(SIG_SETMASK, &saved, nullptr);
  });
  EXPECT_LINUX_HAS(tr, "owner: SIGURG");
}

}  // namespace
