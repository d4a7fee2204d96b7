// socketpair_test.cpp - AF_UNIX SOCK_STREAM socketpair: creation errno
// order, poll masks through every shutdown state and after close, EPIPE with
// SIGPIPE, ECONNRESET after the peer closed with unread data, Linux's flow
// control counts (skb truesize against sk_sndbuf, EPOLLOUT back at a
// quarter), the wakeups of af_unix.c seen through EPOLLET, and blocking
// reads/writes.  Every test runs on a kernel pair and on a uepoll pair with
// the same expectations; the few deliberate differences are uepoll-only
// tests at the end.
#include "unit/unit_common.h"

#include <uepoll/testing.h>  // fail_alloc_after, uep_debug_*; includes tuning.h

#include <cstring>
#include <fcntl.h>
#include <string>
#include <sys/socket.h>

namespace {

using unit::mask;

constexpr uint32_t kOut = POLLOUT | POLLWRNORM | POLLWRBAND;
constexpr uint32_t kIn = POLLIN | POLLRDNORM;

class Sock : public unit::ObjTest {
 protected:
  void SetUp() override { ASSERT_EQ(api().socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, s_), 0); }
  void TearDown() override {
    for (int& fd : s_)
      if (fd >= 0) api().close(fd);
  }
  long wr(int i, size_t n, char c = 'x') {
    std::string s(n, c);
    return api().write(s_[i], s.data(), n);
  }
  long rd(int i, size_t n, std::string* out = nullptr) {
    std::string s(n, '\0');
    long r = api().read(s_[i], s.data(), n);
    if (out) *out = r > 0 ? s.substr(0, static_cast<size_t>(r)) : "";
    return r;
  }
  void close_end(int i) {
    api().close(s_[i]);
    s_[i] = -1;
  }
  int s_[2] = {-1, -1};
};
UNIT_INSTANTIATE(Sock);

TEST_P(Sock, CreateErrors) {
  int sv[2];
  auto expect_err = [&](int d, int t, int p, int* v, int e) {
    EXPECT_EQ(api().socketpair(d, t, p, v), -1) << d << " " << t << " " << p;
    EXPECT_EQ(errno, e) << d << " " << t << " " << p;
  };
  expect_err(AF_UNIX, SOCK_STREAM | 0x100, 0, sv, EINVAL);    // unknown flag in type
  expect_err(AF_UNIX, SOCK_STREAM | 0x100, 0, nullptr, EINVAL);
  expect_err(AF_UNIX, SOCK_STREAM, 0, nullptr, EFAULT);       // before family checks
  expect_err(12345, SOCK_STREAM, 0, nullptr, EFAULT);
  expect_err(AF_UNIX, 0, 0, sv, ESOCKTNOSUPPORT);
  expect_err(AF_UNIX, SOCK_RDM, 0, sv, ESOCKTNOSUPPORT);
  expect_err(AF_UNIX, SOCK_PACKET, 0, sv, ESOCKTNOSUPPORT);
  expect_err(AF_UNIX, 12, 0, sv, EINVAL);                     // >= SOCK_MAX
  expect_err(AF_UNIX, SOCK_STREAM, 2, sv, EPROTONOSUPPORT);
  expect_err(AF_INET, SOCK_STREAM, 0, sv, EOPNOTSUPP);
  expect_err(AF_INET, SOCK_DGRAM, 0, sv, EOPNOTSUPP);
  expect_err(12345, SOCK_STREAM, 0, sv, EAFNOSUPPORT);
  ASSERT_EQ(api().socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, PF_UNIX, sv), 0);  // protocol PF_UNIX is fine
  api().close(sv[0]);
  api().close(sv[1]);
  ASSERT_EQ(api().socketpair(AF_LOCAL, SOCK_STREAM, 0, sv), 0);
  api().close(sv[0]);
  api().close(sv[1]);
}

TEST_P(Sock, DataAndMasks) {
  EXPECT_EQ(mask(api(), s_[0]), kOut);
  EXPECT_EQ(mask(api(), s_[1]), kOut);
  EXPECT_EQ(rd(0, 10), -1);
  EXPECT_EQ(errno, EAGAIN);
  EXPECT_EQ(wr(0, 3, 'a'), 3);
  EXPECT_EQ(wr(0, 2, 'b'), 2);
  EXPECT_EQ(mask(api(), s_[1]), kIn | kOut);
  std::string got;
  EXPECT_EQ(rd(1, 4, &got), 4);  // a stream: reads cross write boundaries
  EXPECT_EQ(got, "aaab");
  EXPECT_EQ(rd(1, 10, &got), 1);
  EXPECT_EQ(got, "b");
  EXPECT_EQ(mask(api(), s_[1]), kOut);
  EXPECT_EQ(api().read(s_[1], nullptr, 0), 0);
  EXPECT_EQ(api().write(s_[1], "", 0), 0);
}

TEST_P(Sock, ShutRd) {
  unit::SigpipeCatcher sig;
  ASSERT_EQ(wr(1, 4), 4);
  ASSERT_EQ(api().shutdown(s_[0], SHUT_RD), 0);
  EXPECT_EQ(mask(api(), s_[0]), kIn | POLLRDHUP | kOut);
  EXPECT_EQ(mask(api(), s_[1]), kOut);  // the peer just can't send
  EXPECT_EQ(rd(0, 10), 4);              // queued data is still read
  EXPECT_EQ(rd(0, 10), 0);
  EXPECT_EQ(wr(1, 1), -1);
  EXPECT_EQ(errno, EPIPE);
  EXPECT_TRUE(sig.take());
  EXPECT_EQ(wr(0, 1), 1);  // our sending side is open
  EXPECT_EQ(rd(1, 10), 1);
}

TEST_P(Sock, ShutWr) {
  unit::SigpipeCatcher sig;
  ASSERT_EQ(api().shutdown(s_[0], SHUT_WR), 0);
  EXPECT_EQ(mask(api(), s_[0]), kOut);  // still "writable" (prevents stuck sockets)
  EXPECT_EQ(mask(api(), s_[1]), kIn | POLLRDHUP | kOut);
  EXPECT_EQ(wr(0, 1), -1);
  EXPECT_EQ(errno, EPIPE);
  EXPECT_TRUE(sig.take());
  EXPECT_EQ(api().write(s_[0], "", 0), -1);  // even an empty write
  EXPECT_EQ(errno, EPIPE);
  EXPECT_TRUE(sig.take());
  EXPECT_EQ(rd(1, 10), 0);
  EXPECT_EQ(wr(1, 2), 2);
  EXPECT_EQ(rd(0, 10), 2);
}

TEST_P(Sock, ShutRdwrAndErrors) {
  ASSERT_EQ(api().shutdown(s_[0], SHUT_RDWR), 0);
  EXPECT_EQ(mask(api(), s_[0]), kIn | POLLRDHUP | POLLHUP | kOut);
  EXPECT_EQ(mask(api(), s_[1]), kIn | POLLRDHUP | POLLHUP | kOut);
  EXPECT_EQ(api().shutdown(s_[0], SHUT_RDWR), 0);  // again: fine
  EXPECT_EQ(api().shutdown(s_[0], 3), -1);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(api().shutdown(s_[0], -1), -1);
  EXPECT_EQ(errno, EINVAL);
  int e = api().eventfd(0, 0);
  EXPECT_EQ(api().shutdown(e, SHUT_RD), -1);
  EXPECT_EQ(errno, ENOTSOCK);
  api().close(e);
  EXPECT_EQ(api().shutdown(e, SHUT_RD), -1);
  EXPECT_EQ(errno, EBADF);
}

TEST_P(Sock, PeerClosed) {
  unit::SigpipeCatcher sig;
  ASSERT_EQ(wr(1, 3), 3);
  close_end(1);
  EXPECT_EQ(mask(api(), s_[0]), kIn | POLLRDHUP | POLLHUP | kOut);
  EXPECT_EQ(rd(0, 10), 3);
  EXPECT_EQ(rd(0, 10), 0);
  EXPECT_EQ(wr(0, 1), -1);
  EXPECT_EQ(errno, EPIPE);
  EXPECT_TRUE(sig.take());
}

TEST_P(Sock, PeerClosedWithUnreadDataResets) {
  ASSERT_EQ(wr(0, 3), 3);  // never read by s_[1]
  close_end(1);
  EXPECT_EQ(mask(api(), s_[0]), POLLERR | kIn | POLLRDHUP | POLLHUP | kOut);
  EXPECT_EQ(rd(0, 10), -1);
  EXPECT_EQ(errno, ECONNRESET);  // once
  EXPECT_EQ(mask(api(), s_[0]), kIn | POLLRDHUP | POLLHUP | kOut);
  EXPECT_EQ(rd(0, 10), 0);
}

TEST_P(Sock, FlowControlOneByte) {
  long n = 0;
  while (wr(0, 1) == 1) n++;
  EXPECT_EQ(errno, EAGAIN);
  EXPECT_EQ(n, 278);  // 768-byte truesize each against sk_sndbuf 212992
  EXPECT_EQ(mask(api(), s_[0]), 0u);
  long r = 0;
  while (!(mask(api(), s_[0]) & POLLOUT)) {
    ASSERT_EQ(rd(1, 1), 1);
    r++;
  }
  EXPECT_EQ(r, 209);  // writable again at a quarter of sk_sndbuf
}

TEST_P(Sock, FlowControlPages) {
  long n = 0;
  while (wr(0, 4096) == 4096) n++;
  EXPECT_EQ(n, 44);
  long r = 0;
  while (!(mask(api(), s_[0]) & POLLOUT)) {
    ASSERT_EQ(rd(1, 4096), 4096);
    r++;
  }
  EXPECT_EQ(r, 34);
}

TEST_P(Sock, LargeNonblockingWriteIsPartial) {
  std::string big(1 << 20, 'q');
  EXPECT_EQ(api().write(s_[0], big.data(), big.size()), 219264);  // 6 skbs of 36544
  EXPECT_EQ(api().write(s_[0], big.data(), big.size()), -1);
  EXPECT_EQ(errno, EAGAIN);
  std::string got;
  long total = 0;
  while (rd(1, 100000, &got) > 0) total += static_cast<long>(got.size());
  EXPECT_EQ(total, 219264);
}

// af_unix.c wakeups, observable through EPOLLET: each write wakes the
// reader; each consumed skb wakes its writer when the writer is writable.
TEST_P(Sock, EdgeTriggeredWakeups) {
  unit::Ep ep(api());
  ASSERT_EQ(ep.add(s_[0], EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET, 0), 0);
  ASSERT_EQ(ep.add(s_[1], EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET, 1), 0);
  EXPECT_EQ(ep.wait(0).size(), 2u);
  EXPECT_EQ(ep.wait(0).size(), 0u);
  ASSERT_EQ(wr(0, 1), 1);
  auto e = ep.wait(0);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].data.u64, 1u);
  EXPECT_EQ(e[0].events, static_cast<uint32_t>(EPOLLIN | EPOLLOUT));
  ASSERT_EQ(wr(0, 1), 1);  // already readable: another edge
  EXPECT_EQ(ep.wait(0).size(), 1u);
  ASSERT_EQ(rd(1, 1), 1);  // consumes one skb: the writer gets EPOLLOUT
  e = ep.wait(0);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].data.u64, 0u);
  EXPECT_EQ(e[0].events, static_cast<uint32_t>(EPOLLOUT));
  ASSERT_EQ(rd(1, 10), 1);  // the second one-byte skb
  EXPECT_EQ(ep.wait(0).size(), 1u);
  ASSERT_EQ(wr(0, 10), 10);
  ep.wait(0);
  ASSERT_EQ(rd(1, 5), 5);  // a partly read skb stays queued: no wakeup
  EXPECT_EQ(ep.wait(0).size(), 0u);
  // shutdown wakes both sides.
  ASSERT_EQ(api().shutdown(s_[1], SHUT_WR), 0);
  e = ep.wait(0);
  ASSERT_EQ(e.size(), 2u);
  // close wakes the peer; s_[1] dies with 5 unread bytes: ECONNRESET.
  close_end(1);
  e = ep.wait(0);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].data.u64, 0u);
  EXPECT_EQ(e[0].events, static_cast<uint32_t>(EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLHUP | EPOLLERR));
}

TEST_P(Sock, WriterWokenAtQuarter) {
  unit::Ep ep(api());
  while (wr(0, 4096) == 4096) {
  }
  ASSERT_EQ(ep.add(s_[0], EPOLLOUT | EPOLLET, 0), 0);
  EXPECT_EQ(ep.wait(0).size(), 0u);
  for (int i = 0; i < 33; ++i) ASSERT_EQ(rd(1, 4096), 4096);
  EXPECT_EQ(ep.wait(0).size(), 0u);  // above a quarter: no write-space wakeup
  ASSERT_EQ(rd(1, 4096), 4096);
  EXPECT_EQ(ep.wait(0).size(), 1u);
}

TEST_P(Sock, BlockingReadWokenByWrite) {
  int sv[2];
  ASSERT_EQ(api().socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  std::thread t([&] {
    unit::sleep_ms(50);
    api().write(sv[1], "ping", 4);
  });
  char b[16];
  const long long t0 = unit::now_ms();
  EXPECT_EQ(api().read(sv[0], b, sizeof b), 4);
  EXPECT_GE(unit::now_ms() - t0, 30);
  t.join();
  std::thread t2([&] {
    unit::sleep_ms(50);
    api().shutdown(sv[1], SHUT_WR);
  });
  EXPECT_EQ(api().read(sv[0], b, sizeof b), 0);  // woken by the peer's shutdown
  t2.join();
  api().close(sv[0]);
  api().close(sv[1]);
}

TEST_P(Sock, BlockingWriteStreamsAll) {
  int sv[2];
  ASSERT_EQ(api().socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  constexpr size_t kTotal = 1 << 20;
  std::string data(kTotal, '\0');
  for (size_t i = 0; i < kTotal; ++i) data[i] = static_cast<char>(i ^ (i >> 9));
  long written = 0;
  std::thread t([&] { written = api().write(sv[0], data.data(), kTotal); });
  std::string got;
  char b[7000];
  while (got.size() < kTotal) {
    long r = api().read(sv[1], b, sizeof b);
    ASSERT_GT(r, 0);
    got.append(b, static_cast<size_t>(r));
  }
  t.join();
  EXPECT_EQ(written, static_cast<long>(kTotal));
  EXPECT_EQ(got, data);
  api().close(sv[0]);
  api().close(sv[1]);
}

TEST_P(Sock, BlockedWriterFailsWhenPeerCloses) {
  int sv[2];
  ASSERT_EQ(api().socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  unit::SigpipeCatcher sig;
  std::string big(300000, 'w');
  std::thread t([&] {
    unit::sleep_ms(50);
    api().close(sv[1]);
  });
  // Fills the socket, sleeps, and is woken by the close: what it had sent.
  long r = api().write(sv[0], big.data(), big.size());
  EXPECT_EQ(r, 6 * 36544);
  t.join();
  api().close(sv[0]);
}

// ---- uepoll-only: documented differences ---------------------------------

TEST(SockUepoll, AllocationFailure) {
  int sv[2];
  ASSERT_EQ(uep_tuning_set("fail_alloc_after", 0), 0);
  int r = uep_socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
  int e = errno;
  uep_tuning_set("fail_alloc_after", -1);
  EXPECT_EQ(r, -1);
  EXPECT_EQ(e, ENOMEM);
  ASSERT_EQ(uep_socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
  // A write whose skb cannot be allocated fails with ENOBUFS (sock_alloc_send_pskb).
  ASSERT_EQ(uep_tuning_set("fail_alloc_after", 0), 0);
  long w = uep_write(sv[0], "x", 1);
  e = errno;
  uep_tuning_set("fail_alloc_after", -1);
  EXPECT_EQ(w, -1);
  EXPECT_EQ(e, ENOBUFS);
  EXPECT_EQ(uep_write(sv[0], "x", 1), 1);
  uep_close(sv[0]);
  uep_close(sv[1]);
}

}  // namespace
