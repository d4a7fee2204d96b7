// splice_test.cpp - splice, sendfile and copy_file_range with a pipe or
// socket pair on one side and a kernel file, pipe or socket on the other:
// Linux's checks and their order (EINVAL for flags, EBADF, ESPIPE, EFAULT,
// the wrong direction), the counts (at most what the pipe's free buffers
// hold, one page each, from a file offset inside a page), offsets and file
// positions, EAGAIN on a full pipe, EPIPE without readers; a kernel pipe
// into a socket that cannot take its bytes keeps them; a kernel pipe into a
// pipe waits for the source before the room, and a kernel pipe or socket
// into a pipe loses nothing to a racing writer and signals.  Runs on Linux and
// uepoll (uep_splice...); the traces must match.
#include "splice_calls.h"

#include <sys/ioctl.h>
#include <sys/time.h>

#include <atomic>
#include <csignal>
#include <pthread.h>
#include <thread>
#include <vector>

namespace {

using conf::T;
using splice_conf::Calls;
using splice_conf::temp_file;

TEST(Splice, IntoPipesAndSockets) {
  auto r = conf::differential([](T& t) {
    const Calls c{t.is_linux()};
    const int f = temp_file(200000);
    const int dir = ::open("/tmp", O_RDONLY | O_DIRECTORY);
    auto [rd, wr] = t.pipe2(O_NONBLOCK);
    auto log = [&](const std::string& what, ssize_t n) { t.log(what + " = " + t.res(n)); };
    int64_t off = 0;
    errno = 0;
    log("splice(file,pipe,0)", c.splice(f, nullptr, wr, nullptr, 0, 0));
    log("splice(file,pipe,flags 0x100)", c.splice(f, nullptr, wr, nullptr, 10, 0x100));
    log("splice(file,pipe,off_out)", c.splice(f, nullptr, wr, &off, 10, 0));
    log("splice(closed,pipe)", c.splice(987, nullptr, wr, nullptr, 10, 0));
    log("splice(file,read end)", c.splice(f, nullptr, rd, nullptr, 10, 0));
    log("splice(file,pipe,bad off_in)", c.splice(f, reinterpret_cast<int64_t*>(8), wr, nullptr, 10, 0));
    log("splice(file,pipe,3000)", c.splice(f, nullptr, wr, nullptr, 3000, 0));
    t.log("file position " + std::to_string(::lseek(f, 0, SEEK_CUR)));
    t.read(rd, 5000);
    // From an offset inside a page: the free buffers hold one page each.
    off = 100;
    log("splice(file@100,pipe,70000)", c.splice(f, &off, wr, nullptr, 70000, 0));
    t.log("off " + std::to_string(off) + ", file position " + std::to_string(::lseek(f, 0, SEEK_CUR)));
    log("splice(file,full pipe)", c.splice(f, nullptr, wr, nullptr, 10, 0));
    log("splice(file,full pipe,NONBLOCK)", c.splice(f, nullptr, wr, nullptr, 10, SPLICE_F_NONBLOCK));
    t.read(rd, 4096);
    log("splice(file,pipe with one page free,9000)", c.splice(f, nullptr, wr, nullptr, 9000, 0));
    // From a kernel pipe and a kernel socket.
    int kp[2], ks[2];
    if (::pipe(kp) < 0 || ::socketpair(AF_UNIX, SOCK_STREAM, 0, ks) < 0) return;
    auto [rd2, wr2] = t.pipe();
    (void)!::write(kp[1], "0123456789", 10);
    log("splice(kernel pipe,pipe,100)", c.splice(kp[0], nullptr, wr2, nullptr, 100, 0));
    log("splice(kernel pipe,pipe,off_in)", c.splice(kp[0], &off, wr2, nullptr, 100, 0));
    (void)!::write(ks[1], "socket", 6);
    log("splice(kernel socket,pipe,100)", c.splice(ks[0], nullptr, wr2, nullptr, 100, 0));
    log("splice(kernel socket,pipe,off_in)", c.splice(ks[0], &off, wr2, nullptr, 100, 0));
    t.read(rd2, 100);
    // sendfile into a pipe and a socket pair.
    off_t soff = 7;
    log("sendfile(pipe,file,&7,5000)", c.sendfile(wr2, f, &soff, 5000));
    t.log("soff " + std::to_string(soff));
    log("sendfile(pipe,file,NULL,10)", c.sendfile(wr2, f, nullptr, 10));
    t.log("file position " + std::to_string(::lseek(f, 0, SEEK_CUR)));
    log("sendfile(pipe,read end)", c.sendfile(wr2, rd2, nullptr, 10));
    log("sendfile(read end,file)", c.sendfile(rd2, f, nullptr, 10));
    log("sendfile(pipe,file,bad off)", c.sendfile(wr2, f, reinterpret_cast<off_t*>(8), 10));
    auto [s0, s1] = t.unix_stream();
    log("sendfile(socket,file,NULL,100)", c.sendfile(s0, f, nullptr, 100));
    t.read(s1, 200);
    // copy_file_range needs regular files.
    log("copy_file_range(pipe,file)", c.copy_file_range(rd2, nullptr, f, nullptr, 10, 0));
    log("copy_file_range(file,pipe,flags 1)", c.copy_file_range(f, nullptr, wr2, nullptr, 10, 1));
    log("copy_file_range(dir,pipe)", c.copy_file_range(dir, nullptr, wr2, nullptr, 10, 0));
    log("splice(pipe,same pipe)", c.splice(rd2, nullptr, wr2, nullptr, 10, 0));
    // No readers: EPIPE (SIGPIPE is ignored here).
    t.close(rd);
    log("splice(file,pipe without readers)", c.splice(f, nullptr, wr, nullptr, 10, 0));
    for (int fd : {f, dir, kp[0], kp[1], ks[0], ks[1]}) ::close(fd);
  });
  EXPECT_LINUX_SEQ(r, {"splice(file,pipe,0) = 0", "splice(file,pipe,flags 0x100) = -1 EINVAL",
                       "splice(file,pipe,off_out) = -1 ESPIPE", "splice(closed,pipe) = -1 EBADF",
                       "splice(file,read end) = -1 EBADF", "splice(file,pipe,3000) = 3000",
                       "splice(file@100,pipe,70000) = 65436", "splice(file,full pipe) = -1 EAGAIN",
                       "splice(kernel pipe,pipe,100) = 10", "splice(kernel socket,pipe,100) = 6",
                       "sendfile(pipe,file,&7,5000) = 5000", "copy_file_range(pipe,file) = -1 EINVAL",
                       "splice(file,pipe without readers) = -1 EPIPE"});
}

// A kernel pipe into a socket that cannot take its bytes (full, with
// O_NONBLOCK or after SO_SNDTIMEO): EAGAIN, and the pipe keeps them, as
// splice_to_socket takes from the pipe only what the socket took.
TEST(Splice, KernelPipeIntoFullSocketKeepsItsBytes) {
  auto r = conf::differential([](T& t) {
    const Calls c{t.is_linux()};
    auto log = [&](const std::string& what, ssize_t n) { t.log(what + " = " + t.res(n)); };
    int kp[2];
    if (::pipe2(kp, O_CLOEXEC | O_NONBLOCK) < 0) return;
    auto held = [&] { splice_conf::log_queued(t, kp[0], "kernel pipe"); };
    const auto socks = t.unix_stream(SOCK_NONBLOCK);
    const int s0 = socks.first, s1 = socks.second;
    std::string big(65536, 'f');
    long queued = 0;
    for (ssize_t w; (w = t.api.write(s0, big.data(), big.size())) > 0;) queued += w;
    t.log("socket full after " + std::to_string(queued));
    if (::write(kp[1], "kept", 4) != 4) return;
    log("splice(kernel pipe,full socket,100)", c.splice(kp[0], nullptr, s0, nullptr, 100, 0));
    held();
    log("splice(kernel pipe,full socket,NONBLOCK)", c.splice(kp[0], nullptr, s0, nullptr, 100, SPLICE_F_NONBLOCK));
    held();
    // Blocking, with a send timeout: the wait ends with EAGAIN, the bytes stay.
    const int fl = t.is_linux() ? ::fcntl(s0, F_GETFL) : ::uep_fcntl(s0, F_GETFL);
    log("fcntl(F_SETFL, blocking)", t.is_linux() ? ::fcntl(s0, F_SETFL, fl & ~O_NONBLOCK)
                                                 : ::uep_fcntl(s0, F_SETFL, fl & ~O_NONBLOCK));
    const struct timeval tv = {0, 20000};
    const int set = t.is_linux() ? ::setsockopt(s0, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv)
                                 : ::uep_setsockopt(s0, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    log("setsockopt(SO_SNDTIMEO)", set);
    log("splice(kernel pipe,full blocking socket,100)", c.splice(kp[0], nullptr, s0, nullptr, 100, 0));
    held();
    // Room again: all four move, the pipe is empty.
    std::string buf(65536, 0);
    long drained = 0;
    while (drained < queued) {
      const ssize_t n = t.api.read(s1, buf.data(), buf.size());
      if (n <= 0) break;
      drained += n;
    }
    t.log("drained " + std::to_string(drained));
    log("splice(kernel pipe,socket,100)", c.splice(kp[0], nullptr, s0, nullptr, 100, 0));
    held();
    t.read(s1, 64);
    ::close(kp[0]);
    ::close(kp[1]);
  });
  EXPECT_LINUX_SEQ(r, {"splice(kernel pipe,full socket,100) = -1 EAGAIN", "kernel pipe holds 4",
                       "splice(kernel pipe,full socket,NONBLOCK) = -1 EAGAIN", "kernel pipe holds 4",
                       "splice(kernel pipe,full blocking socket,100) = -1 EAGAIN", "kernel pipe holds 4",
                       "splice(kernel pipe,socket,100) = 4", "kernel pipe holds 0"});
}

// A kernel pipe into a pipe is Linux's splice_pipe_to_pipe (tee's
// do_tee the same): the source is waited for first (at once EAGAIN with
// SPLICE_F_NONBLOCK, 0 at its end of file), then room here (EPIPE without
// readers, also at the source's end of file; EAGAIN when full); what the
// pipe did not take stays in the source.
TEST(Splice, KernelPipeIntoPipeWaitsForTheSourceFirst) {
  auto r = conf::differential([](T& t) {
    const Calls c{t.is_linux()};
    auto log = [&](const std::string& what, ssize_t n) { t.log(what + " = " + t.res(n)); };
    int kp[2];
    if (::pipe2(kp, O_CLOEXEC) < 0) return;
    auto held = [&] { splice_conf::log_queued(t, kp[0], "kernel pipe"); };
    char sink[65536];
    auto drain = [&] {  // never waits
      int n = 0;
      if (::ioctl(kp[0], FIONREAD, &n) == 0 && n > 0) (void)!::read(kp[0], sink, sizeof sink);
    };
    // A late write into the source: a call that returns after it waited
    // for the source.
    std::atomic<bool> wrote{false};
    auto late = [&](int fd, int ms) {
      return std::thread([&wrote, fd, ms] {
        std::this_thread::sleep_for(std::chrono::milliseconds(ms));
        wrote = true;
        (void)!::write(fd, "late", 4);
      });
    };
    auto [rd, wr] = t.pipe();
    std::thread w = late(kp[1], 500);
    log("splice(empty kernel pipe,pipe,NONBLOCK)", c.splice(kp[0], nullptr, wr, nullptr, 100, SPLICE_F_NONBLOCK));
    t.log(std::string("returned after the late write: ") + (wrote ? "yes" : "no"));
    w.join();
    held();
    drain();
    auto [rd2, wr2] = t.pipe();
    t.close(rd2);
    wrote = false;
    w = late(kp[1], 50);
    log("splice(empty kernel pipe,pipe without readers)", c.splice(kp[0], nullptr, wr2, nullptr, 100, 0));
    t.log(std::string("returned after the late write: ") + (wrote ? "yes" : "no"));
    w.join();
    held();
    log("tee(kernel pipe,pipe without readers)", c.tee(kp[0], wr2, 100, 0));
    held();
    // The source at its end of file.
    drain();
    ::close(kp[1]);
    auto [rd3, wr3] = t.pipe2(O_NONBLOCK);
    long queued = 0;
    const std::string big(65536, 'f');
    for (ssize_t n; (n = t.api.write(wr3, big.data(), big.size())) > 0;) queued += n;
    t.log("pipe full after " + std::to_string(queued));
    log("splice(ended kernel pipe,pipe)", c.splice(kp[0], nullptr, wr, nullptr, 100, 0));
    log("splice(ended kernel pipe,full pipe)", c.splice(kp[0], nullptr, wr3, nullptr, 100, 0));
    log("splice(ended kernel pipe,pipe without readers)", c.splice(kp[0], nullptr, wr2, nullptr, 100, 0));
    log("tee(ended kernel pipe,pipe)", c.tee(kp[0], wr, 100, 0));
    log("tee(ended kernel pipe,full pipe)", c.tee(kp[0], wr3, 100, 0));
    log("tee(ended kernel pipe,pipe without readers)", c.tee(kp[0], wr2, 100, 0));
    ::close(kp[0]);
    // Two pages into a pipe with one buffer free: one moves, one stays.
    if (::pipe2(kp, O_CLOEXEC) < 0) return;
    const std::string page(4096, 'p');
    (void)!::write(kp[1], page.data(), page.size());
    (void)!::write(kp[1], page.data(), page.size());
    t.read(rd3, 4096);
    log("splice(kernel pipe,pipe with one buffer free,8192)", c.splice(kp[0], nullptr, wr3, nullptr, 8192, 0));
    held();
    log("splice(kernel pipe,full pipe,8192)", c.splice(kp[0], nullptr, wr3, nullptr, 8192, 0));
    held();
    ::close(kp[0]);
    ::close(kp[1]);
    // A stream socket keeps what the pipe did not take too; an AF_UNIX one
    // honours SPLICE_F_NONBLOCK.
    int ks[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ks) < 0) return;
    wrote = false;
    w = late(ks[1], 500);
    log("splice(empty socket,pipe,NONBLOCK)", c.splice(ks[0], nullptr, wr, nullptr, 100, SPLICE_F_NONBLOCK));
    t.log(std::string("returned after the late write: ") + (wrote ? "yes" : "no"));
    w.join();
    (void)!::recv(ks[0], sink, sizeof sink, MSG_DONTWAIT);
    const std::string two(8192, 's');
    (void)!::write(ks[1], two.data(), two.size());
    t.read(rd3, 4096);
    log("splice(kernel socket,pipe with one buffer free,8192)", c.splice(ks[0], nullptr, wr3, nullptr, 8192, 0));
    splice_conf::log_queued(t, ks[0], "kernel socket");
    ::close(ks[0]);
    ::close(ks[1]);
  });
  EXPECT_LINUX_SEQ(r, {"splice(empty kernel pipe,pipe,NONBLOCK) = -1 EAGAIN", "returned after the late write: no",
                       "kernel pipe holds 4", "splice(empty kernel pipe,pipe without readers) = -1 EPIPE",
                       "returned after the late write: yes", "tee(kernel pipe,pipe without readers) = -1 EPIPE",
                       "splice(ended kernel pipe,pipe) = 0", "splice(ended kernel pipe,full pipe) = -1 EAGAIN",
                       "splice(ended kernel pipe,pipe without readers) = -1 EPIPE",
                       "tee(ended kernel pipe,pipe without readers) = -1 EPIPE",
                       "splice(kernel pipe,pipe with one buffer free,8192) = 4096", "kernel pipe holds 4096",
                       "splice(empty socket,pipe,NONBLOCK) = -1 EAGAIN", "returned after the late write: no",
                       "splice(kernel socket,pipe with one buffer free,8192) = 4096", "kernel socket holds 4096"});
}

// A blocking splice from a kernel pipe, stream socket or datagram socket
// into a pipe that another writer keeps full, interrupted by a handler
// without SA_RESTART over and over: each call moves what fits or nothing
// (EINTR), and every byte of both writers arrives once.
TEST(Splice, KernelSourcesIntoRacedPipeLoseNothing) {
  auto r = conf::differential([](T& t) {
    const Calls c{t.is_linux()};
    const uepoll_test::Api& api = t.api;
    struct sigaction sa {}, old {};
    sa.sa_handler = [](int) {};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, &old);  // no SA_RESTART
    for (const int kind : {0, int{SOCK_STREAM}, int{SOCK_DGRAM}}) {
      const std::string what = kind == SOCK_STREAM ? "stream" : kind == SOCK_DGRAM ? "dgram" : "pipe";
      auto [rd, wr] = t.pipe();
      int src[2];
      if ((kind ? ::socketpair(AF_UNIX, kind | SOCK_CLOEXEC, 0, src) : ::pipe2(src, O_CLOEXEC)) < 0) return;
      const size_t each = kind == SOCK_DGRAM ? 1000 * 1024 : 1 << 20;
      std::thread feeder([&] {
        (void)splice_conf::write_total(::write, src[1], each, kind == SOCK_DGRAM ? 1000 : 7000, 'k');
        if (kind == SOCK_DGRAM) (void)!::write(src[1], "", 0);  // the end: a read of 0
        ::close(src[1]);
      });
      splice_conf::PipeTraffic traffic(api.write, api.read, rd, wr, each);
      std::atomic<bool> splicing{true};
      const pthread_t self = pthread_self();
      std::thread ticker([&] {
        while (splicing) {
          pthread_kill(self, SIGUSR1);
          std::this_thread::sleep_for(std::chrono::microseconds(50));
        }
      });
      size_t spliced = 0;
      ssize_t last = 0;
      for (;;) {
        last = c.splice(src[0], nullptr, wr, nullptr, 10000, 0);
        if (last == 0) break;
        if (last > 0) spliced += static_cast<size_t>(last);
        else if (errno != EINTR) break;
      }
      t.log(what + ": the last splice = " + t.res(last));
      splicing = false;
      ticker.join();
      ::close(src[0]);  // a feeder left waiting ends with EPIPE
      feeder.join();
      traffic.join_writer();
      t.close(wr);
      const size_t arrived = traffic.join_reader();
      t.close(rd);
      t.log(what + ": spliced " + std::to_string(spliced) + ", bytes arrived " + std::to_string(arrived));
    }
    sigaction(SIGUSR1, &old, nullptr);
  });
  EXPECT_LINUX_SEQ(r, {"pipe: the last splice = 0", "pipe: spliced 1048576, bytes arrived 2097152",
                       "stream: the last splice = 0", "stream: spliced 1048576, bytes arrived 2097152",
                       "dgram: the last splice = 0", "dgram: spliced 1024000, bytes arrived 2048000"});
}

}  // namespace
