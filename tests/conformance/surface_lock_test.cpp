// surface_lock_test.cpp - flock(2) and fcntl's record locks on pipes,
// socket pairs, eventfds, epoll instances and timerfds (Linux fs/locks.c):
// conflicts between open file descriptions of one inode (a pipe's two ends
// share one; every eventfd, epoll instance and timerfd shares the kernel's
// anonymous inode; each socket has its own), conversions, LOCK_NB, the
// argument checks and their order, OFD and POSIX record locks (F_OFD_GETLK
// reporting the holder, a close of any descriptor of the file dropping the
// process's POSIX locks), and a blocking flock that a release ends, or a
// signal handler interrupts (EINTR) or restarts (SA_RESTART).  Against
// Linux.
#include "conformance/interrupted.h"
#include "conformance/surface_harness.h"

#include <thread>

namespace {

using conf::ST;

// F_OFD_GETLK / F_GETLK for a whole-file lock of `type`: logs what holds
// it (F_UNLCK when nothing conflicts; l_pid as "-1", "self" or a number).
void getlk(ST& t, int fd, int cmd, short type, const char* desc) {
  struct flock fl {};
  fl.l_type = type;
  fl.l_whence = SEEK_SET;
  t.fcntl(fd, cmd, reinterpret_cast<unsigned long>(&fl), desc);
  const std::string pid = fl.l_pid == getpid() ? "self" : std::to_string(fl.l_pid);
  t.log(std::string("  holder: type ") +
        (fl.l_type == F_UNLCK ? "F_UNLCK" : fl.l_type == F_RDLCK ? "F_RDLCK" : fl.l_type == F_WRLCK ? "F_WRLCK" : "?") +
        (fl.l_type == F_UNLCK ? "" : ", pid " + pid));
}

// A whole-file record lock (F_SETLK / F_OFD_SETLK) of `type`.
int setlk(ST& t, int fd, int cmd, short type, const char* desc) {
  struct flock fl {};
  fl.l_type = type;
  fl.l_whence = SEEK_SET;
  return t.fcntl(fd, cmd, reinterpret_cast<unsigned long>(&fl), desc);
}

TEST(Locks, FlockConflictsByInode) {
  conf::surface_differential([](ST& t) {
    // A pipe: both ends are one inode.
    auto [rd, wr] = t.pipe2(0);
    t.flock(rd, LOCK_SH, "LOCK_SH");
    t.flock(rd, LOCK_EX, "LOCK_EX");  // a conversion of the same open file description
    t.flock(wr, LOCK_SH | LOCK_NB, "LOCK_SH|LOCK_NB");
    t.flock(wr, LOCK_EX | LOCK_NB, "LOCK_EX|LOCK_NB");
    const int d = t.dup(rd);
    t.flock(d, LOCK_EX | LOCK_NB, "LOCK_EX|LOCK_NB");  // a dup shares the lock
    t.close(rd);
    t.flock(wr, LOCK_SH | LOCK_NB, "LOCK_SH|LOCK_NB");  // d still holds it
    t.close(d);                                          // the last reference: released
    t.flock(wr, LOCK_EX | LOCK_NB, "LOCK_EX|LOCK_NB");
    t.flock(wr, LOCK_UN, "LOCK_UN");
    t.flock(wr, LOCK_UN, "LOCK_UN");
    // The argument before the descriptor.
    t.flock(wr, 0, "0");
    t.flock(wr, LOCK_SH | LOCK_EX, "LOCK_SH|LOCK_EX");
    t.flock(wr, 99, "99");
    t.flock(wr, LOCK_NB, "LOCK_NB");
    t.close(wr);
    t.flock(wr, LOCK_SH, "LOCK_SH");
    t.flock(wr, 0, "0");
    // A socket pair: an inode per socket.
    auto [a, b] = t.socketpair(AF_UNIX, SOCK_STREAM, 0);
    t.flock(a, LOCK_EX, "LOCK_EX");
    t.flock(b, LOCK_EX | LOCK_NB, "LOCK_EX|LOCK_NB");
    t.close(a);
    t.close(b);
    // Eventfds, epoll instances and timerfds: one anonymous inode.
    const int e1 = t.eventfd(0, 0), e2 = t.eventfd(0, 0), ep = t.epoll_create1(0),
              tf = t.timerfd_create(CLOCK_MONOTONIC, 0);
    t.flock(e1, LOCK_EX, "LOCK_EX");
    t.flock(e2, LOCK_SH | LOCK_NB, "LOCK_SH|LOCK_NB");
    t.flock(ep, LOCK_EX | LOCK_NB, "LOCK_EX|LOCK_NB");
    t.flock(tf, LOCK_EX | LOCK_NB, "LOCK_EX|LOCK_NB");
    t.flock(e1, LOCK_SH, "LOCK_SH");  // a conversion: the others may share now
    t.flock(e2, LOCK_SH | LOCK_NB, "LOCK_SH|LOCK_NB");
    t.flock(tf, LOCK_SH | LOCK_NB, "LOCK_SH|LOCK_NB");
    t.flock(ep, LOCK_EX | LOCK_NB, "LOCK_EX|LOCK_NB");
    t.close(e1);
    t.close(e2);
    t.close(tf);
    t.flock(ep, LOCK_EX | LOCK_NB, "LOCK_EX|LOCK_NB");
    t.close(ep);
  });
}

TEST(Locks, RecordLocks) {
  conf::surface_differential([](ST& t) {
    auto [rd, wr] = t.pipe2(0);
    // Open file description locks: the two ends conflict; the open mode
    // is checked (a write lock needs a file open for writing).
    setlk(t, rd, F_OFD_SETLK, F_RDLCK, "F_OFD_SETLK,F_RDLCK");
    setlk(t, rd, F_OFD_SETLK, F_WRLCK, "F_OFD_SETLK,F_WRLCK");
    getlk(t, wr, F_OFD_GETLK, F_WRLCK, "F_OFD_GETLK,F_WRLCK");
    setlk(t, wr, F_OFD_SETLK, F_WRLCK, "F_OFD_SETLK,F_WRLCK");
    setlk(t, rd, F_OFD_SETLK, F_UNLCK, "F_OFD_SETLK,F_UNLCK");
    setlk(t, wr, F_OFD_SETLK, F_WRLCK, "F_OFD_SETLK,F_WRLCK");
    getlk(t, rd, F_OFD_GETLK, F_RDLCK, "F_OFD_GETLK,F_RDLCK");
    // A process's POSIX lock conflicts with the OFD lock, then holds.
    setlk(t, rd, F_SETLK, F_RDLCK, "F_SETLK,F_RDLCK");
    setlk(t, wr, F_OFD_SETLK, F_UNLCK, "F_OFD_SETLK,F_UNLCK");
    setlk(t, rd, F_SETLK, F_RDLCK, "F_SETLK,F_RDLCK");
    getlk(t, rd, F_GETLK, F_WRLCK, "F_GETLK,F_WRLCK");  // the process's own: no conflict
    getlk(t, wr, F_OFD_GETLK, F_WRLCK, "F_OFD_GETLK,F_WRLCK");
    // Closing any descriptor of the file drops the process's POSIX locks.
    t.close(t.dup(rd));
    getlk(t, wr, F_OFD_GETLK, F_WRLCK, "F_OFD_GETLK,F_WRLCK");
    // Bad arguments.
    getlk(t, wr, F_OFD_GETLK, 7, "F_OFD_GETLK,7");
    t.fcntl(wr, F_OFD_SETLK, 0, "F_OFD_SETLK,NULL");
    t.close(rd);
    t.close(wr);
    setlk(t, wr, F_SETLK, F_RDLCK, "F_SETLK,F_RDLCK");
  });
}

TEST(Locks, BlockingFlock) {
  UEPOLL_SKIP_UNDER_TSAN("signals a thread blocked on a kernel descriptor");
  conf::surface_differential([](ST& t) {
    const auto ends = t.pipe2(0);  // named ints: the lambdas below capture them
    const int rd = ends.first, wr = ends.second;
    t.flock(rd, LOCK_EX, "LOCK_EX");
    // Released by another open file description's holder: the wait ends.
    std::thread unlock([&] {
      usleep(30000);
      t.sa.flock(rd, LOCK_UN);
    });
    t.flock(wr, LOCK_EX, "LOCK_EX");
    unlock.join();
    t.flock(wr, LOCK_UN, "LOCK_UN");
    t.flock(rd, LOCK_EX, "LOCK_EX");
    // A handler: restarted with SA_RESTART (then released), EINTR without.
    for (bool restart : {true, false}) {
      conf_interrupted::interrupted(
          t, restart, "flock(wr,LOCK_EX)", [&] { return t.sa.flock(wr, LOCK_EX); },
          [&] {
            if (restart) t.sa.flock(rd, LOCK_UN);
          });
      t.flock(wr, LOCK_UN, "LOCK_UN");
      t.flock(rd, LOCK_EX, "LOCK_EX");
    }
    t.close(rd);
    t.close(wr);
  });
}

}  // namespace
