// unix_dgram_test.cpp - AF_UNIX SOCK_DGRAM and SOCK_SEQPACKET pairs with
// threads: a blocking receive woken by a send or by shutdown, a blocking
// send woken when the reader brings the charge down to a quarter, a blocked sender failing when the
// peer closes, and readers and writers on one pair exchanging messages
// with no lost wakeup and no torn or merged message.  Every test runs on a
// kernel pair and on a uepoll pair, for both types, with the same
// expectations (the differential traces are in
// tests/conformance/surface_dgram_test.cpp).
#include "unit/unit_common.h"

#include <atomic>
#include <fcntl.h>
#include <cstring>
#include <string>
#include <sys/socket.h>
#include <vector>

namespace {

class Dgram : public unit::ObjTest {
 protected:
  void pair(int type, int sv[2]) { ASSERT_EQ(api().socketpair(AF_UNIX, type, 0, sv), 0); }
  void close2(int sv[2]) {
    api().close(sv[0]);
    api().close(sv[1]);
  }
};
UNIT_INSTANTIATE(Dgram);

constexpr int kTypes[] = {SOCK_DGRAM, SOCK_SEQPACKET};

TEST_P(Dgram, BlockingRecvWokenBySendAndShutdown) {
  for (int type : kTypes) {
    SCOPED_TRACE(type);
    int sv[2];
    pair(type, sv);
    std::thread t([&] {
      unit::sleep_ms(50);
      api().write(sv[1], "ping", 4);
    });
    char b[16];
    const long long t0 = unit::now_ms();
    EXPECT_EQ(api().read(sv[0], b, 2), 2);  // one message, cut
    EXPECT_GE(unit::now_ms() - t0, 30);
    t.join();
    // Woken by a shutdown: the peer's SHUT_WR ends a seqpacket receive,
    // our own SHUT_RD from another thread ends either.
    std::thread t2([&] {
      unit::sleep_ms(50);
      if (type == SOCK_SEQPACKET)
        api().shutdown(sv[1], SHUT_WR);
      else
        api().shutdown(sv[0], SHUT_RD);
    });
    EXPECT_EQ(api().read(sv[0], b, sizeof b), 0);
    t2.join();
    close2(sv);
  }
}

TEST_P(Dgram, BlockingSendWaitsForRoom) {
  for (int type : kTypes) {
    SCOPED_TRACE(type);
    int sv[2];
    pair(type, sv);
    std::string m(60000, 'f');
    int sent = 0;
    while (true) {  // fill without blocking
      auto fcntl_ = is_uepoll() ? [](int fd, int cmd, int arg) { return uep_fcntl(fd, cmd, arg); }
                                : [](int fd, int cmd, int arg) { return ::fcntl(fd, cmd, arg); };
      const int fl = fcntl_(sv[0], F_GETFL, 0);
      fcntl_(sv[0], F_SETFL, fl | O_NONBLOCK);
      long r = api().write(sv[0], m.data(), m.size());
      fcntl_(sv[0], F_SETFL, fl);
      if (r < 0) {
        EXPECT_EQ(errno, EAGAIN);
        break;
      }
      ++sent;
    }
    EXPECT_EQ(sent, 4);  // 61696 bytes charged each against 212992
    // The blocked sender is woken only when the reader brings its charge
    // down to a quarter of sk_sndbuf (unix_write_space), not at the first
    // message that makes room: three reads leave it asleep, the fourth
    // wakes it.
    std::atomic<bool> done{false};
    std::atomic<bool> early{false};
    std::thread t([&] {
      unit::sleep_ms(50);
      std::vector<char> b(70000);
      for (int i = 0; i < 3; ++i) api().read(sv[1], b.data(), b.size());
      unit::sleep_ms(100);
      early = done.load();
      api().read(sv[1], b.data(), b.size());
    });
    const long long t0 = unit::now_ms();
    EXPECT_EQ(api().write(sv[0], m.data(), m.size()), 60000);
    done = true;
    EXPECT_GE(unit::now_ms() - t0, 100);
    t.join();
    EXPECT_FALSE(early.load());
    close2(sv);
  }
}

TEST_P(Dgram, BlockedSenderFailsWhenPeerCloses) {
  for (int type : kTypes) {
    SCOPED_TRACE(type);
    int sv[2];
    pair(type, sv);
    unit::SigpipeCatcher sig;
    std::string m(60000, 'g');
    for (int i = 0; i < 4; ++i) ASSERT_EQ(api().write(sv[0], m.data(), m.size()), 60000);
    std::thread t([&] {
      unit::sleep_ms(50);
      api().close(sv[1]);
    });
    // The close purges the peer's queue (room again), then the send finds
    // the peer gone; a seqpacket peer that died with unread messages left
    // ECONNRESET, which the send takes first.
    EXPECT_EQ(api().write(sv[0], m.data(), m.size()), -1);
    EXPECT_EQ(errno, type == SOCK_DGRAM ? ECONNREFUSED : ECONNRESET);
    EXPECT_FALSE(sig.take());
    t.join();
    api().close(sv[0]);
  }
}

// Two writers and two readers, blocking, on one pair: every message
// arrives once, whole (its length and its contents tell), none merged.
TEST_P(Dgram, ReadersAndWritersLoseNothing) {
  for (int type : kTypes) {
    SCOPED_TRACE(type);
    int sv[2];
    pair(type, sv);
    constexpr int kPerWriter = 3000;
    std::atomic<int> received{0}, bad{0};
    std::vector<std::thread> th;
    for (int w = 0; w < 2; ++w) {
      th.emplace_back([&, w] {
        std::vector<char> b(5000);
        for (int i = 0; i < kPerWriter; ++i) {
          const size_t len = static_cast<size_t>((i * 7 + w * 13) % 4000) + 8;
          std::memcpy(b.data(), &len, sizeof len);
          std::memset(b.data() + 8, 'a' + (static_cast<int>(len) % 26), len - 8);
          if (api().write(sv[0], b.data(), len) != static_cast<long>(len)) ++bad;
        }
      });
    }
    for (int r = 0; r < 2; ++r) {
      th.emplace_back([&] {
        std::vector<char> b(5000);
        for (;;) {
          long n = api().read(sv[1], b.data(), b.size());
          if (n == 0 && type == SOCK_SEQPACKET) break;  // the end marker below, or EOF
          if (n == 1) break;                            // the end marker
          size_t len = 0;
          std::memcpy(&len, b.data(), sizeof len);
          if (n < 8 || len != static_cast<size_t>(n)) {
            ++bad;
            continue;
          }
          for (size_t k = 8; k < len; ++k)
            if (b[k] != 'a' + (static_cast<int>(len) % 26)) {
              ++bad;
              break;
            }
          ++received;
        }
      });
    }
    th[0].join();
    th[1].join();
    api().write(sv[0], "e", 1);  // one end marker per reader
    api().write(sv[0], "e", 1);
    th[2].join();
    th[3].join();
    EXPECT_EQ(bad.load(), 0);
    EXPECT_EQ(received.load(), 2 * kPerWriter);
    close2(sv);
  }
}

}  // namespace
