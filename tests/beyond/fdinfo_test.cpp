// fdinfo_test.cpp - uep_fdinfo against /proc/self/fdinfo on this kernel:
// the same objects created on Linux and in uepoll, the texts compared line
// by line with the fields that name kernel objects masked (mnt_id, ino,
// sdev, eventfd-id, timer it_value, and descriptor numbers mapped to roles).
#include <uepoll/uepoll.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <fcntl.h>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace {

struct Api {
  bool kernel;
  int epoll_create1(int f) const { return kernel ? ::epoll_create1(f) : uep_epoll_create1(f); }
  int eventfd(unsigned v, int f) const { return kernel ? ::eventfd(v, f) : uep_eventfd(v, f); }
  int pipe2(int p[2], int f) const { return kernel ? ::pipe2(p, f) : uep_pipe2(p, f); }
  int socketpair(int sv[2]) const {
    return kernel ? ::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv)
                  : uep_socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv);
  }
  int timerfd(int clock, int f) const { return kernel ? ::timerfd_create(clock, f) : uep_timerfd_create(clock, f); }
  int settime(int fd, int f, const itimerspec* v) const {
    return kernel ? ::timerfd_settime(fd, f, v, nullptr) : uep_timerfd_settime(fd, f, v, nullptr);
  }
  int ctl(int ep, int op, int fd, uint32_t ev, uint64_t d) const {
    struct epoll_event e{ev, {}};
    e.data.u64 = d;
    return kernel ? ::epoll_ctl(ep, op, fd, &e) : uep_epoll_ctl(ep, op, fd, &e);
  }
  int close(int fd) const { return kernel ? ::close(fd) : uep_close(fd); }
};

std::string info(int fd) {
  char buf[4096];
  const long n = uep_fdinfo(fd, buf, sizeof buf);
  EXPECT_GT(n, 0) << fd;
  EXPECT_LT(n, static_cast<long>(sizeof buf));
  return n > 0 ? std::string(buf) : std::string();
}

// Masks what must differ; tfd numbers become role names; tfd lines sorted.
std::string normalize(std::string s, const std::map<int, std::string>& roles) {
  s = std::regex_replace(s, std::regex("mnt_id:\t[0-9]+"), "mnt_id:\tM");
  s = std::regex_replace(s, std::regex("(^|\n)ino:\t[0-9]+"), "$1ino:\tI");
  s = std::regex_replace(s, std::regex("ino:[0-9a-f]+ sdev:[0-9a-f]+"), "ino:I sdev:S");
  s = std::regex_replace(s, std::regex("eventfd-id: [0-9]+"), "eventfd-id: N");
  s = std::regex_replace(s, std::regex("it_value: \\([0-9]+, [0-9]+\\)"), "it_value: (T)");
  std::istringstream in(s);
  std::vector<std::string> head, tfds;
  std::string line;
  std::regex tfd_re("^tfd: +([0-9]+) (.*)$");
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_match(line, m, tfd_re)) {
      const int fd = std::stoi(m[1]);
      auto it = roles.find(fd);
      tfds.push_back("tfd: " + (it == roles.end() ? std::string("?") : it->second) + " " + std::string(m[2]));
    } else {
      head.push_back(line);
    }
  }
  std::sort(tfds.begin(), tfds.end());
  std::string out;
  for (auto& l : head) out += l + "\n";
  for (auto& l : tfds) out += l + "\n";
  return out;
}

// Builds the same set of objects and registrations; returns each object's
// normalized fdinfo.
std::vector<std::string> scenario(const Api& a) {
  std::map<int, std::string> roles;
  const int ep = a.epoll_create1(EPOLL_CLOEXEC);
  const int ep2 = a.epoll_create1(EPOLL_CLOEXEC);
  const int e = a.eventfd(5, EFD_NONBLOCK | EFD_CLOEXEC);
  const int es = a.eventfd(0, EFD_SEMAPHORE | EFD_CLOEXEC);
  int p[2], s[2];
  EXPECT_EQ(a.pipe2(p, O_NONBLOCK | O_CLOEXEC), 0);
  EXPECT_EQ(a.socketpair(s), 0);
  const int t = a.timerfd(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  const int t2 = a.timerfd(CLOCK_REALTIME, TFD_CLOEXEC);
  itimerspec its{{1, 500}, {100, 7}};
  EXPECT_EQ(a.settime(t, 0, &its), 0);
  itimerspec its2{{0, 0}, {2000000000, 0}};
  EXPECT_EQ(a.settime(t2, TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET, &its2), 0);
  roles = {{ep, "ep"}, {e, "e"}, {es, "es"}, {p[0], "p0"}, {p[1], "p1"}, {s[0], "s0"}, {t, "t"}};
  EXPECT_EQ(a.ctl(ep, EPOLL_CTL_ADD, e, EPOLLIN | EPOLLET, 0x1122334455667788ULL), 0);
  EXPECT_EQ(a.ctl(ep, EPOLL_CTL_ADD, p[1], EPOLLOUT | EPOLLONESHOT, 7), 0);
  EXPECT_EQ(a.ctl(ep, EPOLL_CTL_ADD, t, EPOLLIN | EPOLLEXCLUSIVE, 7), 0);
  EXPECT_EQ(a.ctl(ep, EPOLL_CTL_ADD, s[0], EPOLLIN | EPOLLRDHUP | EPOLLPRI, ~0ULL), 0);
  EXPECT_EQ(a.ctl(ep, EPOLL_CTL_ADD, es, 0, 0), 0);
  EXPECT_EQ(a.ctl(ep2, EPOLL_CTL_ADD, ep, EPOLLIN, 3), 0);
  std::vector<std::string> out;
  for (int fd : {ep, ep2, e, es, p[0], p[1], s[0], t, t2}) out.push_back(normalize(info(fd), roles));
  for (int fd : {ep, ep2, e, es, p[0], p[1], s[0], s[1], t, t2}) a.close(fd);
  return out;
}

TEST(FdInfo, MatchesLinuxLineByLine) {
  const auto k = scenario(Api{true});
  const auto u = scenario(Api{false});
  ASSERT_EQ(k.size(), u.size());
  for (size_t i = 0; i < k.size(); ++i) EXPECT_EQ(k[i], u[i]) << "object " << i;
}

TEST(FdInfo, SnprintfContractAndErrors) {
  const int e = uep_eventfd(0, 0);
  const long full = uep_fdinfo(e, nullptr, 0);
  ASSERT_GT(full, 0);
  char small[8];
  EXPECT_EQ(uep_fdinfo(e, small, sizeof small), full);
  EXPECT_EQ(std::string(small), std::string("pos:\t0\n"));  // len - 1 bytes and a NUL
  EXPECT_EQ(uep_fdinfo(UEP_FD_BASE + 99999, small, sizeof small), -1);
  EXPECT_EQ(errno, EBADF);
  EXPECT_EQ(uep_fdinfo(-1, small, sizeof small), -1);
  EXPECT_EQ(errno, EBADF);
  uep_close(e);
}

}  // namespace
