/*
 * fork_program.c - pipes and socket pairs shared across fork, vfork and
 * posix_spawn, as a program sees them.  An ordinary program (no uepoll in
 * it): run plainly it shows what Linux does; run under uepoll-run its
 * uepoll pipes and pairs are turned into kernel ones before each fork
 * (src/preload/fork_convert.c), and tests/preload/run.sh requires the
 * same output line for line.  Each scenario prints what the parent
 * observes after the child is done: bytes read, return values and errno,
 * epoll events with their data, status and descriptor flags.
 *
 * With the argument "sleepers": threads asleep in read, write, poll, recv,
 * send, splice, preadv2, pwritev2, recvmmsg and sendmmsg on pipes and
 * socket pairs (and in a splice from a pipe, waiting for room in a full
 * kernel FIFO) when the main thread forks; the child's reads and writes
 * reach them as on Linux, and a call with a socket timeout ends when it
 * would have plainly.  "blocked": a thread asleep reading a pipe runs
 * a signal handler that lasts until the main thread has forked, so its
 * call cannot leave the pipe; the pipe stays a uepoll object (a copy in the
 * child), which the child reports with one "uepoll: fork()" warning.
 * "blocked_cloexec" and "blocked_used": the same with a close-on-exec
 * pipe, which the child leaves alone (no warning: nothing differs) or
 * writes to (the warning, at that write).  "racing": threads making pipes
 * and forking at once.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* A setup call that must work (and uses glibc's warn_unused_result). */
#define MUST(call)                                                              \
  do {                                                                          \
    if ((call) < 0) printf("line %d: %s: %s\n", __LINE__, #call, strerror(errno)); \
  } while (0)

static void show_read(const char *what, int fd) {
  char b[256];
  ssize_t n = read(fd, b, sizeof b);
  if (n < 0)
    printf("%s: read -1 %s\n", what, strerror(errno));
  else
    printf("%s: read %zd '%.*s'\n", what, n, (int)n, b);
}

static int by_data(const void *a, const void *b) {
  const struct epoll_event *x = a, *y = b;
  return x->data.u64 < y->data.u64 ? -1 : x->data.u64 > y->data.u64;
}

/* Events sorted by their data: the order of events that were pending at the
 * fork is not kept by the conversion (docs/linux-deviations.md, fork). */
static void show_wait(const char *what, int ep) {
  struct epoll_event ev[8];
  int n = epoll_wait(ep, ev, 8, 0);
  if (n > 1) qsort(ev, (size_t)n, sizeof ev[0], by_data);
  printf("%s: epoll_wait %d", what, n);
  for (int i = 0; i < n; ++i) printf(" [%llx %x]", (unsigned long long)ev[i].data.u64, ev[i].events);
  printf("\n");
}

static void add(int ep, int fd, uint32_t events, uint64_t data) {
  struct epoll_event ev = {.events = events, .data.u64 = data};
  if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev)) printf("epoll_ctl ADD %d: %s\n", fd, strerror(errno));
}

static void wait_child(pid_t pid) {
  int st;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
}

/* Data queued in both directions before the fork; the child reads its
 * side, answers, and writes into the pipe too. */
static void queued_bytes(void) {
  int p[2], s[2];
  MUST(pipe(p));
  MUST(socketpair(AF_UNIX, SOCK_STREAM, 0, s));
  int ep = epoll_create1(0);
  add(ep, p[0], EPOLLIN, 0x10);
  add(ep, s[0], EPOLLIN | EPOLLOUT, 0x20);
  MUST(write(p[1], "before|", 7));
  MUST(write(s[1], "to-parent|", 10));
  MUST(write(s[0], "to-child", 8));
  show_wait("queued, before fork", ep);
  pid_t pid = fork();
  if (pid == 0) {
    char b[64];
    ssize_t n = read(s[1], b, sizeof b);
    MUST(write(s[1], "child-read:", 11));
    MUST(write(s[1], b, n > 0 ? (size_t)n : 0));
    MUST(write(p[1], "from-child", 10));
    _exit(0);
  }
  wait_child(pid);
  show_wait("queued, after child", ep);
  show_read("queued pipe", p[0]);
  show_read("queued socket", s[0]);
  show_wait("queued, drained", ep);
  close(p[0]), close(p[1]), close(s[0]), close(s[1]), close(ep);
}

/* Ends closed or shut down before the fork. */
static void closed_and_shut(void) {
  int p[2], q[2], s[2];
  MUST(pipe(p));
  MUST(pipe(q));
  MUST(socketpair(AF_UNIX, SOCK_STREAM, 0, s));
  int ep = epoll_create1(0);
  add(ep, p[0], EPOLLIN | EPOLLRDHUP, 0x30);
  add(ep, s[0], EPOLLIN | EPOLLRDHUP, 0x31);
  MUST(write(p[1], "last words", 10));
  close(p[1]);  /* reader: the bytes, then end of file */
  close(q[0]);  /* writer: EPIPE */
  MUST(write(s[1], "bye", 3));
  shutdown(s[1], SHUT_WR);
  pid_t pid = fork();
  if (pid == 0) _exit(0);
  wait_child(pid);
  show_wait("closed, after fork", ep);
  show_read("write end closed", p[0]);
  show_read("write end closed, again", p[0]);
  ssize_t w = write(q[1], "x", 1);
  printf("read end closed: write %zd %s\n", w, w < 0 ? strerror(errno) : "");
  show_read("peer shut for writing", s[0]);
  show_read("peer shut for writing, again", s[0]);
  w = write(s[0], "still", 5);
  printf("peer shut for writing: write %zd\n", w);
  close(p[0]), close(q[1]), close(s[0]), close(s[1]), close(ep);
}

/* O_NONBLOCK, FD_CLOEXEC, dup'd numbers, O_DIRECT packets. */
static void flags_and_packets(void) {
  int p[2], d[2];
  MUST(pipe2(p, O_NONBLOCK | O_CLOEXEC));
  MUST(pipe2(d, O_DIRECT));
  int p0b = dup(p[0]);
  MUST(write(d[1], "one", 3));
  MUST(write(d[1], "two", 3));
  MUST(write(d[1], "three", 5));
  pid_t pid = fork();
  if (pid == 0) {
    MUST(write(p[1], "via-child", 9));
    _exit(0);
  }
  wait_child(pid);
  printf("flags: O_NONBLOCK %d FD_CLOEXEC %d, dup FD_CLOEXEC %d\n", (fcntl(p[0], F_GETFL) & O_NONBLOCK) != 0,
         (fcntl(p[0], F_GETFD) & FD_CLOEXEC) != 0, (fcntl(p0b, F_GETFD) & FD_CLOEXEC) != 0);
  show_read("through the dup", p0b);
  show_read("non-blocking, empty", p[0]);
  show_read("packet 1", d[0]);
  show_read("packet 2", d[0]);
  show_read("packet 3", d[0]);
  close(p[0]), close(p[1]), close(p0b), close(d[0]), close(d[1]);
}

/* Queues filled to EAGAIN before the fork: every byte arrives, in order. */
static long drain(int fd, unsigned char *expect_next) {
  unsigned char b[4096];
  long total = 0;
  for (;;) {
    ssize_t n = read(fd, b, sizeof b);
    if (n <= 0) return total;
    for (ssize_t i = 0; i < n; ++i)
      if (b[i] != (*expect_next)++) return -1;
    total += n;
  }
}

static void full_queues(void) {
  int p[2], s[2];
  MUST(pipe2(p, O_NONBLOCK));
  MUST(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, s));
  long wrote[2] = {0, 0};
  int ends[2] = {p[1], s[1]};
  /* Small writes into the pipe; large ones into the pair, whose queue then
   * holds more than its send buffer's worth of data (skbs of 36544 bytes). */
  static unsigned char chunk[65536];
  const size_t chunk_len[2] = {1000, sizeof chunk};
  for (int i = 0; i < 2; ++i) {
    unsigned char c = 0;
    for (;;) {
      for (size_t j = 0; j < chunk_len[i]; ++j) chunk[j] = c++;
      ssize_t n = write(ends[i], chunk, chunk_len[i]);
      if (n <= 0) break;
      wrote[i] += n;
      c = (unsigned char)(wrote[i] & 0xff);
    }
  }
  pid_t pid = fork();
  if (pid == 0) _exit(0);
  wait_child(pid);
  unsigned char next = 0;
  long got = drain(p[0], &next);
  printf("full pipe: wrote %ld, read %ld\n", wrote[0], got);
  next = 0;
  got = drain(s[0], &next);
  printf("full socket: wrote %ld, read %ld\n", wrote[1], got);
  close(p[0]), close(p[1]), close(s[0]), close(s[1]);
}

/* Edge-triggered and one-shot registrations, and a nested instance. */
static void registrations(void) {
  int p[2], q[2], r[2];
  MUST(pipe(p));
  MUST(pipe(q));
  MUST(pipe(r));
  int ep = epoll_create1(0), outer = epoll_create1(0);
  add(ep, p[0], EPOLLIN | EPOLLET, 0x40);
  add(ep, q[0], EPOLLIN | EPOLLONESHOT, 0x41);
  add(outer, ep, EPOLLIN, 0x42);
  add(outer, r[0], EPOLLIN, 0x43);
  MUST(write(p[1], "e", 1));
  MUST(write(q[1], "o", 1));
  show_wait("registrations, before fork", ep);  /* both fire; the one-shot disarms */
  char c;
  MUST(read(p[0], &c, 1));                            /* the ET pipe drained */
  pid_t pid = fork();
  if (pid == 0) {
    MUST(write(p[1], "f", 1));
    MUST(write(q[1], "g", 1));
    MUST(write(r[1], "h", 1));
    _exit(0);
  }
  wait_child(pid);
  show_wait("outer, after child", outer);
  show_wait("registrations, after child", ep);  /* one ET edge, the one-shot stays disarmed */
  show_wait("registrations, again", ep);
  struct epoll_event ev = {.events = EPOLLIN | EPOLLONESHOT, .data.u64 = 0x44};
  printf("re-arm: %d\n", epoll_ctl(ep, EPOLL_CTL_MOD, q[0], &ev));
  show_wait("registrations, re-armed", ep);
  close(p[0]), close(p[1]), close(q[0]), close(q[1]), close(r[0]), close(r[1]), close(ep), close(outer);
}

/* A pipe as a spawned program's standard output: posix_spawn and vfork. */
static void spawned(void) {
  int p[2];
  MUST(pipe(p));
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, p[1], 1);
  char *argv[] = {"echo", "spawned", NULL};
  pid_t pid;
  int r = posix_spawnp(&pid, "echo", &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  if (r == 0) wait_child(pid);
  printf("posix_spawnp: %d\n", r);
  show_read("spawned output", p[0]);
  int q[2];
  MUST(pipe(q));
  pid = vfork();
  if (pid == 0) {
    MUST(dup2(q[1], 1));
    execlp("echo", "echo", "vforked", (char *)NULL);
    _exit(127);
  }
  wait_child(pid);
  show_read("vforked output", q[0]);
  close(p[0]), close(p[1]), close(q[0]), close(q[1]);
}

/* Timerfds alive at fork: an armed periodic one, a one-shot due soon and a
 * disarmed one.  Each keeps firing in the child and in the parent, and is
 * one timer in both (under the preload a kernel one since the fork): the
 * expiry of the one-shot that the child reads is gone for the parent. */
static void timers(void) {
  int per = timerfd_create(CLOCK_MONOTONIC, 0), once = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK),
      off = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
  struct itimerspec p = {.it_interval = {0, 30 * 1000 * 1000}, .it_value = {0, 30 * 1000 * 1000}};
  struct itimerspec o = {.it_value = {0, 40 * 1000 * 1000}};
  MUST(timerfd_settime(per, 0, &p, NULL));
  MUST(timerfd_settime(once, 0, &o, NULL));
  pid_t pid = fork();
  if (pid == 0) {
    uint64_t n = 0;
    ssize_t r = read(per, &n, sizeof n); /* blocks until the next expiry */
    printf("timers child: periodic read %zd (ticks >= 1: %d)\n", r, r == 8 && n >= 1);
    struct itimerspec cur;
    timerfd_gettime(off, &cur);
    printf("timers child: disarmed stays disarmed: %d\n", cur.it_value.tv_sec == 0 && cur.it_value.tv_nsec == 0);
    struct pollfd pf = {.fd = once, .events = POLLIN};
    printf("timers child: one-shot fires: %d\n", poll(&pf, 1, 1000));
    r = read(once, &n, sizeof n);
    printf("timers child: one-shot read %zd ticks %llu\n", r, (unsigned long long)n);
    _exit(0);
  }
  wait_child(pid);
  uint64_t n = 0;
  ssize_t r = read(once, &n, sizeof n);
  printf("timers parent: one-shot read %zd (%s)\n", r, r < 0 ? strerror(errno) : "a tick");
  r = read(per, &n, sizeof n);
  printf("timers parent: periodic read %zd (ticks >= 1: %d)\n", r, r == 8 && n >= 1);
  close(per);
  close(once);
  close(off);
}

/* A reader asleep in read() on a pipe whose signal handler (SA_RESTART)
 * runs until the main thread has forked: the read is in the pipe's queue
 * all that time and cannot leave it for the kernel pipe, so the pipe stays
 * uepoll's (the fork's conversion waits two seconds for it, then gives
 * up).  Plainly: the same reads, later. */
static volatile sig_atomic_t forked;
static void hold_until_forked(int sig) {
  (void)sig;
  while (!forked) nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
}

static void *blocked_reader(void *arg) {
  char c;
  ssize_t n = read(*(int *)arg, &c, 1);
  return (void *)(intptr_t)n;
}

/* Starts the reader on fd and has it enter its handler. */
static pthread_t start_held_reader(int *fd) {
  struct sigaction sa = {.sa_handler = hold_until_forked, .sa_flags = SA_RESTART};
  sigaction(SIGUSR1, &sa, NULL);
  forked = 0;
  pthread_t t;
  pthread_create(&t, NULL, blocked_reader, fd);
  usleep(200 * 1000); /* the reader is asleep in read() by now */
  pthread_kill(t, SIGUSR1);
  usleep(100 * 1000); /* and in its handler */
  return t;
}

static int blocked(void) {
  int p[2];
  MUST(pipe(p));
  pthread_t t = start_held_reader(&p[0]);
  pid_t pid = fork();
  forked = 1;
  if (pid == 0) _exit(0);
  wait_child(pid);
  MUST(write(p[1], "x", 1));  /* the parent's own reader still gets it */
  void *n;
  pthread_join(t, &n);
  printf("blocked reader got %ld\n", (long)(intptr_t)n);
  return 0;
}

/* The same with a close-on-exec pipe, as a thread's private pipe usually
 * is: a child that does not touch it, or only sets its close-on-exec flag,
 * sees no difference, so there is nothing to say; one that writes to it
 * (mode "blocked_used") writes into its copy, which it is told once. */
static int blocked_cloexec(int use) {
  int p[2];
  MUST(pipe2(p, O_CLOEXEC));
  pthread_t t = start_held_reader(&p[0]);
  pid_t pid = fork();
  forked = 1;
  if (pid == 0) {
    if (fcntl(p[1], F_SETFD, FD_CLOEXEC) < 0 || fcntl(p[1], F_GETFD) != FD_CLOEXEC) _exit(1);
    if (use && write(p[1], "y", 1) != 1) _exit(2);
    _exit(0);
  }
  int status;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  MUST(write(p[1], "x", 1));
  void *n;
  pthread_join(t, &n);
  printf("blocked reader got %ld, child status %d\n", (long)(intptr_t)n, status);
  return 0;
}

/* Threads asleep in calls on pipes and socket pairs when the main thread
 * forks (mode "sleepers"): under uepoll-run each call leaves the uepoll
 * object, which becomes a kernel one, and is made again there (the rest of
 * a write that had written part), so the child reaches the parent's
 * sleepers as on Linux. */
enum { kBig = 300000 };
static int sp_pipe[2], sp_big[2], sp_poll[2], sp_pair[2], sp_bigpair[2], sp_spl[2], sp_prv[2], sp_pwv[2], sp_rmm[2],
    sp_smm[2], sp_rto[2], sp_sto[2], sp_spk[2];
static int sp_fifo = -1; /* a kernel pipe (a FIFO), filled: sp_fill bytes of 'f' */
static long sp_fill;

static void *sp_read(void *arg) {
  (void)arg;
  char c = 0;
  ssize_t n = read(sp_pipe[0], &c, 1);
  printf("read on a pipe: %zd '%c'\n", n, n == 1 ? c : '?');
  return NULL;
}

static void *sp_write(void *arg) {
  (void)arg;
  char *buf = malloc(kBig);
  for (int i = 0; i < kBig; ++i) buf[i] = (char)(i * 7);
  ssize_t n = write(sp_big[1], buf, kBig);
  printf("write of %d bytes into a full pipe: %zd\n", kBig, n);
  free(buf);
  return NULL;
}

static void *sp_poll_fn(void *arg) {
  (void)arg;
  struct pollfd p = {sp_poll[0], POLLIN, 0};
  int n = poll(&p, 1, 20000);
  printf("poll on a pipe: %d revents %#x\n", n, p.revents);
  return NULL;
}

static void *sp_recv(void *arg) {
  (void)arg;
  char b[8] = {0};
  ssize_t n = recv(sp_pair[0], b, sizeof b, 0);
  printf("recv on a socket pair: %zd '%s'\n", n, b);
  return NULL;
}

static void *sp_send(void *arg) {
  (void)arg;
  char *buf = malloc(4 * kBig);
  for (int i = 0; i < 4 * kBig; ++i) buf[i] = (char)(i * 3);
  ssize_t n = send(sp_bigpair[0], buf, 4 * kBig, 0);
  printf("send of %d bytes into a full socket pair: %zd\n", 4 * kBig, n);
  free(buf);
  return NULL;
}

static void *sp_splice(void *arg) {
  (void)arg;
  int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
  ssize_t n = splice(sp_spl[0], NULL, null, NULL, 100, 0);
  printf("splice from a pipe: %zd\n", n);
  close(null);
  return NULL;
}

static void *sp_splice_out(void *arg) {
  (void)arg;
  ssize_t n = splice(sp_spk[0], NULL, sp_fifo, NULL, 100, 0);
  printf("splice from a pipe into a full kernel FIFO: %zd\n", n);
  return NULL;
}

/* A FIFO open for reading and writing (a kernel pipe under uepoll-run
 * too), filled up. */
static void full_fifo(void) {
  char path[64];
  snprintf(path, sizeof path, "/tmp/uepoll-fork-program-%d.fifo", (int)getpid());
  MUST(mkfifo(path, 0600));
  MUST(sp_fifo = open(path, O_RDWR | O_CLOEXEC));
  unlink(path);
  char f[4096];
  memset(f, 'f', sizeof f);
  MUST(fcntl(sp_fifo, F_SETFL, O_NONBLOCK));
  for (ssize_t n; (n = write(sp_fifo, f, sizeof f)) > 0;) sp_fill += n;
  MUST(fcntl(sp_fifo, F_SETFL, 0));
}

/* Reads `fill` bytes of 'f' from fd, then expects `tail`; 1 if all came. */
static int read_fill_then(int fd, long fill, const char *tail) {
  char b[4096];
  for (long got = 0; got < fill;) {
    ssize_t n = read(fd, b, sizeof b < (size_t)(fill - got) ? sizeof b : (size_t)(fill - got));
    if (n <= 0) return 0;
    for (ssize_t i = 0; i < n; ++i)
      if (b[i] != 'f') return 0;
    got += n;
  }
  const size_t len = strlen(tail);
  size_t have = 0;
  while (have < len) {
    ssize_t n = read(fd, b + have, len - have);
    if (n <= 0) return 0;
    have += (size_t)n;
  }
  return memcmp(b, tail, len) == 0;
}

static void *sp_preadv2(void *arg) {
  (void)arg;
  char c = 0;
  struct iovec v = {&c, 1};
  ssize_t n = preadv2(sp_prv[0], &v, 1, -1, 0);
  printf("preadv2 at -1 on a pipe: %zd '%c'\n", n, n == 1 ? c : '?');
  return NULL;
}

static void *sp_pwritev2(void *arg) {
  (void)arg;
  char *buf = malloc(kBig);
  for (int i = 0; i < kBig; ++i) buf[i] = (char)(i * 5);
  struct iovec v[2] = {{buf, 1000}, {buf + 1000, kBig - 1000}};
  ssize_t n = pwritev2(sp_pwv[1], v, 2, -1, 0);
  printf("pwritev2 at -1 of %d bytes into a full pipe: %zd\n", kBig, n);
  free(buf);
  return NULL;
}

static void *sp_recvmmsg(void *arg) {
  (void)arg;
  char b[2][8] = {{0}};
  struct iovec io[2] = {{b[0], sizeof b[0]}, {b[1], sizeof b[1]}};
  struct mmsghdr mm[2] = {{.msg_hdr = {.msg_iov = &io[0], .msg_iovlen = 1}},
                          {.msg_hdr = {.msg_iov = &io[1], .msg_iovlen = 1}}};
  int n = recvmmsg(sp_rmm[0], mm, 2, MSG_WAITFORONE, NULL);
  printf("recvmmsg on a socket pair: %d, first %u '%s'\n", n, mm[0].msg_len, b[0]);
  return NULL;
}

static void *sp_sendmmsg(void *arg) {
  (void)arg;
  char *buf = malloc(4 * kBig);
  for (int i = 0; i < 4 * kBig; ++i) buf[i] = (char)(i * 11);
  struct iovec io[2] = {{buf, 2 * kBig}, {buf + 2 * kBig, 2 * kBig}};
  struct mmsghdr mm[2] = {{.msg_hdr = {.msg_iov = &io[0], .msg_iovlen = 1}},
                          {.msg_hdr = {.msg_iov = &io[1], .msg_iovlen = 1}}};
  int n = sendmmsg(sp_smm[0], mm, 2, 0);
  printf("sendmmsg of 2 x %d bytes into a full socket pair: %d, %u + %u\n", 2 * kBig, n, mm[0].msg_len,
         mm[1].msg_len);
  free(buf);
  return NULL;
}

/* A call with a 1.5 s socket timeout that nothing satisfies: its time
 * keeps running across the fork (the call ends 1.5 s after it began, not
 * 1.5 s after the conversion, about 0.3 s later). */
static double seconds_since(const struct timespec *t0) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)(t.tv_sec - t0->tv_sec) + (double)(t.tv_nsec - t0->tv_nsec) / 1e9;
}

static void set_timeout(int fd, int opt) {
  struct timeval tv = {1, 500000};
  setsockopt(fd, SOL_SOCKET, opt, &tv, sizeof tv);
}

static void *sp_recv_timeout(void *arg) {
  (void)arg;
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  char b[8];
  ssize_t n = recv(sp_rto[0], b, sizeof b, 0);
  const int e = errno;
  const double s = seconds_since(&t0);
  printf("recv with a 1.5 s SO_RCVTIMEO: %zd %s, within 1.75 s: %s\n", n, n < 0 ? strerrorname_np(e) : "",
         s >= 1.45 && s < 1.75 ? "yes" : "no");
  return NULL;
}

static void *sp_send_timeout(void *arg) {
  (void)arg;
  char *buf = calloc(1, 4 * kBig);
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  ssize_t n = send(sp_sto[0], buf, 4 * kBig, 0);
  const double s = seconds_since(&t0);
  printf("send of %d bytes with a 1.5 s SO_SNDTIMEO, nothing read: part sent %s, within 1.75 s: %s\n", 4 * kBig,
         n > 0 && n < 4 * kBig ? "yes" : "no", s >= 1.45 && s < 1.75 ? "yes" : "no");
  free(buf);
  return NULL;
}

/* Reads exactly len bytes of fd, each byte (i * mul); 1 if all came. */
static int read_pattern(int fd, long len, int mul) {
  char b[4096];
  long got = 0;
  while (got < len) {
    ssize_t n = read(fd, b, sizeof b < (size_t)(len - got) ? sizeof b : (size_t)(len - got));
    if (n <= 0) return 0;
    for (ssize_t i = 0; i < n; ++i)
      if (b[i] != (char)((got + i) * mul)) return 0;
    got += n;
  }
  return 1;
}

static int sleepers(void) {
  alarm(30); /* a sleeper left on a copy would wait for ever */
  MUST(pipe(sp_pipe));
  MUST(pipe(sp_big));
  MUST(pipe(sp_poll));
  MUST(socketpair(AF_UNIX, SOCK_STREAM, 0, sp_pair));
  MUST(socketpair(AF_UNIX, SOCK_STREAM, 0, sp_bigpair));
  MUST(pipe(sp_spl));
  MUST(pipe(sp_prv));
  MUST(pipe(sp_pwv));
  MUST(socketpair(AF_UNIX, SOCK_STREAM, 0, sp_rmm));
  MUST(socketpair(AF_UNIX, SOCK_STREAM, 0, sp_smm));
  MUST(socketpair(AF_UNIX, SOCK_STREAM, 0, sp_rto));
  MUST(socketpair(AF_UNIX, SOCK_STREAM, 0, sp_sto));
  MUST(pipe(sp_spk));
  MUST(write(sp_spk[1], "spk", 3));
  full_fifo();
  set_timeout(sp_rto[0], SO_RCVTIMEO);
  set_timeout(sp_sto[0], SO_SNDTIMEO);
  void *(*fn[])(void *) = {sp_read,     sp_write,    sp_poll_fn,  sp_recv,        sp_send,        sp_splice,
                           sp_preadv2,  sp_pwritev2, sp_recvmmsg, sp_sendmmsg,    sp_recv_timeout, sp_send_timeout,
                           sp_splice_out};
  enum { kN = sizeof fn / sizeof fn[0] };
  pthread_t t[kN];
  for (int i = 0; i < kN; ++i) pthread_create(&t[i], NULL, fn[i], NULL);
  usleep(300 * 1000); /* every thread is asleep in its call by now */
  pid_t pid = fork();
  if (pid == 0) {
    alarm(30); /* the child's own: alarms are not inherited */
    int ok = write(sp_pipe[1], "c", 1) == 1 && write(sp_poll[1], "p", 1) == 1 && send(sp_pair[1], "s", 1, 0) == 1 &&
             write(sp_spl[1], "spl", 3) == 3 && write(sp_prv[1], "v", 1) == 1 && send(sp_rmm[1], "m", 1, 0) == 1 &&
             read_pattern(sp_big[0], kBig, 7) && read_pattern(sp_bigpair[1], 4 * kBig, 3) &&
             read_pattern(sp_pwv[0], kBig, 5) && read_pattern(sp_smm[1], 4 * kBig, 11) &&
             read_fill_then(sp_fifo, sp_fill, "spk");
    _exit(ok ? 0 : 1);
  }
  int status;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  for (int i = 0; i < kN; ++i) pthread_join(t[i], NULL);
  printf("child read everything in order: %s\n", WIFEXITED(status) && WEXITSTATUS(status) == 0 ? "yes" : "no");
  return 0;
}

/* Several threads each making a pipe and forking a child that answers
 * through it, at once (GLib's spawning from several threads): every child's
 * answer reaches its own thread, and no child finds a pipe half made. */
enum { kRacers = 4, kRounds = 150 };

static void *racer(void *arg) {
  const long id = (long)(intptr_t)arg;
  long bad = 0;
  for (int r = 0; r < kRounds; ++r) {
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0) return (void *)(intptr_t)-1;
    pid_t pid = fork();
    if (pid == 0) {
      char msg[16];
      const int len = snprintf(msg, sizeof msg, "racer %ld", id);
      _exit(write(p[1], msg, (size_t)len) == len ? 0 : 1);
    }
    close(p[1]);
    char got[32] = {0};
    size_t have = 0;
    ssize_t n;
    while ((n = read(p[0], got + have, sizeof got - 1 - have)) > 0) have += (size_t)n;
    close(p[0]);
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    char want[16];
    snprintf(want, sizeof want, "racer %ld", id);
    if (strcmp(got, want) != 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) ++bad;
  }
  return (void *)(intptr_t)bad;
}

static int racing(void) {
  pthread_t t[kRacers];
  for (long i = 0; i < kRacers; ++i) pthread_create(&t[i], NULL, racer, (void *)(intptr_t)i);
  long bad = 0;
  for (int i = 0; i < kRacers; ++i) {
    void *b;
    pthread_join(t[i], &b);
    bad += (long)(intptr_t)b;
  }
  printf("racing forks: %d rounds, %ld answers lost or wrong\n", kRacers * kRounds, bad);
  return 0;
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IONBF, 0);
  signal(SIGPIPE, SIG_IGN);
  if (argc > 1 && strcmp(argv[1], "blocked") == 0) return blocked();
  if (argc > 1 && strcmp(argv[1], "blocked_cloexec") == 0) return blocked_cloexec(0);
  if (argc > 1 && strcmp(argv[1], "blocked_used") == 0) return blocked_cloexec(1);
  if (argc > 1 && strcmp(argv[1], "racing") == 0) return racing();
  if (argc > 1 && strcmp(argv[1], "sleepers") == 0) return sleepers();
  queued_bytes();
  closed_and_shut();
  flags_and_packets();
  full_queues();
  registrations();
  spawned();
  timers();
  return 0;
}
