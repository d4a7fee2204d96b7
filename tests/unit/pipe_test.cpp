// pipe_test.cpp - pipe/pipe2: flags, directions, Linux's 16 x 4096 ring
// (byte counts of filling it with small, page and odd-sized writes, merging
// into the last page, PIPE_BUF atomicity, partial large writes), EOF, EPIPE
// with SIGPIPE, poll masks, O_DIRECT packets, the wakeup policy of
// fs/pipe.c seen through EPOLLET, and blocking reads/writes.  Every test
// runs on a kernel pipe and on a uepoll one with the same expectations.
#include "unit/unit_common.h"

#include <uepoll/testing.h>  // fail_alloc_after, uep_debug_*; includes tuning.h

#include <atomic>
#include <cstring>
#include <mutex>
#include <fcntl.h>
#include <string>

namespace {

using unit::mask;

class Pipe : public unit::ObjTest {
 protected:
  void SetUp() override {
    ASSERT_EQ(api().pipe2(p_, O_NONBLOCK), 0);
  }
  void TearDown() override {
    if (p_[0] >= 0) api().close(p_[0]);
    if (p_[1] >= 0) api().close(p_[1]);
  }
  long wr(size_t n, char c = 'x') {
    std::string s(n, c);
    return api().write(p_[1], s.data(), n);
  }
  long rd(size_t n, std::string* out = nullptr) {
    std::string s(n, '\0');
    long r = api().read(p_[0], s.data(), n);
    if (out) *out = r > 0 ? s.substr(0, static_cast<size_t>(r)) : "";
    return r;
  }
  void close_end(int i) {
    api().close(p_[i]);
    p_[i] = -1;
  }
  int p_[2] = {-1, -1};
};
UNIT_INSTANTIATE(Pipe);

constexpr uint32_t kRd = POLLIN | POLLRDNORM;
constexpr uint32_t kWr = POLLOUT | POLLWRNORM;

TEST_P(Pipe, CreateFlags) {
  int q[2];
  EXPECT_EQ(api().pipe2(q, O_RDWR), -1);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(api().pipe2(q, O_APPEND), -1);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(api().pipe2(q, O_EXCL), -1);  // O_NOTIFICATION_PIPE: no CONFIG_WATCH_QUEUE here
  EXPECT_EQ(errno, ENOPKG);
  EXPECT_EQ(api().pipe2(nullptr, 0), -1);
  EXPECT_EQ(errno, EFAULT);
  EXPECT_EQ(api().pipe2(nullptr, O_RDWR), -1);  // flags are checked first
  EXPECT_EQ(errno, EINVAL);
  ASSERT_EQ(api().pipe2(q, O_CLOEXEC | O_NONBLOCK | O_DIRECT), 0);
  EXPECT_EQ(q[1], q[0] + 1);  // lowest free, read end first
  api().close(q[0]);
  api().close(q[1]);
  ASSERT_EQ(api().pipe(q), 0);
  api().close(q[0]);
  api().close(q[1]);
}

TEST_P(Pipe, Directions) {
  char c = 'a';
  EXPECT_EQ(api().write(p_[0], &c, 1), -1);
  EXPECT_EQ(errno, EBADF);
  EXPECT_EQ(api().read(p_[1], &c, 1), -1);
  EXPECT_EQ(errno, EBADF);
  EXPECT_EQ(mask(api(), p_[0]), 0u);
  EXPECT_EQ(mask(api(), p_[1]), kWr);
  EXPECT_EQ(api().write(p_[1], &c, 0), 0);
  EXPECT_EQ(api().read(p_[0], &c, 0), 0);
  EXPECT_EQ(rd(1), -1);
  EXPECT_EQ(errno, EAGAIN);
}

TEST_P(Pipe, FillWithOneByteWrites) {
  long total = 0;
  while (wr(1) == 1) total++;
  EXPECT_EQ(errno, EAGAIN);
  EXPECT_EQ(total, 65536);  // small writes merge into the last page
  EXPECT_EQ(mask(api(), p_[1]), 0u);
  EXPECT_EQ(mask(api(), p_[0]), kRd);
  EXPECT_EQ(rd(4095), 4095);
  EXPECT_EQ(mask(api(), p_[1]), 0u);  // the first page is not free yet
  EXPECT_EQ(rd(1), 1);
  EXPECT_EQ(mask(api(), p_[1]), kWr);  // one slot free again
  EXPECT_EQ(wr(1), 1);
  EXPECT_EQ(wr(4096), -1);  // the freed slot took that byte: the ring is full again
  EXPECT_EQ(errno, EAGAIN);
}

TEST_P(Pipe, FillWithPageWrites) {
  int n = 0;
  while (wr(4096) == 4096) n++;
  EXPECT_EQ(n, 16);
  EXPECT_EQ(wr(1), -1);  // every page is full: nothing to merge into
  EXPECT_EQ(errno, EAGAIN);
  EXPECT_EQ(rd(4096), 4096);
  EXPECT_EQ(mask(api(), p_[1]), kWr);
  EXPECT_EQ(wr(4096), 4096);
}

TEST_P(Pipe, MergeAndAtomicity) {
  for (int i = 0; i < 16; ++i) ASSERT_EQ(wr(4000), 4000);  // 4000+4000 > 4096: a page each
  EXPECT_EQ(mask(api(), p_[1]), 0u);
  EXPECT_EQ(wr(200), -1);  // <= PIPE_BUF: all or nothing (96 bytes of room)
  EXPECT_EQ(errno, EAGAIN);
  EXPECT_EQ(wr(96), 96);   // fits the last page exactly
  EXPECT_EQ(wr(1), -1);
  EXPECT_EQ(errno, EAGAIN);
}

TEST_P(Pipe, PartialLargeWrite) {
  EXPECT_EQ(wr(10), 10);
  // 70000 & 4095 = 368 bytes merge into the first page, then 15 pages.
  EXPECT_EQ(wr(70000), 368 + 15 * 4096);
  EXPECT_EQ(wr(70000), -1);
  EXPECT_EQ(errno, EAGAIN);
  std::string got;
  EXPECT_EQ(rd(100000, &got), 10 + 368 + 15 * 4096);
}

TEST_P(Pipe, DataOrderAcrossPages) {
  std::string all;
  for (int i = 0; i < 40; ++i) {
    std::string s(static_cast<size_t>(100 + i * 37), static_cast<char>('a' + i % 26));
    ASSERT_EQ(api().write(p_[1], s.data(), s.size()), static_cast<long>(s.size()));
    all += s;
  }
  std::string got, part;
  while (rd(3000, &part) > 0) got += part;
  EXPECT_EQ(got, all);
}

TEST_P(Pipe, EofAndHup) {
  ASSERT_EQ(wr(5), 5);
  close_end(1);
  EXPECT_EQ(mask(api(), p_[0]), kRd | POLLHUP);
  EXPECT_EQ(rd(3), 3);
  EXPECT_EQ(rd(10), 2);
  EXPECT_EQ(mask(api(), p_[0]), static_cast<uint32_t>(POLLHUP));
  EXPECT_EQ(rd(10), 0);  // EOF, not EAGAIN
  EXPECT_EQ(rd(10), 0);
}

TEST_P(Pipe, EpipeAndSigpipe) {
  unit::SigpipeCatcher sig;
  ASSERT_EQ(wr(5), 5);
  close_end(0);
  EXPECT_EQ(mask(api(), p_[1]), kWr | POLLERR);
  EXPECT_EQ(wr(1), -1);
  EXPECT_EQ(errno, EPIPE);
  EXPECT_TRUE(sig.take());
  EXPECT_EQ(wr(0), 0);  // a null write succeeds before the reader check
  EXPECT_FALSE(sig.take());
}

TEST_P(Pipe, DirectPackets) {
  int q[2];
  ASSERT_EQ(api().pipe2(q, O_DIRECT | O_NONBLOCK), 0);
  ASSERT_EQ(api().write(q[1], "abc", 3), 3);
  ASSERT_EQ(api().write(q[1], "de", 2), 2);
  char b[16];
  EXPECT_EQ(api().read(q[0], b, 2), 2);  // the rest of the packet is dropped
  EXPECT_EQ(std::string(b, 2), "ab");
  EXPECT_EQ(api().read(q[0], b, 16), 2);
  EXPECT_EQ(std::string(b, 2), "de");
  int n = 0;
  while (api().write(q[1], "x", 1) == 1) n++;
  EXPECT_EQ(n, 16);  // one packet per slot: no merging
  api().close(q[0]);
  api().close(q[1]);
}

// fs/pipe.c wakeup policy, observable through EPOLLET.
TEST_P(Pipe, EdgeTriggeredWakeups) {
  unit::Ep ep(api());
  ASSERT_EQ(ep.add(p_[0], EPOLLIN | EPOLLET, 0), 0);
  ASSERT_EQ(ep.add(p_[1], EPOLLOUT | EPOLLET, 1), 0);
  EXPECT_EQ(ep.wait(0).size(), 1u);  // the write end is writable
  EXPECT_EQ(ep.wait(0).size(), 0u);
  // Every write is an edge for the reader (kselftest epoll66), even when
  // data was already there; a read of a non-full pipe wakes no writer.
  ASSERT_EQ(wr(1), 1);
  auto e = ep.wait(0);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].data.u64, 0u);
  ASSERT_EQ(wr(1), 1);
  EXPECT_EQ(ep.wait(0).size(), 1u);
  EXPECT_EQ(rd(1), 1);
  EXPECT_EQ(ep.wait(0).size(), 0u);
  // Fill it; a write that fails with EAGAIN still wakes the reader
  // ("epoll nonsensically wants a wakeup").
  while (wr(4096) > 0) {
  }
  ep.wait(0);
  EXPECT_EQ(wr(1), -1);
  e = ep.wait(0);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].data.u64, 0u);
  // Freeing a slot of a full pipe wakes the writer; later reads do not.
  std::string got;
  ASSERT_GT(rd(4096, &got), 0);
  e = ep.wait(0);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].data.u64, 1u);
  ASSERT_GT(rd(4096), 0);
  EXPECT_EQ(ep.wait(0).size(), 0u);
  // Closing the writer wakes the reader (HUP).
  while (rd(65536) > 0) {
  }
  close_end(1);
  e = ep.wait(0);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].events, static_cast<uint32_t>(EPOLLHUP));
}

TEST_P(Pipe, ReaderCloseWakesWriter) {
  unit::Ep ep(api());
  ASSERT_EQ(ep.add(p_[1], EPOLLOUT | EPOLLET, 1), 0);
  EXPECT_EQ(ep.wait(0).size(), 1u);
  close_end(0);
  auto e = ep.wait(0);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].events, static_cast<uint32_t>(EPOLLOUT | EPOLLERR));
}

TEST_P(Pipe, BlockingReadWokenByWrite) {
  int q[2];
  ASSERT_EQ(api().pipe(q), 0);
  std::thread t([&] {
    unit::sleep_ms(50);
    api().write(q[1], "hello", 5);
  });
  char b[16];
  const long long t0 = unit::now_ms();
  EXPECT_EQ(api().read(q[0], b, sizeof b), 5);
  EXPECT_GE(unit::now_ms() - t0, 30);
  t.join();
  std::thread t2([&] {
    unit::sleep_ms(50);
    api().close(q[1]);
  });
  EXPECT_EQ(api().read(q[0], b, sizeof b), 0);  // woken by the writer's close: EOF
  t2.join();
  api().close(q[0]);
}

TEST_P(Pipe, BlockingWriteCompletesAcrossReads) {
  int q[2];
  ASSERT_EQ(api().pipe(q), 0);
  constexpr size_t kTotal = 300000;
  std::string data(kTotal, '\0');
  for (size_t i = 0; i < kTotal; ++i) data[i] = static_cast<char>(i * 7 + i / 4096);
  long written = 0;
  std::thread t([&] { written = api().write(q[1], data.data(), kTotal); });
  std::string got;
  char b[5000];
  while (got.size() < kTotal) {
    long r = api().read(q[0], b, sizeof b);
    ASSERT_GT(r, 0);
    got.append(b, static_cast<size_t>(r));
  }
  t.join();
  EXPECT_EQ(written, static_cast<long>(kTotal));  // a blocking write is never partial
  EXPECT_EQ(got, data);
  api().close(q[0]);
  api().close(q[1]);
}

TEST_P(Pipe, BlockingWriterGetsEpipeWhenReaderCloses) {
  int q[2];
  ASSERT_EQ(api().pipe(q), 0);
  unit::SigpipeCatcher sig;
  std::string big(65536, 'z');
  ASSERT_EQ(api().write(q[1], big.data(), big.size()), 65536);
  std::thread t([&] {
    unit::sleep_ms(50);
    api().close(q[0]);
  });
  EXPECT_EQ(api().write(q[1], "a", 1), -1);
  EXPECT_EQ(errno, EPIPE);
  EXPECT_TRUE(sig.take());
  t.join();
  api().close(q[1]);
}

// Several writers and readers on one blocking pipe: writes of PIPE_BUF or
// less are atomic, so every 512-byte record arrives whole, exactly once.
TEST_P(Pipe, ConcurrentRecordsStayWhole) {
  int q[2];
  ASSERT_EQ(api().pipe(q), 0);
  constexpr int kWriters = 3, kReaders = 2, kEach = 600, kRec = 512;
  std::vector<std::thread> ts;
  for (int w = 0; w < kWriters; ++w)
    ts.emplace_back([&, w] {
      char rec[kRec];
      for (int i = 0; i < kEach; ++i) {
        std::memset(rec, 'A' + w, kRec);
        std::memcpy(rec, &i, sizeof i);
        ASSERT_EQ(api().write(q[1], rec, kRec), kRec);
      }
    });
  std::atomic<int> bad{0};
  std::vector<std::vector<int>> seen(kWriters, std::vector<int>(kEach, 0));
  std::mutex mu;
  std::atomic<int> records{0};
  for (int r = 0; r < kReaders; ++r)
    ts.emplace_back([&] {
      char rec[kRec];
      for (;;) {
        long n = api().read(q[0], rec, kRec);
        if (n == 0) return;  // EOF
        if (n != kRec) {
          bad++;
          return;
        }
        int i;
        std::memcpy(&i, rec, sizeof i);
        const int w = rec[kRec - 1] - 'A';
        for (int k = sizeof i; k < kRec; ++k)
          if (rec[k] != rec[kRec - 1]) bad++;
        if (w < 0 || w >= kWriters || i < 0 || i >= kEach) {
          bad++;
          continue;
        }
        std::lock_guard<std::mutex> l(mu);
        seen[static_cast<size_t>(w)][static_cast<size_t>(i)]++;
        records++;
      }
    });
  for (int w = 0; w < kWriters; ++w) ts[static_cast<size_t>(w)].join();
  api().close(q[1]);  // readers see EOF once drained
  for (size_t i = kWriters; i < ts.size(); ++i) ts[i].join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(records.load(), kWriters * kEach);
  for (auto& v : seen)
    for (int c : v) EXPECT_EQ(c, 1);
  api().close(q[0]);
}

TEST(PipeUepoll, AllocationFailureLeavesNoDescriptors) {
  int before = uep_eventfd(0, 0);
  ASSERT_GE(before, 0);
  uep_close(before);
  for (long n = 0; n < 3; ++n) {
    ASSERT_EQ(uep_tuning_set("fail_alloc_after", n), 0);
    int q[2] = {-1, -1};
    int r = uep_pipe(q);
    int e = errno;
    uep_tuning_set("fail_alloc_after", -1);
    EXPECT_EQ(r, -1) << n;
    EXPECT_EQ(e, ENOMEM) << n;
  }
  int q[2];
  ASSERT_EQ(uep_pipe(q), 0);
  EXPECT_EQ(q[0], before);  // nothing leaked in the table
  uep_close(q[0]);
  uep_close(q[1]);
}

}  // namespace
