// oob_stress_test.cpp - out-of-band data on a uepoll stream pair under
// concurrency (src/objects/socketpair_oob.cpp): a writer that marks some
// of its sends MSG_OOB, a reader, and a third thread that polls for
// EPOLLPRI, asks SIOCATMARK and takes the out-of-band byte, all at once.
// With SO_OOBINLINE every byte arrives, in order; without it every byte
// but the out-of-band ones arrives in order, and no out-of-band byte
// arrives twice.  Under TSan this is the race check of the paths.
#include "rel_common.h"

#include <gtest/gtest.h>

#include <atomic>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <thread>
#include <vector>

namespace {

#if defined(UEP_REL_TSAN) || defined(UEP_REL_ASAN)
constexpr int kSends = 3000;
#else
constexpr int kSends = 20000;
#endif
constexpr int kChunk = 7;     // bytes per send
constexpr int kOobEvery = 5;  // every fifth send ends with an out-of-band byte

// Byte i of the stream.
char stream_byte(long i) { return static_cast<char>('A' + i % 53); }

struct Outcome {
  long sent = 0, oob_sent = 0;
  std::vector<char> ordinary;  // what recv gave, in order
  long oob_taken = 0;          // bytes recv(MSG_OOB) gave
};

Outcome run(bool inline_oob) {
  Outcome r;
  int sv[2];
  EXPECT_EQ(uep_socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  const int on = 1;
  if (inline_oob) {
    EXPECT_EQ(uep_setsockopt(sv[1], SOL_SOCKET, SO_OOBINLINE, &on, sizeof on), 0);
  }
  std::atomic<bool> done{false};
  std::thread writer([&] {
    char buf[kChunk];
    for (int s = 0; s < kSends; ++s) {
      for (int k = 0; k < kChunk; ++k) buf[k] = stream_byte(r.sent + k);
      const bool oob = s % kOobEvery == kOobEvery - 1;
      const ssize_t n = uep_send(sv[0], buf, kChunk, oob ? MSG_OOB : 0);
      if (n != kChunk) {
        ADD_FAILURE() << "send " << s << " = " << n << " errno " << errno;
        break;
      }
      r.sent += n;
      r.oob_sent += oob;
    }
    uep_shutdown(sv[0], SHUT_WR);
  });
  std::thread urgent([&] {
    while (!done.load(std::memory_order_relaxed)) {
      struct pollfd p = {sv[1], POLLPRI, 0};
      if (uep_poll(&p, 1, 1) <= 0) continue;
      int at = 0;
      (void)uep_ioctl(sv[1], SIOCATMARK, &at);
      char c;
      const ssize_t n = uep_recv(sv[1], &c, 1, MSG_OOB);
      if (n == 1) ++r.oob_taken;
      else if (errno != EINVAL) ADD_FAILURE() << "recv(MSG_OOB) errno " << errno;
    }
  });
  char buf[256];
  for (;;) {
    const ssize_t n = uep_recv(sv[1], buf, sizeof buf, 0);
    if (n <= 0) {
      EXPECT_EQ(n, 0) << "errno " << errno;
      break;
    }
    r.ordinary.insert(r.ordinary.end(), buf, buf + n);
  }
  writer.join();
  done = true;
  urgent.join();
  uep_close(sv[0]);
  uep_close(sv[1]);
  return r;
}

TEST(OobStress, InlineEveryByteInOrder) {
  const Outcome r = run(true);
  ASSERT_EQ(static_cast<long>(r.ordinary.size()), r.sent);
  EXPECT_EQ(r.oob_taken, 0);
  for (long i = 0; i < r.sent; ++i)
    if (r.ordinary[static_cast<size_t>(i)] != stream_byte(i)) {
      ADD_FAILURE() << "byte " << i;
      break;
    }
}

// Every ordinary byte in order: the received stream is the sent one with
// some out-of-band bytes (the last byte of every fifth send) left out,
// each taken with MSG_OOB or passed over, never both.
TEST(OobStress, OrdinaryBytesInOrderOutOfBandOnce) {
  const Outcome r = run(false);
  const long missing = r.sent - static_cast<long>(r.ordinary.size());
  std::printf("out-of-band bytes: %ld sent, %ld taken with MSG_OOB, %ld passed over\n", r.oob_sent, r.oob_taken,
              missing - r.oob_taken);
  EXPECT_GE(missing, r.oob_taken);
  EXPECT_LE(missing, r.oob_sent);
  long i = 0;  // position in the sent stream
  for (char c : r.ordinary) {
    while (c != stream_byte(i)) {
      // Only an out-of-band position may be skipped.
      const bool oob_pos = (i / kChunk) % kOobEvery == kOobEvery - 1 && i % kChunk == kChunk - 1;
      if (!oob_pos || i >= r.sent) {
        ADD_FAILURE() << "byte " << i << " missing or out of order";
        return;
      }
      ++i;
    }
    ++i;
  }
}

}  // namespace
