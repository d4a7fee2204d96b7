// splice_test.cpp - splice, sendfile and copy_file_range with a pipe or
// socket pair on one side and a kernel file, pipe or socket on the other:
// Linux's checks and their order (EINVAL for flags, EBADF, ESPIPE, EFAULT,
// the wrong direction), the counts (at most what the pipe's free buffers
// hold, one page each, from a file offset inside a page), offsets and file
// positions, EAGAIN on a full pipe, EPIPE without readers; a kernel pipe
// into a socket that cannot take its bytes keeps them.  Runs on Linux and
// uepoll (uep_splice...); the traces must match.
#include "splice_calls.h"

#include <sys/ioctl.h>
#include <sys/time.h>

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
    auto held = [&] {
      int n = -1;
      (void)::ioctl(kp[0], FIONREAD, &n);
      t.log("kernel pipe holds " + std::to_string(n));
    };
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

}  // namespace
