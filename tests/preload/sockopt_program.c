/* sockopt_program.c - run plainly and under uepoll-run (run.sh): every
 * SOL_SOCKET option of stream, datagram and seqpacket socket pairs (uepoll
 * pairs under the preload) read, set to 1 and read again, answering as
 * Linux's with no warning; SO_SNDBUF's flow control and write-space edge,
 * SO_RCVTIMEO's deadline, both carried into a child across fork (where the
 * preload turns the pair into a kernel one), and so are SO_TIMESTAMPING,
 * SO_TIMESTAMPNS_NEW and SO_PASSPIDFD (their control messages); bind()
 * naming a pair's end (the preload makes the pair a kernel one first), its
 * registration in an epoll instance kept. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/net_tstamp.h>
#include <stddef.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *err(int r) { return r < 0 ? strerrorname_np(errno) : "ok"; }

static long ms_since(const struct timespec *t0) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (t.tv_sec - t0->tv_sec) * 1000 + (t.tv_nsec - t0->tv_nsec) / 1000000;
}

/* One option's value as text: hex bytes, with the values that name this
 * process or one kernel object made neutral. */
static void show_value(int opt, const unsigned char *b, socklen_t len, char *out, size_t room) {
  if (opt == SO_PEERCRED && len >= sizeof(struct ucred)) {
    const struct ucred *uc = (const void *)b;
    snprintf(out, room, "pid %s uid %u gid %u", uc->pid == getpid() ? "self" : "other", uc->uid, uc->gid);
    return;
  }
  if (opt == SO_COOKIE) { /* a kernel counter */
    unsigned long long c = 0;
    memcpy(&c, b, len < sizeof c ? len : sizeof c);
    snprintf(out, room, "cookie %s", c ? "nonzero" : "0");
    return;
  }
  size_t o = 0;
  for (socklen_t i = 0; i < len && o + 3 < room; ++i) o += (size_t)snprintf(out + o, room - o, "%02x", b[i]);
  out[o] = 0;
}

static void probe(int fd, int opt) {
  unsigned char b[64];
  char v1[160], v2[160];
  socklen_t l1 = sizeof b;
  memset(b, 0, sizeof b);
  int g1 = getsockopt(fd, SOL_SOCKET, opt, b, &l1);
  const char *e1 = err(g1);
  if (g1 == 0) show_value(opt, b, l1, v1, sizeof v1);
  if (g1 == 0 && opt == 77 && l1 == sizeof(int)) { /* SO_PEERPIDFD: a new descriptor */
    int pidfd;
    memcpy(&pidfd, b, sizeof pidfd);
    close(pidfd);
  }
  const int one = 1;
  int s = setsockopt(fd, SOL_SOCKET, opt, &one, sizeof one);
  const char *es = err(s);
  socklen_t l2 = sizeof b;
  memset(b, 0, sizeof b);
  int g2 = getsockopt(fd, SOL_SOCKET, opt, b, &l2);
  const char *e2 = err(g2);
  if (g2 == 0) show_value(opt, b, l2, v2, sizeof v2);
  if (g2 == 0 && opt == 77 && l2 == sizeof(int)) {
    int pidfd;
    memcpy(&pidfd, b, sizeof pidfd);
    close(pidfd);
  }
  printf("  opt %d: get %s%s%s, set %s, get %s%s%s\n", opt, e1, g1 ? "" : " ", g1 ? "" : v1, es, e2, g2 ? "" : " ",
         g2 ? "" : v2);
}

/* Non-blocking 1-byte sends until EAGAIN. */
static long fill(int fd) {
  long n = 0;
  while (n < 100000 && send(fd, "f", 1, MSG_DONTWAIT) == 1) ++n;
  return n;
}

/* One message sent on `a` and received on `b`: the control messages' types
 * and lengths. */
static void show_stamps(const char *who, int a, int b) {
  send(a, "t", 1, 0);
  char data[4];
  char ctl[256] __attribute__((aligned(8)));
  struct iovec iov = {data, sizeof data};
  struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof ctl};
  const ssize_t r = recvmsg(b, &m, 0);
  printf("  %s: recvmsg %zd %s, control:", who, r, err((int)r));
  for (struct cmsghdr *c = r >= 0 ? CMSG_FIRSTHDR(&m) : NULL; c; c = CMSG_NXTHDR(&m, c)) {
    printf(" [%d,%d,%zu]", c->cmsg_level, c->cmsg_type, (size_t)c->cmsg_len);
    if (c->cmsg_type == 4 /* SCM_PIDFD */ && c->cmsg_len >= CMSG_LEN(sizeof(int))) {
      int pidfd;
      memcpy(&pidfd, CMSG_DATA(c), sizeof pidfd);
      printf(" pidfd %s", pidfd >= 0 && fcntl(pidfd, F_GETFD) == FD_CLOEXEC ? "cloexec" : "bad");
      if (pidfd >= 0) close(pidfd);
    }
  }
  printf("\n");
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  static const int types[] = {SOCK_STREAM, SOCK_DGRAM, SOCK_SEQPACKET};
  static const char *names[] = {"stream", "dgram", "seqpacket"};
  for (int t = 0; t < 3; ++t) {
    int sv[2];
    if (socketpair(AF_UNIX, types[t], 0, sv) < 0) return 1;
    printf("%s pair\n", names[t]);
    for (int opt = 0; opt < 80; ++opt)
      probe(sv[0], opt);
    close(sv[0]);
    close(sv[1]);

    /* SO_SNDBUF's flow control and SO_RCVTIMEO, then across fork. */
    if (socketpair(AF_UNIX, types[t], 0, sv) < 0) return 1;
    const int size = 3000;
    setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &size, sizeof size);
    printf("  1-byte sends at SO_SNDBUF 3000: %ld\n", fill(sv[0]));
    struct pollfd p = {sv[0], POLLOUT, 0};
    printf("  poll POLLOUT: %d\n", poll(&p, 1, 0));
    /* A larger buffer makes the writer writable: an edge (sk_write_space). */
    const int ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLOUT | EPOLLET}, out[2];
    epoll_ctl(ep, EPOLL_CTL_ADD, sv[0], &ev);
    printf("  epoll_wait: %d\n", epoll_wait(ep, out, 2, 0));
    const int big = 100000;
    setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
    printf("  after SO_SNDBUF 100000, epoll_wait: %d\n", epoll_wait(ep, out, 2, 100));
    close(ep);
    setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &size, sizeof size);
    const struct timeval tv = {0, 50000};
    setsockopt(sv[1], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    char buf[1 << 16];
    while (recv(sv[1], buf, sizeof buf, MSG_DONTWAIT) > 0) {
    }
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    const ssize_t r = recv(sv[1], buf, sizeof buf, 0);
    printf("  recv under SO_RCVTIMEO 50 ms: %zd %s, waited: %s\n", r, err((int)r),
           ms_since(&t0) >= 40 && ms_since(&t0) < 2000 ? "yes" : "no");
    const pid_t pid = fork();
    if (pid == 0) {
      int v = 0;
      socklen_t l = sizeof v;
      getsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &v, &l);
      struct timeval got = {0, 0};
      socklen_t gl = sizeof got;
      getsockopt(sv[1], SOL_SOCKET, SO_RCVTIMEO, &got, &gl);
      clock_gettime(CLOCK_MONOTONIC, &t0);
      const ssize_t cr = recv(sv[1], buf, sizeof buf, 0);
      printf("  child: SO_SNDBUF %d, SO_RCVTIMEO {%ld,%ld}, recv %zd %s, waited: %s\n", v, (long)got.tv_sec,
             (long)got.tv_usec, cr, err((int)cr), ms_since(&t0) >= 40 && ms_since(&t0) < 2000 ? "yes" : "no");
      printf("  child: 1-byte sends: %ld\n", fill(sv[0]));
      _exit(0);
    }
    int st;
    waitpid(pid, &st, 0);
    close(sv[0]);
    close(sv[1]);

    /* bind() names an end: its address, the peer's getpeername, a second
     * bind EINVAL; the peer's registration still reports what it sends. */
    if (socketpair(AF_UNIX, types[t], 0, sv) < 0) return 1;
    const int ep2 = epoll_create1(0);
    struct epoll_event rev = {.events = EPOLLIN, .data.u32 = 7}, got[2];
    epoll_ctl(ep2, EPOLL_CTL_ADD, sv[1], &rev);
    char name[64];
    snprintf(name, sizeof name, "%cuepoll-sockopt-%d-%d", 0, (int)getpid(), t);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    memcpy(sa.sun_path, name, sizeof name);
    const socklen_t salen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(name + 1));
    int br = bind(sv[0], (struct sockaddr *)&sa, salen);
    printf("  bind: %d %s\n", br, err(br));
    br = bind(sv[0], (struct sockaddr *)&sa, salen);
    printf("  bind again: %d %s\n", br, err(br));
    struct sockaddr_un nm;
    socklen_t ol = sizeof nm;
    getsockname(sv[0], (struct sockaddr *)&nm, &ol);
    printf("  getsockname: len %s, abstract %s\n", ol == salen ? "as bound" : "other",
           ol > offsetof(struct sockaddr_un, sun_path) && nm.sun_path[0] == 0 ? "yes" : "no");
    ol = sizeof nm;
    getpeername(sv[1], (struct sockaddr *)&nm, &ol);
    printf("  peer's getpeername: len %s\n", ol == salen ? "as bound" : "other");
    send(sv[0], "hi", 2, 0);
    const int n = epoll_wait(ep2, got, 2, 1000);
    printf("  epoll_wait: %d data %u\n", n, n > 0 ? got[0].data.u32 : 0);
    printf("  recv: %zd\n", recv(sv[1], buf, sizeof buf, 0));
    close(ep2);
    close(sv[0]);
    close(sv[1]);

    /* SO_TIMESTAMPING's software stamps beside SO_TIMESTAMPNS_NEW (after
     * it: its _NEW form), and SO_PASSPIDFD's pidfd, kept across fork. */
    if (socketpair(AF_UNIX, types[t], 0, sv) < 0) return 1;
    const int tsflags = SOF_TIMESTAMPING_SOFTWARE | SOF_TIMESTAMPING_RX_SOFTWARE, one = 1;
    setsockopt(sv[1], SOL_SOCKET, SO_TIMESTAMPING_OLD, &tsflags, sizeof tsflags);
    setsockopt(sv[1], SOL_SOCKET, SO_TIMESTAMPNS_NEW, &one, sizeof one);
    setsockopt(sv[1], SOL_SOCKET, 76 /* SO_PASSPIDFD */, &one, sizeof one);
    show_stamps("stamps", sv[0], sv[1]);
    const pid_t tpid = fork();
    if (tpid == 0) {
      show_stamps("child: stamps", sv[0], sv[1]);
      _exit(0);
    }
    waitpid(tpid, &st, 0);
    show_stamps("parent after fork: stamps", sv[0], sv[1]);
    close(sv[0]);
    close(sv[1]);
  }
  return 0;
}
