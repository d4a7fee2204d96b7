// vclock_control_move_test.cpp - the virtual clock's control channel
// (uep_vclock_control_start) keeps serving while own_vacate
// (core/own_slot.h) moves its descriptors, as a program's dup2 onto their
// numbers does under the preload: the listening socket, a connected
// client's socket and the server's doorbell, each moved while the server
// sleeps in its poll on them.  After every round the connected client
// still gets its replies, a new client still connects, and nothing
// reaches the file installed at an old number.  Its own binary: the
// channel is started once per process.
#include "core/own_fds.h"
#include "core/own_slot.h"

#include <uepoll/uepoll.h>
#include <uepoll/vclock.h>

#include <gtest/gtest.h>

#include "vclock/control_client.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <fcntl.h>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

using control_client::cmd;
using control_client::connect_to;

std::vector<int> own_numbers() {
  std::vector<int> v;
  for (int n = uepoll::core::next_own(0); n >= 0; n = uepoll::core::next_own(n + 1)) v.push_back(n);
  return v;
}

TEST(VClockControlMove, ServesWhileItsDescriptorsMove) {
  ASSERT_EQ(uep_vclock_enable(UEP_VCLOCK_MANUAL), 0);
  char tmpl[] = "/tmp/uepoll-control-move-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);  // mode 0700
  const std::string dir = tmpl, path = dir + "/ctl";
  const std::vector<int> before = own_numbers();
  ASSERT_EQ(uep_vclock_control_start(path.c_str()), 0);
  const int c = connect_to(path);
  ASSERT_GE(c, 0);
  ASSERT_EQ(cmd(c, "mode"), "ok manual");  // accepted: the client's socket is the server's too
  int marker[2];
  ASSERT_EQ(pipe(marker), 0);
  int moves = 0;
  for (int round = 0; round < 50; ++round) {
    std::vector<int> taken;
    for (int n : own_numbers()) {
      if (std::find(before.begin(), before.end(), n) != before.end()) continue;
      const int r = uepoll::core::own_vacate(n);
      // A quitting client's socket may close between the listing and here:
      // no longer uepoll's, nothing to move.
      if (r == -EBUSY && !uepoll::core::is_own(n)) continue;
      ASSERT_EQ(r, 0) << "number " << n << ", round " << round;
      ++moves;
      ASSERT_FALSE(uepoll::core::is_own(n));
      ASSERT_EQ(::dup2(marker[1], n), n);  // the program's file at the old number
      taken.push_back(n);
    }
    ASSERT_EQ(cmd(c, "advance 1"), "ok " + std::to_string(UEP_VCLOCK_START_MONO + round + 1) + " " +
                                       std::to_string(UEP_VCLOCK_START_REALTIME + round + 1));
    const int d = connect_to(path);
    ASSERT_GE(d, 0);
    EXPECT_EQ(cmd(d, "mode"), "ok manual");
    EXPECT_EQ(cmd(d, "quit"), "ok bye");
    close(d);
    for (int n : taken) ::close(n);
  }
  // Three descriptors (listening socket, client, doorbell) each round;
  // more while a quitting client is still open when a round starts.
  EXPECT_GE(moves, 150);
  char buf[1];
  EXPECT_EQ(::read(marker[0], buf, 0), 0);
  ASSERT_EQ(fcntl(marker[0], F_SETFL, O_NONBLOCK), 0);
  EXPECT_EQ(::read(marker[0], buf, 1), -1) << "something wrote to a number given up";
  EXPECT_EQ(cmd(c, "quit"), "ok bye");
  close(c);
  close(marker[0]);
  close(marker[1]);
  uep_vclock_enable(UEP_VCLOCK_OFF);
  unlink(path.c_str());
  rmdir(dir.c_str());
}

}  // namespace
