// objects_pipe_test.cpp - pipes as seen through the C API: 64 KiB capacity,
// page packing, EOF/HUP, EPIPE/ERR, wrong direction, blocking calls.
// Readiness is observed through epoll (all bits) so the exact masks are
// compared.  SIGPIPE is ignored (objects_common.h).
#include "objects_common.h"

#include <thread>

namespace {

using conf::T;
using conf_objects::ALL;
using conf_objects::state;

// ---- pipes ----------------------------------------------------------------
TEST(Pipe, CreateFlagsAndDirections) {
  auto r = conf::differential([](T& t) {
    t.pipe2(0x1);
    t.pipe2(O_RDWR);
    auto [rd, wr] = t.pipe2(O_NONBLOCK | O_CLOEXEC);
    state(t, rd, "read end");
    state(t, wr, "write end");
    t.write(rd, "x", 1);  // wrong direction
    t.read(wr, 1);
    t.read(rd, 0);
    t.write(wr, "", 0);
    t.read(rd, 1);
  });
  EXPECT_LINUX_SEQ(r, {"pipe2(0x1) = -1 EINVAL", "pipe2(0x2) = -1 EINVAL", "pipe2(CLOEXEC|NONBLOCK) = 0 [fd0,fd1]",
                       "state read end: 0", "state write end: OUT|WRNORM", "write(fd0,1) = -1 EBADF",
                       "read(fd1,1) = -1 EBADF", "read(fd0,0) = 0", "write(fd1,0) = 0", "read(fd0,1) = -1 EAGAIN"});
}

// Fill a pipe with nonblocking writes of `chunk` bytes; log the total.
long fill(T& t, int wr, size_t chunk) {
  long total = 0;
  std::string last;
  {
    T::Quiet q(t);
    for (int i = 0; i < 100000; ++i) {
      ssize_t n = t.write_bytes(wr, chunk);
      if (n < 0) {
        last = conf::errno_name(errno);
        break;
      }
      total += n;
    }
  }
  t.log("filled with " + std::to_string(chunk) + "-byte writes: " + std::to_string(total) + " bytes, then " + last);
  return total;
}

// 64 KiB = 16 page-sized buffers.  After reading one page the writer is
// woken (ET edge) and writable again.
TEST(Pipe, CapacityAndWriterWakeup) {
  auto r = conf::differential([](T& t) {
    int ep = t.epoll_create1();
    auto [rd, wr] = t.pipe2(O_NONBLOCK);
    t.ctl(ep, EPOLL_CTL_ADD, wr, EPOLLOUT | EPOLLET, 2);
    t.wait(ep, 4, 0);
    fill(t, wr, 4096);
    state(t, wr, "full, write end");
    state(t, rd, "full, read end");
    t.wait(ep, 4, 0);
    t.read(rd, 100);  // the first page is not released yet
    state(t, wr, "after 100 bytes");
    t.wait(ep, 4, 0);
    t.write(wr, "x", 1);
    t.read(rd, 3996);  // the first page is released: writer woken
    state(t, wr, "after 4096 bytes");
    t.wait(ep, 4, 0);
    t.write_bytes(wr, 5000);  // partial: one page free
    t.write_bytes(wr, 1);
    t.read(rd, 65536);
    t.read(rd, 65536);
    t.wait(ep, 4, 0);
    t.write_bytes(wr, 100000);  // nonblocking large write: partial
    t.write_bytes(wr, 1);
  });
  EXPECT_LINUX_SEQ(r, {"wait(fd0,4,0) = 1 [OUT:2]", "filled with 4096-byte writes: 65536 bytes, then EAGAIN",
                       "state full, write end: 0", "state full, read end: IN|RDNORM", "wait(fd0,4,0) = 0",
                       "state after 100 bytes: 0", "wait(fd0,4,0) = 0", "write(fd2,1) = -1 EAGAIN",
                       "state after 4096 bytes: OUT|WRNORM", "wait(fd0,4,0) = 1 [OUT:2]", "write(fd2,5000) = 4096",
                       "write(fd2,1) = -1 EAGAIN", "read(fd1,65536) = 65536", "write(fd2,100000) = 65536"});
}

// Small writes share a page only when they fit whole in its remaining space.
TEST(Pipe, PagePacking) {
  auto r = conf::differential([](T& t) {
    auto [rd, wr] = t.pipe2(O_NONBLOCK);
    fill(t, wr, 1000);
    t.read(rd, 65536);
    t.read(rd, 65536);
    fill(t, wr, 1024);
    t.read(rd, 65536);
    auto [rd2, wr2] = t.pipe2(O_NONBLOCK);
    fill(t, wr2, 3000);
    (void)rd2;
  });
  EXPECT_LINUX_SEQ(r, {"filled with 1000-byte writes: 64000 bytes, then EAGAIN",
                       "filled with 1024-byte writes: 65536 bytes, then EAGAIN"});
}

TEST(Pipe, WriterClosedEofHup) {
  auto r = conf::differential([](T& t) {
    auto [rd, wr] = t.pipe2(O_NONBLOCK);
    t.write(wr, "abc", 3);
    t.close(wr);
    state(t, rd, "data + no writer");
    t.read(rd, 2);
    t.read(rd, 8);
    state(t, rd, "drained");
    t.read(rd, 8);  // EOF, not EAGAIN
    t.read(rd, 8);
  });
  EXPECT_LINUX_SEQ(r, {"state data + no writer: IN|HUP|RDNORM", "read(fd0,2) = 2", "read(fd0,8) = 1",
                       "state drained: HUP", "read(fd0,8) = 0", "read(fd0,8) = 0"});
}

TEST(Pipe, ReaderClosedEpipeErr) {
  auto r = conf::differential([](T& t) {
    int ep = t.epoll_create1();
    auto [rd, wr] = t.pipe();
    t.ctl(ep, EPOLL_CTL_ADD, wr, EPOLLOUT | EPOLLET, 1);
    t.wait(ep, 4, 0);
    t.write(wr, "abc", 3);
    t.close(rd);
    t.wait(ep, 4, 0);
    state(t, wr, "no reader");
    t.write(wr, "x", 1);  // EPIPE (SIGPIPE ignored)
    t.write(wr, "", 0);
  });
  EXPECT_LINUX_SEQ(r, {"wait(fd0,4,0) = 1 [OUT:1]", "wait(fd0,4,0) = 1 [OUT|ERR:1]",
                       "state no reader: OUT|ERR|WRNORM", "write(fd2,1) = -1 EPIPE"});
}

// A blocked reader is woken by a write, a blocked writer (full pipe) by a read.
TEST(Pipe, BlockingReadAndWrite) {
  auto r = conf::differential([](T& t) {
    auto [rd, wr] = t.pipe();
    {
      conf::WhenBlocked later([&, wr = wr] { t.api.write(wr, "hello", 5); });
      t.read(rd, 100);  // sleeps until the write; returns what is there
    }
    {
      T::Quiet q(t);
      for (int i = 0; i < 16; ++i) t.write_bytes(wr, 4096);
    }
    {
      conf::WhenBlocked later([&, rd = rd] {
        std::vector<char> buf(8192);
        t.api.read(rd, buf.data(), buf.size());
      });
      t.write_bytes(wr, 4096);  // full: sleeps until two pages are read
    }
    // A blocked reader sees EOF when the writer closes.
    {
      conf::WhenBlocked later([&, wr = wr] { t.api.close(wr); });
      T::Quiet q(t);
      std::vector<char> buf(65536);
      while (t.api.read(rd, buf.data(), buf.size()) > 0) {
      }
    }
    t.forget(wr);
    t.log("reader saw EOF after the writer closed");
  });
  EXPECT_LINUX_SEQ(r, {"read(fd0,100) = 5", "write(fd1,4096) = 4096"});
}

}  // namespace
