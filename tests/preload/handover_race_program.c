/* handover_race_program.c - run plainly and under uepoll-run (run.sh): a
 * thread writes to a pipe, a stream or datagram socket pair, or an eventfd
 * without pause while the main thread forks (posix_spawn for the eventfd,
 * which it inherits), so that under the preload the object becomes a
 * kernel one while writes keep coming (fork_convert.c, eventfd_convert.c).
 * Two more kinds splice into a pipe or a stream pair from a FIFO (a kernel
 * pipe under the preload too), whose bytes, once read, cannot go back,
 * while another thread reads the pipe or pair: every byte that left the
 * FIFO must be read, as many as the splices counted.  The last kind
 * clears a pipe end's O_NONBLOCK once, at a time that moves from round to
 * round across the fork's conversion: the end must not have it after.
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
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

enum { kPipe, kStream, kDgram, kEventfd, kSplicePipe, kSpliceStream, kFlags, kKinds };
static const char *const names[kKinds] = {"pipe",    "stream pair",          "datagram pair",
                                          "eventfd", "splice into a pipe", "splice into a stream pair",
                                          "flags"};

static int wfd, kind;
static int fifo = -1; /* the splice kinds' source, opened for reading and writing */
static atomic_int stop, started;
static long written, fifo_in;
static int round_no; /* kFlags: its change comes 5 us later each round */

static int splicing(void) { return kind == kSplicePipe || kind == kSpliceStream; }

static void *writer(void *arg) {
  (void)arg;
  long n = 0;
  atomic_store(&started, 1);
  while (!atomic_load(&stop)) {
    const uint64_t one = 1;
    if (kind == kFlags) {
      struct timespec t0, now;
      clock_gettime(CLOCK_MONOTONIC, &t0);
      do
        clock_gettime(CLOCK_MONOTONIC, &now);
      while ((now.tv_sec - t0.tv_sec) * 1000000000L + now.tv_nsec - t0.tv_nsec < 5000L * round_no);
      (void)fcntl(wfd, F_SETFL, 0);
      break;
    }
    if (splicing()) {
      static char chunk[4096];
      const ssize_t w = write(fifo, chunk, sizeof chunk);
      if (w > 0) fifo_in += w;
      const ssize_t r = splice(fifo, NULL, wfd, NULL, 65536, SPLICE_F_NONBLOCK);
      if (r > 0) n += r;
      continue;
    }
    const ssize_t r = kind == kEventfd ? write(wfd, &one, sizeof one) : write(wfd, "x", 1);
    if (r > 0) ++n;
  }
  written = kind == kFlags ? 1 : n; /* kFlags: the one byte written before */
  return NULL;
}

/* The splice kinds' reader, so that the pipe or pair keeps taking. */
static int rfd;
static atomic_int stop_reader;
static long read_by_reader;

static void *reader(void *arg) {
  (void)arg;
  static char b[65536];
  long got = 0;
  while (!atomic_load(&stop_reader)) {
    const ssize_t r = read(rfd, b, sizeof b);
    if (r > 0) got += r;
  }
  read_by_reader = got;
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
  if (kind == kPipe || kind == kSplicePipe || kind == kFlags) {
    if (pipe2(p, O_NONBLOCK) < 0) return 0;
  } else if (kind == kEventfd) {
    p[0] = p[1] = eventfd(0, EFD_NONBLOCK); /* inherited: no close-on-exec */
    if (p[0] < 0) return 0;
  } else if (socketpair(AF_UNIX, (kind == kDgram ? SOCK_DGRAM : SOCK_STREAM) | SOCK_NONBLOCK, 0, p) < 0) {
    return 0;
  }
  wfd = p[1];
  const int ep = epoll_create1(EPOLL_CLOEXEC);
  struct epoll_event ev = {.events = EPOLLIN, .data.u32 = 7};
  if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev) < 0) return 0;
  atomic_store(&stop, 0);
  atomic_store(&started, 0);
  atomic_store(&stop_reader, 0);
  fifo_in = read_by_reader = 0;
  long extra = 0;
  rfd = p[0];
  if (kind == kFlags && write(p[1], "x", 1) != 1) return 0;
  pthread_t t, rt;
  if (splicing() && pthread_create(&rt, NULL, reader, NULL) != 0) return 0;
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
  if (splicing()) {
    atomic_store(&stop_reader, 1);
    pthread_join(rt, NULL);
    extra = write(p[1], "x", 1) == 1; /* for the registration to report (unless full) */
    written += extra;
  }
  if (pid > 0) waitpid(pid, NULL, 0);
  struct epoll_event out;
  const int readable = epoll_wait(ep, &out, 1, 1000) == 1 && out.data.u32 == 7;
  const long got = read_by_reader + drain(p[0]);
  const int flag_kept = kind != kFlags || !(fcntl(p[1], F_GETFL) & O_NONBLOCK);
  close(ep);
  close(p[0]);
  if (kind != kEventfd) close(p[1]);
  long left = 0; /* what the splices left in the FIFO */
  char b[4096];
  for (ssize_t r; splicing() && (r = read(fifo, b, sizeof b)) > 0;) left += r;
  if (splicing() && fifo_in - left + extra != got) return 0; /* bytes that left the FIFO and were lost */
  return got == written && readable == (written > 0) && flag_kept;
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  char path[64];
  snprintf(path, sizeof path, "/tmp/uepoll-handover-race-%d", (int)getpid());
  if (mkfifo(path, 0600) == 0) {
    fifo = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
    unlink(path);
  }
  if (fifo < 0) {
    perror("fifo");
    return 1;
  }
  for (kind = 0; kind < kKinds; ++kind) {
    int ok = 0;
    for (round_no = 0; round_no < 30; ++round_no) ok += round_ok();
    printf("%s: every write read back in %d of 30 rounds\n", names[kind], ok);
  }
  return 0;
}
