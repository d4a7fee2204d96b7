/* scm_program.c - run plainly and under uepoll-run (run.sh): descriptor
 * passing over socket pairs, which the preload makes uepoll pairs.  The
 * received numbers, flags and what the received descriptors do must be
 * the same as on Linux, with no warning:
 *   - uepoll objects (eventfd, pipe end, epoll) and a kernel file passed
 *     in one message; MSG_CMSG_CLOEXEC; MSG_CTRUNC;
 *   - a master that hands its listening socket to a worker over the
 *     worker's channel, before the fork (in flight while it forks) and
 *     after it (the channel is then a kernel pair); a uepoll pipe end
 *     passed over the kernel channel;
 *   - a pipe end, an eventfd and a timerfd in flight at fork, received by
 *     the child;
 *   - an eventfd and a timerfd sent over a kernel channel to a child
 *     (the preload makes each a kernel one first). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHECK(x)                                                    \
  do {                                                              \
    if (!(x)) {                                                     \
      printf("check failed line %d: %s (%s)\n", __LINE__, #x, strerror(errno)); \
      exit(1);                                                      \
    }                                                               \
  } while (0)

static ssize_t send_fds(int s, const char *data, const int *fds, int n) {
  char ctl[CMSG_SPACE(16 * sizeof(int))];
  struct iovec iov = {(void *)data, strlen(data)};
  struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
  if (n) {
    memset(ctl, 0, sizeof ctl);
    m.msg_control = ctl;
    m.msg_controllen = CMSG_SPACE(n * sizeof(int));
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(n * sizeof(int));
    memcpy(CMSG_DATA(c), fds, n * sizeof(int));
  }
  return sendmsg(s, &m, MSG_NOSIGNAL);
}

/* Receives into buf (NUL-terminated) with room for `room` descriptors;
 * fills fds, returns their count; prints a line naming `what`. */
static int recv_fds(int s, const char *what, int room, int flags, int *fds, char *buf, size_t len) {
  char ctl[CMSG_SPACE(16 * sizeof(int))];
  struct iovec iov = {buf, len - 1};
  struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl,
                     .msg_controllen = room ? CMSG_LEN(room * sizeof(int)) : 0};
  ssize_t r = recvmsg(s, &m, flags);
  CHECK(r >= 0);
  buf[r] = 0;
  int n = 0;
  for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c))
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
      int k = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
      memcpy(fds + n, CMSG_DATA(c), k * sizeof(int));
      n += k;
    }
  printf("%s: %zd [%s] ctrunc %d cloexec-flag %d fds", what, r, buf, !!(m.msg_flags & MSG_CTRUNC),
         !!(m.msg_flags & MSG_CMSG_CLOEXEC));
  for (int i = 0; i < n; ++i) printf(" %d%s", fds[i], (fcntl(fds[i], F_GETFD) & FD_CLOEXEC) ? "(cloexec)" : "");
  printf("\n");
  return n;
}

static void objects(void) {
  int s[2], p[2];
  CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, s) == 0);
  CHECK(pipe(p) == 0);
  int e = eventfd(0, 0), ep = epoll_create1(0), k = open("/etc/hostname", O_RDONLY);
  CHECK(e >= 0 && ep >= 0 && k >= 0);
  printf("made: pair %d %d, pipe %d %d, eventfd %d, epoll %d, file %d\n", s[0], s[1], p[0], p[1], e, ep, k);
  int out[4] = {e, p[1], ep, k}, in[16];
  CHECK(send_fds(s[0], "objs", out, 4) == 4);
  close(p[1]);
  char buf[64];
  CHECK(recv_fds(s[1], "objects", 8, 0, in, buf, sizeof buf) == 4);
  uint64_t v = 7;
  CHECK(write(in[0], &v, sizeof v) == 8);
  CHECK(read(e, &v, sizeof v) == 8);
  printf("eventfd through the received number: %llu\n", (unsigned long long)v);
  struct epoll_event ev = {.events = EPOLLIN, .data.u32 = 42};
  CHECK(epoll_ctl(in[2], EPOLL_CTL_ADD, p[0], &ev) == 0);
  CHECK(write(in[1], "pipe", 4) == 4);
  struct epoll_event got;
  int n = epoll_wait(ep, &got, 1, 1000);
  printf("epoll through the received number: %d event data %u\n", n, n == 1 ? got.data.u32 : 0);
  char fb[8] = {0};
  printf("file through the received number: %zd\n", pread(in[3], fb, 4, 0) > 0 ? (ssize_t)4 : (ssize_t)-1);
  for (int i = 0; i < 4; ++i) close(in[i]);
  n = (int)read(p[0], buf, sizeof buf);
  printf("pipe read %d, then %zd (end of file: every write end closed)\n", n, read(p[0], buf, sizeof buf));
  /* MSG_CMSG_CLOEXEC, MSG_CTRUNC (the files that do not fit are closed). */
  CHECK(send_fds(s[0], "cl", out + 3, 1) == 2);
  CHECK(recv_fds(s[1], "cloexec", 4, MSG_CMSG_CLOEXEC, in, buf, sizeof buf) == 1);
  close(in[0]);
  int three[3] = {k, k, k};
  CHECK(send_fds(s[0], "tr", three, 3) == 2);
  CHECK(recv_fds(s[1], "ctrunc", 1, 0, in, buf, sizeof buf) == 1);
  close(in[0]);
  int next = open("/dev/null", O_RDONLY);
  printf("next number after the truncated receive: %d\n", next);
  close(next);
  close(k);
  close(e);
  close(ep);
  close(p[0]);
  close(s[0]);
  close(s[1]);
}

/* The worker: accepts one connection on the listener it was handed and
 * answers it; does so for each listener message on its channel. */
static void worker(int ch) {
  for (int round = 0; round < 2; ++round) {
    int fds[16];
    char buf[64];
    int n = recv_fds(ch, round ? "worker got (after fork)" : "worker got (in flight at fork)", 4, 0, fds, buf,
                     sizeof buf);
    CHECK(n == 1);
    int ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = fds[0]};
    CHECK(epoll_ctl(ep, EPOLL_CTL_ADD, fds[0], &ev) == 0);
    struct epoll_event got;
    CHECK(epoll_wait(ep, &got, 1, 10000) == 1);
    int c = accept(fds[0], NULL, NULL);
    CHECK(c >= 0);
    char req[16] = {0};
    CHECK(read(c, req, sizeof req - 1) > 0);
    char reply[64];
    snprintf(reply, sizeof reply, "worker %d answers %s", round, req);
    CHECK(write(c, reply, strlen(reply)) == (ssize_t)strlen(reply));
    close(c);
    close(ep);
    close(fds[0]);
  }
  /* A pipe end the master passes over the (now kernel) channel. */
  int fds[16];
  char buf[64];
  CHECK(recv_fds(ch, "worker got a pipe end", 4, 0, fds, buf, sizeof buf) == 1);
  CHECK(write(fds[0], "from the worker", 15) == 15);
  close(fds[0]);
}

static int listener(int *port) {
  int l = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof a;
  CHECK(l >= 0 && bind(l, (struct sockaddr *)&a, sizeof a) == 0 && listen(l, 4) == 0);
  CHECK(getsockname(l, (struct sockaddr *)&a, &len) == 0);
  *port = ntohs(a.sin_port);
  return l;
}

static void ask(int port, const char *req) {
  int c = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  CHECK(c >= 0 && connect(c, (struct sockaddr *)&a, sizeof a) == 0);
  CHECK(write(c, req, strlen(req)) == (ssize_t)strlen(req));
  char buf[64] = {0};
  ssize_t n = 0, r;
  while ((r = read(c, buf + n, sizeof buf - 1 - n)) > 0) n += r;
  printf("client got: %s\n", buf);
  close(c);
}

static void master_worker(void) {
  int ch[2], port;
  CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, ch) == 0);
  int l = listener(&port);
  CHECK(send_fds(ch[0], "L", &l, 1) == 1); /* in flight while it forks */
  close(l);
  fflush(stdout);
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    close(ch[0]);
    worker(ch[1]);
    fflush(stdout);
    _exit(0);
  }
  close(ch[1]);
  ask(port, "one");
  l = listener(&port);
  CHECK(send_fds(ch[0], "L", &l, 1) == 1);
  close(l);
  ask(port, "two");
  int p[2];
  CHECK(pipe(p) == 0);
  CHECK(send_fds(ch[0], "P", &p[1], 1) == 1);
  close(p[1]);
  char buf[32] = {0};
  ssize_t n = 0, r;
  while ((r = read(p[0], buf + n, sizeof buf - 1 - n)) > 0) n += r;
  printf("master read from the passed pipe: %s\n", buf);
  close(p[0]);
  int st;
  CHECK(waitpid(pid, &st, 0) == pid);
  printf("worker exit %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
  close(ch[0]);
}

/* A pipe end in flight at fork: the child receives it and writes. */
static void pipe_in_flight(void) {
  int s[2], p[2];
  CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, s) == 0 && pipe(p) == 0);
  CHECK(send_fds(s[0], "W", &p[1], 1) == 1);
  close(p[1]);
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    int fds[16];
    char buf[16];
    CHECK(recv_fds(s[1], "child got", 4, 0, fds, buf, sizeof buf) == 1);
    CHECK(write(fds[0], "child", 5) == 5);
    fflush(stdout);
    _exit(0);
  }
  close(s[1]);
  close(s[0]);
  int st;
  waitpid(pid, &st, 0);
  char buf[16] = {0};
  ssize_t n = read(p[0], buf, sizeof buf - 1);
  printf("parent read %zd [%s], then %zd\n", n, buf, read(p[0], buf, sizeof buf));
  close(p[0]);
}

/* An eventfd (nonblocking) and a timerfd armed for 20 ms; the pair in *ep. */
static void eventfd_and_timer(int ep[2]) {
  ep[0] = eventfd(0, EFD_NONBLOCK);
  ep[1] = timerfd_create(CLOCK_MONOTONIC, 0);
  struct itimerspec its = {.it_value = {.tv_nsec = 20 * 1000 * 1000}};
  CHECK(ep[0] >= 0 && ep[1] >= 0 && timerfd_settime(ep[1], 0, &its, NULL) == 0);
}

/* The child's side: receives an eventfd and a timerfd on s, adds v to the
 * eventfd and takes the timer's expiry (a blocking read), then exits. */
static void child_uses_them(int s, const char *how, uint64_t v) {
  int fds[16];
  char buf[16];
  CHECK(recv_fds(s, how, 4, 0, fds, buf, sizeof buf) == 2);
  CHECK(write(fds[0], &v, sizeof v) == 8);
  CHECK(read(fds[1], &v, sizeof v) == 8);
  printf("%s: timer count %llu\n", how, (unsigned long long)v);
  fflush(stdout);
  _exit(0);
}

/* The parent's side, once the child pid is gone: the child's count in the
 * eventfd, and the timer's expiry taken by the child.  Closes what it got. */
static void parent_sees_them(pid_t pid, const int et[2], int s[2], const char *how) {
  int st = 0;
  waitpid(pid, &st, 0);
  uint64_t v = 0;
  const ssize_t n = read(et[0], &v, sizeof v);
  printf("%s: eventfd read %zd count %llu\n", how, n, (unsigned long long)v);
  struct pollfd tp = {.fd = et[1], .events = POLLIN};
  printf("%s: timer readable %d\n", how, poll(&tp, 1, 0));
  close(et[0]);
  close(et[1]);
  close(s[0]);
  close(s[1]);
}

/* An eventfd and a timerfd in flight at fork: the child receives them. */
static void objects_in_flight(void) {
  int s[2], et[2];
  CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, s) == 0);
  eventfd_and_timer(et);
  CHECK(send_fds(s[0], "IF", et, 2) == 2);
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) child_uses_them(s[1], "child got in flight", 6);
  parent_sees_them(pid, et, s, "parent, in flight");
}

/* An eventfd and a timerfd made after fork, sent to the child over the
 * channel (a kernel pair by then): the child's write reaches the parent's
 * eventfd, and the child's read takes the timer's expiry from the
 * parent's timer too. */
static void kernel_channel(void) {
  int s[2], et[2];
  CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, s) == 0);
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) child_uses_them(s[1], "child got", 5);
  eventfd_and_timer(et);
  CHECK(send_fds(s[0], "ET", et, 2) == 2);
  parent_sees_them(pid, et, s, "parent, kernel channel");
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  objects();
  master_worker();
  pipe_in_flight();
  objects_in_flight();
  kernel_channel();
  return 0;
}
