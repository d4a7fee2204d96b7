/* preload_program.c - an ordinary program (no uepoll in it) that the
 * preload test runs plainly and under uepoll-run (tests/preload/run.sh):
 * the two runs must print the same.  It uses the less common entry points
 * the preload interposes: syscall(SYS_epoll_*), select on a pipe, fdopen,
 * F_DUPFD_CLOEXEC / FD_CLOEXEC, dup2 onto a chosen number, ppoll,
 * sendmsg/recvmsg, MSG_PEEK, getsockopt, fstatat(AT_EMPTY_PATH), mmap,
 * and a kernel socket pair of another type beside a stream pair.
 * With the argument "exec", it checks what an exec'd child inherits; with
 * "fork", whether a pipe made before fork connects parent and child; with
 * "params", it prints a new epoll instance's EPIOCGPARAMS busy-poll window
 * (uepoll-run --tune busy_poll_usecs=N; 0 on Linux). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef EPIOCGPARAMS /* Linux 6.9's <linux/eventpoll.h> */
struct epoll_params {
  uint32_t busy_poll_usecs;
  uint16_t busy_poll_budget;
  uint8_t prefer_busy_poll;
  uint8_t pad;
};
#define EPIOCGPARAMS _IOR(0x8A, 0x02, struct epoll_params)
#endif

static int params_check(void) {
  struct epoll_params p;
  memset(&p, 0, sizeof p);
  int ep = epoll_create1(EPOLL_CLOEXEC);
  if (ep < 0 || ioctl(ep, EPIOCGPARAMS, &p) < 0) {
    printf("EPIOCGPARAMS = -1 %s\n", strerrorname_np(errno));
    return 1;
  }
  printf("busy_poll_usecs %u\n", p.busy_poll_usecs);
  close(ep);
  return 0;
}

static void say(const char *what, long r) {
  if (r < 0) printf("%s = -1 %s\n", what, strerrorname_np(errno));
  else printf("%s = %ld\n", what, r);
}

static int exec_check(void) {
  /* Does an exec'd child see a descriptor at these numbers?  Without
   * O_CLOEXEC Linux passes both on.  Under the preload a pipe and an
   * eventfd are made kernel ones at fork (fork_convert.c,
   * eventfd_convert.c) and are passed on too. */
  int p[2];
  if (pipe(p) < 0) return 1;
  int e = eventfd(0, 0);
  if (e < 0) return 1;
  char cmd[256];
  snprintf(cmd, sizeof cmd,
           "for n in %d %d; do if [ -e /proc/self/fd/$n ]; then printf 'inherited '; else printf 'not-inherited '; fi; done",
           p[0], e);
  pid_t pid = fork();
  if (pid == 0) {
    unsetenv("LD_PRELOAD");
    execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
    _exit(127);
  }
  int st;
  waitpid(pid, &st, 0);
  return 0;
}

static int fork_check(void) {
  /* A pipe and an eventfd made before fork, written by the child, read by
   * the parent. */
  int p[2];
  if (pipe2(p, O_NONBLOCK) < 0) return 1;
  const int e = eventfd(2, EFD_NONBLOCK | EFD_CLOEXEC);
  if (e < 0) return 1;
  pid_t pid = fork();
  if (pid == 0) {
    ssize_t unused = write(p[1], "hi", 2);
    (void)unused;
    const uint64_t five = 5;
    unused = write(e, &five, sizeof five);
    _exit(0);
  }
  int st;
  waitpid(pid, &st, 0);
  char buf[4];
  say("parent reads what the child wrote", read(p[0], buf, sizeof buf));
  uint64_t v = 0;
  say("parent reads the eventfd", read(e, &v, sizeof v));
  say("its count", (long)v);
  return 0;
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (argc > 1 && strcmp(argv[1], "exec") == 0) return exec_check();
  if (argc > 1 && strcmp(argv[1], "fork") == 0) return fork_check();
  if (argc > 1 && strcmp(argv[1], "params") == 0) return params_check();
  signal(SIGPIPE, SIG_IGN);

  int ep = (int)syscall(SYS_epoll_create1, EPOLL_CLOEXEC);
  say("syscall(epoll_create1) ok", ep >= 0);
  int efd = eventfd(0, EFD_NONBLOCK);
  struct epoll_event ev = {.events = EPOLLIN | EPOLLET, .data.u64 = 77};
  say("syscall(epoll_ctl)", syscall(SYS_epoll_ctl, ep, EPOLL_CTL_ADD, efd, &ev));
  uint64_t v = 5;
  say("write eventfd", write(efd, &v, sizeof v));
  struct epoll_event out[4];
#ifdef SYS_epoll_wait
  int n = (int)syscall(SYS_epoll_wait, ep, out, 4, 1000);
#else /* aarch64 and other new ABIs have only epoll_pwait (same output) */
  int n = (int)syscall(SYS_epoll_pwait, ep, out, 4, 1000, NULL, 8);
#endif
  say("syscall(epoll_wait)", n);
  if (n > 0) printf("  data %llu events %#x\n", (unsigned long long)out[0].data.u64, out[0].events);
  say("epoll_wait ET again", epoll_wait(ep, out, 4, 0));

  int p[2];
  say("pipe2", pipe2(p, O_NONBLOCK));
  say("F_GETFD", fcntl(p[0], F_GETFD));
  int d = fcntl(p[1], F_DUPFD_CLOEXEC, 50);
  say("F_DUPFD_CLOEXEC >= 50", d >= 50);
  say("F_GETFD dup", fcntl(d, F_GETFD));
  say("F_GETFL dup", fcntl(d, F_GETFL));
  say("write dup", write(d, "abc", 3));
  fd_set rs;
  FD_ZERO(&rs);
  FD_SET(p[0], &rs);
  struct timeval tv = {1, 0};
  say("select", select(p[0] + 1, &rs, NULL, NULL, &tv));
  say("  FD_ISSET", FD_ISSET(p[0], &rs) != 0);
  struct pollfd pf = {p[0], POLLIN, 0};
  struct timespec zero = {0, 0};
  say("ppoll", ppoll(&pf, 1, &zero, NULL));
  FILE *f = fdopen(p[0], "r");
  char line[16] = {0};
  say("fdopen", f != NULL);
  if (f) {
    size_t got = fread(line, 1, 3, f);
    printf("  fread %zu '%s'\n", got, line);
  }
  struct stat st;
  say("fstatat AT_EMPTY_PATH", fstatat(d, "", &st, AT_EMPTY_PATH));
  printf("  S_ISFIFO %d\n", S_ISFIFO(st.st_mode) ? 1 : 0);
  say("mmap pipe", mmap(NULL, 4096, PROT_READ, MAP_SHARED, d, 0) == MAP_FAILED ? -1 : 0);
  say("lseek", lseek(d, 0, SEEK_SET));
  /* dup2 onto a chosen number, then use that number. */
  say("dup2 onto 40", dup2(efd, 40));
  say("write 40", write(40, &v, sizeof v));
  say("read efd", read(efd, &v, sizeof v));
  printf("  value %llu\n", (unsigned long long)v);
  say("close 40", close(40));
  say("close 40 again", close(40));

  int sv[2], dg[2];
  say("socketpair stream", socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv));
  say("socketpair dgram", socketpair(AF_UNIX, SOCK_DGRAM, 0, dg));
  struct iovec iov[2] = {{"ab", 2}, {"cd", 2}};
  struct msghdr m = {.msg_iov = iov, .msg_iovlen = 2};
  say("sendmsg", sendmsg(sv[0], &m, MSG_NOSIGNAL));
  char buf[8] = {0};
  say("recv PEEK", recv(sv[1], buf, sizeof buf, MSG_PEEK));
  say("recv", recv(sv[1], buf, sizeof buf, 0));
  printf("  '%.4s'\n", buf);
  int type = 0;
  socklen_t len = sizeof type;
  say("getsockopt SO_TYPE", getsockopt(sv[0], SOL_SOCKET, SO_TYPE, &type, &len));
  printf("  type %d\n", type);
  say("dgram send", send(dg[0], "x", 1, 0));
  say("dgram recv", recv(dg[1], buf, sizeof buf, 0));
  say("listen on a pair", listen(sv[0], 1));
  say("close pair", close(sv[1]));
  say("send to closed peer", send(sv[0], "x", 1, MSG_NOSIGNAL));
  return 0;
}
