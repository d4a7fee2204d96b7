// objects_eventfd_test.cpp - eventfd as seen through the C API (counter,
// semaphore, nonblocking EAGAIN, overflow, buffer sizes, blocking calls),
// and read/write on an epoll descriptor.  Readiness is observed through
// epoll (all bits) so the exact masks are compared.
#include "objects_common.h"

#include <thread>

namespace {

using conf::T;
using conf_objects::ALL;
using conf_objects::state;

// ---- eventfd ------------------------------------------------------------
TEST(Eventfd, CreateFlags) {
  auto r = conf::differential([](T& t) {
    t.eventfd(0, 0x4);
    t.eventfd(0, O_RDWR);
    t.eventfd(0, EFD_SEMAPHORE | EFD_NONBLOCK | EFD_CLOEXEC);
    t.eventfd(UINT_MAX, 0);
    t.eventfd(0, 1 << 30);
  });
  EXPECT_LINUX_SEQ(r, {"eventfd(0,0x4) = -1 EINVAL", "eventfd(0,0x2) = -1 EINVAL",
                       "eventfd(0,CLOEXEC|NONBLOCK|SEMAPHORE) = fd0", "eventfd(4294967295,0) = fd1",
                       "eventfd(0,0x40000000) = -1 EINVAL"});
}

TEST(Eventfd, CounterAndSemaphore) {
  auto r = conf::differential([](T& t) {
    int e = t.eventfd(0, EFD_NONBLOCK);
    state(t, e, "empty");
    t.read_u64(e);  // EAGAIN
    t.write_u64(e, 3);
    t.write_u64(e, 4);
    state(t, e, "7");
    t.read_u64(e);  // 7
    t.read_u64(e);  // EAGAIN
    int s = t.eventfd(3, EFD_SEMAPHORE | EFD_NONBLOCK);
    t.read_u64(s);
    t.read_u64(s);
    t.write_u64(s, 5);
    t.read_u64(s);
    state(t, s, "semaphore 5");
    for (int i = 0; i < 5; ++i) t.read_u64(s);
    t.read_u64(s);  // EAGAIN
    // Buffer sizes: a read needs >= 8 bytes, a write exactly 8.
    t.write_u64(e, 9);
    t.read(e, 4);
    t.read(e, 7);
    t.read(e, 0);
    t.read(e, 16);
    uint64_t two[2] = {5, 7};
    t.write(e, two, 4, "4 bytes");
    t.write(e, two, 0, "0 bytes");
    t.write(e, two, 16, "{5,7}");
    t.read(e, 8);
  });
  EXPECT_LINUX_SEQ(r, {"state empty: OUT", "read(fd0,8) = -1 EAGAIN", "state 7: IN|OUT", "read(fd0,8) = 8 value=7",
                       "read(fd0,8) = -1 EAGAIN", "read(fd3,8) = 8 value=1", "read(fd3,8) = 8 value=1",
                       "read(fd3,8) = 8 value=1", "state semaphore 5: IN|OUT", "read(fd3,8) = -1 EAGAIN",
                       "read(fd0,4) = -1 EINVAL", "read(fd0,7) = -1 EINVAL", "read(fd0,0) = -1 EINVAL",
                       "read(fd0,16) = 8 value=9", "write(fd0,4 bytes,4) = -1 EINVAL",
                       "write(fd0,0 bytes,0) = -1 EINVAL", "write(fd0,{5,7},16) = -1 EINVAL",
                       "read(fd0,8) = -1 EAGAIN"});
}

TEST(Eventfd, Overflow) {
  auto r = conf::differential([](T& t) {
    int e = t.eventfd(0, EFD_NONBLOCK);
    t.write_u64(e, 0xffffffffffffffffULL);  // EINVAL
    t.write_u64(e, 0xfffffffffffffffeULL);  // the maximum
    state(t, e, "max");
    t.write_u64(e, 1);  // would overflow: EAGAIN
    t.write_u64(e, 0);  // adding 0 never blocks
    t.read_u64(e);
    t.write_u64(e, 0xfffffffffffffff0ULL);
    t.write_u64(e, 0xe);
    t.write_u64(e, 0xf);
    state(t, e, "max again");
    t.read_u64(e);
    state(t, e, "drained");
    int init = t.eventfd(UINT_MAX, EFD_NONBLOCK);
    t.read_u64(init);
  });
  EXPECT_LINUX_SEQ(r, {"write_u64(fd0,0xffffffffffffffff) = -1 EINVAL", "write_u64(fd0,0xfffffffffffffffe) = 8",
                       "state max: IN", "write_u64(fd0,0x1) = -1 EAGAIN", "write_u64(fd0,0) = 8",
                       "read(fd0,8) = 8 value=18446744073709551614", "write_u64(fd0,0xf) = -1 EAGAIN",
                       "state drained: OUT", "read(fd4,8) = 8 value=4294967295"});
}

// A blocking eventfd read sleeps until a write; a blocking write at the
// maximum sleeps until a read.
TEST(Eventfd, BlockingReadAndWrite) {
  auto r = conf::differential([](T& t) {
    int e = t.eventfd(0);
    {
      conf::WhenBlocked later([&] {
        uint64_t v = 6;
        t.api.write(e, &v, 8);
      });
      t.read_u64(e);  // sleeps until the write
    }
    t.write_u64(e, 0xfffffffffffffffeULL);
    {
      conf::WhenBlocked later([&] {
        uint64_t v;
        t.api.read(e, &v, 8);
      });
      t.write_u64(e, 1);  // at the maximum: sleeps until the read
    }
    t.read_u64(e);
  });
  EXPECT_LINUX_SEQ(r, {"read(fd0,8) = 8 value=6", "write_u64(fd0,0x1) = 8", "read(fd0,8) = 8 value=1"});
}

// ---- epoll descriptors have no read/write -------------------------------
TEST(EpollFile, ReadWriteEinval) {
  auto r = conf::differential([](T& t) {
    int ep = t.epoll_create1();
    int efd = t.eventfd(1);
    t.ctl(ep, EPOLL_CTL_ADD, efd, EPOLLIN, 1);
    t.read(ep, 8);
    t.read(ep, 0);
    t.write(ep, "12345678", 8);
    t.write(ep, "", 0);
    t.wait(ep, 4, 0);
  });
  EXPECT_LINUX_SEQ(r, {"read(fd0,8) = -1 EINVAL", "read(fd0,0) = -1 EINVAL", "write(fd0,8) = -1 EINVAL",
                       "write(fd0,0) = -1 EINVAL", "wait(fd0,4,0) = 1 [IN:1]"});
}


}  // namespace
