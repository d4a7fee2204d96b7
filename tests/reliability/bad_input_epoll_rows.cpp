// bad_input_epoll_rows.cpp - the bad-input table's rows for epoll_create,
// epoll_ctl (EFAULT first, EBADF, EINVAL, EPOLLEXCLUSIVE, EEXIST/ENOENT,
// ELOOP and nesting depth) and the waits (bad_input.h).
#include "bad_input.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

namespace uepoll_test::bad_input {

std::vector<Row> epoll_rows() {
  using C = Ctx&;
  return {
      // ---- epoll_create / epoll_create1 ----
      {"epoll_create(0)", [](C c) { return c.fd(c.a.epoll_create(0)); }},
      {"epoll_create(-1)", [](C c) { return c.fd(c.a.epoll_create(-1)); }},
      {"epoll_create(INT_MIN)", [](C c) { return c.fd(c.a.epoll_create(INT_MIN)); }},
      {"epoll_create(1)", [](C c) { return c.fd(c.a.epoll_create(1)); }},
      {"epoll_create1(1)", [](C c) { return c.fd(c.a.epoll_create1(1)); }},
      {"epoll_create1(-1)", [](C c) { return c.fd(c.a.epoll_create1(-1)); }},
      {"epoll_create1(O_NONBLOCK)", [](C c) { return c.fd(c.a.epoll_create1(O_NONBLOCK)); }},
      {"epoll_create1(EPOLL_CLOEXEC)", [](C c) { return c.fd(c.a.epoll_create1(EPOLL_CLOEXEC)); }},
      // ---- epoll_ctl: EFAULT first ----
      {"ctl ADD NULL event", [](C c) { return (long)c.a.epoll_ctl(c.ep, EPOLL_CTL_ADD, c.efd, nullptr); }},
      {"ctl MOD NULL event", [](C c) { return (long)c.a.epoll_ctl(c.ep, EPOLL_CTL_MOD, c.efd, nullptr); }},
      {"ctl op 42 NULL event", [](C c) { return (long)c.a.epoll_ctl(c.ep, 42, c.efd, nullptr); }},
      {"ctl ADD kernel-address event",
       [](C c) { return (long)c.a.epoll_ctl(c.ep, EPOLL_CTL_ADD, c.efd, (struct epoll_event*)kKernelPtr); }},
      {"ctl DEL NULL event (unregistered)",
       [](C c) { return (long)c.a.epoll_ctl(c.ep, EPOLL_CTL_DEL, c.efd, nullptr); }},
      {"ctl DEL NULL event (registered)",
       [](C c) {
         c.add(c.ep, c.efd, EPOLLIN);
         return (long)c.a.epoll_ctl(c.ep, EPOLL_CTL_DEL, c.efd, nullptr);
       }},
      {"ctl(closed, ADD, closed, NULL): EFAULT before EBADF",
       [](C c) { return (long)c.a.epoll_ctl(c.closed, EPOLL_CTL_ADD, c.closed, nullptr); }},
      // ---- EBADF ----
      {"ctl closed epfd", [](C c) { return (long)c.add(c.closed, c.efd, EPOLLIN); }},
      {"ctl -1 epfd", [](C c) { return (long)c.add(-1, c.efd, EPOLLIN); }},
      {"ctl never-open epfd", [](C c) { return (long)c.add(c.never, c.efd, EPOLLIN); }},
      {"ctl closed fd", [](C c) { return (long)c.add(c.ep, c.closed, EPOLLIN); }},
      {"ctl -1 fd", [](C c) { return (long)c.add(c.ep, -1, EPOLLIN); }},
      {"ctl never-open fd", [](C c) { return (long)c.add(c.ep, c.never, EPOLLIN); }},
      {"ctl closed epfd and closed fd, DEL", [](C c) { return (long)c.ctl(c.closed, EPOLL_CTL_DEL, c.closed, 0); }},
      {"ctl op 42 with closed fd: EBADF before op check", [](C c) { return (long)c.ctl(c.ep, 42, c.closed, EPOLLIN); }},
      // ---- EINVAL: not an epoll / same file ----
      {"ctl eventfd as epfd", [](C c) { return (long)c.add(c.efd, c.pr, EPOLLIN); }},
      {"ctl pipe as epfd, DEL", [](C c) { return (long)c.ctl(c.pr, EPOLL_CTL_DEL, c.efd, 0); }},
      {"ctl timerfd as epfd", [](C c) { return (long)c.add(c.tfd, c.efd, EPOLLIN); }},
      {"ctl socket as epfd, MOD", [](C c) { return (long)c.ctl(c.sa, EPOLL_CTL_MOD, c.efd, EPOLLIN); }},
      {"ctl ADD ep into itself", [](C c) { return (long)c.add(c.ep, c.ep, EPOLLIN); }},
      {"ctl DEL ep from itself", [](C c) { return (long)c.ctl(c.ep, EPOLL_CTL_DEL, c.ep, 0); }},
      {"ctl ADD dup(ep) into ep (same file)",
       [](C c) {
         int d = c.a.dup(c.ep);
         c.extra.push_back(d);
         return (long)c.add(c.ep, d, EPOLLIN);
       }},
      {"ctl op 0", [](C c) { return (long)c.ctl(c.ep, 0, c.efd, EPOLLIN); }},
      {"ctl op 4", [](C c) { return (long)c.ctl(c.ep, 4, c.efd, EPOLLIN); }},
      {"ctl op -1", [](C c) { return (long)c.ctl(c.ep, -1, c.efd, EPOLLIN); }},
      {"ctl op 42 on eventfd epfd", [](C c) { return (long)c.ctl(c.efd, 42, c.pr, EPOLLIN); }},
      // ---- EPOLLEXCLUSIVE ----
      {"ctl MOD EXCLUSIVE (unregistered)", [](C c) { return (long)c.ctl(c.ep, EPOLL_CTL_MOD, c.efd, EPOLLIN | EPOLLEXCLUSIVE); }},
      {"ctl MOD EXCLUSIVE (registered)",
       [](C c) {
         c.add(c.ep, c.efd, EPOLLIN);
         return (long)c.ctl(c.ep, EPOLL_CTL_MOD, c.efd, EPOLLIN | EPOLLEXCLUSIVE);
       }},
      {"ctl ADD EXCLUSIVE epoll target", [](C c) { return (long)c.add(c.ep, c.ep2, EPOLLIN | EPOLLEXCLUSIVE); }},
      {"ctl ADD EXCLUSIVE|RDHUP", [](C c) { return (long)c.add(c.ep, c.sa, EPOLLIN | EPOLLEXCLUSIVE | EPOLLRDHUP); }},
      {"ctl ADD EXCLUSIVE|PRI", [](C c) { return (long)c.add(c.ep, c.efd, EPOLLIN | EPOLLEXCLUSIVE | EPOLLPRI); }},
      {"ctl ADD EXCLUSIVE|ONESHOT", [](C c) { return (long)c.add(c.ep, c.efd, EPOLLIN | EPOLLEXCLUSIVE | EPOLLONESHOT); }},
      {"ctl ADD EXCLUSIVE|RDNORM", [](C c) { return (long)c.add(c.ep, c.efd, EPOLLIN | EPOLLEXCLUSIVE | EPOLLRDNORM); }},
      {"ctl ADD EXCLUSIVE|WRBAND", [](C c) { return (long)c.add(c.ep, c.efd, EPOLLOUT | EPOLLEXCLUSIVE | EPOLLWRBAND); }},
      {"ctl ADD EXCLUSIVE|unknown bit", [](C c) { return (long)c.add(c.ep, c.efd, EPOLLIN | EPOLLEXCLUSIVE | 0x100000u); }},
      {"ctl ADD EXCLUSIVE|IN|OUT|ERR|HUP|ET|WAKEUP",
       [](C c) {
         return (long)c.add(c.ep, c.efd, EPOLLIN | EPOLLOUT | EPOLLERR | EPOLLHUP | EPOLLET | EPOLLWAKEUP | EPOLLEXCLUSIVE);
       }},
      {"ctl ADD EXCLUSIVE alone", [](C c) { return (long)c.add(c.ep, c.efd, EPOLLEXCLUSIVE); }},
      {"ctl MOD of an EXCLUSIVE item (plain mask)",
       [](C c) {
         c.add(c.ep, c.efd, EPOLLIN | EPOLLEXCLUSIVE);
         return (long)c.ctl(c.ep, EPOLL_CTL_MOD, c.efd, EPOLLIN);
       }},
      {"ctl DEL of an EXCLUSIVE item",
       [](C c) {
         c.add(c.ep, c.efd, EPOLLIN | EPOLLEXCLUSIVE);
         return (long)c.ctl(c.ep, EPOLL_CTL_DEL, c.efd, 0);
       }},
      {"ctl EXCLUSIVE|RDHUP on closed fd: EBADF first", [](C c) { return (long)c.add(c.ep, c.closed, EPOLLIN | EPOLLEXCLUSIVE | EPOLLRDHUP); }},
      // ---- EEXIST / ENOENT / masks ----
      {"ctl ADD twice",
       [](C c) {
         c.add(c.ep, c.efd, EPOLLIN);
         return (long)c.add(c.ep, c.efd, EPOLLOUT);
       }},
      {"ctl MOD unregistered", [](C c) { return (long)c.ctl(c.ep, EPOLL_CTL_MOD, c.efd, EPOLLIN); }},
      {"ctl DEL unregistered", [](C c) { return (long)c.ctl(c.ep, EPOLL_CTL_DEL, c.efd, 0); }},
      {"ctl ADD unknown bits 0x0fff0000", [](C c) { return (long)c.add(c.ep, c.efd, 0x0fff0000u); }},
      {"ctl ADD mask 0", [](C c) { return (long)c.add(c.ep, c.efd, 0); }},
      {"ctl ADD all bits but EXCLUSIVE", [](C c) { return (long)c.add(c.ep, c.efd, ~static_cast<uint32_t>(EPOLLEXCLUSIVE)); }},
      {"ctl ADD dup of registered fd (different key)",
       [](C c) {
         c.add(c.ep, c.efd, EPOLLIN);
         int d = c.a.dup(c.efd);
         c.extra.push_back(d);
         return (long)c.add(c.ep, d, EPOLLIN);
       }},
      {"ctl DEL after close (number free): EBADF",
       [](C c) {
         int x = c.a.eventfd(0, 0);
         int d = c.a.dup(x);
         c.extra.push_back(d);
         c.add(c.ep, x, EPOLLIN);
         c.a.close(x);
         return (long)c.ctl(c.ep, EPOLL_CTL_DEL, x, 0);
       }},
      {"ctl DEL after close (number reused): ENOENT",
       [](C c) {
         int x = c.a.eventfd(0, 0);
         int d = c.a.dup(x);
         c.extra.push_back(d);
         c.add(c.ep, x, EPOLLIN);
         c.a.close(x);
         int y = c.a.eventfd(0, 0);  // takes x's number
         c.extra.push_back(y);
         return y == x ? (long)c.ctl(c.ep, EPOLL_CTL_DEL, y, 0) : -999;
       }},
      // ---- ELOOP / nesting depth ----
      {"ctl ADD cycle of two: ELOOP",
       [](C c) {
         c.add(c.ep, c.ep2, EPOLLIN);
         return (long)c.add(c.ep2, c.ep, EPOLLIN);
       }},
      {"ctl ADD cycle of three: ELOOP",
       [](C c) {
         int e3 = c.a.epoll_create1(0);
         c.extra.push_back(e3);
         c.add(c.ep, c.ep2, EPOLLIN);
         c.add(c.ep2, e3, EPOLLIN);
         return (long)c.add(e3, c.ep, EPOLLIN);
       }},
      {"ctl ADD existing nested instance again: EEXIST",
       [](C c) {
         c.add(c.ep, c.ep2, EPOLLIN);
         return (long)c.add(c.ep, c.ep2, EPOLLOUT);
       }},
      {"ctl chain of 5 instances ok, 6th level: ELOOP",
       [](C c) {
         int e[6];
         for (int& x : e) c.extra.push_back(x = c.a.epoll_create1(0));
         long r = 0;
         for (int i = 0; i < 4; ++i) r = r * 10 + (c.add(e[i], e[i + 1], EPOLLIN) == 0 ? 1 : 2);
         long last = c.add(e[4], e[5], EPOLLIN);
         return last < 0 ? -(r * 100 + errno) : r * 100;
       }},
      {"ctl chain: adding on top of a 5-chain: ELOOP",
       [](C c) {
         int e[6];
         for (int& x : e) c.extra.push_back(x = c.a.epoll_create1(0));
         for (int i = 1; i < 5; ++i) c.add(e[i], e[i + 1], EPOLLIN);
         return (long)c.add(e[0], e[1], EPOLLIN);
       }},
      {"ctl chain of 5 with a leaf at the bottom ok",
       [](C c) {
         int e[5];
         for (int& x : e) c.extra.push_back(x = c.a.epoll_create1(0));
         for (int i = 0; i < 4; ++i) c.add(e[i], e[i + 1], EPOLLIN);
         return (long)c.add(e[4], c.efd, EPOLLIN);
       }},
      // ---- epoll_wait / pwait / pwait2 ----
      {"wait closed epfd", [](C c) { struct epoll_event e[1]; return (long)c.a.epoll_wait(c.closed, e, 1, 0); }},
      {"wait -1 epfd", [](C c) { struct epoll_event e[1]; return (long)c.a.epoll_wait(-1, e, 1, 0); }},
      {"wait maxevents 0", [](C c) { struct epoll_event e[1]; return (long)c.a.epoll_wait(c.ep, e, 0, 0); }},
      {"wait maxevents -1", [](C c) { struct epoll_event e[1]; return (long)c.a.epoll_wait(c.ep, e, -1, 0); }},
      {"wait maxevents EP_MAX_EVENTS+1", [](C c) { struct epoll_event e[1]; return (long)c.a.epoll_wait(c.ep, e, kEpMaxEvents + 1, 0); }},
      {"wait maxevents INT_MAX", [](C c) { struct epoll_event e[1]; return (long)c.a.epoll_wait(c.ep, e, INT_MAX, 0); }},
      {"wait maxevents EP_MAX_EVENTS (valid, nothing ready)", [](C c) { struct epoll_event e[1]; return (long)c.a.epoll_wait(c.ep, e, kEpMaxEvents, 0); }},
      {"wait closed epfd + maxevents -1: EBADF first (>= 6.15)", [](C c) { struct epoll_event e[1]; return (long)c.a.epoll_wait(c.closed, e, -1, 0); }},
      {"wait eventfd epfd", [](C c) { struct epoll_event e[1]; return (long)c.a.epoll_wait(c.efd, e, 1, 0); }},
      {"wait eventfd epfd + maxevents 0", [](C c) { struct epoll_event e[1]; return (long)c.a.epoll_wait(c.efd, e, 0, 0); }},
      {"wait NULL events, nothing ready", [](C c) { return (long)c.a.epoll_wait(c.ep, nullptr, 1, 0); }},
      {"wait NULL events, one ready: EFAULT",
       [](C c) {
         c.add(c.ep, c.pw, EPOLLOUT);
         return (long)c.a.epoll_wait(c.ep, nullptr, 1, 0);
       }},
      {"wait NULL events on eventfd epfd", [](C c) { return (long)c.a.epoll_wait(c.efd, nullptr, 1, 0); }},
      {"wait kernel-address events, nothing ready", [](C c) { return (long)c.a.epoll_wait(c.ep, (struct epoll_event*)kKernelPtr, 1, 0); }},
      {"wait kernel-address events on eventfd epfd: EFAULT before EINVAL",
       [](C c) { return (long)c.a.epoll_wait(c.efd, (struct epoll_event*)kKernelPtr, 1, 0); }},
      {"wait kernel-address events on closed epfd: EBADF first",
       [](C c) { return (long)c.a.epoll_wait(c.closed, (struct epoll_event*)kKernelPtr, 1, 0); }},
      {"wait events NULL after a failed harvest keeps the item",
       [](C c) {
         c.add(c.ep, c.pw, EPOLLOUT | EPOLLET);
         c.a.epoll_wait(c.ep, nullptr, 1, 0);
         struct epoll_event e[2];
         return (long)c.a.epoll_wait(c.ep, e, 2, 0);
       }},
      {"pwait closed epfd", [](C c) { struct epoll_event e[1]; return (long)c.a.epoll_pwait(c.closed, e, 1, 0, nullptr); }},
      {"pwait maxevents 0", [](C c) { struct epoll_event e[1]; return (long)c.a.epoll_pwait(c.ep, e, 0, 0, nullptr); }},
      {"pwait2 tv_nsec -1",
       [](C c) {
         struct epoll_event e[1];
         struct timespec ts = {0, -1};
         return (long)c.a.epoll_pwait2(c.ep, e, 1, &ts, nullptr);
       }},
      {"pwait2 tv_nsec 1e9",
       [](C c) {
         struct epoll_event e[1];
         struct timespec ts = {0, 1000000000L};
         return (long)c.a.epoll_pwait2(c.ep, e, 1, &ts, nullptr);
       }},
      {"pwait2 tv_sec -1",
       [](C c) {
         struct epoll_event e[1];
         struct timespec ts = {-1, 0};
         return (long)c.a.epoll_pwait2(c.ep, e, 1, &ts, nullptr);
       }},
      {"pwait2 bad timespec + closed epfd: EINVAL first",
       [](C c) {
         struct epoll_event e[1];
         struct timespec ts = {0, -1};
         return (long)c.a.epoll_pwait2(c.closed, e, 1, &ts, nullptr);
       }},
      {"pwait2 kernel-address timespec: EFAULT",
       [](C c) {
         struct epoll_event e[1];
         return (long)c.a.epoll_pwait2(c.ep, e, 1, (const struct timespec*)kKernelPtr, nullptr);
       }},
      {"pwait2 {0,0} maxevents 0",
       [](C c) {
         struct epoll_event e[1];
         struct timespec ts = {0, 0};
         return (long)c.a.epoll_pwait2(c.ep, e, 0, &ts, nullptr);
       }},
      {"pwait2 {0,0} on eventfd", [](C c) {
         struct epoll_event e[1];
         struct timespec ts = {0, 0};
         return (long)c.a.epoll_pwait2(c.efd, e, 1, &ts, nullptr);
       }},
  };
}

}  // namespace uepoll_test::bad_input
