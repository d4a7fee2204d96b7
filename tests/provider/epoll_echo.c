/*
 * epoll_echo.c - an ordinary epoll echo program over 127.0.0.1 (no uepoll
 * in it), run plainly and under `uepoll-run --provider lwip` by
 * tests/provider/run.sh, which compares the two outputs line by line.
 *
 * One thread: a level-triggered listener, a non-blocking client connect,
 * the accepted connection edge-triggered, an eventfd and a timerfd in the
 * same epoll instance; poll() and select() over the sockets beside an
 * eventfd; messages of growing size echoed and checked; FIONREAD, sockatmark,
 * TCP_NODELAY, SO_ERROR, getsockname/getpeername, shutdown and EOF; a
 * refused connect.  Prints what it saw, never addresses or ports.
 * Bounded: every wait has a timeout, the program stops after 10 s.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#define CHECK(c)                                                   \
  do {                                                             \
    if (!(c)) {                                                    \
      printf("FAIL line %d: %s (errno %s)\n", __LINE__, #c, strerrorname_np(errno)); \
      exit(1);                                                     \
    }                                                              \
  } while (0)

static int wait_one(int ep, struct epoll_event *ev) {
  int n = epoll_wait(ep, ev, 1, 5000);
  CHECK(n == 1);
  return (int)ev->data.u32;
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  alarm(10);
  int ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  CHECK(ls >= 0);
  int one = 1;
  CHECK(setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) == 0);
  struct sockaddr_in a = {.sin_family = AF_INET};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  CHECK(bind(ls, (struct sockaddr *)&a, sizeof a) == 0);
  CHECK(listen(ls, 8) == 0);
  socklen_t al = sizeof a;
  CHECK(getsockname(ls, (struct sockaddr *)&a, &al) == 0 && a.sin_port != 0);
  printf("listening on loopback: %s\n", a.sin_addr.s_addr == htonl(INADDR_LOOPBACK) ? "yes" : "no");

  int ep = epoll_create1(EPOLL_CLOEXEC);
  int efd = eventfd(0, EFD_NONBLOCK);
  int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
  CHECK(ep >= 0 && efd >= 0 && tfd >= 0);
  struct epoll_event ev = {.events = EPOLLIN, .data.u32 = 1};
  CHECK(epoll_ctl(ep, EPOLL_CTL_ADD, ls, &ev) == 0);
  ev = (struct epoll_event){.events = EPOLLIN, .data.u32 = 2};
  CHECK(epoll_ctl(ep, EPOLL_CTL_ADD, efd, &ev) == 0);
  ev = (struct epoll_event){.events = EPOLLIN, .data.u32 = 3};
  CHECK(epoll_ctl(ep, EPOLL_CTL_ADD, tfd, &ev) == 0);

  int cs = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  CHECK(cs >= 0);
  struct pollfd fresh = {cs, POLLIN | POLLOUT, 0};
  CHECK(poll(&fresh, 1, 0) == 1);
  printf("fresh socket poll: %s%s%s\n", fresh.revents & POLLOUT ? "OUT " : "", fresh.revents & POLLHUP ? "HUP " : "",
         fresh.revents & POLLIN ? "IN" : "");
  int r = connect(cs, (struct sockaddr *)&a, sizeof a);
  printf("connect: %s\n", r == 0 ? "0" : strerrorname_np(errno));
  CHECK(r == 0 || errno == EINPROGRESS);
  printf("event: %d (listener)\n", wait_one(ep, &ev));
  struct sockaddr_in peer;
  socklen_t pl = sizeof peer;
  int ss = accept4(ls, (struct sockaddr *)&peer, &pl, SOCK_NONBLOCK | SOCK_CLOEXEC);
  CHECK(ss >= 0);
  printf("accepted from loopback: %s\n", peer.sin_addr.s_addr == htonl(INADDR_LOOPBACK) ? "yes" : "no");
  CHECK(accept4(ls, NULL, NULL, SOCK_NONBLOCK) < 0);
  printf("second accept: %s\n", strerrorname_np(errno));
  ev = (struct epoll_event){.events = EPOLLIN | EPOLLET | EPOLLRDHUP, .data.u32 = 4};
  CHECK(epoll_ctl(ep, EPOLL_CTL_ADD, ss, &ev) == 0);
  struct pollfd pw = {cs, POLLOUT, 0};
  CHECK(poll(&pw, 1, 5000) == 1 && (pw.revents & POLLOUT));
  int err = -1;
  socklen_t el = sizeof err;
  CHECK(getsockopt(cs, SOL_SOCKET, SO_ERROR, &err, &el) == 0);
  printf("connected: SO_ERROR %d\n", err);
  CHECK(setsockopt(cs, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) == 0);
  int nd = 0;
  socklen_t ndl = sizeof nd;
  CHECK(getsockopt(cs, IPPROTO_TCP, TCP_NODELAY, &nd, &ndl) == 0);
  printf("TCP_NODELAY: %d\n", nd);
  struct sockaddr_in me, them;
  socklen_t ml = sizeof me, tl = sizeof them;
  CHECK(getsockname(cs, (struct sockaddr *)&me, &ml) == 0 && getpeername(ss, (struct sockaddr *)&them, &tl) == 0);
  printf("names agree: %s\n", me.sin_port == them.sin_port ? "yes" : "no");
  /* the client too (level-triggered): an echo may arrive after the send
   * returned (a user-space stack delivers from its own thread) */
  ev = (struct epoll_event){.events = EPOLLIN, .data.u32 = 5};
  CHECK(epoll_ctl(ep, EPOLL_CTL_ADD, cs, &ev) == 0);

  uint64_t one64 = 1;
  CHECK(write(efd, &one64, 8) == 8);
  printf("event: %d (eventfd)\n", wait_one(ep, &ev));
  CHECK(read(efd, &one64, 8) == 8);

  static char msg[70000], got[70000];
  for (size_t size = 1; size <= sizeof msg; size *= 4) {
    for (size_t i = 0; i < size; ++i) msg[i] = (char)('a' + (i + size) % 26);
    size_t sent = 0, echoed = 0, back = 0;
    while (back < size) {
      if (sent < size) {
        ssize_t w = send(cs, msg + sent, size - sent, MSG_NOSIGNAL);
        if (w > 0) sent += (size_t)w;
        else CHECK(errno == EAGAIN);
      }
      int n = epoll_wait(ep, &ev, 1, 5000);
      CHECK(n >= 0);
      if (n == 1 && ev.data.u32 == 4) { /* ET: drain, echo back */
        for (;;) {
          char buf[8192];
          ssize_t g = recv(ss, buf, sizeof buf, 0);
          if (g < 0) {
            CHECK(errno == EAGAIN);
            break;
          }
          CHECK(g > 0);
          size_t off = 0;
          while (off < (size_t)g) {
            ssize_t w = write(ss, buf + off, (size_t)g - off);
            if (w > 0) off += (size_t)w;
            else CHECK(errno == EAGAIN);
          }
          echoed += (size_t)g;
        }
      }
      while (back < size) {
        ssize_t g = read(cs, got + back, size - back);
        if (g <= 0) {
          CHECK(g < 0 && errno == EAGAIN);
          break;
        }
        back += (size_t)g;
      }
    }
    printf("echo %zu bytes: %s (server saw %zu)\n", size, memcmp(msg, got, size) == 0 ? "equal" : "DIFFERENT", echoed);
  }

  CHECK(send(cs, "tail", 4, 0) == 4);
  fd_set rs;
  FD_ZERO(&rs);
  FD_SET(ss, &rs);
  FD_SET(efd, &rs);
  struct timeval tv = {5, 0};
  int sel = select((ss > efd ? ss : efd) + 1, &rs, NULL, NULL, &tv);
  printf("select: %d, socket %s, eventfd %s\n", sel, FD_ISSET(ss, &rs) ? "ready" : "not", FD_ISSET(efd, &rs) ? "ready" : "not");
  int avail = -1;
  CHECK(ioctl(ss, FIONREAD, &avail) == 0);
  printf("FIONREAD: %d\n", avail);
  printf("sockatmark: %d\n", sockatmark(ss));
  char buf[16];
  CHECK(recv(ss, buf, sizeof buf, 0) == 4);

  struct itimerspec its = {.it_value = {0, 1000000}};
  CHECK(timerfd_settime(tfd, 0, &its, NULL) == 0);
  while (wait_one(ep, &ev) != 3) {
  }
  printf("event: 3 (timerfd)\n");
  uint64_t ticks;
  CHECK(read(tfd, &ticks, 8) == 8);

  CHECK(epoll_ctl(ep, EPOLL_CTL_DEL, cs, NULL) == 0);
  CHECK(shutdown(cs, SHUT_WR) == 0);
  while (wait_one(ep, &ev) != 4) {
  }
  printf("server sees: %s%s\n", ev.events & EPOLLIN ? "IN " : "", ev.events & EPOLLRDHUP ? "RDHUP" : "");
  printf("server read at EOF: %zd\n", recv(ss, buf, sizeof buf, 0));
  CHECK(close(ss) == 0);
  struct pollfd ph = {cs, POLLIN, 0};
  CHECK(poll(&ph, 1, 5000) == 1);
  printf("client after close: %s%s, read %zd\n", ph.revents & POLLIN ? "IN " : "", ph.revents & POLLHUP ? "HUP" : "",
         read(cs, buf, sizeof buf));
  CHECK(close(cs) == 0);

  CHECK(close(ls) == 0);
  int rs2 = socket(AF_INET, SOCK_STREAM, 0);
  r = connect(rs2, (struct sockaddr *)&a, sizeof a);
  printf("connect to a closed port: %s\n", r == 0 ? "0" : strerrorname_np(errno));
  close(rs2);
  close(ep);
  close(efd);
  close(tfd);
  printf("done\n");
  return 0;
}
