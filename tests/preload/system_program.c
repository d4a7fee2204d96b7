/* system_program.c - run plainly and under uepoll-run (run.sh): system()'s
 * answers and signal handling, and what its shell inherits while another
 * thread makes pipes (src/preload/spawn_system.c).
 *
 * The race: a thread makes a pipe, then closes a kernel descriptor it
 * opened before the command, 200 times, while system() spawns a shell
 * that lists its descriptors.  The shell's table is the program's at one
 * instant, so for each step the shell has the pipe (made before that
 * instant) or the kernel descriptor (closed after it), or both.  Under
 * the preload a pipe made after the conversions and before the child
 * existed would be missing, as a close-on-exec placeholder, while the
 * descriptor closed after it is gone too (so it was in 21 to 23 of 30
 * rounds when system() went to libc's own).  30 rounds, the command
 * starting after 20 steps in the first and one step later in each next. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { kSteps = 200, kRounds = 30 };

static int kfd[kSteps];      /* kernel descriptors ("/"), one closed per step */
static int pipe_rd[kSteps];  /* each step's pipe read end */
static int pipe_wr[kSteps];
static atomic_int go, steps_done;

static void *maker(void *arg) {
  (void)arg;
  while (!atomic_load(&go)) {
  }
  for (int i = 0; i < kSteps; ++i) {
    int p[2];
    if (pipe(p) < 0) p[0] = p[1] = -1;
    pipe_rd[i] = p[0];
    pipe_wr[i] = p[1];
    close(kfd[i]);
    atomic_store(&steps_done, i + 1);
  }
  return NULL;
}

/* What the shell's descriptor n was, from its `ls -l` listing: 'p' a pipe,
 * 'r' the root directory, 0 absent or other. */
static char seen[4096];

static void read_listing(const char *path) {
  memset(seen, 0, sizeof seen);
  FILE *f = fopen(path, "r");
  if (!f) return;
  char line[512];
  while (fgets(line, sizeof line, f)) {
    char *arrow = strstr(line, " -> ");
    if (!arrow) continue;
    char *num = arrow;
    while (num > line && num[-1] != ' ') --num;
    const int n = atoi(num);
    if (n < 0 || n >= (int)sizeof seen) continue;
    const char *target = arrow + 4;
    seen[n] = !strncmp(target, "pipe:", 5) ? 'p' : !strcmp(target, "/\n") ? 'r' : 0;
  }
  fclose(f);
}

static int race_round(int round, const char *listing) {
  for (int i = 0; i < kSteps; ++i) kfd[i] = open("/", O_RDONLY | O_DIRECTORY);
  char cmd[256];
  snprintf(cmd, sizeof cmd, "ls -l /proc/$$/fd > %s", listing);
  pthread_t t;
  atomic_store(&go, 0);
  if (pthread_create(&t, NULL, maker, NULL)) return 0;
  atomic_store(&steps_done, 0);
  atomic_store(&go, 1);
  while (atomic_load(&steps_done) < 20 + round) {
  }
  const int st = system(cmd);
  pthread_join(t, NULL);
  read_listing(listing);
  int ok = st == 0;
  for (int i = 0; i < kSteps; ++i) {
    const int had_pipe = pipe_rd[i] >= 0 && pipe_rd[i] < (int)sizeof seen && seen[pipe_rd[i]] == 'p';
    const int had_kfd = kfd[i] >= 0 && kfd[i] < (int)sizeof seen && seen[kfd[i]] == 'r';
    if (!had_pipe && !had_kfd) ok = 0;
    close(pipe_rd[i]);
    close(pipe_wr[i]);
  }
  return ok;
}

static int sigint_runs, sigchld_runs;
static void on_sigint(int s) { (void)s; ++sigint_runs; }
static void on_sigchld(int s) { (void)s; ++sigchld_runs; }

static void show(const char *what, int st) {
  if (st == -1)
    printf("%s: -1 %s\n", what, strerror(errno));
  else if (WIFEXITED(st))
    printf("%s: %d, exited %d\n", what, st, WEXITSTATUS(st));
  else if (WIFSIGNALED(st))
    printf("%s: %d, killed by signal %d\n", what, st, WTERMSIG(st));
  else
    printf("%s: %d\n", what, st);
  fflush(stdout);
}

static int beside_status;
static void *long_command(void *arg) {
  (void)arg;
  beside_status = system("sleep 0.3");
  return NULL;
}

static void *cancelled_command(void *arg) {
  (void)arg;
  system("exec sleep 10");
  return NULL;
}

/* Two commands at once: SIGINT stays ignored until the later one ends,
 * then the handler is back.  A thread cancelled in system() kills its
 * command and restores the signals. */
static void two_commands_and_a_cancel(void) {
  pthread_t t;
  if (pthread_create(&t, NULL, long_command, NULL) == 0) {
    show("kill -INT the caller beside", system("sleep 0.1; kill -INT $PPID; exit 0"));
    pthread_join(t, NULL);
    show("sleep 0.3 beside", beside_status);
  }
  struct sigaction now;
  sigaction(SIGINT, NULL, &now);
  printf("after both: SIGINT handler ran %d times; installed: %d\n", sigint_runs, now.sa_handler == on_sigint);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  if (pthread_create(&t, NULL, cancelled_command, NULL) == 0) {
    usleep(200000);
    pthread_cancel(t);
    void *res = NULL;
    pthread_join(t, &res);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    sigaction(SIGINT, NULL, &now);
    const pid_t left = waitpid(-1, NULL, WNOHANG); /* the command was killed and reaped: ECHILD */
    printf("cancelled: %d, within 5 s: %d; SIGINT handler installed: %d; a child left: %s\n",
           res == PTHREAD_CANCELED, t1.tv_sec - t0.tv_sec < 5, now.sa_handler == on_sigint,
           left < 0 && errno == ECHILD ? "no" : "yes");
  }
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  printf("system(NULL): %d\n", system(NULL));
  show("exit 3", system("exit 3"));
  show("echo", system("echo from the shell"));

  /* The caller ignores SIGINT and SIGQUIT during the command, and the
   * shell gets their default actions back (unless ignored before). */
  struct sigaction sa = {.sa_handler = on_sigint};
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  show("kill -INT the caller", system("kill -INT $PPID; exit 0"));
  printf("caller's SIGINT handler ran %d times; still installed: %d\n", sigint_runs,
         (sigaction(SIGINT, NULL, &sa), sa.sa_handler == on_sigint));
  show("kill -INT the shell", system("kill -INT $$; exit 0"));
  two_commands_and_a_cancel();
  signal(SIGQUIT, SIG_IGN);
  show("kill -QUIT the shell, ignored before", system("kill -QUIT $$; echo survived"));
  signal(SIGQUIT, SIG_DFL);

  /* SIGCHLD is blocked in the caller until the command ended: the handler
   * runs once, after system() reaped the shell. */
  struct sigaction chld = {.sa_handler = on_sigchld};
  sigemptyset(&chld.sa_mask);
  sigaction(SIGCHLD, &chld, NULL);
  show("true", system("true"));
  printf("SIGCHLD handler ran %d times\n", sigchld_runs);
  signal(SIGCHLD, SIG_DFL);

  /* A pipe made before the command reaches the shell, and its epoll
   * registration still reports it afterwards. */
  int p[2];
  if (pipe(p) < 0) return 1;
  const int ep = epoll_create1(0);
  struct epoll_event ev = {.events = EPOLLIN, .data.u32 = 7};
  epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev);
  char cmd[64];
  snprintf(cmd, sizeof cmd, "printf inherited >&%d", p[1]);
  show("write to an inherited pipe", system(cmd));
  struct epoll_event got;
  const int n = epoll_wait(ep, &got, 1, 1000);
  char buf[32] = "";
  const ssize_t r = read(p[0], buf, sizeof buf - 1);
  printf("epoll_wait %d data %u; read %zd %s\n", n, n == 1 ? got.data.u32 : 0, r, buf);
  close(p[0]);
  close(p[1]);
  close(ep);

  char listing[] = "/tmp/uepoll-system-XXXXXX";
  const int lf = mkstemp(listing);
  if (lf < 0) return 1;
  close(lf);
  int ok = 0;
  for (int round = 0; round < kRounds; ++round) ok += race_round(round, listing);
  unlink(listing);
  printf("the shell had each pipe or the descriptor closed after it in %d of %d rounds\n", ok, kRounds);
  return 0;
}
