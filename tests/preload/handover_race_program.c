/* handover_race_program.c - run plainly and under uepoll-run (run.sh): a
 * thread writes to a pipe, a stream or datagram socket pair, or an eventfd
 * without pause while the main thread forks (posix_spawn for the eventfd,
 * which it inherits), so that under the preload the object becomes a
 * kernel one while writes keep coming (fork_convert.c, eventfd_convert.c).
 * Every write that succeeded must be read back afterwards: one that landed
 * in the uepoll object after its contents moved would be lost, and a pipe
 * write there after its reader closed would raise SIGPIPE.  The read end's
 * registration in an epoll instance, moved with it, must report it
 * readable.  Each kind is tried 30 times with a new object; the output is
 * one line per kind. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

enum { kPipe, kStream, kDgram, kEventfd, kKinds };
static const char *const names[kKinds] = {"pipe", "stream pair", "datagram pair", "eventfd"};

static int wfd, kind;
static atomic_int stop, started;
static long written;

static void *writer(void *arg) {
  (void)arg;
  long n = 0;
  atomic_store(&started, 1);
  while (!atomic_load(&stop)) {
    const uint64_t one = 1;
    const ssize_t r = kind == kEventfd ? write(wfd, &one, sizeof one) : write(wfd, "x", 1);
    if (r > 0) ++n;
  }
  written = n;
  return NULL;
}

static void pause_us(long us) {
  struct timespec t = {0, us * 1000};
  nanosleep(&t, NULL);
}

/* What the read end holds: bytes, datagrams, or the eventfd's count. */
static long drain(int fd) {
  long got = 0;
  if (kind == kEventfd) {
    uint64_t v = 0;
    return read(fd, &v, sizeof v) == (ssize_t)sizeof v ? (long)v : 0;
  }
  char b[65536];
  ssize_t r;
  while ((r = read(fd, b, sizeof b)) > 0) got += kind == kDgram ? 1 : r;
  return got;
}

/* One round: 1 if every write was read back. */
static int round_ok(void) {
  int p[2];
  if (kind == kPipe) {
    if (pipe2(p, O_NONBLOCK) < 0) return 0;
  } else if (kind == kEventfd) {
    p[0] = p[1] = eventfd(0, EFD_NONBLOCK); /* inherited: no close-on-exec */
    if (p[0] < 0) return 0;
  } else if (socketpair(AF_UNIX, (kind == kStream ? SOCK_STREAM : SOCK_DGRAM) | SOCK_NONBLOCK, 0, p) < 0) {
    return 0;
  }
  wfd = p[1];
  const int ep = epoll_create1(EPOLL_CLOEXEC);
  struct epoll_event ev = {.events = EPOLLIN, .data.u32 = 7};
  if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev) < 0) return 0;
  atomic_store(&stop, 0);
  atomic_store(&started, 0);
  pthread_t t;
  if (pthread_create(&t, NULL, writer, NULL) != 0) return 0;
  while (!atomic_load(&started)) {
  }
  /* Briefly: a pair's queue must not be full yet when the fork lists it,
   * so that sends keep queueing while the conversion runs. */
  pause_us(20);
  pid_t pid = -1;
  if (kind == kEventfd) {
    char *args[] = {"true", NULL};
    if (posix_spawn(&pid, "/bin/true", NULL, NULL, args, environ) != 0) pid = -1;
  } else {
    pid = fork();
    if (pid == 0) _exit(0);
  }
  pause_us(200);
  atomic_store(&stop, 1);
  pthread_join(t, NULL);
  if (pid > 0) waitpid(pid, NULL, 0);
  struct epoll_event out;
  const int readable = epoll_wait(ep, &out, 1, 1000) == 1 && out.data.u32 == 7;
  const long got = drain(p[0]);
  close(ep);
  close(p[0]);
  if (kind != kEventfd) close(p[1]);
  return got == written && readable == (written > 0);
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  for (kind = 0; kind < kKinds; ++kind) {
    int ok = 0;
    for (int i = 0; i < 30; ++i) ok += round_ok();
    printf("%s: every write read back in %d of 30 rounds\n", names[kind], ok);
  }
  return 0;
}
