// surface_pipe_size_test.cpp - pipes of any size: F_SETPIPE_SZ /
// F_GETPIPE_SZ (Linux fs/pipe.c pipe_set_size, round_pipe_size,
// pipe_resize_ring): rounding to a power of two pages, the 32-bit
// argument, EINVAL past 2^31, EPERM past /proc/sys/fs/pipe-max-size without
// CAP_SYS_RESOURCE, EBUSY when the buffers in use do not fit; capacity,
// FIONREAD, poll and epoll readiness at the new size, packets, and a resize
// racing a reader and a writer (nothing lost or reordered).  Against Linux.
#include "conformance/surface_harness.h"

#include <atomic>
#include <thread>
#include <vector>

namespace {

using conf::ST;

const bool sigpipe_ignored = [] {
  signal(SIGPIPE, SIG_IGN);
  return true;
}();

void drain(ST& t, int rd, const char* what) {
  long total = 0;
  std::vector<char> buf(1 << 16);
  for (;;) {
    const ssize_t n = t.api.read(rd, buf.data(), buf.size());
    if (n <= 0) break;
    total += n;
  }
  t.log(std::string("drained ") + what + " = " + std::to_string(total));
}

TEST(PipeSize, SetAndGet) {
  auto tr = conf::surface_differential([](ST& t) {
    auto [rd, wr] = t.pipe2(O_NONBLOCK);
    t.fcntl(rd, F_GETPIPE_SZ, 0, "F_GETPIPE_SZ");
    const std::pair<unsigned long, const char*> sizes[] = {
        {0, "0"},
        {1, "1"},
        {4096, "4096"},
        {4097, "4097"},
        {100000, "100000"},
        {1UL << 20, "1M"},
        {(1UL << 20) + 1, "1M+1"},
        {1UL << 31, "2^31"},
        {(1UL << 31) + 1, "2^31+1"},
        {0xffffffffUL, "0xffffffff"},
        {(1UL << 32) + 8192, "2^32+8192"},
        {65536, "65536"}};
    for (auto [v, d] : sizes) {
      t.fcntl(wr, F_SETPIPE_SZ, v, (std::string("F_SETPIPE_SZ,") + d).c_str());
      t.fcntl(rd, F_GETPIPE_SZ, 0, "F_GETPIPE_SZ");
    }
  });
  EXPECT_LINUX_SEQ(tr, {"fcntl(fd0,F_GETPIPE_SZ) = 65536", "fcntl(fd1,F_SETPIPE_SZ,0) = 4096",
                        "fcntl(fd1,F_SETPIPE_SZ,4097) = 8192", "fcntl(fd1,F_SETPIPE_SZ,100000) = 131072",
                        "fcntl(fd1,F_SETPIPE_SZ,2^31+1) = -1 EINVAL", "fcntl(fd0,F_GETPIPE_SZ) = 65536"});
}

TEST(PipeSize, CapacityAndReadiness) {
  auto tr = conf::surface_differential([](ST& t) {
    auto [rd, wr] = t.pipe2(O_NONBLOCK);
    int ep = t.epoll_create1();
    t.ctl(ep, EPOLL_CTL_ADD, wr, EPOLLOUT | EPOLLET, 1);
    t.wait(ep, 4, 0);
    // Larger: a big write takes the whole new capacity.
    t.fcntl(wr, F_SETPIPE_SZ, 1 << 20, "F_SETPIPE_SZ,1M");
    t.write_bytes(wr, 3 << 20);
    t.ioctl_int(rd, FIONREAD, "FIONREAD");
    t.poll({{wr, POLLOUT}, {rd, POLLIN}}, 0);
    t.wait(ep, 4, 0);
    // Shrinking below what is in use: EBUSY; the buffers count, not bytes.
    t.fcntl(wr, F_SETPIPE_SZ, 65536, "F_SETPIPE_SZ,64K");
    drain(t, rd, "1M");
    t.wait(ep, 4, 0);
    for (int i = 0; i < 3; ++i) t.write_bytes(wr, 4096, static_cast<char>('a' + i));
    t.fcntl(wr, F_SETPIPE_SZ, 8192, "F_SETPIPE_SZ,8K");
    t.fcntl(wr, F_SETPIPE_SZ, 16384, "F_SETPIPE_SZ,16K");
    t.write_bytes(wr, 8192, 'd');
    t.write_bytes(wr, 1, 'e');
    t.ioctl_int(rd, FIONREAD, "FIONREAD");
    char buf[5 * 4096];
    const ssize_t n = t.api.read(rd, buf, sizeof buf);
    std::string order;
    for (ssize_t i = 0; i < n; i += 4096) order += buf[i];
    t.log("read all = " + std::to_string(n) + " order " + order);
    // One page: full after one buffer, even with room in it.
    t.fcntl(wr, F_SETPIPE_SZ, 1, "F_SETPIPE_SZ,1");
    t.write_bytes(wr, 100);
    t.write_bytes(wr, 100);
    t.write_bytes(wr, 5000);
    t.poll({{wr, POLLOUT}}, 0);
    t.read(rd, 10);
    t.poll({{wr, POLLOUT}}, 0);
    t.wait(ep, 4, 0);
    // Growing a full pipe makes room: the writers are woken.
    t.fcntl(wr, F_SETPIPE_SZ, 8192, "F_SETPIPE_SZ,8K");
    t.poll({{wr, POLLOUT}}, 0);
    t.wait(ep, 4, 0);
    drain(t, rd, "small");
  });
  EXPECT_LINUX_SEQ(tr, {"fcntl(fd1,F_SETPIPE_SZ,1M) = 1048576", "write(fd1,3145728) = 1048576",
                        "ioctl(fd0,FIONREAD) = 0 value=1048576", "fcntl(fd1,F_SETPIPE_SZ,64K) = -1 EBUSY",
                        "fcntl(fd1,F_SETPIPE_SZ,8K) = -1 EBUSY", "read all = 16384 order abcd"});
}

TEST(PipeSize, Packets) {
  auto tr = conf::surface_differential([](ST& t) {
    auto [rd, wr] = t.pipe2(O_NONBLOCK | O_DIRECT);
    t.fcntl(wr, F_SETPIPE_SZ, 8192, "F_SETPIPE_SZ,8K");
    t.write_bytes(wr, 10);
    t.write_bytes(wr, 20);
    t.write_bytes(wr, 30);
    t.fcntl(wr, F_SETPIPE_SZ, 4096, "F_SETPIPE_SZ,4K");
    t.read(rd, 100);
    t.fcntl(wr, F_SETPIPE_SZ, 4096, "F_SETPIPE_SZ,4K");
    t.read(rd, 100);
    t.read(rd, 100);
  });
  EXPECT_LINUX_SEQ(tr, {"write(fd1,30) = -1 EAGAIN", "fcntl(fd1,F_SETPIPE_SZ,4K) = -1 EBUSY", "read(fd0,100) = 10",
                        "fcntl(fd1,F_SETPIPE_SZ,4K) = 4096", "read(fd0,100) = 20"});
}

// A reader and a writer run while a third thread resizes the pipe back and
// forth: every byte arrives once, in order (the writer sends a counter).
TEST(PipeSize, ResizeRacingReaderAndWriter) {
  auto tr = conf::surface_differential([](ST& t) {
    auto [rd, wr] = t.pipe();
    const uepoll_test::Api& api = t.api;
    const auto& sa = t.sa;
    constexpr uint32_t kWords = 1 << 19;  // 2 MiB
    std::atomic<bool> done{false};
    std::thread writer([&, wr = wr] {
      std::vector<uint32_t> chunk(1500);
      uint32_t next = 0;
      while (next < kWords) {
        size_t n = 0;
        while (n < chunk.size() && next < kWords) chunk[n++] = next++;
        const char* p = reinterpret_cast<const char*>(chunk.data());
        size_t left = n * 4;
        while (left) {
          const ssize_t w = api.write(wr, p, left);
          if (w <= 0) return;
          p += w;
          left -= static_cast<size_t>(w);
        }
      }
    });
    std::thread resizer([&, wr = wr] {
      const unsigned long sizes[] = {4096, 1 << 20, 8192, 65536, 16384, 262144};
      for (int i = 0; !done.load(); ++i) {
        sa.fcntl(wr, F_SETPIPE_SZ, sizes[i % 6]);
        std::this_thread::yield();
      }
    });
    uint32_t expect = 0;
    bool in_order = true;
    std::vector<char> buf(70000);
    size_t have = 0;
    while (expect < kWords) {
      const ssize_t n = api.read(rd, buf.data() + have, buf.size() - have);
      if (n <= 0) break;
      have += static_cast<size_t>(n);
      size_t i = 0;
      for (; i + 4 <= have; i += 4) {
        uint32_t v;
        memcpy(&v, buf.data() + i, 4);
        if (v != expect++) in_order = false;
      }
      memmove(buf.data(), buf.data() + i, have - i);
      have -= i;
    }
    done.store(true);
    writer.join();
    resizer.join();
    t.log("received " + std::to_string(expect) + " words" + (in_order ? " in order" : " OUT OF ORDER"));
  });
  EXPECT_LINUX_SEQ(tr, {"received 524288 words in order"});
}

}  // namespace
