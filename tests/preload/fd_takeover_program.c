/* fd_takeover_program.c - run plainly and under uepoll-run (run.sh): a
 * program's dup2 onto the highest numbers below its descriptor limit, with
 * the soft limit equal to the hard one, answers as on Linux, where those
 * numbers are free.
 *
 * Under uepoll-run that is where uepoll's own kernel descriptors lie (a
 * sleeping thread's eventfd and epolls, its signalfd, a timerfd's kernel
 * timer, the timer service's epoll and doorbell, the templates of
 * interpose_kinds.c, a socket pair's option twin, a pipe's lock
 * descriptors, a kernel descriptor in flight in SCM_RIGHTS, the kernel-side
 * epoll and doorbell of an instance that holds a kernel socket, the hubs
 * of an instance with a kernel socket nested in another: core/own_fds.h), so each dup2 moves one of them while
 * other threads sleep on it, are woken through it and time out on it
 * (core/own_slot.h).  Every dup2 must succeed with the program's file at the
 * number, and afterwards every sleeper, timer and wakeup must still work,
 * the socket's option and the pipe's locks must still be there, and the
 * message must deliver its descriptor. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "raw_listing.h"

enum { kLimit = 512, kTaken = 48 };

static int g_pipe[2];    /* thread "reader" blocks in read() on it */
static int g_ep;         /* eventfd g_ev inside; "sleeper" waits on it */
static int g_ev;
static int g_kep;        /* a kernel UDP socket g_udp and eventfd g_ev2 inside */
static int g_udp, g_udp_out, g_ev2;
static int g_outer, g_inner, g_udp2, g_udp2_out; /* g_udp2 in g_inner in g_outer */
static volatile int g_stop;
static long g_sleeper_events;
static volatile long g_kernel_events, g_user_events; /* "ksleeper"'s */
static volatile long g_nested_events;                /* "nsleeper"'s */

static void *reader(void *arg) {
  (void)arg;
  char c = 0;
  ssize_t r = read(g_pipe[0], &c, 1); /* blocks until main writes, after the takeover */
  return (void *)(intptr_t)(r == 1 && c == 'r');
}

/* Sleeps in short epoll_waits (timing out, or woken by "kicker"), so that
 * the moves meet a sleeper at every point of its sleep. */
static void *sleeper(void *arg) {
  (void)arg;
  while (!g_stop) {
    struct epoll_event ev;
    if (epoll_wait(g_ep, &ev, 1, 1) == 1) {
      uint64_t v;
      if (read(g_ev, &v, sizeof v) == sizeof v) ++g_sleeper_events;
    }
  }
  return NULL;
}

/* Sleeps in an instance with a kernel descriptor: under uepoll-run in
 * its kernel-side epoll, woken by the kernel socket and by the doorbell. */
static void *ksleeper(void *arg) {
  (void)arg;
  while (!g_stop) {
    struct epoll_event ev;
    if (epoll_wait(g_kep, &ev, 1, 2) != 1) continue;
    char b[8];
    uint64_t v;
    if (ev.data.fd == g_udp && recv(g_udp, b, sizeof b, MSG_DONTWAIT) > 0) ++g_kernel_events;
    if (ev.data.fd == g_ev2 && read(g_ev2, &v, sizeof v) == sizeof v) ++g_user_events;
  }
  return NULL;
}

/* Sleeps on the outer instance, woken through the hubs. */
static void *nsleeper(void *arg) {
  (void)arg;
  while (!g_stop) {
    struct epoll_event ev;
    if (epoll_wait(g_outer, &ev, 1, 2) != 1) continue;
    char b[8];
    int got = 0;
    while (recv(g_udp2, b, sizeof b, MSG_DONTWAIT) > 0) got = 1;
    g_nested_events += got;
  }
  return NULL;
}

static void *kicker(void *arg) {
  (void)arg;
  while (!g_stop) {
    uint64_t one = 1;
    if (write(g_ev, &one, sizeof one) != sizeof one || write(g_ev2, &one, sizeof one) != sizeof one) exit(1);
    if (send(g_udp_out, "k", 1, 0) != 1 || send(g_udp2_out, "n", 1, 0) != 1) exit(1);
    usleep(200);
  }
  return NULL;
}

/* A kernel UDP socket on 127.0.0.1 (*in) and a socket connected to it
 * (*out). */
static int udp_pair(int *in, int *out) {
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t al = sizeof a;
  *in = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
  *out = socket(AF_INET, SOCK_DGRAM, 0);
  if (*in < 0 || *out < 0) return -1;
  if (bind(*in, (struct sockaddr *)&a, sizeof a) < 0 || getsockname(*in, (struct sockaddr *)&a, &al) < 0 ||
      connect(*out, (struct sockaddr *)&a, al) < 0)
    return -1;
  return 0;
}

/* g_udp and a uepoll eventfd in g_kep; g_udp2 in g_inner, nested in
 * g_outer. */
static int kernel_instances(void) {
  g_ev2 = eventfd(0, EFD_NONBLOCK);
  g_kep = epoll_create1(0);
  g_inner = epoll_create1(0);
  g_outer = epoll_create1(0);
  if (g_ev2 < 0 || g_kep < 0 || g_inner < 0 || g_outer < 0) return -1;
  if (udp_pair(&g_udp, &g_udp_out) < 0 || udp_pair(&g_udp2, &g_udp2_out) < 0) return -1;
  struct epoll_event ev = {.events = EPOLLIN, .data.fd = g_udp};
  if (epoll_ctl(g_kep, EPOLL_CTL_ADD, g_udp, &ev) < 0) return -1;
  ev.data.fd = g_ev2;
  if (epoll_ctl(g_kep, EPOLL_CTL_ADD, g_ev2, &ev) < 0) return -1;
  ev.data.fd = g_udp2;
  if (epoll_ctl(g_inner, EPOLL_CTL_ADD, g_udp2, &ev) < 0) return -1;
  ev.data.fd = g_inner;
  return epoll_ctl(g_outer, EPOLL_CTL_ADD, g_inner, &ev);
}

static int timer_ticks(int t) {
  int ep = epoll_create1(0);
  struct epoll_event ev = {.events = EPOLLIN};
  if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, t, &ev) < 0) exit(1);
  int n = epoll_wait(ep, &ev, 1, 5000);
  uint64_t ticks = 0;
  ssize_t r = read(t, &ticks, sizeof ticks);
  close(ep);
  return n == 1 && r == sizeof ticks && ticks >= 1;
}

/* One byte and room for one descriptor, for send_fd and recv_fd. */
struct fd_msg {
  char byte;
  struct iovec iov;
  struct msghdr m;
  union { /* last: clang sees CMSG_SPACE's size as variable */
    struct cmsghdr align;
    char buf[CMSG_SPACE(sizeof(int))];
  } ctl;
};

static void fd_msg_init(struct fd_msg *f) {
  memset(f, 0, sizeof *f);
  f->iov = (struct iovec){&f->byte, 1};
  f->m = (struct msghdr){.msg_iov = &f->iov, .msg_iovlen = 1, .msg_control = f->ctl.buf,
                         .msg_controllen = sizeof f->ctl.buf};
}

static int send_fd(int s, int fd) {
  struct fd_msg f;
  fd_msg_init(&f);
  struct cmsghdr *c = CMSG_FIRSTHDR(&f.m);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  memcpy(CMSG_DATA(c), &fd, sizeof(int));
  return sendmsg(s, &f.m, 0) == 1 ? 0 : -1;
}

static int recv_fd(int s) {
  struct fd_msg f;
  fd_msg_init(&f);
  struct cmsghdr *c;
  int fd = -1;
  if (recvmsg(s, &f.m, 0) == 1 && (c = CMSG_FIRSTHDR(&f.m)) && c->cmsg_type == SCM_RIGHTS)
    memcpy(&fd, CMSG_DATA(c), sizeof(int));
  return fd;
}

/* Under uepoll-run ("count"): how many of the numbers the takeover aims at
 * hold uepoll's own descriptors, which the kernel lists (raw_listing.h)
 * and the program cannot use (EBADF), so that a test can tell that the
 * takeover met some. */
static int own_in_range(void) {
  const int d = open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  char buf[8192];
  long n;
  int own = 0;
  while (d >= 0 && (n = raw_getdents64(d, buf, sizeof buf)) > 0) {
    for (long off = 0; off < n;) {
      const char *name = buf + off + 19;
      const long fd = strtol(name, NULL, 10);
      if (name[0] >= '0' && name[0] <= '9' && fd >= kLimit - kTaken && fd < kLimit)
        own += fcntl((int)fd, F_GETFD) < 0 && errno == EBADF;
      off += *(const unsigned short *)(buf + off + 16);
    }
  }
  if (d >= 0) close(d);
  return own;
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  const int count = argc > 1 && !strcmp(argv[1], "count");
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) < 0) return 1;
  if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < kLimit) {
    printf("takeover: the hard limit is under %d: skipped\n", kLimit);
    return 0;
  }
  rl.rlim_cur = rl.rlim_max = kLimit; /* soft = hard: no room above the limit */
  if (setrlimit(RLIMIT_NOFILE, &rl) < 0) return 1;

  /* Descriptors of uepoll's own near the limit (under uepoll-run). */
  int marker[2];
  if (pipe(g_pipe) < 0 || pipe(marker) < 0) return 1;
  g_ev = eventfd(0, EFD_NONBLOCK);
  g_ep = epoll_create1(0);
  struct epoll_event ev = {.events = EPOLLIN};
  if (g_ev < 0 || g_ep < 0 || epoll_ctl(g_ep, EPOLL_CTL_ADD, g_ev, &ev) < 0) return 1;
  struct epoll_event out;
  (void)epoll_wait(g_ep, &out, 1, 5); /* this thread sleeps once */
  if (kernel_instances() < 0) return 1;
  int t = timerfd_create(CLOCK_MONOTONIC, 0);
  struct itimerspec its = {.it_interval = {0, 3 * 1000 * 1000}, .it_value = {0, 3 * 1000 * 1000}};
  if (t < 0 || timerfd_settime(t, 0, &its, NULL) < 0) return 1;
  struct statfs sfs;
  if (fstatfs(g_pipe[0], &sfs) < 0) return 1; /* a template, under uepoll-run */
  /* An option twin and a pipe's lock descriptors, under uepoll-run: a send
   * buffer size, a flock on the read end and an OFD lock on the write end. */
  int sp[2], lp[2];
  const int sndbuf = 50000;
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sp) < 0 || pipe(lp) < 0) return 1;
  if (setsockopt(sp[0], SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf) < 0) return 1;
  struct flock ofd = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 10};
  if (flock(lp[0], LOCK_EX) < 0 || fcntl(lp[1], F_OFD_SETLK, &ofd) < 0) return 1;
  int buf_before = 0;
  socklen_t bl = sizeof buf_before;
  if (getsockopt(sp[0], SOL_SOCKET, SO_SNDBUF, &buf_before, &bl) < 0) return 1;
  /* A kernel descriptor in flight, its sender's number closed. */
  struct stat null_st;
  const int kf = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (kf < 0 || fstat(kf, &null_st) < 0 || send_fd(sp[0], kf) < 0) return 1;
  close(kf);
  pthread_t th_reader, th_sleeper, th_kicker, th_ksleeper, th_nsleeper;
  pthread_create(&th_reader, NULL, reader, NULL);
  pthread_create(&th_sleeper, NULL, sleeper, NULL);
  pthread_create(&th_kicker, NULL, kicker, NULL);
  pthread_create(&th_ksleeper, NULL, ksleeper, NULL);
  pthread_create(&th_nsleeper, NULL, nsleeper, NULL);
  usleep(20 * 1000);
  if (count) printf("uepoll's own descriptors among them: %d\n", own_in_range());

  /* The takeover: each number the program's, its file there. */
  int ok = 0, right = 0;
  for (int n = kLimit - 1; n >= kLimit - kTaken; --n) {
    if (n == marker[1]) continue;
    if (dup2(marker[1], n) != n) {
      printf("dup2(%d, %d): %s\n", marker[1], n, strerrorname_np(errno));
      continue;
    }
    ++ok;
    char c = 0;
    right += fcntl(n, F_GETFD) == 0 && write(n, "m", 1) == 1 && read(marker[0], &c, 1) == 1 && c == 'm';
  }
  printf("dup2 onto the %d highest numbers below the limit: %d done, %d with the program's file\n", kTaken, ok,
         right);

  /* uepoll still works: the sleepers wake, the timer fires, new threads sleep. */
  const long kernel_then = g_kernel_events, user_then = g_user_events, nested_then = g_nested_events;
  usleep(20 * 1000);
  const int kernel_woke = g_kernel_events > kernel_then, user_woke = g_user_events > user_then;
  const int nested_woke = g_nested_events > nested_then;
  int fired = timer_ticks(t);
  if (write(g_pipe[1], "r", 1) != 1) return 1;
  void *got = NULL;
  pthread_join(th_reader, &got);
  g_stop = 1;
  pthread_join(th_kicker, NULL);
  pthread_join(th_sleeper, NULL);
  pthread_join(th_ksleeper, NULL);
  pthread_join(th_nsleeper, NULL);
  printf("after: the instance with a kernel socket woken by it %d, by its eventfd %d\n", kernel_woke, user_woke);
  printf("after: the instance nesting one with a kernel socket woken %d\n", nested_woke);
  printf("after: timer fires %d, blocked reader woken %d, sleeper woken at least once %d, fstatfs %d\n", fired,
         (int)(intptr_t)got, g_sleeper_events > 0, fstatfs(g_pipe[0], &sfs) == 0);
  /* The option is still set, and the locks still held: the write end's
   * flock conflicts with the read end's (one inode, another open file),
   * the read end sees the write end's OFD lock. */
  int buf_after = 0;
  bl = sizeof buf_after;
  const int got_buf = getsockopt(sp[0], SOL_SOCKET, SO_SNDBUF, &buf_after, &bl) == 0 && buf_after == buf_before;
  const int flock_r = flock(lp[1], LOCK_EX | LOCK_NB);
  const int flock_e = errno;
  struct flock q = {.l_type = F_RDLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1};
  const int ofd_seen = fcntl(lp[0], F_OFD_GETLK, &q) == 0 && q.l_type == F_WRLCK;
  const int rf = recv_fd(sp[1]);
  struct stat rst;
  printf("after: the descriptor in flight delivered %d\n",
         rf >= 0 && fstat(rf, &rst) == 0 && rst.st_rdev == null_st.st_rdev && S_ISCHR(rst.st_mode));
  printf("after: SO_SNDBUF kept %d, flock of the other end %d %s, OFD lock seen %d, unlock %d\n", got_buf, flock_r,
         flock_r < 0 ? strerrorname_np(flock_e) : "-", ofd_seen, flock(lp[0], LOCK_UN));
  /* The numbers given back: a blocking wait of a new thread still sleeps
   * and wakes. */
  for (int n = kLimit - 1; n >= kLimit - kTaken; --n)
    if (n != marker[1]) close(n);
  g_stop = 0;
  if (pipe(g_pipe) < 0) return 1;
  pthread_create(&th_reader, NULL, reader, NULL);
  usleep(10 * 1000);
  if (write(g_pipe[1], "r", 1) != 1) return 1;
  pthread_join(th_reader, &got);
  printf("after closing them: new reader woken %d, timer fires %d\n", (int)(intptr_t)got, timer_ticks(t));
  return 0;
}
