/*
 * sigio_program.c - O_ASYNC, F_SETOWN, F_SETOWN_EX and F_SETSIG on pipes
 * (Linux's kill_fasync: POLL_IN to the read end's owner after each write
 * and when the last writer closes, POLL_OUT to the write end's owner after
 * each read and when the reader closes), on socket pairs (sk_wake_async),
 * on an eventfd (no ->fasync: no
 * O_ASYNC, no signal), and the fcntl errors.  The signals are blocked and
 * collected with sigtimedwait: signal, si_code, si_band, si_fd.  Run plainly
 * and under uepoll-run (tests/preload/run.sh): the same output.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static sigset_t set;

static const char *name(int sig) {
  static char b[16];
  if (sig == SIGIO) return "SIGIO";
  snprintf(b, sizeof b, "RTMIN+%d", sig - SIGRTMIN);
  return b;
}

/* Every pending signal of the set, in the order sigtimedwait gives them. */
static void collect(const char *what) {
  struct timespec zero = {0, 0};
  siginfo_t si;
  int n = 0;
  while (sigtimedwait(&set, &si, &zero) > 0) {
    printf("%s: %s code %d", what, name(si.si_signo), si.si_code);
    if (si.si_code > 0 && si.si_code < SI_KERNEL) printf(" band %#lx fd %d", (long)si.si_band, si.si_fd);
    printf("\n");
    ++n;
  }
  printf("%s: %d signal(s)\n", what, n);
}

static void say(const char *what, long r) {
  if (r < 0) printf("%s = -1 %s\n", what, strerrorname_np(errno));
  else printf("%s = %ld\n", what, r);
}

int main(void) {
  setvbuf(stdout, NULL, _IONBF, 0);
  sigemptyset(&set);
  sigaddset(&set, SIGIO);
  sigaddset(&set, SIGRTMIN + 1);
  sigaddset(&set, SIGRTMIN + 2);
  sigprocmask(SIG_BLOCK, &set, NULL);
  char buf[64];
  int p[2];
  if (pipe(p) < 0) return 1;
  int ep = epoll_create1(EPOLL_CLOEXEC);
  struct epoll_event ev = {.events = EPOLLIN, .data.u64 = 5};
  epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev);
  printf("pipe %d %d\n", p[0], p[1]);

  /* Plain SIGIO (no F_SETSIG): SI_KERNEL, one pending at most. */
  say("F_SETOWN read end", fcntl(p[0], F_SETOWN, getpid()));
  say("F_SETFL O_ASYNC", fcntl(p[0], F_SETFL, O_ASYNC | O_NONBLOCK));
  say("F_GETFL & O_ASYNC", fcntl(p[0], F_GETFL) & O_ASYNC);
  say("write", write(p[1], "ab", 2));
  say("write", write(p[1], "cd", 2));
  collect("plain");
  say("epoll_wait", epoll_wait(ep, &ev, 1, 1000));

  /* F_SETSIG: queued, with siginfo. */
  say("F_SETSIG read end", fcntl(p[0], F_SETSIG, SIGRTMIN + 1));
  say("F_GETSIG", fcntl(p[0], F_GETSIG) - SIGRTMIN);
  say("write", write(p[1], "ef", 2));
  say("write", write(p[1], "gh", 2));
  say("write 0 bytes", write(p[1], "", 0));
  collect("setsig");

  /* The write end's owner gets POLL_OUT after each read, even an empty one. */
  struct f_owner_ex ex = {.type = F_OWNER_TID, .pid = (pid_t)syscall(SYS_gettid)};
  say("F_SETOWN_EX tid write end", fcntl(p[1], F_SETOWN_EX, &ex));
  struct f_owner_ex got = {0, 0};
  say("F_GETOWN_EX", fcntl(p[1], F_GETOWN_EX, &got));
  printf("owner type %d is me %d\n", got.type, got.pid == ex.pid);
  say("F_SETSIG write end", fcntl(p[1], F_SETSIG, SIGRTMIN + 2));
  int on = 1;
  say("FIOASYNC write end", ioctl(p[1], FIOASYNC, &on));
  say("read", read(p[0], buf, sizeof buf));
  say("read empty", read(p[0], buf, sizeof buf));
  collect("reads");

  /* O_ASYNC off: nothing more. */
  say("F_SETFL without O_ASYNC", fcntl(p[0], F_SETFL, O_NONBLOCK));
  say("write", write(p[1], "ij", 2));
  collect("async off");
  say("F_SETFL O_ASYNC again", fcntl(p[0], F_SETFL, O_ASYNC | O_NONBLOCK));

  /* A dup'd number that sets O_ASYNC again becomes si_fd. */
  int d = dup(p[0]);
  say("F_SETFL off", fcntl(p[0], F_SETFL, O_NONBLOCK));
  say("F_SETFL O_ASYNC via dup", fcntl(d, F_SETFL, O_ASYNC | O_NONBLOCK));
  say("write", write(p[1], "kl", 2));
  collect("dup");
  close(d);

  /* The writer closes: POLL_IN to the reader. */
  say("close write end", close(p[1]));
  collect("writer closed");
  close(p[0]);

  /* The reader closes: POLL_OUT to the writer. */
  if (pipe(p) < 0) return 1;
  say("F_SETOWN write end", fcntl(p[1], F_SETOWN, getpid()));
  say("F_SETSIG", fcntl(p[1], F_SETSIG, SIGRTMIN + 2));
  say("F_SETFL O_ASYNC", fcntl(p[1], F_SETFL, O_ASYNC));
  say("close read end", close(p[0]));
  collect("reader closed");
  close(p[1]);

  /* A socket pair (Linux sk_wake_async): POLL_IN to the receiver per
   * send, POLL_OUT to a sender only after it found no room, POLL_IN to the
   * peer of a SHUT_WR, POLL_HUP to the peer of a close. */
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0) return 1;
  printf("pair %d %d\n", sv[0], sv[1]);
  for (int i = 0; i < 2; ++i) {
    say("pair F_SETOWN", fcntl(sv[i], F_SETOWN, getpid()));
    say("pair F_SETSIG", fcntl(sv[i], F_SETSIG, SIGRTMIN + 1 + i));
    say("pair F_SETFL O_ASYNC", fcntl(sv[i], F_SETFL, O_ASYNC | O_NONBLOCK));
  }
  say("send", send(sv[0], "x", 1, 0));
  say("send", send(sv[0], "yz", 2, 0));
  collect("pair sends");
  say("recv", recv(sv[1], buf, sizeof buf, 0));
  collect("pair recv with room");
  say("receiver O_ASYNC off", fcntl(sv[1], F_SETFL, O_NONBLOCK));
  static char big[65536];
  long total = 0, r;
  while ((r = send(sv[0], big, sizeof big, 0)) > 0) total += r;
  printf("filled: %s\n", r < 0 ? strerrorname_np(errno) : "?");
  collect("pair fill");
  long drained = 0;
  while ((r = recv(sv[1], big, sizeof big, 0)) > 0) drained += r;
  printf("drained all %d\n", drained == total);
  collect("pair drained");
  say("receiver O_ASYNC on", fcntl(sv[1], F_SETFL, O_ASYNC | O_NONBLOCK));
  say("shutdown SHUT_WR", shutdown(sv[0], SHUT_WR));
  collect("pair shut_wr");
  say("close", close(sv[0]));
  collect("pair close");
  close(sv[1]);

  /* Across fork (the preload makes the pipe a kernel one there): owner,
   * signal and O_ASYNC carried, si_fd still the program's number. */
  if (pipe(p) < 0) return 1;
  say("F_SETOWN", fcntl(p[0], F_SETOWN, getpid()));
  say("F_SETSIG", fcntl(p[0], F_SETSIG, SIGRTMIN + 1));
  say("F_SETFL O_ASYNC", fcntl(p[0], F_SETFL, O_ASYNC));
  pid_t pid = fork();
  if (pid == 0) _exit(0);
  waitpid(pid, NULL, 0);
  say("after fork F_GETSIG", fcntl(p[0], F_GETSIG) - SIGRTMIN);
  say("after fork F_GETFL & O_ASYNC", fcntl(p[0], F_GETFL) & O_ASYNC);
  say("write", write(p[1], "m", 1));
  collect("after fork");
  close(p[0]);
  close(p[1]);

  /* An eventfd has no ->fasync. */
  int efd = eventfd(0, EFD_NONBLOCK);
  say("eventfd F_SETOWN", fcntl(efd, F_SETOWN, getpid()));
  say("eventfd F_SETFL O_ASYNC", fcntl(efd, F_SETFL, O_ASYNC | O_NONBLOCK));
  say("eventfd F_GETFL & O_ASYNC", fcntl(efd, F_GETFL) & O_ASYNC);
  say("eventfd write", write(efd, &(uint64_t){1}, 8));
  collect("eventfd");

  /* Errors. */
  say("F_SETSIG 65", fcntl(efd, F_SETSIG, 65));
  say("F_SETSIG -1", fcntl(efd, F_SETSIG, -1));
  say("F_SETOWN INT_MIN", fcntl(efd, F_SETOWN, INT_MIN));
  say("F_SETOWN no such process", fcntl(efd, F_SETOWN, INT_MAX));
  struct f_owner_ex bad = {.type = 7, .pid = 0};
  say("F_SETOWN_EX bad type", fcntl(efd, F_SETOWN_EX, &bad));
  say("F_GETOWN", fcntl(efd, F_GETOWN) == getpid());
  return 0;
}
