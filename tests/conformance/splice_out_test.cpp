// splice_out_test.cpp - splice out of a pipe or socket pair into kernel
// files, pipes and sockets and between two of them, tee, vmsplice, and
// sendfile's sources, and into a pipe another writer keeps full: each scenario once, run with kernel pipes and socket
// pairs (Linux) and with uepoll's (uep_splice...), comparing return
// values, errno, the bytes moved, what stays queued, and readiness.
#include "splice_calls.h"

#include <atomic>
#include <thread>
#include <vector>

namespace {

using conf::T;
using splice_conf::Calls;
using splice_conf::read_logged;
using splice_conf::temp_file;

std::string file_bytes(int fd, off_t at, size_t n) {
  std::string s(n, 0);
  const ssize_t r = ::pread(fd, s.data(), n, at);
  return r < 0 ? "?" : s.substr(0, static_cast<size_t>(r));
}

TEST(SpliceOut, PipeIntoKernelDescriptors) {
  auto r = conf::differential([](T& t) {
    const Calls c{t.is_linux()};
    auto log = [&](const std::string& what, ssize_t n) { t.log(what + " = " + t.res(n)); };
    const int f = temp_file(0);
    const int app = temp_file(0, O_APPEND);
    int kp[2], ks[2];
    if (f < 0 || app < 0 || ::pipe2(kp, O_NONBLOCK) < 0 || ::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, ks) < 0) return;
    auto [rd, wr] = t.pipe2(O_NONBLOCK);
    t.write(wr, "hello world", 11);
    // Into a file: at an offset (copied back), then at its file position.
    int64_t off = 3;
    log("splice(pipe,file,&3,5)", c.splice(rd, nullptr, f, &off, 5, 0));
    t.log("off " + std::to_string(off) + ", file position " + std::to_string(::lseek(f, 0, SEEK_CUR)) +
          ", file \"" + file_bytes(f, 3, 16) + "\"");
    log("splice(pipe,file,100)", c.splice(rd, nullptr, f, nullptr, 100, 0));
    t.log("file position " + std::to_string(::lseek(f, 0, SEEK_CUR)) + ", file \"" + file_bytes(f, 0, 16) + "\"");
    t.poll({{rd, POLLIN}, {wr, POLLOUT}}, 0);
    // Empty: EAGAIN (the pipe's O_NONBLOCK), and with SPLICE_F_NONBLOCK.
    log("splice(empty pipe,file)", c.splice(rd, nullptr, f, nullptr, 10, 0));
    log("splice(empty pipe,file,NONBLOCK)", c.splice(rd, nullptr, f, nullptr, 10, SPLICE_F_NONBLOCK));
    // Linux's checks: an offset on the pipe, O_APPEND, an offset on a socket,
    // the wrong ends, flags, a file without ->splice_write.
    t.write(wr, "0123456789", 10);
    log("splice(pipe,&off,file)", c.splice(rd, &off, f, nullptr, 10, 0));
    log("splice(pipe,O_APPEND file)", c.splice(rd, nullptr, app, nullptr, 10, 0));
    log("splice(pipe,socket,&off)", c.splice(rd, nullptr, ks[0], &off, 10, 0));
    log("splice(write end,file)", c.splice(wr, nullptr, f, nullptr, 10, 0));
    log("splice(pipe,read end)", c.splice(rd, nullptr, rd, nullptr, 10, 0));
    log("splice(pipe,file,flags 0x10)", c.splice(rd, nullptr, f, nullptr, 10, 0x10));
    log("splice(pipe,file,bad off_out)", c.splice(rd, nullptr, f, reinterpret_cast<int64_t*>(8), 10, 0));
    const int efd = t.eventfd(0, 0);
    log("splice(pipe,eventfd)", c.splice(rd, nullptr, efd, nullptr, 10, 0));
    log("splice(pipe,same pipe)", c.splice(rd, nullptr, wr, nullptr, 10, 0));
    log("splice(pipe,len 0)", c.splice(rd, nullptr, f, nullptr, 0, 0));
    // Into a kernel socket and a kernel pipe.
    log("splice(pipe,kernel socket,4)", c.splice(rd, nullptr, ks[0], nullptr, 4, 0));
    char buf[64];
    t.log("kernel socket got " + std::to_string(::read(ks[1], buf, sizeof buf)));
    log("splice(pipe,kernel pipe,100)", c.splice(rd, nullptr, kp[1], nullptr, 100, 0));
    t.log("kernel pipe got " + std::to_string(::read(kp[0], buf, sizeof buf)));
    // A kernel pipe with one free buffer takes one page; the rest stays.
    std::vector<char> fill(15 * 4096, 'f');
    (void)!::write(kp[1], fill.data(), fill.size());
    std::vector<char> ten(10000, 'x');
    t.write(wr, ten.data(), ten.size());
    log("splice(pipe,kernel pipe with one free buffer,10000)", c.splice(rd, nullptr, kp[1], nullptr, 10000, 0));
    log("splice(pipe,full kernel pipe)", c.splice(rd, nullptr, kp[1], nullptr, 10000, 0));
    t.poll({{rd, POLLIN}}, 0);
    t.read(rd, 20000);
    // No writers, empty: 0.
    t.close(wr);
    log("splice(pipe without writers,file)", c.splice(rd, nullptr, f, nullptr, 10, 0));
    for (int fd : {f, app, kp[0], kp[1], ks[0], ks[1]}) ::close(fd);
  });
  EXPECT_LINUX_SEQ(r, {"splice(pipe,file,&3,5) = 5", "splice(pipe,file,100) = 6", "splice(empty pipe,file) = -1 EAGAIN",
                       "splice(pipe,&off,file) = -1 ESPIPE", "splice(pipe,O_APPEND file) = -1 EINVAL",
                       "splice(pipe,same pipe) = -1 EINVAL", "splice(pipe,kernel socket,4) = 4",
                       "splice(pipe,kernel pipe with one free buffer,10000) = 4096",
                       "splice(pipe,full kernel pipe) = -1 EAGAIN", "splice(pipe without writers,file) = 0"});
}

TEST(SpliceOut, BetweenPipesAndSockets) {
  auto r = conf::differential([](T& t) {
    const Calls c{t.is_linux()};
    auto log = [&](const std::string& what, ssize_t n) { t.log(what + " = " + t.res(n)); };
    auto [rd1, wr1] = t.pipe2(O_NONBLOCK);
    const auto p2 = t.pipe2(O_NONBLOCK);
    const int rd2 = p2.first, wr2 = p2.second;  // captured by a lambda below: no structured binding (clang 14)
    const auto socks = t.unix_stream(SOCK_NONBLOCK);
    const int s0 = socks.first, s1 = socks.second;
    t.write(wr1, "pipe to pipe", 12);
    log("splice(pipe,pipe,5)", c.splice(rd1, nullptr, wr2, nullptr, 5, 0));
    read_logged(t, rd2, 64, "second pipe");
    read_logged(t, rd1, 64, "first pipe");
    // A full destination: EAGAIN, the source keeps its bytes.
    std::vector<char> big(65536, 'b');
    t.write(wr2, big.data(), big.size());
    t.write(wr1, "kept", 4);
    log("splice(pipe,full pipe)", c.splice(rd1, nullptr, wr2, nullptr, 10, 0));
    read_logged(t, rd1, 64, "first pipe");
    t.read(rd2, 65536);
    // Pipe to socket and socket to pipe.
    t.write(wr1, "to the socket", 13);
    log("splice(pipe,socket,100)", c.splice(rd1, nullptr, s0, nullptr, 100, 0));
    read_logged(t, s1, 64, "socket");
    t.write(s1, "from the socket", 15);
    log("splice(socket,pipe,4)", c.splice(s0, nullptr, wr2, nullptr, 4, 0));
    log("splice(socket,pipe,100)", c.splice(s0, nullptr, wr2, nullptr, 100, 0));
    read_logged(t, rd2, 64, "second pipe");
    log("splice(empty socket,pipe)", c.splice(s0, nullptr, wr2, nullptr, 100, 0));
    log("splice(socket,pipe,&off)", [&] {
      int64_t off = 0;
      return c.splice(s0, &off, wr2, nullptr, 100, 0);
    }());
    log("splice(socket,socket)", c.splice(s0, nullptr, s1, nullptr, 100, 0));
    // Socket into a kernel pipe.
    int kp[2];
    if (::pipe2(kp, O_NONBLOCK) < 0) return;
    t.write(s1, "kernel", 6);
    log("splice(socket,kernel pipe,100)", c.splice(s0, nullptr, kp[1], nullptr, 100, 0));
    char buf[16];
    t.log("kernel pipe got " + std::to_string(::read(kp[0], buf, sizeof buf)));
    // Socket into a full pipe: EAGAIN, the socket keeps its bytes.
    t.write(wr2, big.data(), big.size());
    t.write(s1, "stay", 4);
    log("splice(socket,full pipe)", c.splice(s0, nullptr, wr2, nullptr, 100, 0));
    read_logged(t, s0, 64, "socket");
    t.poll({{rd2, POLLIN}, {wr2, POLLOUT}, {s0, POLLIN}}, 0);
    // The peer closed: 0.
    t.close(s1);
    log("splice(socket after peer close,kernel pipe)", c.splice(s0, nullptr, kp[1], nullptr, 100, 0));
    ::close(kp[0]);
    ::close(kp[1]);
  });
  EXPECT_LINUX_SEQ(r, {"splice(pipe,pipe,5) = 5", "read second pipe = 5 \"pipe \"", "splice(pipe,full pipe) = -1 EAGAIN",
                       "read first pipe = 4 \"kept\"", "splice(pipe,socket,100) = 13",
                       "splice(socket,pipe,4) = 4", "splice(socket,pipe,100) = 11",
                       "splice(empty socket,pipe) = -1 EAGAIN", "splice(socket,socket) = -1 EINVAL",
                       "splice(socket,kernel pipe,100) = 6", "splice(socket,full pipe) = -1 EAGAIN",
                       "read socket = 4 \"stay\"", "splice(socket after peer close,kernel pipe) = 0"});
}

TEST(SpliceOut, Tee) {
  auto r = conf::differential([](T& t) {
    const Calls c{t.is_linux()};
    auto log = [&](const std::string& what, ssize_t n) { t.log(what + " = " + t.res(n)); };
    auto [rd1, wr1] = t.pipe2(O_NONBLOCK);
    auto [rd2, wr2] = t.pipe2(O_NONBLOCK);
    int kp[2];
    if (::pipe2(kp, O_NONBLOCK) < 0) return;
    auto [s0, s1] = t.unix_stream();
    log("tee(empty pipe,pipe)", c.tee(rd1, wr2, 10, 0));
    t.write(wr1, "abcdef", 6);
    log("tee(pipe,pipe,4)", c.tee(rd1, wr2, 4, 0));
    log("tee(pipe,pipe,100)", c.tee(rd1, wr2, 100, 0));
    read_logged(t, rd2, 64, "second pipe");
    log("tee(pipe,kernel pipe,100)", c.tee(rd1, kp[1], 100, 0));
    char buf[16];
    t.log("kernel pipe got " + std::to_string(::read(kp[0], buf, sizeof buf)));
    (void)!::write(kp[1], "kernel", 6);
    log("tee(kernel pipe,pipe,100)", c.tee(kp[0], wr2, 100, 0));
    read_logged(t, rd2, 64, "second pipe");
    t.log("kernel pipe still has " + std::to_string(::read(kp[0], buf, sizeof buf)));
    log("tee(empty kernel pipe,pipe)", c.tee(kp[0], wr2, 100, 0));
    log("tee(pipe,same pipe)", c.tee(rd1, wr1, 10, 0));
    log("tee(pipe,socket)", c.tee(rd1, s0, 10, 0));
    log("tee(socket,pipe)", c.tee(s0, wr2, 10, 0));
    log("tee(write end,pipe)", c.tee(wr1, wr2, 10, 0));
    log("tee(pipe,read end)", c.tee(rd1, rd2, 10, 0));
    log("tee(pipe,pipe,flags 0x10)", c.tee(rd1, wr2, 10, 0x10));
    log("tee(pipe,pipe,len 0)", c.tee(rd1, wr2, 0, 0));
    log("tee(closed,pipe)", c.tee(987, wr2, 10, 0));
    std::vector<char> big(65536, 'b');
    t.write(wr2, big.data(), big.size());
    log("tee(pipe,full pipe)", c.tee(rd1, wr2, 10, 0));
    read_logged(t, rd1, 64, "first pipe");
    t.close(wr1);
    log("tee(pipe without writers,full pipe)", c.tee(rd1, wr2, 10, 0));
    log("splice(pipe without writers,full pipe)", c.splice(rd1, nullptr, wr2, nullptr, 10, 0));
    t.read(rd2, 65536);
    log("tee(pipe without writers,pipe)", c.tee(rd1, wr2, 10, 0));
    log("splice(pipe without writers,pipe)", c.splice(rd1, nullptr, wr2, nullptr, 10, 0));
    ::close(kp[0]);
    ::close(kp[1]);
  });
  EXPECT_LINUX_SEQ(r, {"tee(empty pipe,pipe) = -1 EAGAIN", "tee(pipe,pipe,4) = 4", "tee(pipe,pipe,100) = 6",
                       "read second pipe = 10 \"abcdabcdef\"", "tee(pipe,kernel pipe,100) = 6",
                       "tee(kernel pipe,pipe,100) = 6", "kernel pipe still has 6", "tee(pipe,same pipe) = -1 EINVAL",
                       "tee(pipe,socket) = -1 EINVAL", "tee(pipe,full pipe) = -1 EAGAIN",
                       "read first pipe = 6 \"abcdef\"", "tee(pipe without writers,full pipe) = -1 EAGAIN",
                       "splice(pipe without writers,full pipe) = -1 EAGAIN", "tee(pipe without writers,pipe) = 0",
                       "splice(pipe without writers,pipe) = 0"});
}

TEST(SpliceOut, Vmsplice) {
  auto r = conf::differential([](T& t) {
    const Calls c{t.is_linux()};
    auto log = [&](const std::string& what, ssize_t n) { t.log(what + " = " + t.res(n)); };
    auto [rd, wr] = t.pipe2(O_NONBLOCK);
    char a[] = "hello", b[] = " world";
    struct iovec in[2] = {{a, 5}, {b, 6}};
    log("vmsplice(write end,2 segments)", c.vmsplice(wr, in, 2, 0));
    log("vmsplice(write end,GIFT)", c.vmsplice(wr, in, 1, SPLICE_F_GIFT));
    char x[4], y[32];
    struct iovec out[2] = {{x, sizeof x}, {y, sizeof y}};
    log("vmsplice(read end,2 segments)", c.vmsplice(rd, out, 2, 0));
    t.log("got \"" + std::string(x, 4) + "|" + std::string(y, 12) + "\"");
    log("vmsplice(empty read end,NONBLOCK)", c.vmsplice(rd, out, 2, SPLICE_F_NONBLOCK));
    log("vmsplice(read end,0 segments)", c.vmsplice(rd, out, 0, 0));
    log("vmsplice(write end,flags 0x10)", c.vmsplice(wr, in, 1, 0x10));
    log("vmsplice(write end,2000 segments)", c.vmsplice(wr, in, 2000, 0));
    log("vmsplice(write end,bad vector)", c.vmsplice(wr, reinterpret_cast<struct iovec*>(8), 1, 0));
    log("vmsplice(closed)", c.vmsplice(987, in, 1, 0));
    const int efd = t.eventfd(0, 0);
    log("vmsplice(eventfd)", c.vmsplice(efd, in, 1, 0));
    log("vmsplice(eventfd,0 segments)", c.vmsplice(efd, in, 0, 0));
    auto [s0, s1] = t.unix_stream();
    log("vmsplice(socket)", c.vmsplice(s0, in, 1, 0));
    std::vector<char> big(65536, 'b');
    t.write(wr, big.data(), big.size());
    log("vmsplice(full pipe,NONBLOCK)", c.vmsplice(wr, in, 2, SPLICE_F_NONBLOCK));
    t.poll({{rd, POLLIN}, {wr, POLLOUT}}, 0);
    t.read(rd, 65536);
    t.poll({{rd, POLLIN}, {wr, POLLOUT}}, 0);
    t.close(rd);
    log("vmsplice(no readers)", c.vmsplice(wr, in, 1, 0));
  });
  EXPECT_LINUX_SEQ(r, {"vmsplice(write end,2 segments) = 11", "vmsplice(read end,2 segments) = 16",
                       "vmsplice(empty read end,NONBLOCK) = -1 EAGAIN", "vmsplice(eventfd) = -1 EBADF",
                       "vmsplice(eventfd,0 segments) = 0", "vmsplice(full pipe,NONBLOCK) = -1 EAGAIN",
                       "vmsplice(no readers) = -1 EPIPE"});
}

TEST(SpliceOut, SendfileSources) {
  auto r = conf::differential([](T& t) {
    const Calls c{t.is_linux()};
    auto log = [&](const std::string& what, ssize_t n) { t.log(what + " = " + t.res(n)); };
    const int f = temp_file(1000);
    const int out = temp_file(0);
    int kp[2];
    if (f < 0 || out < 0 || ::pipe2(kp, O_NONBLOCK) < 0) return;
    auto [rd, wr] = t.pipe2(O_NONBLOCK);
    const auto socks = t.unix_stream(SOCK_NONBLOCK);
    const int s0 = socks.first, s1 = socks.second;  // captured by a lambda below: no structured binding (clang 14)
    t.write(s1, "socket bytes", 12);
    log("sendfile(pipe,socket,100)", c.sendfile(wr, s0, nullptr, 100));
    read_logged(t, rd, 64, "pipe");
    t.write(s1, "more", 4);
    log("sendfile(file,socket)", c.sendfile(out, s0, nullptr, 100));
    log("sendfile(kernel pipe,socket,100)", c.sendfile(kp[1], s0, nullptr, 100));
    char buf[16];
    t.log("kernel pipe got " + std::to_string(::read(kp[0], buf, sizeof buf)));
    log("sendfile(socket,pipe)", c.sendfile(s1, rd, nullptr, 100));
    (void)!::write(kp[1], "k", 1);
    log("sendfile(pipe,kernel pipe)", c.sendfile(wr, kp[0], nullptr, 100));
    log("sendfile(empty socket,pipe)", c.sendfile(wr, s0, nullptr, 100));
    off_t off = 0;
    log("sendfile(pipe,socket,&off)", c.sendfile(wr, s0, &off, 100));
    log("sendfile(socket,file,&990,100)", [&] {
      off_t o = 990;
      return c.sendfile(s0, f, &o, 100);
    }());
    read_logged(t, s1, 64, "socket");
    const int efd = t.eventfd(0, 0);
    log("sendfile(eventfd,file)", c.sendfile(efd, f, nullptr, 10));
    log("sendfile(pipe,eventfd)", c.sendfile(wr, efd, nullptr, 10));
    int64_t o1 = 0, o2 = 0;
    log("copy_file_range(socket,file)", c.copy_file_range(s0, &o1, out, &o2, 10, 0));
    log("copy_file_range(file,pipe)", c.copy_file_range(f, nullptr, wr, nullptr, 10, 0));
    for (int fd : {f, out, kp[0], kp[1]}) ::close(fd);
  });
  EXPECT_LINUX_SEQ(r, {"sendfile(pipe,socket,100) = 12", "sendfile(file,socket) = -1 EINVAL",
                       "sendfile(kernel pipe,socket,100) = 4", "sendfile(pipe,kernel pipe) = -1 EINVAL",
                       "sendfile(socket,file,&990,100) = 10", "sendfile(eventfd,file) = -1 EINVAL"});
}

// A splice out of a pipe into a kernel pipe that takes part of each chunk,
// racing a reader of the same pipe: every byte written arrives once, at
// the reader or through the splice.
TEST(SpliceOut, RacingReaderLosesNothing) {
  auto r = conf::differential([](T& t) {
    const Calls c{t.is_linux()};
    const uepoll_test::Api& api = t.api;
    auto [rd, wr] = t.pipe();
    int kp[2];
    if (::pipe(kp) < 0) return;
    constexpr size_t kTotal = 2 << 20;
    std::thread writer([&, wr = wr] {
      (void)splice_conf::write_total(api.write, wr, kTotal, 5000, 'w');
      api.close(wr);
    });
    std::atomic<size_t> read_bytes{0}, drained{0};
    std::thread reader([&, rd = rd] {
      std::vector<char> buf(3000);
      for (;;) {
        const ssize_t n = api.read(rd, buf.data(), buf.size());
        if (n <= 0) break;
        read_bytes += static_cast<size_t>(n);
      }
    });
    std::thread drain([&] {
      std::vector<char> buf(65536);
      for (;;) {
        const ssize_t n = ::read(kp[0], buf.data(), buf.size());
        if (n <= 0) break;
        drained += static_cast<size_t>(n);
      }
    });
    size_t spliced = 0;
    for (;;) {
      const ssize_t n = c.splice(rd, nullptr, kp[1], nullptr, 10000, SPLICE_F_NONBLOCK);
      if (n == 0) break;
      if (n > 0) spliced += static_cast<size_t>(n);
      else if (errno != EAGAIN) break;
      else std::this_thread::yield();
    }
    writer.join();
    reader.join();
    ::close(kp[1]);
    drain.join();
    ::close(kp[0]);
    t.forget(wr);
    t.log("bytes arrived " + std::to_string(read_bytes + drained) + ", spliced = drained " +
          (spliced == drained ? "yes" : "no"));
  });
  EXPECT_LINUX_SEQ(r, {"bytes arrived 2097152, spliced = drained yes"});
}

// A blocking splice out of a pipe or socket pair, and a blocking vmsplice,
// into a pipe that another writer keeps full: a call that finds no room
// after its wait for room waits again (Linux holds the destination's lock
// across both, or goes round again), never EAGAIN, and every byte of both
// writers arrives once.
TEST(SpliceOut, IntoRacedPipeWaitsForRoom) {
  auto r = conf::differential([](T& t) {
    const Calls c{t.is_linux()};
    const uepoll_test::Api& api = t.api;
    for (const std::string what : {"pipe", "pair", "vmsplice", "pipe into a kernel pipe"}) {
      // The destination: the scenario's pipe, or a kernel pipe on both sides.
      const bool kernel_dest = what == "pipe into a kernel pipe";
      int kp[2] = {-1, -1};
      if (kernel_dest && ::pipe2(kp, O_CLOEXEC) < 0) return;
      const auto dest = kernel_dest ? std::pair<int, int>(kp[0], kp[1]) : t.pipe();
      const int rd = dest.first, wr = dest.second;
      const auto src = what == "pair" ? t.unix_stream() : t.pipe();
      const int from = src.first, into = src.second;  // a pipe: (read end, write end)
      constexpr size_t kEach = 1 << 20;
      std::thread feeder([&] {
        if (what == "vmsplice") return;
        (void)splice_conf::write_total(api.write, into, kEach, 7000, 'k');
        if (what == "pair")
          (void)api.shutdown(into, SHUT_WR);
        else
          (void)api.close(into);  // forgotten by the trace below
      });
      splice_conf::PipeTraffic traffic(kernel_dest ? ::write : api.write, kernel_dest ? ::read : api.read, rd, wr,
                                       kEach);
      size_t moved = 0;
      ssize_t last = 0;
      std::vector<char> mine(6000, 'v');
      for (;;) {
        if (what == "vmsplice") {
          if (moved == kEach) break;
          struct iovec v = {mine.data(), kEach - moved < mine.size() ? kEach - moved : mine.size()};
          last = c.vmsplice(wr, &v, 1, 0);
        } else {
          last = c.splice(from, nullptr, wr, nullptr, 10000, 0);
        }
        if (last <= 0) break;
        moved += static_cast<size_t>(last);
      }
      if (last <= 0) t.log(what + ": the last call = " + t.res(last));
      t.close(from);  // a feeder left waiting ends (EPIPE)
      feeder.join();
      if (what == "pipe" || kernel_dest)
        t.forget(into);
      else
        t.close(into);
      traffic.join_writer();
      kernel_dest ? ::close(wr) : t.close(wr);
      const size_t arrived = traffic.join_reader();
      kernel_dest ? ::close(rd) : t.close(rd);
      t.log(what + ": moved " + std::to_string(moved) + ", bytes arrived " + std::to_string(arrived));
    }
  });
  EXPECT_LINUX_SEQ(r, {"pipe: the last call = 0", "pipe: moved 1048576, bytes arrived 2097152",
                       "pair: the last call = 0", "pair: moved 1048576, bytes arrived 2097152",
                       "vmsplice: moved 1048576, bytes arrived 2097152",
                       "pipe into a kernel pipe: the last call = 0",
                       "pipe into a kernel pipe: moved 1048576, bytes arrived 2097152"});
}

// A blocking tee into a pipe that another writer keeps filling: Linux's
// link_pipe ends the call with what it linked, 0 when the pipe filled up
// after opipe_prep found room, never EAGAIN.  From a uepoll pipe and from a
// kernel pipe, into the scenario's pipe.
TEST(SpliceOut, TeeIntoRacedPipeGivesNoEagain) {
  auto r = conf::differential([](T& t) {
    const Calls c{t.is_linux()};
    const uepoll_test::Api& api = t.api;
    for (const std::string what : {"pipe", "kernel pipe"}) {
      int kp[2] = {-1, -1};
      if (what == "kernel pipe" && ::pipe2(kp, O_CLOEXEC) < 0) return;
      const auto src = what == "kernel pipe" ? std::pair<int, int>(kp[0], kp[1]) : t.pipe();
      std::vector<char> data(9000, 's');
      if ((what == "kernel pipe" ? ::write(src.second, data.data(), data.size())
                                 : api.write(src.second, data.data(), data.size())) != 9000)
        return;
      auto [rd, wr] = t.pipe();
      splice_conf::PipeTraffic traffic(api.write, api.read, rd, wr, 1 << 20);
      int linked = 0, zero = 0, again = 0, other = 0;
      for (int i = 0; i < 3000; ++i) {
        const ssize_t n = c.tee(src.first, wr, 9000, 0);
        if (n > 0) ++linked;
        else if (n == 0) ++zero;
        else if (errno == EAGAIN) ++again;
        else ++other;
      }
      traffic.join_writer();
      t.close(wr);
      (void)traffic.join_reader();
      t.close(rd);
      if (what == "kernel pipe") {
        ::close(kp[0]);
        ::close(kp[1]);
      } else {
        t.close(src.first);
        t.close(src.second);
      }
      t.log(what + ": tees that linked bytes " + (linked ? "some" : "none") + ", EAGAIN " +
            std::to_string(again) + ", other errors " + std::to_string(other));
      (void)zero;
    }
  });
  EXPECT_LINUX_SEQ(r, {"pipe: tees that linked bytes some, EAGAIN 0, other errors 0",
                       "kernel pipe: tees that linked bytes some, EAGAIN 0, other errors 0"});
}

}  // namespace
