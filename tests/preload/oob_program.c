/* oob_program.c - run plainly and under uepoll-run (run.sh): out-of-band
 * data on an AF_UNIX stream pair (uepoll's pair under the preload,
 * src/objects/socketpair_oob.cpp): MSG_OOB, sockatmark, EPOLLPRI through
 * epoll, SIGURG to the owner, SO_OOBINLINE, and a pending out-of-band
 * byte carried across fork(), which makes the pair a kernel one
 * (src/preload/fork_move.c). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile sig_atomic_t urgs;
static void on_sigurg(int s) {
  (void)s;
  ++urgs;
}

static void show_recv(const char *what, int fd, int flags) {
  char b[16];
  const ssize_t r = recv(fd, b, sizeof b, flags | MSG_DONTWAIT);
  if (r < 0)
    printf("%s: -1 %s\n", what, strerror(errno));
  else
    printf("%s: %zd [%.*s]\n", what, r, (int)r, b);
}

static void show_mark(const char *what, int fd) { printf("%s: sockatmark %d\n", what, sockatmark(fd)); }

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0) return 1;
  struct sigaction sa = {.sa_handler = on_sigurg};
  sigemptyset(&sa.sa_mask);
  sigaction(SIGURG, &sa, NULL);
  printf("F_SETOWN %d\n", fcntl(sv[1], F_SETOWN, getpid()));

  const int ep = epoll_create1(0);
  struct epoll_event ev = {.events = EPOLLIN | EPOLLPRI | EPOLLET, .data.u32 = 1};
  epoll_ctl(ep, EPOLL_CTL_ADD, sv[1], &ev);
  printf("send ab: %zd\n", send(sv[0], "ab", 2, 0));
  printf("send c, MSG_OOB: %zd\n", send(sv[0], "c", 1, MSG_OOB));
  printf("send de: %zd\n", send(sv[0], "de", 2, 0));
  printf("SIGURG handled %d time(s)\n", (int)urgs);
  struct epoll_event got;
  const int n = epoll_wait(ep, &got, 1, 1000);
  printf("epoll_wait %d events %s%s\n", n, n == 1 && (got.events & EPOLLIN) ? "IN " : "",
         n == 1 && (got.events & EPOLLPRI) ? "PRI" : "");
  show_mark("before reading", sv[1]);
  show_recv("peek OOB", sv[1], MSG_OOB | MSG_PEEK);

  /* fork with the out-of-band byte pending: the child reads the pair. */
  fflush(stdout);
  const pid_t pid = fork();
  if (pid == 0) {
    show_recv("child read", sv[1], 0);
    show_mark("child at the mark", sv[1]);
    show_recv("child OOB", sv[1], MSG_OOB);
    show_recv("child OOB again", sv[1], MSG_OOB);
    show_recv("child read", sv[1], 0);
    fflush(stdout);
    _exit(0);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  printf("child exited %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);

  /* SO_OOBINLINE: the byte is ordinary data, a read still stops at it. */
  int sp[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sp) < 0) return 1;
  const int on = 1;
  printf("SO_OOBINLINE %d\n", setsockopt(sp[1], SOL_SOCKET, SO_OOBINLINE, &on, sizeof on));
  send(sp[0], "xy", 2, 0);
  send(sp[0], "Z", 1, MSG_OOB);
  send(sp[0], "w", 1, 0);
  show_recv("inline OOB", sp[1], MSG_OOB);
  show_recv("inline read", sp[1], 0);
  show_mark("inline at the mark", sp[1]);
  show_recv("inline read", sp[1], 0);
  return 0;
}
