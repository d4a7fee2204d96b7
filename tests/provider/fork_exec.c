/*
 * fork_exec.c - forks around TCP sockets over 127.0.0.1, as daemons and
 * servers make them: a fork before any socket exists whose child then
 * serves (a daemon's fork before its server starts), a fork+exec of a
 * helper (this program with --helper, which makes sockets of its own)
 * while the parent's sockets are open, a child that exits without touching
 * the sockets it inherited, and system().  After each, the parent's own
 * connection must still carry data.  Run plainly and under
 * `uepoll-run --provider lwip` (run.sh): the lines must be equal.  The
 * parent's sockets are SOCK_CLOEXEC, so the helper inherits none, as on
 * Linux.  Bounded: alarm(30).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

static void die(const char *what) {
  printf("FAIL %s: %s\n", what, strerror(errno));
  fflush(stdout);
  _exit(1);
}

/* A connected pair over 127.0.0.1: *a accepted, *b connected. */
static void tcp_pair(int *a, int *b) {
  int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (l < 0) die("socket");
  struct sockaddr_in sa = {0};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(l, (struct sockaddr *)&sa, sizeof sa) || listen(l, 4)) die("bind/listen");
  socklen_t n = sizeof sa;
  if (getsockname(l, (struct sockaddr *)&sa, &n)) die("getsockname");
  *b = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (*b < 0 || connect(*b, (struct sockaddr *)&sa, sizeof sa)) die("connect");
  *a = accept4(l, NULL, NULL, SOCK_CLOEXEC);
  if (*a < 0) die("accept");
  close(l);
}

/* One message each way; prints what: ok or what failed. */
static void echo(const char *what, int a, int b) {
  char buf[64];
  const char msg[] = "ping through the pair";
  if (send(b, msg, sizeof msg, 0) != (ssize_t)sizeof msg) die("send");
  if (recv(a, buf, sizeof msg, MSG_WAITALL) != (ssize_t)sizeof msg) die("recv");
  if (send(a, buf, sizeof msg, 0) != (ssize_t)sizeof msg) die("send back");
  if (recv(b, buf, sizeof msg, MSG_WAITALL) != (ssize_t)sizeof msg || memcmp(buf, msg, sizeof msg)) die("recv back");
  printf("%s: echo ok\n", what);
}

static void reap(const char *what, pid_t pid) {
  int st;
  if (waitpid(pid, &st, 0) != pid) die("waitpid");
  printf("%s: %s %d\n", what, WIFEXITED(st) ? "exited" : "killed", WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  alarm(30);
  int a, b;
  if (argc > 3 && strcmp(argv[1], "--helper") == 0) {
    /* The exec'd helper: the parent's descriptors are gone (CLOEXEC), its
     * own sockets work. */
    int fa = atoi(argv[2]), fb = atoi(argv[3]);
    printf("helper: parent's sockets %s\n", fcntl(fa, F_GETFD) < 0 && fcntl(fb, F_GETFD) < 0 ? "closed" : "OPEN");
    tcp_pair(&a, &b);
    echo("helper", a, b);
    return 0;
  }

  /* A daemon's fork: before any socket; the child serves. */
  pid_t pid = fork();
  if (pid < 0) die("fork");
  if (pid == 0) {
    tcp_pair(&a, &b);
    echo("child forked before any socket", a, b);
    exit(0);
  }
  reap("child forked before any socket", pid);

  tcp_pair(&a, &b);
  echo("parent", a, b);

  /* fork+exec of a helper while the parent's sockets are open. */
  fflush(stdout);
  pid = fork();
  if (pid < 0) die("fork");
  if (pid == 0) {
    char fa[16], fb[16];
    snprintf(fa, sizeof fa, "%d", a);
    snprintf(fb, sizeof fb, "%d", b);
    execl("/proc/self/exe", argv[0], "--helper", fa, fb, (char *)NULL);
    _exit(126);
  }
  reap("helper", pid);
  echo("parent after the helper", a, b);

  /* A child that exits (atexit handlers, stdio flush) without touching
   * the sockets it inherited. */
  pid = fork();
  if (pid < 0) die("fork");
  if (pid == 0) exit(7);
  reap("child that leaves the sockets alone", pid);
  echo("parent after that child", a, b);

  /* system(): a shell, while the sockets are open. */
  int r = system("echo 'system: the shell ran'");
  printf("system: returned %d\n", r);
  echo("parent after system", a, b);
  close(a);
  close(b);
  printf("done\n");
  return 0;
}
