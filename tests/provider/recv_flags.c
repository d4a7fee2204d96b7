/*
 * recv_flags.c - receive calls with their flags on blocking TCP sockets over
 * 127.0.0.1, one line per case: MSG_WAITALL across late segments, at the
 * end of the stream, stopped by a signal (with and without data), by
 * SO_RCVTIMEO, with MSG_DONTWAIT, with MSG_PEEK (one call and a whole
 * count), SO_RCVLOWAT (poll and blocking receives), and a 1 MiB
 * MSG_WAITALL against a blocking 1 MiB send.  Run
 * plainly (kernel TCP) and under `uepoll-run --provider lwip` (run.sh): the
 * lines must be equal.  Bounded: a watchdog ends it after 30 s.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static void die(const char *what) {
  printf("FAIL %s: %s\n", what, strerror(errno));
  fflush(stdout);
  _exit(1);
}

static void msleep(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

/* A connected pair: *srv accepted, *cli connected. */
static void tcp_pair(int *srv, int *cli) {
  int l = socket(AF_INET, SOCK_STREAM, 0);
  if (l < 0) die("socket");
  struct sockaddr_in a = {0};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(l, (struct sockaddr *)&a, sizeof a) || listen(l, 4)) die("bind/listen");
  socklen_t n = sizeof a;
  if (getsockname(l, (struct sockaddr *)&a, &n)) die("getsockname");
  *cli = socket(AF_INET, SOCK_STREAM, 0);
  if (*cli < 0 || connect(*cli, (struct sockaddr *)&a, sizeof a)) die("connect");
  *srv = accept(l, NULL, NULL);
  if (*srv < 0) die("accept");
  /* No Nagle: a small send goes out at once (the cases that wait 100 ms
   * for one would otherwise meet a delayed ACK). */
  int one = 1;
  setsockopt(*cli, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  close(l);
}

/* What the helper thread does: after `delay` ms, send `len` bytes of
 * pattern from offset `from` (len 0: nothing), then shut down (shut) or
 * signal the main thread (sig). */
struct later {
  int fd, delay, from, len, shut, sig;
  pthread_t target;
};

static unsigned char pattern(int i) { return (unsigned char)(i * 7 + 3); }

static void *later_run(void *arg) {
  struct later *l = arg;
  msleep(l->delay);
  if (l->len) {
    unsigned char *b = malloc((size_t)l->len);
    for (int i = 0; i < l->len; ++i) b[i] = pattern(l->from + i);
    if (send(l->fd, b, (size_t)l->len, MSG_NOSIGNAL) != l->len) die("send");
    free(b);
  }
  if (l->shut) shutdown(l->fd, SHUT_WR);
  if (l->sig) pthread_kill(l->target, SIGUSR1);
  return NULL;
}

static pthread_t start(struct later *l) {
  pthread_t t;
  l->target = pthread_self();
  if (pthread_create(&t, NULL, later_run, l)) die("pthread_create");
  return t;
}

static int check(const unsigned char *b, long n, int from) {
  for (long i = 0; i < n; ++i)
    if (b[i] != pattern(from + (int)i)) return 0;
  return 1;
}

static void report(const char *name, long r, const unsigned char *b, int from) {
  if (r < 0) printf("%s: -1 %s\n", name, strerror(errno));
  else printf("%s: %ld %s\n", name, r, check(b, r, from) ? "data ok" : "DATA WRONG");
  fflush(stdout);
}

static void send_now(int fd, int from, int len) {
  struct later l = {fd, 0, from, len, 0, 0, 0};
  later_run(&l);
}

/* Waits (up to 10 s) until n bytes are queued on fd (FIONREAD): lwIP
 * delivers from its own thread, shortly after the send returns. */
static void wait_queued(int fd, int n) {
  for (int i = 0; i < 1000; ++i) {
    int q = 0;
    if (ioctl(fd, FIONREAD, &q) == 0 && q >= n) return;
    msleep(10);
  }
  die("wait_queued");
}

static void on_usr1(int sig) { (void)sig; }

static void *watchdog(void *arg) {
  (void)arg;
  sleep(30);
  printf("FAIL: watchdog (30 s)\n");
  fflush(stdout);
  _exit(2);
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  pthread_t wd;
  pthread_create(&wd, NULL, watchdog, NULL);
  struct sigaction sa = {0};
  sa.sa_handler = on_usr1; /* no SA_RESTART */
  sigaction(SIGUSR1, &sa, NULL);
  static unsigned char buf[1 << 20];
  int s, c;

  /* MSG_WAITALL: 10 bytes now, 90 later; the call returns all 100. */
  tcp_pair(&s, &c);
  send_now(c, 0, 10);
  struct later l1 = {c, 100, 10, 90, 0, 0, 0};
  pthread_t t = start(&l1);
  report("waitall_late_segments", recv(s, buf, 100, MSG_WAITALL), buf, 0);
  pthread_join(t, NULL);

  /* MSG_PEEK|MSG_WAITALL: 10 now, 90 later; the peek shows 100, then a
   * plain receive takes the same 100. */
  send_now(c, 100, 10);
  struct later l2 = {c, 100, 110, 90, 0, 0, 0};
  t = start(&l2);
  report("peek_waitall", recv(s, buf, 100, MSG_PEEK | MSG_WAITALL), buf, 100);
  pthread_join(t, NULL);
  report("recv_after_peek_waitall", recv(s, buf, 100, MSG_WAITALL), buf, 100);

  /* MSG_PEEK alone sees what is queued across segments (3 sends). */
  send_now(c, 200, 20);
  send_now(c, 220, 20);
  send_now(c, 240, 20);
  wait_queued(s, 60);
  report("peek_queued", recv(s, buf, 100, MSG_PEEK), buf, 200);
  report("recv_queued", recv(s, buf, 100, 0), buf, 200);

  /* MSG_DONTWAIT on a blocking socket with nothing queued: EAGAIN. */
  report("dontwait_empty", recv(s, buf, 100, MSG_DONTWAIT), buf, 0);
  /* MSG_WAITALL|MSG_DONTWAIT: what is there, not the whole count. */
  send_now(c, 300, 10);
  wait_queued(s, 10);
  report("waitall_dontwait", recv(s, buf, 100, MSG_WAITALL | MSG_DONTWAIT), buf, 300);

  /* SO_RCVLOWAT 50: 10 bytes are not readable for poll, a non-blocking
   * receive takes them, a blocking one waits for 50. */
  int lowat = 50;
  socklen_t ln = sizeof lowat;
  if (setsockopt(s, SOL_SOCKET, SO_RCVLOWAT, &lowat, sizeof lowat)) die("SO_RCVLOWAT");
  lowat = 0;
  getsockopt(s, SOL_SOCKET, SO_RCVLOWAT, &lowat, &ln);
  printf("rcvlowat: %d\n", lowat);
  send_now(c, 700, 10);
  wait_queued(s, 10);
  struct pollfd pf = {s, POLLIN, 0};
  printf("rcvlowat_poll_below: %d\n", poll(&pf, 1, 100));
  report("rcvlowat_peek_dontwait", recv(s, buf, 100, MSG_PEEK | MSG_DONTWAIT), buf, 700);
  report("rcvlowat_dontwait", recv(s, buf, 100, MSG_DONTWAIT), buf, 700);
  /* (Linux wakes a reader only when lowat bytes wait, counted after what it
   * already took: the blocking case starts from an empty queue.) */
  struct later l7 = {c, 100, 710, 50, 0, 0, 0};
  t = start(&l7);
  report("rcvlowat_blocking", recv(s, buf, 100, 0), buf, 710);
  pthread_join(t, NULL);
  lowat = 1;
  setsockopt(s, SOL_SOCKET, SO_RCVLOWAT, &lowat, sizeof lowat);

  /* MSG_WAITALL stopped by a signal handler: after 10 bytes, the count;
   * with nothing received, EINTR. */
  send_now(c, 400, 10);
  if (recv(s, buf, 10, MSG_PEEK | MSG_WAITALL) != 10) die("peek 10");
  struct later l3 = {c, 150, 0, 0, 0, 1, 0};
  t = start(&l3);
  report("waitall_signal_partial", recv(s, buf, 100, MSG_WAITALL), buf, 400);
  pthread_join(t, NULL);
  t = start(&l3);
  report("waitall_signal_empty", recv(s, buf, 100, MSG_WAITALL), buf, 0);
  pthread_join(t, NULL);

  /* MSG_WAITALL stopped by SO_RCVTIMEO: the count, or EAGAIN. */
  struct timeval tv = {0, 200000};
  if (setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv)) die("SO_RCVTIMEO");
  send_now(c, 500, 10);
  wait_queued(s, 10);
  report("waitall_timeout_partial", recv(s, buf, 100, MSG_WAITALL), buf, 500);
  report("waitall_timeout_empty", recv(s, buf, 100, MSG_WAITALL), buf, 0);
  tv.tv_usec = 0;
  setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);

  /* MSG_WAITALL at the end of the stream: the bytes before it, then 0. */
  struct later l4 = {c, 100, 600, 30, 1, 0, 0};
  t = start(&l4);
  report("waitall_eof", recv(s, buf, 100, MSG_WAITALL), buf, 600);
  pthread_join(t, NULL);
  report("after_eof", recv(s, buf, 100, MSG_WAITALL), buf, 0);
  close(s);
  close(c);

  /* 1 MiB: a blocking send of it against one MSG_WAITALL receive. */
  tcp_pair(&s, &c);
  struct later l5 = {c, 0, 0, 1 << 20, 0, 0, 0};
  t = start(&l5);
  report("waitall_1mib", recv(s, buf, 1 << 20, MSG_WAITALL), buf, 0);
  pthread_join(t, NULL);
  /* 60000 bytes in many segments, peeked whole before they are read. */
  struct later l6 = {c, 0, 7, 60000, 0, 0, 0};
  t = start(&l6);
  report("peek_waitall_60000", recv(s, buf, 60000, MSG_PEEK | MSG_WAITALL), buf, 7);
  pthread_join(t, NULL);
  report("recv_60000", recv(s, buf, 60000, MSG_WAITALL), buf, 7);
  close(s);
  close(c);
  printf("done\n");
  return 0;
}
