// kernel_test.cpp - kernel descriptors inside epoll instances, and epoll
// instances inside kernel epoll (through uep_epoll_kernel_fd), against
// Linux (owned by the kernel-descriptor tests).  On the Linux side every
// instance is a kernel epoll; on the uepoll side instances are uepoll's and
// the watched files are the kernel's own (signalfd, FIFO, TCP, kernel
// epoll, regular file), so each scenario checks that a uepoll instance
// gives each kernel file Linux's exact semantics.  The variants of
// variants.h run every scenario again with uepoll objects replaced by
// kernel ones and with waits through the kernel descriptor.
#include "harness.h"
#include "kernel_helpers.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/signalfd.h>
#include <sys/stat.h>

#include <thread>

namespace {

using conf::T;
using conf::kernel_handle;
using conf::write_byte;

constexpr uint32_t IN = EPOLLIN, OUT = EPOLLOUT, ET = EPOLLET;

// Names a kernel descriptor made by hand (both sides).
int kernel(T& t, int fd, const char* what) {
  t.adopt(fd);
  t.log(std::string(what) + " = " + t.res_fd(fd));
  return fd;
}

std::pair<int, int> kernel_pipe(T& t) {
  int p[2] = {-1, -1};
  if (::pipe2(p, O_CLOEXEC | O_NONBLOCK) != 0) return {-1, -1};
  kernel(t, p[0], "kernel pipe read end");
  kernel(t, p[1], "kernel pipe write end");
  return {p[0], p[1]};
}

// Kernel epoll `kep` watching instance `ep` (a ctl on the kernel epoll).
int kernel_watch_instance(T& t, int kep, int ep, uint32_t events, uint64_t data) {
  struct epoll_event ev{};
  ev.events = events;
  ev.data.u64 = data;
  errno = 0;
  const int r = ::epoll_ctl(kep, EPOLL_CTL_ADD, kernel_handle(ep), &ev);
  t.log("kernel ctl(" + t.name(kep) + ",ADD,handle of " + t.name(ep) + "," + conf::mask_str(events) + "," +
        std::to_string(data) + ") = " + t.res(r));
  return r;
}

// A kernel-address-free check of the Linux order of ctl errors for kernel
// targets: EBADF, EPERM (regular file), EINVAL (EXCLUSIVE misuse), EEXIST,
// ENOENT, in a uepoll instance as in a kernel one.
TEST(Kernel, CtlErrorsInLinuxOrder) {
  auto r = conf::differential([](T& t) {
    int ep = t.epoll_create1();
    int reg = t.regular_file();
    t.ctl(ep, EPOLL_CTL_ADD, reg, IN, 1);  // EPERM
    t.ctl(ep, EPOLL_CTL_MOD, reg, IN, 1);  // EPERM
    t.del(ep, reg);                        // EPERM
    int efd = t.eventfd(0);
    t.ctl(efd, EPOLL_CTL_ADD, reg, IN, 1);  // EPERM before "not an epoll"
    auto [rd, wr] = kernel_pipe(t);
    t.ctl(efd, EPOLL_CTL_ADD, rd, IN, 1);  // EINVAL: not an epoll
    t.ctl(ep, EPOLL_CTL_ADD, 1 << 19, IN, 1);  // EBADF: no such descriptor
    t.ctl(ep, EPOLL_CTL_MOD, rd, IN, 2);   // ENOENT
    t.del(ep, rd);                         // ENOENT
    t.ctl(ep, EPOLL_CTL_ADD, rd, IN | EPOLLEXCLUSIVE | EPOLLONESHOT, 3);  // EINVAL
    t.ctl(ep, EPOLL_CTL_ADD, rd, IN | EPOLLEXCLUSIVE, 3);
    t.ctl(ep, EPOLL_CTL_MOD, rd, IN, 3);   // EINVAL: exclusive item
    t.ctl(ep, EPOLL_CTL_ADD, rd, IN, 4);   // EEXIST
    t.ctl(ep, EPOLL_CTL_ADD, wr, OUT | ET, 5);
    int kep = kernel(t, ::epoll_create1(EPOLL_CLOEXEC), "kernel epoll");
    t.ctl(ep, EPOLL_CTL_ADD, kep, IN | EPOLLEXCLUSIVE, 6);  // EINVAL: an epoll target
    t.ctl(ep, EPOLL_CTL_ADD, kep, IN, 6);
    t.wait(ep, 8, 0);
    t.del(ep, rd);
    t.ctl(ep, EPOLL_CTL_MOD, wr, OUT | EPOLLEXCLUSIVE, 5);  // EINVAL
    t.wait(ep, 8, 0);
  });
  EXPECT_LINUX_SEQ(r, {"ctl(fd0,ADD,fd1,IN,1) = -1 EPERM", "ctl(fd0,MOD,fd1,IN,1) = -1 EPERM",
                       "ctl(fd0,DEL,fd1,NULL) = -1 EPERM", "ctl(fd2,ADD,fd1,IN,1) = -1 EPERM",
                       "ctl(fd2,ADD,fd3,IN,1) = -1 EINVAL", "ctl(fd0,MOD,fd3,IN,2) = -1 ENOENT",
                       "ctl(fd0,ADD,fd3,IN|EXCL|ONESHOT,3) = -1 EINVAL", "ctl(fd0,ADD,fd3,IN|EXCL,3) = 0",
                       "ctl(fd0,MOD,fd3,IN,3) = -1 EINVAL", "ctl(fd0,ADD,fd3,IN,4) = -1 EEXIST",
                       "ctl(fd0,ADD,fd5,IN|EXCL,6) = -1 EINVAL", "wait(fd0,8,0) = 1 [OUT:5]"});
}

// Kernel objects and the implementation's objects in one instance: LT,
// ET, ONESHOT and MOD on each, reported together.
TEST(Kernel, BothKindsInOneInstance) {
  auto r = conf::differential([](T& t) {
    int ep = t.epoll_create1();
    auto [rd, wr] = kernel_pipe(t);
    int efd = t.eventfd(0, EFD_NONBLOCK);
    auto [a, b] = t.unix_stream(SOCK_NONBLOCK);
    t.ctl(ep, EPOLL_CTL_ADD, rd, IN | EPOLLONESHOT, 1);
    t.ctl(ep, EPOLL_CTL_ADD, efd, IN | ET, 2);
    t.ctl(ep, EPOLL_CTL_ADD, a, IN | EPOLLRDHUP, 3);
    t.wait(ep, 8, 0);
    t.write(wr, "x", 1);
    t.wait(ep, 8, 0);
    t.wait(ep, 8, 0);  // ONESHOT: disabled
    t.write_u64(efd, 1);
    t.wait(ep, 8, 0);
    t.wait(ep, 8, 0);  // ET: once
    t.ctl(ep, EPOLL_CTL_MOD, rd, IN, 11);  // re-armed LT: still readable
    t.wait(ep, 8, 0);
    t.wait(ep, 8, 0);
    t.read(rd, 8);
    t.wait(ep, 8, 0);
    t.shutdown(b, SHUT_WR);
    t.wait(ep, 8, 0);
    t.close(wr);
    t.wait(ep, 8, 0);
  });
  EXPECT_LINUX_SEQ(r, {"wait(fd0,8,0) = 0", "wait(fd0,8,0) = 1 [IN:1]", "wait(fd0,8,0) = 0",
                       "wait(fd0,8,0) = 1 [IN:2]", "wait(fd0,8,0) = 0", "wait(fd0,8,0) = 1 [IN:11]",
                       "wait(fd0,8,0) = 1 [IN:11]", "read(fd1,8) = 1", "wait(fd0,8,0) = 0",
                       "wait(fd0,8,0) = 1 [IN|RDHUP:3]",
                       "wait(fd0,8,0) = 2 [IN|RDHUP:3 HUP:11]"});
}

// A signalfd in an instance: readable while a signal is pending.
TEST(Kernel, Signalfd) {
  auto r = conf::differential([](T& t) {
    sigset_t set, old;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR2);
    pthread_sigmask(SIG_BLOCK, &set, &old);
    int ep = t.epoll_create1();
    int sfd = kernel(t, ::signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC), "signalfd");
    t.ctl(ep, EPOLL_CTL_ADD, sfd, IN, 7);
    t.wait(ep, 4, 0);
    pthread_kill(pthread_self(), SIGUSR2);
    t.wait(ep, 4, 0);
    t.wait(ep, 4, 0);  // LT: still pending
    t.read(sfd, sizeof(struct signalfd_siginfo));
    t.wait(ep, 4, 0);
    t.close(sfd);
    t.wait(ep, 4, 0);  // removed at last close
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
  });
  EXPECT_LINUX_SEQ(r, {"ctl(fd0,ADD,fd1,IN,7) = 0", "wait(fd0,4,0) = 0", "wait(fd0,4,0) = 1 [IN:7]",
                       "wait(fd0,4,0) = 1 [IN:7]", "read(fd1,128) = 128", "wait(fd0,4,0) = 0", "close(fd1) = 0",
                       "wait(fd0,4,0) = 0"});
}

// A FIFO: ET reader with RDHUP, hang-up when the writer goes, removal
// when the last descriptor of the reader closes (a dup keeps it).
TEST(Kernel, FifoHangupAndLastCloseRemoval) {
  auto r = conf::differential([](T& t) {
    char path[64];
    snprintf(path, sizeof path, "/tmp/uepoll-fifo-%d", static_cast<int>(getpid()));
    ::unlink(path);
    ::mkfifo(path, 0600);
    int ep = t.epoll_create1();
    int rd = kernel(t, ::open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC), "fifo reader");
    int wr = kernel(t, ::open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC), "fifo writer");
    ::unlink(path);
    t.ctl(ep, EPOLL_CTL_ADD, rd, IN | EPOLLRDHUP | ET, 1);
    t.ctl(ep, EPOLL_CTL_ADD, wr, OUT, 2);
    t.wait(ep, 4, 0);
    t.write(wr, "abc", 3);
    t.wait(ep, 4, 0);
    t.wait(ep, 4, 0);
    int d = t.dup(rd);
    t.close(rd);
    t.write(wr, "d", 1);
    t.wait(ep, 4, 0);  // the file lives on through d: still watched
    t.close(wr);
    t.wait(ep, 4, 0);
    t.close(d);
    t.wait(ep, 4, 0);
  });
  EXPECT_LINUX_SEQ(r, {"wait(fd0,4,0) = 1 [OUT:2]", "wait(fd0,4,0) = 2 [OUT:2 IN:1]", "wait(fd0,4,0) = 1 [OUT:2]",
                       "wait(fd0,4,0) = 2 [OUT:2 IN:1]", "wait(fd0,4,0) = 1 [IN|HUP:1]",
                       "wait(fd0,4,0) = 0"});
}

// A loopback TCP listener (EPOLLEXCLUSIVE) and an accepted connection
// (ET, RDHUP); a blocked waiter woken by a connect from another thread.
TEST(Kernel, LoopbackTcp) {
  auto r = conf::differential([](T& t) {
    int ep = t.epoll_create1();
    int ls = kernel(t, ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), "listener");
    struct sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof sa;
    ::bind(ls, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
    ::listen(ls, 8);
    ::getsockname(ls, reinterpret_cast<sockaddr*>(&sa), &len);
    t.ctl(ep, EPOLL_CTL_ADD, ls, IN | EPOLLEXCLUSIVE, 1);
    t.wait(ep, 4, 0);
    int cl = -1;
    {
      conf::WhenBlocked later([&] {
        cl = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        ::connect(cl, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
      });
      t.wait(ep, 4, 5000);
    }
    kernel(t, cl, "client");
    int conn = kernel(t, ::accept4(ls, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC), "accepted");
    t.wait(ep, 4, 0);
    t.ctl(ep, EPOLL_CTL_ADD, conn, IN | OUT | EPOLLRDHUP | ET, 2);
    t.wait(ep, 4, 0);
    t.wait(ep, 4, 0);
    t.write(cl, "hello", 5);
    t.wait(ep, 4, 0);
    ::shutdown(cl, SHUT_WR);
    t.log("client shut down its write side");
    t.wait(ep, 4, 0);
    t.read(conn, 16);
    t.read(conn, 16);
    t.close(ls);
    t.close(conn);
    t.wait(ep, 4, 0);
  });
  EXPECT_LINUX_SEQ(r, {"wait(fd0,4,0) = 0", "wait(fd0,4,5000) = 1 [IN:1]", "wait(fd0,4,0) = 0",
                       "wait(fd0,4,0) = 1 [OUT:2]", "wait(fd0,4,0) = 0", "wait(fd0,4,0) = 1 [IN|OUT:2]",
                       "wait(fd0,4,0) = 1 [IN|OUT|RDHUP:2]", "read(fd3,16) = 5", "read(fd3,16) = 0",
                       "wait(fd0,4,0) = 0"});
}

// Blocking waits wake on either kind: a kernel write, an implementation
// event, and the first kernel descriptor added while the waiter sleeps.
TEST(Kernel, BlockedWaiterWokenByEitherKind) {
  auto r = conf::differential([](T& t) {
    int ep = t.epoll_create1();
    int efd = t.eventfd(0, EFD_NONBLOCK);
    t.ctl(ep, EPOLL_CTL_ADD, efd, IN, 1);
    auto [rd, wr] = kernel_pipe(t);
    int kefd = kernel(t, ::eventfd(1, EFD_CLOEXEC | EFD_NONBLOCK), "kernel eventfd (ready)");
    {
      conf::WhenBlocked later([&, ep = ep, kefd = kefd] {
        struct epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.u64 = 3;
        t.api.epoll_ctl(ep, EPOLL_CTL_ADD, kefd, &ev);  // first kernel descriptor
      });
      t.wait(ep, 4, 5000);
    }
    t.read(kefd, 8);
    t.ctl(ep, EPOLL_CTL_ADD, rd, IN, 2);
    {
      conf::WhenBlocked later(write_byte(wr, 'k'));
      t.wait(ep, 4, 5000);
    }
    t.read(rd, 8);
    {
      conf::WhenBlocked later([&, efd = efd] {
        uint64_t v = 1;
        t.api.write(efd, &v, 8);
      });
      t.wait(ep, 4, 5000);
    }
    t.poll({{ep, POLLIN}}, 0);
    t.read(efd, 8);
    {
      conf::WhenBlocked later(write_byte(wr, 'p'));
      t.poll({{ep, POLLIN}}, 5000);  // poll() on the instance wakes on a kernel event too
    }
    t.wait(ep, 4, 100);
  });
  EXPECT_LINUX_SEQ(r, {"wait(fd0,4,5000) = 1 [IN:3]", "wait(fd0,4,5000) = 1 [IN:2]",
                       "wait(fd0,4,5000) = 1 [IN:1]", "poll(fd0,0) = 1 [IN]", "poll(fd0,5000) = 1 [IN]",
                       "wait(fd0,4,100) = 1 [IN:2]"});
}

// poll() on an instance that gets its first kernel descriptor while the
// poll sleeps (and on a parent whose child gets one): the poll must wake
// on that descriptor's events, as Linux's poll on a kernel epoll does.
TEST(Kernel, PollStartedBeforeFirstKernelDescriptor) {
  auto r = conf::differential([](T& t) {
    int ep = t.epoll_create1();
    int p = t.epoll_create1(), c = t.epoll_create1();
    t.ctl(p, EPOLL_CTL_ADD, c, IN, 1);
    auto [rd, wr] = kernel_pipe(t);
    auto [rd2, wr2] = kernel_pipe(t);
    std::atomic<pid_t> tid{static_cast<pid_t>(gettid())};
    auto add_then_write = [&t, &tid](int inst, int fd, int w) {
      return [&t, &tid, inst, fd, w] {
        struct epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.u64 = 2;
        t.api.epoll_ctl(inst, EPOLL_CTL_ADD, fd, &ev);  // the instance's first kernel descriptor
        conf::wait_until_sleeping(tid);                  // the poll sleeps again (or still)
        write_byte(w, 'x')();
      };
    };
    // The poll must return when the byte is written, not at its timeout
    // (where a last check would find the instance ready all the same).
    auto timed_poll = [&t](int inst) {
      const double start = conf::now_ms();
      t.poll({{inst, POLLIN}}, 8000);
      t.log(conf::now_ms() - start < 6000 ? "woken by the event" : "woken only by the timeout");
    };
    {
      conf::WhenBlocked later(add_then_write(ep, rd, wr));
      timed_poll(ep);
    }
    t.wait(ep, 4, 0);
    {
      conf::WhenBlocked later(add_then_write(c, rd2, wr2));
      timed_poll(p);  // through the child
    }
    t.wait(p, 4, 0);
  });
  EXPECT_LINUX_SEQ(r, {"poll(fd0,8000) = 1 [IN]", "woken by the event", "wait(fd0,4,0) = 1 [IN:2]",
                       "poll(fd1,8000) = 1 [IN]", "woken by the event", "wait(fd1,4,0) = 1 [IN:1]"});
}

// Nesting across kinds:
//   p -> c -> kernel pipe               (c gets the pipe after being nested)
//   p -> kep (kernel epoll) -> kernel pipe
//   kep2 (kernel epoll) -> handle of p  (p reached from the kernel side)
TEST(Kernel, NestingAcrossKinds) {
  auto r = conf::differential([](T& t) {
    int p = t.epoll_create1(), c = t.epoll_create1();
    t.ctl(p, EPOLL_CTL_ADD, c, IN | ET, 1);
    auto [rd, wr] = kernel_pipe(t);
    t.ctl(c, EPOLL_CTL_ADD, rd, IN, 2);  // first kernel descriptor of a nested instance
    t.wait(p, 4, 0);
    {
      conf::WhenBlocked later(write_byte(wr, 'x'));
      t.wait(p, 4, 5000);  // through c
    }
    t.wait(p, 4, 0);  // ET on c
    t.wait(c, 4, 0);
    int kep = kernel(t, ::epoll_create1(EPOLL_CLOEXEC), "kernel epoll");
    auto [rd2, wr2] = kernel_pipe(t);
    t.ctl(kep, EPOLL_CTL_ADD, rd2, IN, 20);
    t.ctl(p, EPOLL_CTL_ADD, kep, IN, 3);
    t.write(wr2, "y", 1);
    t.wait(p, 4, 0);
    t.wait(kep, 4, 0);
    int kep2 = kernel(t, ::epoll_create1(EPOLL_CLOEXEC), "kernel epoll 2");
    kernel_watch_instance(t, kep2, p, IN, 30);
    t.wait(kep2, 4, 0);
    t.read(rd2, 8);
    t.read(rd, 8);
    t.wait(kep2, 4, 0);
    int efd = t.eventfd(0, EFD_NONBLOCK);
    t.ctl(c, EPOLL_CTL_ADD, efd, IN, 4);
    {
      conf::WhenBlocked later([&, efd = efd] {
        uint64_t v = 1;
        t.api.write(efd, &v, 8);
      });
      t.wait(kep2, 4, 5000);  // an implementation event two levels down
    }
    t.wait(p, 4, 0);
  });
  EXPECT_LINUX_SEQ(r, {"wait(fd0,4,0) = 0", "wait(fd0,4,5000) = 1 [IN:1]", "wait(fd0,4,0) = 0",
                       "wait(fd1,4,0) = 1 [IN:2]", "wait(fd0,4,0) = 1 [IN:3]", "wait(fd4,4,0) = 1 [IN:20]",
                       "wait(fd7,4,0) = 1 [IN:30]", "wait(fd7,4,0) = 0", "wait(fd7,4,5000) = 1 [IN:30]",
                       "wait(fd0,4,0) = 1 [IN:1]"});
}

// Loops across kinds are refused with ELOOP, whichever edge closes them.
//   a -> kep -> handle of a            (refused at the kernel edge)
//   kep2 -> handle of b; b -> c; c -> kep2   (refused at c's ADD)
//   kep3 -> handle of d; d -> c2 (uepoll); c2 -> kep3... refused at d -> c2
TEST(Kernel, LoopsAcrossKinds) {
  auto r = conf::differential([](T& t) {
    int a = t.epoll_create1();
    int kep = kernel(t, ::epoll_create1(EPOLL_CLOEXEC), "kernel epoll");
    t.ctl(a, EPOLL_CTL_ADD, kep, IN, 1);
    kernel_watch_instance(t, kep, a, IN, 2);
    int b = t.epoll_create1(), c = t.epoll_create1();
    int kep2 = kernel(t, ::epoll_create1(EPOLL_CLOEXEC), "kernel epoll 2");
    kernel_watch_instance(t, kep2, b, IN, 3);
    t.ctl(b, EPOLL_CTL_ADD, c, IN, 4);
    t.ctl(c, EPOLL_CTL_ADD, kep2, IN, 5);
    int d = t.epoll_create1(), c2 = t.epoll_create1();
    int kep3 = kernel(t, ::epoll_create1(EPOLL_CLOEXEC), "kernel epoll 3");
    kernel_watch_instance(t, kep3, d, IN, 6);
    t.ctl(c2, EPOLL_CTL_ADD, kep3, IN, 7);
    t.ctl(d, EPOLL_CTL_ADD, c2, IN, 8);
  });
  EXPECT_LINUX_SEQ(r, {"ctl(fd0,ADD,fd1,IN,1) = 0", "kernel ctl(fd1,ADD,handle of fd0,IN,2) = -1 ELOOP",
                       "kernel ctl(fd4,ADD,handle of fd2,IN,3) = 0", "ctl(fd2,ADD,fd3,IN,4) = 0",
                       "ctl(fd3,ADD,fd4,IN,5) = -1 ELOOP", "ctl(fd6,ADD,fd7,IN,7) = 0",
                       "ctl(fd5,ADD,fd6,IN,8) = -1 ELOOP"});
}

}  // namespace
