// bad_input.h - what the bad-input table (bad_input_test.cpp) is made of:
// Ctx, the fresh objects of one row on one side (Linux or uepoll), Row, one
// named call on them, and the two halves of the table (the epoll calls in
// bad_input_epoll_rows.cpp, the objects' calls in bad_input_object_rows.cpp).
// Single-threaded; no locks.
#pragma once

#include <climits>
#include <functional>
#include <string>
#include <vector>

#include "rel_common.h"

namespace uepoll_test::bad_input {

// Fresh objects for one row.
struct Ctx {
  const Api& a;
  int ep = -1, ep2 = -1, efd = -1, pr = -1, pw = -1, sa = -1, sb = -1, tfd = -1;
  int closed = -1;  // a number that was open and is now free
  int never = -1;   // a number never opened
  std::vector<int> extra;
  explicit Ctx(const Api& api) : a(api) {
    ep = a.epoll_create1(0);
    ep2 = a.epoll_create1(0);
    efd = a.eventfd(0, EFD_NONBLOCK);
    int p[2];
    a.pipe2(p, O_NONBLOCK);
    pr = p[0];
    pw = p[1];
    a.socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, p);
    sa = p[0];
    sb = p[1];
    tfd = a.timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
    closed = a.eventfd(0, 0);
    a.close(closed);
    bool uep = rel::is_uepoll_api(a);
    auto is_open = uep ? rel::uepoll_is_open : rel::linux_is_open;
    never = rel::probe_free(is_open, uep ? UEP_FD_BASE : 0, 16).never_open(is_open);
  }
  ~Ctx() {
    for (int f : {ep, ep2, efd, pr, pw, sa, sb, tfd})
      if (f >= 0) a.close(f);
    for (int f : extra) a.close(f);
  }
  // Keeps `fd` for closing at the end; returns 1000 for "a descriptor".
  long fd(long r) {
    if (r < 0) return r;
    extra.push_back(static_cast<int>(r));
    return 1000;
  }
  int add(int e, int f, uint32_t m) {
    struct epoll_event ev {};
    ev.events = m;
    return a.epoll_ctl(e, EPOLL_CTL_ADD, f, &ev);
  }
  int ctl(int e, int op, int f, uint32_t m) {
    struct epoll_event ev {};
    ev.events = m;
    return a.epoll_ctl(e, op, f, &ev);
  }
};

struct Row {
  const char* name;
  std::function<long(Ctx&)> fn;
};

// An address that access_ok() rejects (kernel half): EFAULT without a fault.
inline void* const kKernelPtr = reinterpret_cast<void*>(0xffff800000001000ULL);
inline constexpr int kEpMaxEvents = static_cast<int>(INT_MAX / sizeof(struct epoll_event));

// epoll_create, epoll_ctl and the waits.
std::vector<Row> epoll_rows();
// eventfd, pipe2, socketpair and shutdown, timerfd, read/write/close/dup
// on the objects, and poll.
std::vector<Row> object_rows();

}  // namespace uepoll_test::bad_input
