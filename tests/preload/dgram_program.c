/*
 * dgram_program.c - AF_UNIX datagram and seqpacket socket pairs as a
 * program sees them: message boundaries, MSG_TRUNC, MSG_PEEK, zero-length
 * messages, FIONREAD, epoll readiness (level- and edge-triggered), a
 * blocking reader thread, shutdown and the peer's close, and messages
 * queued across fork (read by the child and by the parent).  An ordinary
 * program (no uepoll in it): run plainly it shows what Linux does; under
 * uepoll-run its pairs are uepoll objects, made kernel ones before the fork
 * (src/preload/fork_convert.c), and tests/preload/run.sh requires the same
 * output line for line.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *tname(int type) { return type == SOCK_DGRAM ? "dgram" : "seqpacket"; }

static void say(const char *what, long r) {
  if (r < 0)
    printf("%s = -1 %s\n", what, strerror(errno));
  else
    printf("%s = %ld\n", what, r);
}

/* One receive: its result, the bytes (first 8) and msg_flags. */
static void show_recv(const char *what, int fd, size_t len, int flags) {
  static char buf[300000];
  struct iovec io = {buf, len};
  struct msghdr m = {.msg_iov = &io, .msg_iovlen = 1};
  ssize_t r = recvmsg(fd, &m, flags);
  if (r < 0) {
    printf("%s = -1 %s\n", what, strerror(errno));
    return;
  }
  size_t shown = (size_t)r < len ? (size_t)r : len;
  printf("%s = %zd '%.*s' flags %#x\n", what, r, (int)(shown < 8 ? shown : 8), buf, m.msg_flags);
}

static void show_wait(const char *what, int ep) {
  struct epoll_event ev[4];
  int n = epoll_wait(ep, ev, 4, 0);
  printf("%s: epoll_wait %d", what, n);
  for (int i = 0; i < n; ++i) printf(" [%llu %#x]", (unsigned long long)ev[i].data.u64, ev[i].events);
  printf("\n");
}

static void messages(int type) {
  printf("-- %s messages\n", tname(type));
  int s[2];
  say("socketpair", socketpair(AF_UNIX, type | SOCK_NONBLOCK, 0, s));
  int ep = epoll_create1(0);
  struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT | EPOLLET, .data.u64 = 1};
  say("epoll_ctl a", epoll_ctl(ep, EPOLL_CTL_ADD, s[0], &ev));
  ev.data.u64 = 2;
  ev.events = EPOLLIN | EPOLLRDHUP;
  say("epoll_ctl b", epoll_ctl(ep, EPOLL_CTL_ADD, s[1], &ev));
  show_wait("fresh", ep);
  say("send hello", send(s[0], "hello", 5, 0));
  say("send empty", send(s[0], "", 0, 0));
  say("send world!", send(s[0], "world!", 6, MSG_EOR));
  show_wait("queued", ep);
  int n = -1;
  say("FIONREAD", ioctl(s[1], FIONREAD, &n));
  printf("  %d\n", n);
  show_recv("recv 3 PEEK", s[1], 3, MSG_PEEK);
  show_recv("recv 3 TRUNC", s[1], 3, MSG_TRUNC);
  show_recv("recv 8", s[1], 8, 0);
  show_recv("recv 8", s[1], 8, MSG_WAITALL);
  show_recv("recv 8 (empty)", s[1], 8, 0);
  show_wait("drained", ep);
  int t = 0;
  socklen_t tl = sizeof t;
  say("SO_TYPE", getsockopt(s[0], SOL_SOCKET, SO_TYPE, &t, &tl));
  printf("  %d\n", t);
  static char big[300000];
  say("send 212961", send(s[0], big, 212961, 0));
  say("send 212960", send(s[0], big, 212960, 0));
  say("send 1 (full)", send(s[0], big, 1, 0));
  show_recv("recv big", s[1], sizeof big, 0);
  show_wait("room again", ep);
  say("shutdown b WR", shutdown(s[1], SHUT_WR));
  show_wait("after shutdown", ep);
  say("send to b", send(s[0], "x", 1, 0));
  say("close b", close(s[1]));
  show_wait("after close", ep);
  say("send after close", send(s[0], "x", 1, MSG_NOSIGNAL));
  say("send again", send(s[0], "x", 1, MSG_NOSIGNAL));
  show_recv("recv after close", s[0], 8, 0);
  close(s[0]);
  close(ep);
}

struct reader {
  int fd;
  int got;
  long bytes;
};

static void *read_all(void *p) {
  struct reader *r = p;
  char b[70000];
  for (;;) {
    ssize_t n = recv(r->fd, b, sizeof b, 0);
    if (n < 0 || (n == 1 && b[0] == 'E')) break;
    r->got++;
    r->bytes += n;
  }
  return NULL;
}

static void blocking(int type) {
  printf("-- %s blocking\n", tname(type));
  int s[2];
  say("socketpair", socketpair(AF_UNIX, type, 0, s));
  struct reader r = {s[1], 0, 0};
  pthread_t th;
  pthread_create(&th, NULL, read_all, &r);
  static char m[65536];
  long sent = 0;
  for (int i = 0; i < 500; ++i) {
    ssize_t w = send(s[0], m, (size_t)(i * 131) % sizeof m, 0);
    if (w > 0) sent += w;
  }
  send(s[0], "E", 1, 0);
  pthread_join(th, NULL);
  printf("reader got %d messages, %ld bytes; sent %ld\n", r.got, r.bytes, sent);
  close(s[0]);
  close(s[1]);
}

static void across_fork(int type) {
  printf("-- %s across fork\n", tname(type));
  int s[2];
  say("socketpair", socketpair(AF_UNIX, type | SOCK_NONBLOCK, 0, s));
  int ep = epoll_create1(0);
  struct epoll_event ev = {.events = EPOLLIN, .data.u64 = 7};
  say("epoll_ctl", epoll_ctl(ep, EPOLL_CTL_ADD, s[1], &ev));
  static char big[100000];
  memset(big, 'B', sizeof big);
  say("send abc", send(s[0], "abc", 3, 0));
  say("send empty", send(s[0], "", 0, 0));
  say("send 100000", send(s[0], big, sizeof big, 0));
  say("send tail", send(s[0], "tail", 4, 0));
  say("send back", send(s[1], "back", 4, 0));
  say("shutdown a RD", shutdown(s[0], SHUT_RD));
  pid_t pid = fork();
  if (pid == 0) {
    show_recv("child recv", s[1], 2, 0);
    show_recv("child recv", s[1], 8, 0);
    _exit(0);
  }
  int st;
  waitpid(pid, &st, 0);
  show_wait("parent", ep);
  show_recv("parent recv", s[1], sizeof big, 0);
  show_recv("parent recv", s[1], 8, 0);
  show_recv("parent recv", s[1], 8, 0);
  show_recv("parent recv a", s[0], 8, 0);
  show_recv("parent recv a", s[0], 8, 0);
  say("send to a (shut RD)", send(s[1], "x", 1, 0));
  int t = 0;
  socklen_t tl = sizeof t;
  say("SO_TYPE", getsockopt(s[1], SOL_SOCKET, SO_TYPE, &t, &tl));
  printf("  %d\n", t);
  close(s[0]);
  close(s[1]);
  close(ep);
}

/* The peer closed with unread messages, then a fork: ECONNRESET once, the
 * messages, end of file (seqpacket); a datagram socket just reads them. */
static void reset_across_fork(int type) {
  printf("-- %s reset across fork\n", tname(type));
  int s[2];
  say("socketpair", socketpair(AF_UNIX, type | SOCK_NONBLOCK, 0, s));
  say("send m1", send(s[1], "m1", 2, 0));
  say("send m2", send(s[1], "m2", 2, 0));
  say("send unread", send(s[0], "u", 1, 0));
  say("close b", close(s[1]));
  pid_t pid = fork();
  if (pid == 0) _exit(0);
  int st;
  waitpid(pid, &st, 0);
  for (int i = 0; i < 4; ++i) show_recv("recv a", s[0], 8, 0);
  say("send a", send(s[0], "x", 1, MSG_NOSIGNAL));
  close(s[0]);
}

int main(void) {
  setvbuf(stdout, NULL, _IONBF, 0);
  signal(SIGPIPE, SIG_IGN);
  for (int type = SOCK_DGRAM; type <= SOCK_SEQPACKET; type += SOCK_SEQPACKET - SOCK_DGRAM) {
    messages(type);
    blocking(type);
    across_fork(type);
    reset_across_fork(type);
  }
  return 0;
}
