/*
 * alias_program.c - built with _FORTIFY_SOURCE=2 (read, recv, recvfrom,
 * poll, ppoll, ttyname_r and FD_SET go through glibc's __*_chk entry
 * points) and calling glibc's other public names of the calls (__read,
 * __write, __close, __dup2, __fcntl, __poll, __send, __pread64, and
 * glibc < 2.33's __fxstatat64) on uepoll pipes, eventfds and socket pairs.
 * Run plainly and under uepoll-run (tests/preload/run.sh): the same output.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

ssize_t __read(int fd, void *buf, size_t n);
ssize_t __write(int fd, const void *buf, size_t n);
int __close(int fd);
int __dup2(int oldfd, int newfd);
int __fcntl(int fd, int cmd, ...);
int __poll(struct pollfd *fds, nfds_t n, int timeout);
/* Weak: glibc exports __send on some architectures only (not aarch64). */
ssize_t __send(int fd, const void *buf, size_t n, int flags) __attribute__((weak));
ssize_t __pread64(int fd, void *buf, size_t n, off64_t off);
int __fxstatat64(int ver, int dirfd, const char *path, struct stat64 *st, int flags);

static void say(const char *what, long r) {
  if (r < 0) printf("%s = -1 %s\n", what, strerrorname_np(errno));
  else printf("%s = %ld\n", what, r);
}

int main(void) {
  setvbuf(stdout, NULL, _IONBF, 0);
  int ep = epoll_create1(EPOLL_CLOEXEC);
  int p[2], sv[2];
  if (pipe2(p, O_NONBLOCK) < 0 || socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0) return 1;
  int efd = eventfd(3, EFD_NONBLOCK);
  struct epoll_event ev = {.events = EPOLLIN, .data.u64 = 1};
  epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev);
  printf("fds ep %d pipe %d %d pair %d %d efd %d\n", ep, p[0], p[1], sv[0], sv[1], efd);

  char buf[32];
  volatile size_t room = sizeof buf; /* not a constant: the fortified calls check it at run time */
  volatile nfds_t one = 1;
  say("__write pipe", __write(p[1], "abc", 3));
  say("epoll_wait", epoll_wait(ep, &ev, 1, 1000));
  say("read (fortified) pipe", read(p[0], buf, room));
  say("__write pipe", __write(p[1], "de", 2));
  say("__read pipe", __read(p[0], buf, sizeof buf));
  say("__pread64 pipe", __pread64(p[0], buf, 1, 0));
  uint64_t v = 0;
  say("__read eventfd", __read(efd, &v, sizeof v));
  printf("count %llu\n", (unsigned long long)v);

  say("__send pair", __send ? __send(sv[0], "xyz", 3, 0) : send(sv[0], "xyz", 3, 0));
  struct pollfd pf = {.fd = sv[1], .events = POLLIN};
  say("poll (fortified) pair", poll(&pf, one, 1000));
  printf("revents %#x\n", pf.revents);
  struct timespec zero = {0, 0};
  say("ppoll (fortified) pair", ppoll(&pf, one, &zero, NULL));
  say("__poll pair", __poll(&pf, 1, 0));
  say("recv (fortified) pair", recv(sv[1], buf, room - 30, 0));
  say("recvfrom (fortified) pair", recvfrom(sv[1], buf, room, 0, NULL, NULL));

  fd_set rs;
  FD_ZERO(&rs);
  FD_SET(efd, &rs); /* __fdelt_chk */
  struct timeval tv = {0, 0};
  say("eventfd write", write(efd, &(uint64_t){1}, 8));
  say("select eventfd", select(efd + 1, &rs, NULL, NULL, &tv));
  printf("isset %d\n", FD_ISSET(efd, &rs) ? 1 : 0);

  say("__fcntl F_GETFL pipe", __fcntl(p[0], F_GETFL) & (O_ACCMODE | O_NONBLOCK));
  say("__fcntl F_GETFD pipe", __fcntl(p[0], F_GETFD));
  struct stat64 st;
  say("__fxstatat64 empty path", __fxstatat64(1, p[0], "", &st, AT_EMPTY_PATH));
  printf("fifo %d\n", S_ISFIFO(st.st_mode) ? 1 : 0);
  char name[64];
  volatile size_t nlen = sizeof name;
  int e = ttyname_r(p[0], name, nlen); /* __ttyname_r_chk */
  printf("ttyname_r (fortified) pipe = %s\n", e ? strerrorname_np(e) : "0");

  int d = __dup2(p[0], 20);
  say("__dup2 pipe onto 20", d);
  say("__write pipe", __write(p[1], "f", 1));
  say("__read 20", __read(20, buf, sizeof buf));
  say("__close 20", __close(20));
  say("__close 20 again", __close(20));
  return 0;
}
