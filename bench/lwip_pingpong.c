/*
 * lwip_pingpong.c - uepoll's own cost on a real stack: one TCP ping-pong
 * over lwIP's loopback netif, measured in the same run:
 *   native: lwIP's blocking netconn calls (netconn_write / netconn_recv),
 *           a server thread and a client thread;
 *   uepoll: the same stack through the lwIP provider's uepoll files
 *           (uep_connect / uep_accept4 / uep_send / uep_recv, blocking owned
 *           by uepoll, woken by the masks the provider pushes);
 *   kernel: the same ping-pong on kernel TCP over 127.0.0.1 (socket,
 *           send, recv: blocking, TCP_NODELAY), for scale.
 * Prints round trips per second and the mean round-trip time of each, the
 * median of REPS runs, the ratio uepoll / native, and the CPU time per
 * round trip of the whole process (less sensitive to a busy machine's
 * scheduling than the wall clock).  Reported, never compared to a bound.
 *
 *   lwip-pingpong [ROUNDS [REPS [SIZE]]]     (default 20000 5 64)
 *
 * Locks: none of its own.  The provider library is linked in; its uep_file_*
 * calls bind to this program's libuepoll (ENABLE_EXPORTS).
 */
#define _GNU_SOURCE
#include <uepoll/provider.h>
#include <uepoll/uepoll.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <linux/tcp.h> /* not netinet/tcp.h: its TCP_MSS is not lwIP's */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>
#include <time.h>

#include <lwip/api.h>
#include <lwip/tcp.h>

const struct uep_provider *uep_provider_init(const char *config);

static int rounds = 20000, size = 64;
static const struct uep_provider *prov;

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* CPU seconds of the whole process (every thread: client, server, lwIP's). */
static double cpu(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) + (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}
static double last_cpu_us; /* CPU microseconds per round trip of the last run */

static void die(const char *what) {
  fprintf(stderr, "lwip-pingpong: %s failed\n", what);
  exit(1);
}

/* ---- native netconn ------------------------------------------------------------------ */
static int nat_recv_exact(struct netconn *c, struct pbuf **keep, int n) {
  int got = 0;
  while (got < n) {
    struct pbuf *p = *keep;
    *keep = NULL;
    if (!p && netconn_recv_tcp_pbuf(c, &p) != ERR_OK) return -1;
    int take = p->tot_len;
    if (got + take > n) die("native: more than a message");
    got += take;
    pbuf_free(p);
  }
  return got;
}

static struct netconn *nat_listener;
static void *nat_server(void *arg) {
  (void)arg;
  struct netconn *c;
  if (netconn_accept(nat_listener, &c) != ERR_OK) die("netconn_accept");
  tcp_nagle_disable(c->pcb.tcp);
  char *buf = calloc(1, (size_t)size);
  struct pbuf *keep = NULL;
  for (int i = 0; i < rounds; ++i) {
    if (nat_recv_exact(c, &keep, size) != size) die("native server recv");
    if (netconn_write(c, buf, (size_t)size, NETCONN_COPY) != ERR_OK) die("native server write");
  }
  free(buf);
  netconn_close(c);
  netconn_delete(c);
  return NULL;
}

static double native_run(void) {
  nat_listener = netconn_new(NETCONN_TCP);
  if (netconn_bind(nat_listener, IP4_ADDR_ANY, 0) != ERR_OK || netconn_listen(nat_listener) != ERR_OK) die("listen");
  ip_addr_t ip;
  u16_t port;
  netconn_getaddr(nat_listener, &ip, &port, 1);
  pthread_t t;
  pthread_create(&t, NULL, nat_server, NULL);
  struct netconn *c = netconn_new(NETCONN_TCP);
  ip_addr_t lo;
  IP_ADDR4(&lo, 127, 0, 0, 1);
  if (netconn_connect(c, &lo, port) != ERR_OK) die("netconn_connect");
  tcp_nagle_disable(c->pcb.tcp);
  char *buf = calloc(1, (size_t)size);
  struct pbuf *keep = NULL;
  double t0 = now(), c0 = cpu();
  for (int i = 0; i < rounds; ++i) {
    if (netconn_write(c, buf, (size_t)size, NETCONN_COPY) != ERR_OK) die("native client write");
    if (nat_recv_exact(c, &keep, size) != size) die("native client recv");
  }
  double dt = now() - t0;
  last_cpu_us = (cpu() - c0) * 1e6 / rounds;
  pthread_join(t, NULL);
  free(buf);
  netconn_close(c);
  netconn_delete(c);
  netconn_delete(nat_listener);
  return rounds / dt;
}

/* ---- through the provider's uepoll files ------------------------------------------ */
static int recv_exact(int fd, char *buf, int n) {
  int got = 0;
  while (got < n) {
    ssize_t r = uep_recv(fd, buf + got, (size_t)(n - got), 0);
    if (r <= 0) return -1;
    got += (int)r;
  }
  return got;
}

static int uep_listener;
static void *uep_server(void *arg) {
  (void)arg;
  int c = uep_accept4(uep_listener, NULL, NULL, 0);
  if (c < 0) die("uep_accept4");
  int one = 1;
  uep_setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  char *buf = calloc(1, (size_t)size);
  for (int i = 0; i < rounds; ++i) {
    if (recv_exact(c, buf, size) != size) die("uepoll server recv");
    if (uep_send(c, buf, (size_t)size, 0) != size) die("uepoll server send");
  }
  free(buf);
  uep_close(c);
  return NULL;
}

static int provider_socket(void) {
  int fd = -1;
  if (prov->socket(AF_INET, SOCK_STREAM, 0, &fd) != 0) die("provider socket");
  return fd;
}

static double uepoll_run(void) {
  uep_listener = provider_socket();
  struct sockaddr_in a = {.sin_family = AF_INET};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t al = sizeof a;
  if (uep_bind(uep_listener, (struct sockaddr *)&a, sizeof a) || uep_listen(uep_listener, 4) ||
      uep_getsockname(uep_listener, (struct sockaddr *)&a, &al))
    die("uepoll listen");
  pthread_t t;
  pthread_create(&t, NULL, uep_server, NULL);
  int c = provider_socket();
  if (uep_connect(c, (struct sockaddr *)&a, sizeof a)) die("uep_connect");
  int one = 1;
  uep_setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  char *buf = calloc(1, (size_t)size);
  double t0 = now(), c0 = cpu();
  for (int i = 0; i < rounds; ++i) {
    if (uep_send(c, buf, (size_t)size, 0) != size) die("uepoll client send");
    if (recv_exact(c, buf, size) != size) die("uepoll client recv");
  }
  double dt = now() - t0;
  last_cpu_us = (cpu() - c0) * 1e6 / rounds;
  pthread_join(t, NULL);
  free(buf);
  uep_close(c);
  uep_close(uep_listener);
  return rounds / dt;
}

/* ---- kernel TCP, for scale ---------------------------------------------------------- */
static int k_recv_exact(int fd, char *buf, int n) {
  int got = 0;
  while (got < n) {
    ssize_t r = recv(fd, buf + got, (size_t)(n - got), 0);
    if (r <= 0) return -1;
    got += (int)r;
  }
  return got;
}

static int k_listener;
static void *k_server(void *arg) {
  (void)arg;
  int c = accept(k_listener, NULL, NULL);
  if (c < 0) die("accept");
  int one = 1;
  setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  char *buf = calloc(1, (size_t)size);
  for (int i = 0; i < rounds; ++i) {
    if (k_recv_exact(c, buf, size) != size) die("kernel server recv");
    if (send(c, buf, (size_t)size, 0) != size) die("kernel server send");
  }
  free(buf);
  close(c);
  return NULL;
}

static double kernel_run(void) {
  k_listener = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t al = sizeof a;
  if (k_listener < 0 || bind(k_listener, (struct sockaddr *)&a, sizeof a) || listen(k_listener, 4) ||
      getsockname(k_listener, (struct sockaddr *)&a, &al))
    die("kernel listen");
  pthread_t t;
  pthread_create(&t, NULL, k_server, NULL);
  int c = socket(AF_INET, SOCK_STREAM, 0);
  if (c < 0 || connect(c, (struct sockaddr *)&a, sizeof a)) die("kernel connect");
  int one = 1;
  setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  char *buf = calloc(1, (size_t)size);
  double t0 = now(), c0 = cpu();
  for (int i = 0; i < rounds; ++i) {
    if (send(c, buf, (size_t)size, 0) != size) die("kernel client send");
    if (k_recv_exact(c, buf, size) != size) die("kernel client recv");
  }
  double dt = now() - t0;
  last_cpu_us = (cpu() - c0) * 1e6 / rounds;
  pthread_join(t, NULL);
  free(buf);
  close(c);
  close(k_listener);
  return rounds / dt;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
  int reps = 5;
  if (argc > 1) rounds = atoi(argv[1]);
  if (argc > 2) reps = atoi(argv[2]);
  if (argc > 3) size = atoi(argv[3]);
  if (rounds < 1 || reps < 1 || reps > 99 || size < 1 || size > 65536) {
    fprintf(stderr, "usage: lwip-pingpong [ROUNDS [REPS [SIZE]]]\n");
    return 2;
  }
  prov = uep_provider_init(NULL);
  if (!prov) die("uep_provider_init");
  uep_close(provider_socket()); /* the stack starts at the first socket (native runs use it too) */
  double nat[99], uep[99], natc[99], uepc[99], ker[99], kerc[99];
  for (int r = 0; r < reps; ++r) { /* alternate, so that drift hits all alike */
    nat[r] = native_run();
    natc[r] = last_cpu_us;
    uep[r] = uepoll_run();
    uepc[r] = last_cpu_us;
    ker[r] = kernel_run();
    kerc[r] = last_cpu_us;
  }
  qsort(nat, (size_t)reps, sizeof *nat, cmp);
  qsort(uep, (size_t)reps, sizeof *uep, cmp);
  qsort(natc, (size_t)reps, sizeof *natc, cmp);
  qsort(uepc, (size_t)reps, sizeof *uepc, cmp);
  qsort(ker, (size_t)reps, sizeof *ker, cmp);
  qsort(kerc, (size_t)reps, sizeof *kerc, cmp);
  double n = nat[reps / 2], u = uep[reps / 2], k = ker[reps / 2];
  printf("lwip ping-pong, %d rounds of %d bytes, median of %d runs\n", rounds, size, reps);
  printf("native netconn  %10.0f round trips/s  %7.2f us  (min %.0f, max %.0f)\n", n, 1e6 / n, nat[0], nat[reps - 1]);
  printf("uepoll files    %10.0f round trips/s  %7.2f us  (min %.0f, max %.0f)\n", u, 1e6 / u, uep[0], uep[reps - 1]);
  printf("kernel TCP      %10.0f round trips/s  %7.2f us  (min %.0f, max %.0f)\n", k, 1e6 / k, ker[0], ker[reps - 1]);
  printf("uepoll / native %10.3f   (round trips/s)\n", u / n);
  printf("uepoll / kernel %10.3f   (round trips/s)\n", u / k);
  printf("CPU per round trip (all threads), median: native %.2f us, uepoll %.2f us, kernel %.2f us, uepoll / native %.3f\n",
         natc[reps / 2], uepc[reps / 2], kerc[reps / 2], uepc[reps / 2] / natc[reps / 2]);
  return 0;
}
