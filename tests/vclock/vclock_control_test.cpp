// vclock_control_test.cpp - the control channel (uep_vclock_control_start)
// in-process, so that it also runs under ASan and TSan: its protocol, and
// hostile input (garbage, NUL bytes, over-long lines, huge and negative
// numbers, a partial line and a disconnect, more clients than served, a
// client that never reads) gets error replies and leaks no descriptor;
// and the bad specs.  One test: the channel is started once per process.
#include <uepoll/uepoll.h>
#include <uepoll/vclock.h>

#include <gtest/gtest.h>

#include "vclock/control_client.h"

#include <cerrno>
#include <cstdlib>
#include <dirent.h>
#include <string>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <vector>

namespace {

using control_client::cmd;
using control_client::connect_to;
using control_client::reply;

int fd_count() {
  int n = 0;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (readdir(d)) ++n;
    closedir(d);
  }
  return n;
}

TEST(VClockControl, ProtocolAndHostileInput) {
  ASSERT_EQ(uep_vclock_enable(UEP_VCLOCK_MANUAL), 0);
  char tmpl[] = "/tmp/uepoll-control-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);  // mode 0700
  const std::string dir = tmpl, path = dir + "/ctl";
  // Bad specs first (the channel is not started by them).
  errno = 0;
  EXPECT_EQ(uep_vclock_control_start(""), -1);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(uep_vclock_control_start("fd:x"), -1);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(uep_vclock_control_start("fd:99999"), -1);
  EXPECT_EQ(errno, EBADF);
  EXPECT_EQ(uep_vclock_control_start("fd:0"), -1);  // not a socket (a pipe or terminal)
  const std::string open_dir = dir + "/open";
  ASSERT_EQ(mkdir(open_dir.c_str(), 0755), 0);
  ASSERT_EQ(chmod(open_dir.c_str(), 0755), 0);
  EXPECT_EQ(uep_vclock_control_start((open_dir + "/ctl").c_str()), -1);
  EXPECT_EQ(errno, EPERM);
  EXPECT_EQ(uep_vclock_control_start((dir + "/none/ctl").c_str()), -1);
  EXPECT_EQ(errno, ENOENT);
  ASSERT_EQ(uep_vclock_control_start(path.c_str()), 0);
  EXPECT_EQ(uep_vclock_control_start(path.c_str()), -1);
  EXPECT_EQ(errno, EBUSY);

  int c = connect_to(path);
  ASSERT_GE(c, 0);
  EXPECT_EQ(cmd(c, "mode"), "ok manual");
  const int fds = fd_count();  // after a reply: the server has accepted c
  const std::string start = cmd(c, "now");
  EXPECT_EQ(start, "ok " + std::to_string(UEP_VCLOCK_START_MONO) + " " + std::to_string(UEP_VCLOCK_START_REALTIME));
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"hello", "error unknown command"},
      {std::string("now\0", 4), "error unknown command"},
      {"", "error unknown command"},
      {"advance -5", "error bad number"},
      {"advance 18446744073709551616", "error bad number"},
      {"advance 9223372036854775807", "error out of range"},
      {"advance-to 1", "error out of range"},
      {"now 1", "error wrong number of arguments"},
      {"a b c d", "error too many arguments"},
      {"wait-idle 600001", "error bad timeout"},
      {std::string(5000, 'y'), "error line too long"},
  };
  for (const auto& [line, want] : cases) {
    const std::string got = cmd(c, line);
    EXPECT_EQ(got.compare(0, want.size(), want), 0) << "line of " << line.size() << " bytes: " << got;
  }
  EXPECT_EQ(cmd(c, "now"), start);  // nothing moved the clock
  // A partial line, then a disconnect.
  int p = connect_to(path);
  ASSERT_GE(p, 0);
  ASSERT_EQ(send(p, "advance 5", 9, MSG_NOSIGNAL), 9);
  close(p);
  // More clients than served: the extra ones are refused and closed.
  std::vector<int> many;
  int served = 0, refused = 0;
  for (int i = 0; i < 12; ++i) many.push_back(connect_to(path));
  for (int m : many) {
    const std::string r = cmd(m, "now");
    served += r.rfind("ok ", 0) == 0;
    refused += r.rfind("error too many clients", 0) == 0;
  }
  for (int m : many) close(m);
  EXPECT_GE(served, 1);
  EXPECT_EQ(served + refused, 12);
  // A client that never reads its replies is dropped, not waited for.
  int g = connect_to(path);
  ASSERT_GE(g, 0);
  const std::string flood(4000, '\n');  // each an empty line: one error reply each
  for (int i = 0; i < 200 && send(g, flood.data(), flood.size(), MSG_NOSIGNAL) > 0; ++i) {
  }
  close(g);
  // The protocol still works, and time moves only when told.
  EXPECT_EQ(cmd(c, "advance 1500"), "ok " + std::to_string(UEP_VCLOCK_START_MONO + 1500) + " " +
                                        std::to_string(UEP_VCLOCK_START_REALTIME + 1500));
  EXPECT_EQ(cmd(c, "advance-to " + std::to_string(UEP_VCLOCK_START_MONO + 2000)).rfind("ok 1000000002000 ", 0), 0u);
  EXPECT_EQ(cmd(c, "set-realtime 42"), "ok 1000000002000 42");
  EXPECT_EQ(cmd(c, "wait-idle 0"), "error timeout (not idle)");  // nobody sleeps on the clock
  // Every dropped client's descriptor is closed (the server's are its own).
  for (int i = 0; i < 200 && fd_count() != fds; ++i) usleep(10000);
  EXPECT_EQ(fd_count(), fds);
  EXPECT_EQ(cmd(c, "quit"), "ok bye");
  EXPECT_EQ(reply(c), "<closed>");
  close(c);
  uep_vclock_enable(UEP_VCLOCK_OFF);
  unlink(path.c_str());
  rmdir(open_dir.c_str());
  rmdir(dir.c_str());
}

}  // namespace
