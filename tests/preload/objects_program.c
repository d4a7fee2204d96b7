/* objects_program.c - an ordinary program (no uepoll in it) that the
 * preload test runs plainly and under uepoll-run (tests/preload/run.sh):
 * the two runs must print the same, with nothing on stderr.  It exercises
 * what pipes, socket pairs and signals do beyond plain reads and writes:
 * the signal masks of ppoll, pselect, epoll_pwait and epoll_pwait2 with a
 * signal pending, pipe sizes (F_SETPIPE_SZ / F_GETPIPE_SZ, FIONREAD,
 * writability at the new size), and blocking reads and writes interrupted
 * by handlers with and without SA_RESTART. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/sendfile.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

static void say(const char *what, long r) {
  if (r < 0) printf("%s = -1 %s\n", what, strerrorname_np(errno));
  else printf("%s = %ld\n", what, r);
  fflush(stdout);
}

/* ---- signal masks ---------------------------------------------------------- */

static volatile sig_atomic_t ran;
static void on_sigint(int s) { (void)s; ran = ran + 1; }

static void pending_sigint(void) {
  sigset_t b;
  sigemptyset(&b);
  sigaddset(&b, SIGINT);
  sigprocmask(SIG_BLOCK, &b, NULL);
  ran = 0;
  kill(getpid(), SIGINT);
}

static void report(const char *what, int r) {
  int e = errno;
  sigset_t p;
  sigpending(&p);
  int left = sigismember(&p, SIGINT);
  int handled = ran;
  if (left) {
    sigset_t none;
    sigemptyset(&none);
    sigsuspend(&none);
  }
  errno = e;
  if (r < 0) printf("%s = -1 %s%s%s\n", what, strerrorname_np(e), handled ? " handler ran" : "", left ? " pending" : "");
  else printf("%s = %d%s%s\n", what, r, handled ? " handler ran" : "", left ? " pending" : "");
  fflush(stdout);
}

static void sigmask_cases(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_sigint;
  sigaction(SIGINT, &sa, NULL);
  int p[2];
  if (pipe2(p, O_NONBLOCK) < 0) return;
  int ep = epoll_create1(0);
  struct epoll_event ev = {.events = EPOLLIN};
  epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev);
  sigset_t empty;
  sigemptyset(&empty);
  struct timespec zero = {0, 0}, two = {2, 0};
  for (int ready = 0; ready < 2; ++ready) {
    if (ready && write(p[1], "x", 1) != 1) return;
    for (int t = 0; t < 2; ++t) {
      const struct timespec *tmo = t ? &two : &zero;
      char what[96];
      struct pollfd pfd = {p[0], POLLIN, 0};
      pending_sigint();
      snprintf(what, sizeof what, "ppoll(pipe,%s,empty)", t ? "2s" : "0");
      report(what, ppoll(&pfd, 1, tmo, &empty));
      fd_set rs;
      FD_ZERO(&rs);
      FD_SET(p[0], &rs);
      pending_sigint();
      snprintf(what, sizeof what, "pselect(pipe,%s,empty)", t ? "2s" : "0");
      report(what, pselect(p[0] + 1, &rs, NULL, NULL, tmo, &empty));
      struct epoll_event out;
      pending_sigint();
      snprintf(what, sizeof what, "epoll_pwait(%s,empty)", t ? "2000" : "0");
      report(what, epoll_pwait(ep, &out, 1, t ? 2000 : 0, &empty));
      pending_sigint();
      snprintf(what, sizeof what, "epoll_pwait2(%s,empty)", t ? "2s" : "0");
      report(what, epoll_pwait2(ep, &out, 1, tmo, &empty));
    }
  }
  sigprocmask(SIG_SETMASK, &empty, NULL);
  signal(SIGINT, SIG_DFL);
  close(ep);
  close(p[0]);
  close(p[1]);
}

/* ---- pipe sizes ------------------------------------------------------------ */

static void pipesize_cases(void) {
  int p[2];
  if (pipe2(p, O_NONBLOCK) < 0) return;
  say("F_GETPIPE_SZ", fcntl(p[0], F_GETPIPE_SZ));
  say("F_SETPIPE_SZ 1M", fcntl(p[1], F_SETPIPE_SZ, 1 << 20));
  say("F_GETPIPE_SZ", fcntl(p[0], F_GETPIPE_SZ));
  static char big[2 << 20];
  say("write 2M", write(p[1], big, sizeof big));
  int n = 0;
  say("FIONREAD", ioctl(p[0], FIONREAD, &n) < 0 ? -1 : n);
  say("F_SETPIPE_SZ 64K (full)", fcntl(p[1], F_SETPIPE_SZ, 65536));
  struct pollfd pfd = {p[1], POLLOUT, 0};
  say("poll writable", poll(&pfd, 1, 0));
  long total = 0;
  for (ssize_t r; (r = read(p[0], big, sizeof big)) > 0;) total += r;
  say("read back", total);
  say("F_SETPIPE_SZ 4096", fcntl(p[0], F_SETPIPE_SZ, 4096));
  say("write 5000", write(p[1], big, 5000));
  say("poll writable", poll(&pfd, 1, 0));
  int ep = epoll_create1(0);
  struct epoll_event ev = {.events = EPOLLOUT | EPOLLET};
  epoll_ctl(ep, EPOLL_CTL_ADD, p[1], &ev);
  say("epoll_wait (full)", epoll_wait(ep, &ev, 1, 0));
  say("F_SETPIPE_SZ 8192", fcntl(p[0], F_SETPIPE_SZ, 8192));
  say("epoll_wait (room)", epoll_wait(ep, &ev, 1, 0));
  close(ep);
  close(p[0]);
  close(p[1]);
  /* Across fork (a uepoll pipe becomes a kernel one there): the size and
   * the 200 KiB queued in it come along. */
  if (pipe(p) < 0) return;
  say("F_SETPIPE_SZ 256K", fcntl(p[1], F_SETPIPE_SZ, 262144));
  say("write 200K", write(p[1], big, 200 << 10));
  pid_t pid = fork();
  if (pid == 0) {
    close(p[1]);
    long got = 0;
    for (ssize_t r; (r = read(p[0], big, sizeof big)) > 0;) got += r;
    printf("child: F_GETPIPE_SZ = %d, read %ld\n", fcntl(p[0], F_GETPIPE_SZ), got);
    fflush(stdout);
    _exit(0);
  }
  close(p[0]);
  close(p[1]);
  int st;
  waitpid(pid, &st, 0);
}

/* ---- SA_RESTART ------------------------------------------------------------ */

static int restart_wr;
static void on_alarm(int s) { (void)s; ran = ran + 1; }
/* The writer blocks SIGALRM, so that the process-directed alarm goes to
 * the reading thread, whose read is the case (under uepoll-run the kernel
 * could otherwise give it to this thread while the reader is between its
 * check and its sleep, with every signal blocked: docs/linux-deviations.md,
 * "Blocking calls and signals"; the reader then answers EINTR while the
 * handler runs here, a moment later than the print). */
static void *write_later(void *arg) {
  (void)arg;
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, NULL);
  usleep(300000);
  if (write(restart_wr, "x", 1) != 1) perror("write");
  return NULL;
}

/* SIGALRM at 100 ms while read blocks on an empty pipe, a byte at 300 ms:
 * with SA_RESTART the read returns it, without it the read fails. */
static void restart_cases(void) {
  for (int restart = 1; restart >= 0; --restart) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sa.sa_flags = restart ? SA_RESTART : 0;
    sigaction(SIGALRM, &sa, NULL);
    int p[2];
    if (pipe(p) < 0) return;
    restart_wr = p[1];
    pthread_t th;
    pthread_create(&th, NULL, write_later, NULL);
    struct itimerval it = {{0, 0}, {0, 100000}};
    ran = 0;
    setitimer(ITIMER_REAL, &it, NULL);
    char c;
    errno = 0;
    ssize_t r = read(p[0], &c, 1);
    printf("read %s SA_RESTART = %zd%s%s, handler ran %d\n", restart ? "with" : "without", r, r < 0 ? " " : "",
           r < 0 ? strerrorname_np(errno) : "", (int)ran);
    pthread_join(th, NULL);
    close(p[0]);
    close(p[1]);
  }
  fflush(stdout);
}

/* ---- splice and sendfile --------------------------------------------------- */

static void splice_cases(void) {
  char path[] = "/tmp/uepoll-objects-XXXXXX";
  int f = mkstemp(path);
  if (f < 0) return;
  unlink(path);
  static char data[20000];
  for (size_t i = 0; i < sizeof data; ++i) data[i] = (char)('a' + i % 26);
  if (write(f, data, sizeof data) != (ssize_t)sizeof data) return;
  lseek(f, 0, SEEK_SET);
  int p[2];
  if (pipe(p) < 0) return;
  say("splice(file, pipe, 5000)", splice(f, NULL, p[1], NULL, 5000, 0));
  loff_t off = 123;
  say("splice(file@123, pipe, 100)", splice(f, &off, p[1], NULL, 100, 0));
  say("off", (long)off);
  off_t soff = 0;
  say("sendfile(pipe, file, &0, 50)", sendfile(p[1], f, &soff, 50));
  static char got[6000];
  say("read", read(p[0], got, sizeof got));
  say("same bytes", memcmp(got, data, 5000) == 0 && memcmp(got + 5000, data + 123, 100) == 0 &&
                        memcmp(got + 5100, data, 50) == 0);
  say("splice(pipe, same pipe)", splice(p[0], NULL, p[1], NULL, 10, 0));
  say("copy_file_range(pipe, file)", copy_file_range(p[0], NULL, f, NULL, 10, 0));
  close(p[0]);
  close(p[1]);
  close(f);
}

int main(int argc, char **argv) {
  const char *only = argc > 1 ? argv[1] : NULL;
  if (!only || !strcmp(only, "sigmask")) sigmask_cases();
  if (!only || !strcmp(only, "pipesize")) pipesize_cases();
  if (!only || !strcmp(only, "restart")) restart_cases();
  if (!only || !strcmp(only, "splice")) splice_cases();
  return 0;
}
