/* preload_fork_cost.c - what the preload adds to a server that forks and
 * execs a child per request (by hand, not in CI; figures in the README's
 * throughput section).  lighttpd's mod_cgi pattern, one thread: an epoll
 * instance watches 8 kernel sockets; each round makes two pipes (O_CLOEXEC),
 * forks, and the child dup2s their ends onto 0 and 1 and execs PROGRAM; the
 * parent makes its ends non-blocking, registers the read end, reads to end
 * of file through epoll_wait, deregisters, closes and waits for the child.
 * Under the preload the pipes are uepoll ones until the fork makes them
 * kernel ones, and PROGRAM starts with the preload loaded.
 *
 * Deterministic counts (per round: the run of 101 rounds less the run of 1,
 * over 100), plainly and with LD_PRELOAD=build-rel/src/preload/libuepoll-preload.so:
 *   cc -O2 -o /tmp/pfk tools/preload_fork_cost.c
 *   strace -f -c -o /tmp/pfk.strace [-E LD_PRELOAD=...] /tmp/pfk 101 /bin/true
 *     system calls of every process (the parent, the forked child, PROGRAM)
 *   [env LD_PRELOAD=...] valgrind --tool=callgrind --child-silent-after-fork=yes
 *     --callgrind-out-file=/dev/null /tmp/pfk 101 /bin/true
 *     instructions of the parent
 *   [env LD_PRELOAD=...] perf stat -i -e page-faults /tmp/pfk 101 /bin/true
 *     page faults of the parent (copy-on-write after each fork)
 * Arguments: ROUNDS PROGRAM [ARGS...].  Exit status 0, or 1 on an error. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

/* One round: 0, or -1 on an error. */
static int round_trip(int ep, char **argv) {
  int in[2], out[2];
  if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0) return -1;
  const pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    if (dup2(in[0], 0) < 0 || dup2(out[1], 1) < 0) _exit(127);
    execv(argv[0], argv);
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  if (fcntl(out[0], F_SETFL, O_NONBLOCK) < 0 || fcntl(in[1], F_SETFL, O_NONBLOCK) < 0) return -1;
  struct epoll_event ev = {.events = EPOLLIN, .data.fd = out[0]};
  if (epoll_ctl(ep, EPOLL_CTL_ADD, out[0], &ev) < 0) return -1;
  close(in[1]);
  for (;;) {
    char buf[4096];
    struct epoll_event got;
    if (epoll_wait(ep, &got, 1, -1) < 1) continue;
    const ssize_t r = read(out[0], buf, sizeof buf);
    if (r == 0) break;
    if (r < 0) return -1;
  }
  if (epoll_ctl(ep, EPOLL_CTL_DEL, out[0], NULL) < 0) return -1;
  close(out[0]);
  int status;
  return waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s ROUNDS PROGRAM [ARGS...]\n", argv[0]);
    return 1;
  }
  const int rounds = atoi(argv[1]);
  const int ep = epoll_create1(EPOLL_CLOEXEC);
  if (ep < 0) return 1;
  for (int i = 0; i < 8; i++) {
    const int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = s};
    if (s < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, s, &ev) < 0) return 1;
  }
  for (int i = 0; i < rounds; i++)
    if (round_trip(ep, argv + 2) < 0) {
      perror("round");
      return 1;
    }
  return 0;
}
