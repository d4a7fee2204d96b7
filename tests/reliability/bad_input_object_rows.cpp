// bad_input_object_rows.cpp - the bad-input table's rows for eventfd, pipe2,
// socketpair and shutdown, timerfd, read/write/close/dup on the objects and
// poll (bad_input.h).
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

std::vector<Row> object_rows() {
  using C = Ctx&;
  return {
      // ---- eventfd ----
      {"eventfd flags 1 (EFD_SEMAPHORE)", [](C c) { return c.fd(c.a.eventfd(0, 1)); }},
      {"eventfd flags 2", [](C c) { return c.fd(c.a.eventfd(0, 2)); }},
      {"eventfd flags -1", [](C c) { return c.fd(c.a.eventfd(0, -1)); }},
      {"eventfd flags O_RDWR", [](C c) { return c.fd(c.a.eventfd(0, O_RDWR)); }},
      {"eventfd initval UINT_MAX", [](C c) { return c.fd(c.a.eventfd(UINT_MAX, EFD_NONBLOCK)); }},
      {"eventfd all valid flags", [](C c) { return c.fd(c.a.eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC | EFD_SEMAPHORE)); }},
      {"eventfd read 7 bytes", [](C c) { char b[8]; return (long)c.a.read(c.efd, b, 7); }},
      {"eventfd read 0 bytes", [](C c) { char b[8]; return (long)c.a.read(c.efd, b, 0); }},
      {"eventfd read empty nonblock", [](C c) { char b[8]; return (long)c.a.read(c.efd, b, 8); }},
      {"eventfd read 7 bytes with counter set",
       [](C c) {
         uint64_t v = 3;
         c.a.write(c.efd, &v, 8);
         char b[8];
         return (long)c.a.read(c.efd, b, 7);
       }},
      {"eventfd read 16 bytes returns 8",
       [](C c) {
         uint64_t v = 3;
         c.a.write(c.efd, &v, 8);
         char b[16];
         return (long)c.a.read(c.efd, b, 16);
       }},
      {"eventfd write 7 bytes", [](C c) { uint64_t v = 1; return (long)c.a.write(c.efd, &v, 7); }},
      {"eventfd write 0 bytes", [](C c) { uint64_t v = 1; return (long)c.a.write(c.efd, &v, 0); }},
      {"eventfd write 16 bytes", [](C c) { uint64_t v[2] = {1, 1}; return (long)c.a.write(c.efd, v, 16); }},
      {"eventfd write ~0", [](C c) { uint64_t v = ~0ULL; return (long)c.a.write(c.efd, &v, 8); }},
      {"eventfd write overflow nonblock: EAGAIN",
       [](C c) {
         uint64_t v = 0xfffffffffffffffeULL;
         c.a.write(c.efd, &v, 8);
         v = 1;
         return (long)c.a.write(c.efd, &v, 8);
       }},
      {"eventfd write 0 value", [](C c) { uint64_t v = 0; return (long)c.a.write(c.efd, &v, 8); }},
      // ---- pipe2 ----
      {"pipe2 NULL", [](C c) { return (long)c.a.pipe2(nullptr, 0); }},
      {"pipe2 kernel-address array", [](C c) { return (long)c.a.pipe2((int*)kKernelPtr, 0); }},
      {"pipe2 O_RDWR", [](C c) { int p[2]; long r = c.a.pipe2(p, O_RDWR); if (r == 0) { c.extra.push_back(p[0]); c.extra.push_back(p[1]); } return r; }},
      {"pipe2 -1", [](C c) { int p[2]; long r = c.a.pipe2(p, -1); if (r == 0) { c.extra.push_back(p[0]); c.extra.push_back(p[1]); } return r; }},
      {"pipe2 NULL + bad flags: EINVAL first", [](C c) { return (long)c.a.pipe2(nullptr, O_RDWR); }},
      {"pipe NULL", [](C c) { return (long)c.a.pipe(nullptr); }},
      {"pipe read on write end", [](C c) { char b[4]; return (long)c.a.read(c.pw, b, 4); }},
      {"pipe write on read end", [](C c) { return (long)c.a.write(c.pr, "x", 1); }},
      {"pipe read empty nonblock", [](C c) { char b[4]; return (long)c.a.read(c.pr, b, 4); }},
      {"pipe read 0 bytes", [](C c) { char b[4]; return (long)c.a.read(c.pr, b, 0); }},
      {"pipe write 0 bytes", [](C c) { return (long)c.a.write(c.pw, "x", 0); }},
      {"pipe read empty, writer closed: 0",
       [](C c) {
         c.a.close(c.pw);
         c.pw = -1;
         char b[4];
         return (long)c.a.read(c.pr, b, 4);
       }},
      {"pipe write, reader closed: EPIPE",
       [](C c) {
         c.a.close(c.pr);
         c.pr = -1;
         return (long)c.a.write(c.pw, "x", 1);
       }},
      {"pipe ctl ADD write end IN|OUT then wait",
       [](C c) {
         c.add(c.ep, c.pw, EPOLLIN | EPOLLOUT);
         struct epoll_event e[2];
         long n = c.a.epoll_wait(c.ep, e, 2, 0);
         return n * 1000 + (n > 0 ? e[0].events : 0);
       }},
      // ---- socketpair / shutdown ----
      {"socketpair AF_INET", [](C c) { int p[2]; return (long)c.a.socketpair(AF_INET, SOCK_STREAM, 0, p); }},
      {"socketpair domain 12345", [](C c) { int p[2]; return (long)c.a.socketpair(12345, SOCK_STREAM, 0, p); }},
      {"socketpair AF_UNIX type 999", [](C c) { int p[2]; return (long)c.a.socketpair(AF_UNIX, 999, 0, p); }},
      {"socketpair AF_UNIX protocol 2", [](C c) { int p[2]; return (long)c.a.socketpair(AF_UNIX, SOCK_STREAM, 2, p); }},
      {"socketpair AF_UNIX type 9", [](C c) { int p[2]; return (long)c.a.socketpair(AF_UNIX, 9, 0, p); }},
      {"socketpair AF_UNIX SOCK_RAW", [](C c) { int p[2]; long r = c.a.socketpair(AF_UNIX, SOCK_RAW, 0, p); if (r == 0) { c.extra.push_back(p[0]); c.extra.push_back(p[1]); } return r; }},
      {"socketpair AF_UNIX protocol 1 (PF_UNIX)", [](C c) { int p[2]; long r = c.a.socketpair(AF_UNIX, SOCK_STREAM, 1, p); if (r == 0) { c.extra.push_back(p[0]); c.extra.push_back(p[1]); } return r; }},
      {"socketpair AF_UNIX bad type flag", [](C c) { int p[2]; return (long)c.a.socketpair(AF_UNIX, SOCK_STREAM | 0x100, 0, p); }},
      {"socketpair NULL sv", [](C c) { return (long)c.a.socketpair(AF_UNIX, SOCK_STREAM, 0, nullptr); }},
      {"socketpair AF_UNIX SOCK_DGRAM", [](C c) { int p[2]; long r = c.a.socketpair(AF_UNIX, SOCK_DGRAM, 0, p); if (r == 0) { c.extra.push_back(p[0]); c.extra.push_back(p[1]); } return r; }},
      {"socketpair AF_UNIX SOCK_SEQPACKET", [](C c) { int p[2]; long r = c.a.socketpair(AF_UNIX, SOCK_SEQPACKET, 0, p); if (r == 0) { c.extra.push_back(p[0]); c.extra.push_back(p[1]); } return r; }},
      {"shutdown how 3", [](C c) { return (long)c.a.shutdown(c.sa, 3); }},
      {"shutdown how -1", [](C c) { return (long)c.a.shutdown(c.sa, -1); }},
      {"shutdown eventfd", [](C c) { return (long)c.a.shutdown(c.efd, SHUT_RD); }},
      {"shutdown epoll", [](C c) { return (long)c.a.shutdown(c.ep, SHUT_RD); }},
      {"shutdown pipe", [](C c) { return (long)c.a.shutdown(c.pr, SHUT_RDWR); }},
      {"shutdown closed", [](C c) { return (long)c.a.shutdown(c.closed, SHUT_RD); }},
      {"shutdown closed + how 3: EBADF first", [](C c) { return (long)c.a.shutdown(c.closed, 3); }},
      {"shutdown eventfd + how 3: ENOTSOCK first", [](C c) { return (long)c.a.shutdown(c.efd, 3); }},
      {"shutdown twice", [](C c) { c.a.shutdown(c.sa, SHUT_WR); return (long)c.a.shutdown(c.sa, SHUT_WR); }},
      {"socket write after SHUT_WR: EPIPE", [](C c) { c.a.shutdown(c.sa, SHUT_WR); return (long)c.a.write(c.sa, "x", 1); }},
      {"socket read after peer SHUT_WR: 0", [](C c) { c.a.shutdown(c.sb, SHUT_WR); char b[4]; return (long)c.a.read(c.sa, b, 4); }},
      {"socket read after own SHUT_RD: 0", [](C c) { c.a.shutdown(c.sa, SHUT_RD); char b[4]; return (long)c.a.read(c.sa, b, 4); }},
      {"socket read empty nonblock", [](C c) { char b[4]; return (long)c.a.read(c.sa, b, 4); }},
      {"socket write, peer closed: EPIPE", [](C c) { c.a.close(c.sb); c.sb = -1; return (long)c.a.write(c.sa, "x", 1); }},
      {"socket read, peer closed: 0", [](C c) { c.a.close(c.sb); c.sb = -1; char b[4]; return (long)c.a.read(c.sa, b, 4); }},
      // ---- timerfd ----
      {"timerfd_create clock 12345", [](C c) { return c.fd(c.a.timerfd_create(12345, 0)); }},
      {"timerfd_create clock -1", [](C c) { return c.fd(c.a.timerfd_create(-1, 0)); }},
      {"timerfd_create CLOCK_PROCESS_CPUTIME_ID", [](C c) { return c.fd(c.a.timerfd_create(CLOCK_PROCESS_CPUTIME_ID, 0)); }},
      {"timerfd_create CLOCK_THREAD_CPUTIME_ID", [](C c) { return c.fd(c.a.timerfd_create(CLOCK_THREAD_CPUTIME_ID, 0)); }},
      {"timerfd_create CLOCK_MONOTONIC_RAW", [](C c) { return c.fd(c.a.timerfd_create(CLOCK_MONOTONIC_RAW, 0)); }},
      {"timerfd_create CLOCK_REALTIME", [](C c) { return c.fd(c.a.timerfd_create(CLOCK_REALTIME, 0)); }},
      {"timerfd_create CLOCK_BOOTTIME", [](C c) { return c.fd(c.a.timerfd_create(CLOCK_BOOTTIME, 0)); }},
      {"timerfd_create flags 1", [](C c) { return c.fd(c.a.timerfd_create(CLOCK_MONOTONIC, 1)); }},
      {"timerfd_create bad clock + bad flags", [](C c) { return c.fd(c.a.timerfd_create(12345, 1)); }},
      {"timerfd_settime flags 4",
       [](C c) { struct itimerspec t = {}; return (long)c.a.timerfd_settime(c.tfd, 4, &t, nullptr); }},
      {"timerfd_settime CANCEL_ON_SET without ABSTIME",
       [](C c) { struct itimerspec t = {}; return (long)c.a.timerfd_settime(c.tfd, TFD_TIMER_CANCEL_ON_SET, &t, nullptr); }},
      {"timerfd_settime tv_nsec 1e9",
       [](C c) { struct itimerspec t = {}; t.it_value.tv_nsec = 1000000000L; return (long)c.a.timerfd_settime(c.tfd, 0, &t, nullptr); }},
      {"timerfd_settime tv_nsec -1",
       [](C c) { struct itimerspec t = {}; t.it_value.tv_nsec = -1; return (long)c.a.timerfd_settime(c.tfd, 0, &t, nullptr); }},
      {"timerfd_settime tv_sec -1",
       [](C c) { struct itimerspec t = {}; t.it_value.tv_sec = -1; return (long)c.a.timerfd_settime(c.tfd, 0, &t, nullptr); }},
      {"timerfd_settime bad interval",
       [](C c) { struct itimerspec t = {}; t.it_value.tv_sec = 100; t.it_interval.tv_nsec = -5; return (long)c.a.timerfd_settime(c.tfd, 0, &t, nullptr); }},
      {"timerfd_settime NULL new_value", [](C c) { return (long)c.a.timerfd_settime(c.tfd, 0, nullptr, nullptr); }},
      {"timerfd_settime on eventfd", [](C c) { struct itimerspec t = {}; return (long)c.a.timerfd_settime(c.efd, 0, &t, nullptr); }},
      {"timerfd_settime on epoll", [](C c) { struct itimerspec t = {}; return (long)c.a.timerfd_settime(c.ep, 0, &t, nullptr); }},
      {"timerfd_settime closed", [](C c) { struct itimerspec t = {}; return (long)c.a.timerfd_settime(c.closed, 0, &t, nullptr); }},
      {"timerfd_settime closed + bad flags: EINVAL first",
       [](C c) { struct itimerspec t = {}; return (long)c.a.timerfd_settime(c.closed, 4, &t, nullptr); }},
      {"timerfd_settime closed + bad timespec: EINVAL first",
       [](C c) { struct itimerspec t = {}; t.it_value.tv_nsec = -1; return (long)c.a.timerfd_settime(c.closed, 0, &t, nullptr); }},
      {"timerfd_settime closed + NULL: EFAULT first", [](C c) { return (long)c.a.timerfd_settime(c.closed, 0, nullptr, nullptr); }},
      {"timerfd_settime ok with old_value",
       [](C c) {
         struct itimerspec t = {}, old;
         t.it_value.tv_sec = 100;
         c.a.timerfd_settime(c.tfd, 0, &t, nullptr);
         long r = c.a.timerfd_settime(c.tfd, 0, &t, &old);
         return r * 10 + (old.it_value.tv_sec > 90 && old.it_value.tv_sec <= 100 ? 1 : 2);
       }},
      {"timerfd_gettime NULL", [](C c) { return (long)c.a.timerfd_gettime(c.tfd, nullptr); }},
      {"timerfd_gettime on eventfd", [](C c) { struct itimerspec t; return (long)c.a.timerfd_gettime(c.efd, &t); }},
      {"timerfd_gettime closed", [](C c) { struct itimerspec t; return (long)c.a.timerfd_gettime(c.closed, &t); }},
      {"timerfd_gettime closed + NULL: EBADF first", [](C c) { return (long)c.a.timerfd_gettime(c.closed, nullptr); }},
      {"timerfd read 4 bytes", [](C c) { char b[8]; return (long)c.a.read(c.tfd, b, 4); }},
      {"timerfd read unarmed nonblock", [](C c) { char b[8]; return (long)c.a.read(c.tfd, b, 8); }},
      {"timerfd write", [](C c) { uint64_t v = 1; return (long)c.a.write(c.tfd, &v, 8); }},
      // ---- read / write / close / dup on other objects ----
      {"read epoll", [](C c) { char b[8]; return (long)c.a.read(c.ep, b, 8); }},
      {"write epoll", [](C c) { uint64_t v = 1; return (long)c.a.write(c.ep, &v, 8); }},
      {"read closed", [](C c) { char b[8]; return (long)c.a.read(c.closed, b, 8); }},
      {"write closed", [](C c) { return (long)c.a.write(c.closed, "x", 1); }},
      {"read -1", [](C c) { char b[8]; return (long)c.a.read(-1, b, 8); }},
      {"write never-open", [](C c) { return (long)c.a.write(c.never, "x", 1); }},
      {"close -1", [](C c) { return (long)c.a.close(-1); }},
      {"close closed", [](C c) { return (long)c.a.close(c.closed); }},
      {"close never-open", [](C c) { return (long)c.a.close(c.never); }},
      {"close twice", [](C c) { c.a.close(c.efd); long r = c.a.close(c.efd); c.efd = -1; return r; }},
      {"dup -1", [](C c) { return c.fd(c.a.dup(-1)); }},
      {"dup closed", [](C c) { return c.fd(c.a.dup(c.closed)); }},
      {"dup never-open", [](C c) { return c.fd(c.a.dup(c.never)); }},
      {"dup epoll", [](C c) { return c.fd(c.a.dup(c.ep)); }},
      // ---- poll ----
      {"poll NULL 0", [](C c) { return (long)c.a.poll(nullptr, 0, 0); }},
      {"poll NULL 1", [](C c) { return (long)c.a.poll(nullptr, 1, 0); }},
      {"poll kernel-address 1", [](C c) { return (long)c.a.poll((struct pollfd*)kKernelPtr, 1, 0); }},
      {"poll nfds > RLIMIT_NOFILE", [](C c) { return (long)c.a.poll(nullptr, 1u << 30, 0); }},
      {"poll closed fd: POLLNVAL",
       [](C c) {
         struct pollfd p = {c.closed, POLLIN, 0};
         long r = c.a.poll(&p, 1, 0);
         return r * 100000 + p.revents;
       }},
      {"poll fd -1 ignored",
       [](C c) {
         struct pollfd p = {-1, POLLIN, 0x77};
         long r = c.a.poll(&p, 1, 0);
         return r * 100000 + p.revents;
       }},
      {"poll events 0, writer closed: POLLHUP anyway",
       [](C c) {
         c.a.close(c.pw);
         c.pw = -1;
         struct pollfd p = {c.pr, 0, 0};
         long r = c.a.poll(&p, 1, 0);
         return r * 100000 + p.revents;
       }},
      {"poll epoll with a ready item",
       [](C c) {
         c.add(c.ep, c.pw, EPOLLOUT);
         struct pollfd p = {c.ep, static_cast<short>(POLLIN | POLLOUT | POLLPRI), 0};
         long r = c.a.poll(&p, 1, 0);
         return r * 100000 + p.revents;
       }},
      {"poll mixed set",
       [](C c) {
         struct pollfd p[4] = {{c.efd, POLLIN | POLLOUT, 0}, {c.pr, POLLIN, 0}, {c.pw, POLLOUT, 0}, {c.closed, POLLIN, 0}};
         long r = c.a.poll(p, 4, 0);
         return r * 100000000 + p[0].revents * 1000000 + p[1].revents * 10000 + p[2].revents * 100 + p[3].revents;
       }},
  };
}

}  // namespace uepoll_test::bad_input
