// surface_test.cpp - the descriptor surface (fcntl, ioctl, dup2/dup3,
// readv/writev, pread/pwrite/lseek, fstat, ppoll) on every object type,
// Linux vs uepoll (surface_harness.h).  Socket calls: surface_socket_test.cpp.
#include "conformance/surface_harness.h"

#include <sys/timerfd.h>

namespace {

using conf::ST;

// Each object type Linux and uepoll both have; `make` creates it and
// returns the descriptor under test (the others it made stay open).
struct Kind {
  const char* name;
  std::function<int(ST&)> make;
};

const std::vector<Kind>& kinds() {
  static const std::vector<Kind> k = {
      {"epoll", [](ST& t) { return t.epoll_create1(0); }},
      {"eventfd", [](ST& t) { return t.eventfd(0, 0); }},
      {"timerfd", [](ST& t) { return t.timerfd_create(CLOCK_MONOTONIC, 0); }},
      {"pipe_read", [](ST& t) { return t.pipe().first; }},
      {"pipe_write", [](ST& t) { return t.pipe().second; }},
      {"socket", [](ST& t) { return t.unix_stream().first; }},
  };
  return k;
}

class PerKind : public ::testing::TestWithParam<size_t> {};

TEST_P(PerKind, StatusFlags) {
  const Kind& k = kinds()[GetParam()];
  auto tr = conf::surface_differential([&](ST& t) {
    const int fd = k.make(t);
    t.getfl(fd);
    const std::pair<int, const char*> flags[] = {{O_APPEND, "APPEND"},   {O_ASYNC, "ASYNC"},
                                                 {O_DIRECT, "DIRECT"},   {O_NOATIME, "NOATIME"},
                                                 {O_NONBLOCK, "NONBLOCK"}, {O_RDWR | O_CREAT | O_TRUNC, "RDWR|CREAT|TRUNC"},
                                                 {O_SYNC, "SYNC"}};
    for (auto& [f, d] : flags) {
      t.setfl(fd, f, d);
      t.getfl(fd);
      t.setfl(fd, 0, "0");
    }
    t.getfl(fd);
    // FIONBIO and F_GETFL agree.
    t.ioctl_int(fd, FIONBIO, "FIONBIO,1", 1);
    t.getfl(fd);
    t.ioctl_int(fd, FIONBIO, "FIONBIO,0", 0);
    t.getfl(fd);
    t.ioctl_ptr(fd, FIONBIO, nullptr, "FIONBIO,NULL");
  });
  EXPECT_LINUX_HAS(tr, "F_SETFL,NONBLOCK) = 0");
}

TEST_P(PerKind, CloseOnExecAndDupfd) {
  const Kind& k = kinds()[GetParam()];
  auto tr = conf::surface_differential([&](ST& t) {
    const int fd = k.make(t);
    t.fcntl(fd, F_GETFD, 0, "F_GETFD");
    t.fcntl(fd, F_SETFD, FD_CLOEXEC, "F_SETFD,CLOEXEC");
    t.fcntl(fd, F_GETFD, 0, "F_GETFD");
    t.fcntl(fd, F_SETFD, 0xff, "F_SETFD,0xff");
    t.fcntl(fd, F_GETFD, 0, "F_GETFD");
    t.ioctl_ptr(fd, FIONCLEX, nullptr, "FIONCLEX");
    t.fcntl(fd, F_GETFD, 0, "F_GETFD");
    t.ioctl_ptr(fd, FIOCLEX, nullptr, "FIOCLEX");
    t.fcntl(fd, F_GETFD, 0, "F_GETFD");
    // Duplicates share the status flags, not the descriptor flag.
    const int d1 = t.fcntl(fd, F_DUPFD, 0, "F_DUPFD,0");
    const int d2 = t.fcntl(fd, F_DUPFD_CLOEXEC, 0, "F_DUPFD_CLOEXEC,0");
    t.fcntl(d1, F_GETFD, 0, "F_GETFD");
    t.fcntl(d2, F_GETFD, 0, "F_GETFD");
    t.setfl(d1, O_NONBLOCK, "NONBLOCK");
    t.getfl(fd);
    t.getfl(d2);
    t.fcntl(fd, F_DUPFD, static_cast<unsigned long>(-1), "F_DUPFD,-1");
    t.fcntl(fd, F_DUPFD, 0x7fffffff, "F_DUPFD,INT_MAX");
    t.fcntl(fd, 9999, 0, "9999");
    t.fcntl(fd, F_GETOWN, 0, "F_GETOWN");
    t.fcntl(fd, F_SETOWN, static_cast<unsigned long>(getpid()), "F_SETOWN,getpid()");
    t.log(std::string("F_GETOWN is getpid(): ") + (t.sa.fcntl(fd, F_GETOWN, 0) == getpid() ? "yes" : "no"));
    t.close(fd);
    t.fcntl(fd, F_GETFD, 0, "F_GETFD");
    t.fcntl(fd, F_GETFL, 0, "F_GETFL");
    t.getfl(d1);
  });
  EXPECT_LINUX_HAS(tr, "F_DUPFD_CLOEXEC,0) = fd");
}

TEST_P(PerKind, SeekPreadFstatIoctl) {
  const Kind& k = kinds()[GetParam()];
  auto tr = conf::surface_differential([&](ST& t) {
    const int fd = k.make(t);
    t.seeks(fd);
    t.fstat(fd);
    t.ioctl_int(fd, FIONREAD, "FIONREAD");
    t.ioctl_int(fd, TIOCOUTQ, "TIOCOUTQ");
    t.ioctl_int(fd, 0x12345678, "0x12345678");
    t.ioctl_ptr(fd, FIOASYNC, nullptr, "FIOASYNC,NULL");
    t.fcntl(fd, F_GETPIPE_SZ, 0, "F_GETPIPE_SZ");
    t.getsockopt_int(fd, SOL_SOCKET, SO_TYPE, "SO_TYPE");
    t.send(fd, 1, 0, "0");
    t.recv(fd, 1, MSG_DONTWAIT, "DONTWAIT");
  });
  EXPECT_LINUX_HAS(tr, "fstat(fd");
}

INSTANTIATE_TEST_SUITE_P(Kinds, PerKind, ::testing::Range<size_t>(0, 6),
                         [](const ::testing::TestParamInfo<size_t>& i) { return std::string(kinds()[i.param].name); });

TEST(Surface, CreationFlagsGiveCloexecAndNonblock) {
  auto tr = conf::surface_differential([](ST& t) {
    std::vector<int> fds = {t.epoll_create1(EPOLL_CLOEXEC), t.eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK),
                            t.timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK)};
    auto p = t.pipe2(O_CLOEXEC | O_NONBLOCK);
    auto s = t.unix_stream(SOCK_CLOEXEC | SOCK_NONBLOCK);
    auto d = t.pipe2(O_DIRECT);
    for (int fd : {p.first, p.second, s.first, s.second, d.first, d.second}) fds.push_back(fd);
    for (int fd : fds) {
      t.fcntl(fd, F_GETFD, 0, "F_GETFD");
      t.getfl(fd);
    }
    const int dd = t.dup(fds[0]);
    t.fcntl(dd, F_GETFD, 0, "F_GETFD");
  });
  EXPECT_LINUX_HAS(tr, "F_GETFD) = 1");
}

TEST(Surface, Dup2Dup3) {
  auto tr = conf::surface_differential([](ST& t) {
    const int a = t.eventfd(5, EFD_NONBLOCK);
    const int b = t.eventfd(0, 0);
    t.dup3(a, a, 0);
    t.dup3(a, b, O_NONBLOCK);
    t.dup2(a, a);
    t.close(b);
    t.dup2(b, b);  // closed: EBADF
    t.dup2(b, a);  // closed oldfd: EBADF
    t.dup2(a, -1);
    t.dup3(a, b, O_CLOEXEC);  // b's number is free again: reused
    t.fcntl(b, F_GETFD, 0, "F_GETFD");
    t.read_u64(b);  // the same counter through both
    t.read_u64(a);
    // Atomic replace of an open descriptor that an epoll instance watches:
    // the replaced file's last reference goes, its registration with it.
    const int ep = t.epoll_create1(0);
    auto [r, w] = t.pipe();
    t.ctl(ep, EPOLL_CTL_ADD, r, EPOLLIN, 1);
    t.write_bytes(w, 3);
    t.wait(ep, 4, 0);
    t.dup2(a, r);  // r now names the eventfd
    t.wait(ep, 4, 0);
    t.write_u64(r, 2);
    t.read_u64(a);
    t.poll({{w, POLLOUT}}, 0);  // the read end is gone: POLLERR
    t.fcntl(r, F_GETFD, 0, "F_GETFD");
  });
  EXPECT_LINUX_HAS(tr, "dup3(fd0,fd0,0) = -1 EINVAL");
}

TEST(Surface, ReadvWritev) {
  auto tr = conf::surface_differential([](ST& t) {
    auto [r, w] = t.pipe2(O_NONBLOCK);
    t.writev(w, {3, 0, 5}, 'a');
    t.writev(w, {}, 'b');
    t.ioctl_int(r, FIONREAD, "FIONREAD");
    t.ioctl_int(w, FIONREAD, "FIONREAD");
    t.readv(r, {2, 4});
    t.ioctl_int(r, FIONREAD, "FIONREAD");
    t.readv(r, {2, 4, 10});
    t.readv(r, {4});
    t.writev(r, {1});
    t.readv(w, {1});
    std::vector<struct iovec> many(1025, {nullptr, 0});
    t.iov_raw(w, many.data(), 1025, true, "1025 segs");
    t.iov_raw(w, many.data(), -1, true, "-1 segs");
    t.iov_raw(w, many.data(), 0, true, "0 segs");
    t.iov_raw(r, nullptr, 1, false, "NULL iov");
    struct iovec neg[1] = {{many.data(), static_cast<size_t>(-1)}};
    t.iov_raw(w, neg, 1, true, "len -1");
    const int e = t.eventfd(0, EFD_NONBLOCK);
    t.writev_u64(e, {1, 2}, 8);
    t.writev_u64(e, {1, 2}, 4);
    t.readv(e, {4, 8});
    t.readv(e, {8});
    const int ep = t.epoll_create1(0);
    t.readv(ep, {8});
    t.iov_raw(ep, many.data(), 0, false, "0 segs");
    auto [s0, s1] = t.unix_stream(SOCK_NONBLOCK);
    t.writev(s0, {2, 3}, 'z');
    t.readv(s1, {1, 1, 10});
  });
  EXPECT_LINUX_HAS(tr, "writev_u64(fd2,2x8) = 16");
}

TEST(Surface, Ppoll) {
  auto tr = conf::surface_differential([](ST& t) {
    auto [r, w] = t.pipe();
    const int e = t.eventfd(1, 0);
    struct timespec zero = {0, 0}, ten = {0, 10000000}, bad = {0, 1000000000};
    t.ppoll({{r, POLLIN}, {w, POLLOUT}, {e, POLLIN}}, &zero, "0");
    t.ppoll({{r, POLLIN}}, &ten, "10ms");
    t.ppoll({{r, POLLIN}}, &bad, "1e9ns");
    t.write_bytes(w, 1);
    t.ppoll({{r, POLLIN}}, nullptr, "NULL");
  });
  EXPECT_LINUX_HAS(tr, "ppoll(fd0,10ms) = 0");
}

}  // namespace

// The C++ API's small share of the surface (uepoll.hpp).
#include <uepoll/uepoll.hpp>

namespace {

TEST(SurfaceCxx, NonblockCloexecDupTo) {
  uepoll::EventFd e = uepoll::EventFd::create(0, 0);
  uepoll::set_nonblocking(e, true);
  EXPECT_EQ(uep_fcntl(e.get(), F_GETFL) & O_NONBLOCK, O_NONBLOCK);
  EXPECT_EQ(e.try_read().error(), std::errc::resource_unavailable_try_again);
  uepoll::set_nonblocking(e, false);
  EXPECT_EQ(uep_fcntl(e.get(), F_GETFL) & O_NONBLOCK, 0);
  uepoll::set_cloexec(e, true);
  EXPECT_EQ(uep_fcntl(e.get(), F_GETFD), FD_CLOEXEC);
  uepoll::EventFd other = uepoll::EventFd::create(0, 0);
  const int n = other.release();
  uepoll::Fd d = uepoll::dup_to(e, n, O_CLOEXEC);  // replaces `other`
  EXPECT_EQ(d.get(), n);
  EXPECT_EQ(uep_fcntl(n, F_GETFD), FD_CLOEXEC);
  uint64_t v = 9;
  ASSERT_EQ(uep_write(n, &v, 8), 8);
  EXPECT_EQ(e.read(), 9u);
  EXPECT_EQ(uepoll::try_dup_to(e, e.get()).error(), std::errc::invalid_argument);
  EXPECT_EQ(uepoll::try_dup_to(e, 5).error(), std::errc::bad_file_descriptor);  // a kernel number
}

}  // namespace
