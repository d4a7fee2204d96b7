/* epoll_program.c - an ordinary epoll program with no uepoll in it.  The
 * compat test builds it twice, plainly and with -include uepoll/compat.h,
 * runs both and expects the same output (tests/compat/run.sh).  It prints no
 * descriptor numbers, only what the calls return. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/uio.h>
#include <unistd.h>

/* A struct with members named like the mapped functions. */
struct ops {
  ssize_t (*read)(int, void *, size_t);
  ssize_t (*write)(int, const void *, size_t);
  int (*close)(int);
};

static int check(const char *what, long r) {
  printf("%s = %ld%s%s\n", what, r, r < 0 ? " " : "", r < 0 ? strerror(errno) : "");
  return (int)r;
}

static int check_fd(const char *what, int fd) {
  printf("%s = %s\n", what, fd >= 0 ? "a descriptor" : strerror(errno));
  return fd;
}

static void set_nonblock(int fd) {
  int fl = fcntl(fd, F_GETFL);
  fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

int main(void) {
  struct ops io = {read, write, close};
  int ep = check_fd("epoll_create1", epoll_create1(EPOLL_CLOEXEC));
  int efd = check_fd("eventfd", eventfd(0, 0));
  int p[2], sv[2];
  check("pipe", pipe(p));
  check("socketpair", socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
  int tfd = check_fd("timerfd_create", timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK));
  set_nonblock(p[0]);
  set_nonblock(sv[1]);
  struct stat st;
  fstat(p[0], &st);
  printf("pipe is a fifo: %d\n", S_ISFIFO(st.st_mode) ? 1 : 0);
  fstat(sv[0], &st);
  printf("socket is a socket: %d\n", S_ISSOCK(st.st_mode) ? 1 : 0);

  struct { int fd; const char *name; } w[] = {{efd, "eventfd"}, {p[0], "pipe"}, {sv[1], "socket"}, {tfd, "timer"}};
  for (int i = 0; i < 4; ++i) {
    struct epoll_event ev = {.events = EPOLLIN | (i == 2 ? EPOLLET : 0), .data.u32 = (uint32_t)i};
    check("epoll_ctl ADD", epoll_ctl(ep, EPOLL_CTL_ADD, w[i].fd, &ev));
  }
  uint64_t one = 3;
  io.write(efd, &one, sizeof one);
  struct iovec iov[2] = {{"hel", 3}, {"lo", 2}};
  check("writev pipe", writev(p[1], iov, 2));
  check("send socket", send(sv[0], "ping", 4, MSG_NOSIGNAL));
  struct itimerspec its = {{0, 0}, {0, 20 * 1000 * 1000}};
  check("timerfd_settime", timerfd_settime(tfd, 0, &its, NULL));

  int seen = 0, rounds = 0;
  while (seen != 0xf && rounds++ < 20) {
    struct epoll_event out[8];
    int n = epoll_wait(ep, out, 8, 1000);
    for (int i = 0; i < n; ++i) {
      int k = (int)out[i].data.u32;
      char buf[64];
      long r;
      if (k == 2) {
        int avail = -1;
        ioctl(w[k].fd, FIONREAD, &avail);
        printf("socket FIONREAD %d\n", avail);
        r = recv(w[k].fd, buf, sizeof buf, 0);
      } else {
        r = io.read(w[k].fd, buf, sizeof buf);
      }
      if (k == 0 || k == 3) printf("%s: %ld bytes, value %llu\n", w[k].name, r, k == 0 ? (unsigned long long)*(uint64_t *)buf : 1ULL);
      else printf("%s: %ld bytes '%.*s'\n", w[k].name, r, (int)(r > 0 ? r : 0), buf);
      if (r >= 0) seen |= 1 << k;
    }
  }
  struct pollfd pf[2] = {{p[0], POLLIN, 0}, {p[1], POLLOUT, 0}};
  check("poll", poll(pf, 2, 0));
  printf("revents %#x %#x\n", pf[0].revents, pf[1].revents);
  int d = dup(p[1]);
  io.close(p[1]);
  check("write dup", write(d, "x", 1));
  close(d);
  char c[4];
  check("read pipe", read(p[0], c, sizeof c));
  check("read pipe at EOF", read(p[0], c, sizeof c));
  check("lseek pipe", lseek(p[0], 0, SEEK_CUR));
  close(p[0]);
  shutdown(sv[0], SHUT_WR);
  check("recv after shutdown", recv(sv[1], c, sizeof c, 0));
  check("close", close(sv[0]) | close(sv[1]) | close(efd) | close(tfd) | close(ep));
  return 0;
}
