/* preload_forward_cost.c - what the preload adds to calls on kernel
 * descriptors (by hand, not in CI; figures in the README's throughput
 * section).  Two loops, one thread:
 *   forward: read(/dev/zero, 1) and write(/dev/null, 1), ns per call;
 *   epoll:   write a byte to a kernel socket pair, epoll_wait on an
 *            instance holding the other end, read it back: ns per round.
 * Run it plainly and under the preload with only epoll instances made
 * uepoll ones, so that every other descriptor stays the kernel's:
 *   cc -O2 -o /tmp/pfc tools/preload_forward_cost.c
 *   /tmp/pfc; build-rel/src/preload/uepoll-run --kinds epoll /tmp/pfc
 * For instruction counts (load-independent), N=20000 under
 *   valgrind --tool=callgrind --trace-children=yes
 *     env LD_PRELOAD=build-rel/src/preload/libuepoll-preload.so
 *     UEPOLL_PRELOAD_KINDS=epoll /tmp/pfc epoll
 * Argument: forward, epoll or nothing (both).  N: iterations per repeat. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

static double cpu_s(void) {
  struct rusage r;
  getrusage(RUSAGE_SELF, &r);
  return (double)r.ru_utime.tv_sec + r.ru_utime.tv_usec / 1e6 + (double)r.ru_stime.tv_sec + r.ru_stime.tv_usec / 1e6;
}

static int forward(int n) {
  const int z = open("/dev/zero", O_RDONLY), nul = open("/dev/null", O_WRONLY);
  char b[1];
  if (z < 0 || nul < 0) return 1;
  const double t0 = cpu_s();
  for (int i = 0; i < n; i++)
    if (read(z, b, 1) != 1) return 1;
  const double t1 = cpu_s();
  for (int i = 0; i < n; i++)
    if (write(nul, b, 1) != 1) return 1;
  const double t2 = cpu_s();
  printf("forward: read %.1f ns, write %.1f ns (CPU per call)\n", (t1 - t0) / n * 1e9, (t2 - t1) / n * 1e9);
  close(z);
  close(nul);
  return 0;
}

static int epoll_round(int n) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) < 0) return 1;
  const int ep = epoll_create1(0);
  struct epoll_event e = {.events = EPOLLIN, .data.fd = sv[1]}, out[16];
  if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, sv[1], &e) < 0) return 1;
  char b[64];
  const double t0 = cpu_s();
  for (int i = 0; i < n; i++) {
    if (write(sv[0], "x", 1) != 1 || epoll_wait(ep, out, 16, -1) != 1 || read(sv[1], b, sizeof b) != 1) return 1;
  }
  printf("epoll: %.1f ns per round (CPU)\n", (cpu_s() - t0) / n * 1e9);
  close(ep);
  close(sv[0]);
  close(sv[1]);
  return 0;
}

int main(int argc, char **argv) {
  const int n = getenv("N") ? atoi(getenv("N")) : 500000;
  const char *what = argc > 1 ? argv[1] : "";
  if (n <= 0) return 2;
  for (int rep = 0; rep < 4; rep++) {
    if ((!*what || !strcmp(what, "forward")) && forward(n)) return 1;
    if ((!*what || !strcmp(what, "epoll")) && epoll_round(n)) return 1;
  }
  return 0;
}
