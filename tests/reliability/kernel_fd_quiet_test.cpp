// kernel_fd_quiet_test.cpp - what a kernel event loop pays for watching a
// uepoll instance through its kernel descriptor (uep_epoll_kernel_fd), from
// inside (epoll::KernelWatch::signal_writes; owned by the kernel-descriptor
// tests).
//
// The kernel descriptor holds the instance's shadow epoll level-triggered,
// so the instance's own kernel descriptors make it readable with no help.
// Its signal eventfd is for user-space items only: a harvest that turns the
// shadow's hub edge into a wakeup of the instance's poll queue (for its
// parents, as Linux's ep_poll_safewake) must not write it, or every kernel
// event costs the loop an eventfd write and read.  Each case checks the
// count of signal writes, and that the loop's epoll reports exactly what is
// owed: ready after each event, quiet after each harvest.
#include "epoll/instance.h"
#include "epoll/kernel_watch.h"
#include "fd/table.h"

#include <uepoll/uepoll.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

namespace {

using uepoll::epoll::Instance;
using uepoll::epoll::KernelWatch;

// The instance behind a uepoll descriptor's kernel side (the descriptor
// stays open for the whole test, so the pointer stays valid).
KernelWatch* kernel_side(int ep) {
  uepoll::fd::FileRef f(uepoll::fd::lookup(ep));
  if (!f || !f->is_epoll()) return nullptr;
  return static_cast<Instance*>(f.get())->kernel_watch();
}

// uep_epoll_ctl(ep, ADD, fd) with events and data.
int add(int ep, int fd, uint64_t data, uint32_t events = EPOLLIN) {
  struct epoll_event e{};
  e.events = events;
  e.data.u64 = data;
  return uep_epoll_ctl(ep, EPOLL_CTL_ADD, fd, &e);
}

struct Loop {
  int ep = -1;    // the uepoll instance
  int kev = -1;   // a kernel eventfd in it
  int uev = -1;   // a uepoll eventfd in it
  int form = -1;  // its kernel descriptor
  int loop = -1;  // a kernel epoll watching form
  KernelWatch* kw = nullptr;

  void open() {
    ep = uep_epoll_create1(0);
    kev = ::eventfd(0, EFD_NONBLOCK);
    uev = uep_eventfd(0, EFD_NONBLOCK);
    ASSERT_GE(ep, 0);
    ASSERT_GE(kev, 0);
    ASSERT_GE(uev, 0);
    ASSERT_EQ(add(ep, kev, 1), 0);
    ASSERT_EQ(add(ep, uev, 2), 0);
    form = uep_epoll_kernel_fd(ep);
    ASSERT_GE(form, 0);
    loop = ::epoll_create1(0);
    ASSERT_GE(loop, 0);
    struct epoll_event e{};
    e.events = EPOLLIN;
    ASSERT_EQ(::epoll_ctl(loop, EPOLL_CTL_ADD, form, &e), 0);
    kw = kernel_side(ep);
    ASSERT_NE(kw, nullptr);
  }
  ~Loop() {
    if (loop >= 0) ::close(loop);
    if (uev >= 0) uep_close(uev);
    if (kev >= 0) ::close(kev);
    if (ep >= 0) uep_close(ep);
  }
  int loop_ready(int timeout_ms) const {
    struct epoll_event e;
    return ::epoll_wait(loop, &e, 1, timeout_ms);
  }
  // One harvest of the instance; returns the data of the one event, 0 for
  // none.
  uint64_t harvest() const {
    struct epoll_event e[2];
    const int n = uep_epoll_wait(ep, e, 2, 0);
    return n == 1 ? e[0].data.u64 : n == 0 ? 0 : 99;
  }
};

TEST(KernelFdQuiet, KernelEventsWriteNoSignal) {
  Loop l;
  ASSERT_NO_FATAL_FAILURE(l.open());
  const uint64_t w0 = l.kw->signal_writes();
  for (int i = 0; i < 200; ++i) {
    uint64_t v = 1;
    ASSERT_EQ(::write(l.kev, &v, 8), 8);
    ASSERT_EQ(l.loop_ready(5000), 1) << "round " << i;
    ASSERT_EQ(l.harvest(), 1u) << "round " << i;
    ASSERT_EQ(::read(l.kev, &v, 8), 8);
    ASSERT_EQ(l.loop_ready(0), 0) << "round " << i << ": readable with nothing owed";
  }
  EXPECT_EQ(l.kw->signal_writes() - w0, 0u) << "kernel events wrote the user-space signal";
}

TEST(KernelFdQuiet, UserEventsWriteOneSignalEach) {
  Loop l;
  ASSERT_NO_FATAL_FAILURE(l.open());
  const uint64_t w0 = l.kw->signal_writes();
  for (int i = 0; i < 50; ++i) {
    uint64_t v = 1;
    ASSERT_EQ(uep_write(l.uev, &v, 8), 8);
    ASSERT_EQ(l.loop_ready(5000), 1) << "round " << i;
    ASSERT_EQ(l.harvest(), 2u) << "round " << i;
    ASSERT_EQ(uep_read(l.uev, &v, 8), 8);
    ASSERT_EQ(l.harvest(), 0u) << "round " << i;  // the level-triggered item leaves; the signal is drained
    ASSERT_EQ(l.loop_ready(0), 0) << "round " << i << ": readable with nothing owed";
  }
  EXPECT_EQ(l.kw->signal_writes() - w0, 50u);
}

// The instance nested in another after its kernel descriptor was made (the
// hub is made then, and joins the kernel descriptor): a kernel event still
// reaches the parent (the hub edge's wakeup of the poll queue), and still
// writes no signal.
TEST(KernelFdQuiet, ParentStillWoken) {
  Loop l;
  ASSERT_NO_FATAL_FAILURE(l.open());
  const int parent = uep_epoll_create1(0);
  ASSERT_GE(parent, 0);
  ASSERT_EQ(add(parent, l.ep, 7, EPOLLIN | EPOLLET), 0);
  const uint64_t w0 = l.kw->signal_writes();
  for (int i = 0; i < 50; ++i) {
    uint64_t v = 1;
    ASSERT_EQ(::write(l.kev, &v, 8), 8);
    struct epoll_event got{};
    ASSERT_EQ(uep_epoll_wait(parent, &got, 1, 5000), 1) << "round " << i;
    EXPECT_EQ(got.data.u64, 7u);
    ASSERT_EQ(l.loop_ready(5000), 1) << "round " << i;
    ASSERT_EQ(l.harvest(), 1u) << "round " << i;
    ASSERT_EQ(::read(l.kev, &v, 8), 8);
    ASSERT_EQ(l.loop_ready(0), 0) << "round " << i;
  }
  EXPECT_EQ(l.kw->signal_writes() - w0, 0u);
  uep_close(parent);
}

// A child instance with a kernel descriptor added after the kernel
// descriptor was made: its events reach the kernel loop (through the hub
// made for it), as a user-space item of the instance.
TEST(KernelFdQuiet, LaterKernelChild) {
  Loop l;
  ASSERT_NO_FATAL_FAILURE(l.open());
  const int child = uep_epoll_create1(0);
  const int kc = ::eventfd(0, EFD_NONBLOCK);
  ASSERT_GE(child, 0);
  ASSERT_GE(kc, 0);
  ASSERT_EQ(add(child, kc, 4), 0);
  ASSERT_EQ(add(l.ep, child, 3), 0);
  ASSERT_EQ(l.loop_ready(0), 0);
  for (int i = 0; i < 50; ++i) {
    uint64_t v = 1;
    ASSERT_EQ(::write(kc, &v, 8), 8);
    ASSERT_EQ(l.loop_ready(5000), 1) << "round " << i;
    ASSERT_EQ(l.harvest(), 3u) << "round " << i;
    ASSERT_EQ(::read(kc, &v, 8), 8);
    ASSERT_EQ(l.harvest(), 0u) << "round " << i;
    ASSERT_EQ(l.loop_ready(0), 0) << "round " << i << ": readable with nothing owed";
  }
  ASSERT_EQ(uep_epoll_ctl(l.ep, EPOLL_CTL_DEL, child, nullptr), 0);
  uep_close(child);
  ::close(kc);
}

}  // namespace
