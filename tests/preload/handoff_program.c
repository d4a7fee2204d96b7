/*
 * handoff_program.c - eventfds and timerfds handed on: to a child by
 * posix_spawn (a file action's dup2, and inheritance of a descriptor
 * without close-on-exec), and eventfds to KVM's irqfd and ioeventfd ioctls;
 * last, an eventfd handed on while a thread is asleep reading it.  Run plainly and
 * under uepoll-run (tests/preload/run.sh): the same output, where the
 * preload makes those uepoll objects kernel ones first
 * (src/preload/eventfd_convert.c, timerfd_convert.c, fork_convert.c).  The ioctls go to /dev/null (ENOTTY, no
 * KVM needed); the descriptor's kind afterwards is what is compared.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/kvm.h>
#include <fcntl.h>
#include <pthread.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "show_kind.h"

extern char **environ;

/* The child: adds `value` to eventfd `fd`. */
static int child(int fd, uint64_t value) {
  ssize_t w = write(fd, &value, sizeof value);
  return w == (ssize_t)sizeof value ? 0 : 1;
}

/* The child of a timer: reads timerfd `fd` (blocking), exits with the count. */
static int timer_child(int fd) {
  uint64_t v = 0;
  return read(fd, &v, sizeof v) == (ssize_t)sizeof v ? (int)v : 100;
}

/* A timerfd the child reads as `fdarg`: armed for 20 ms, watched by ep
 * (level-triggered); the child takes the expiry, so ep has nothing after. */
/* Runs this program as `role fdarg` through posix_spawn and waits for it. */
static void spawn_role(const char *role, posix_spawn_file_actions_t *fa, const char *fdarg, const char *how) {
  char *argv[] = {"handoff_program", (char *)role, (char *)fdarg, NULL};
  pid_t pid;
  int r = posix_spawn(&pid, "/proc/self/exe", fa, NULL, argv, environ);
  int st = 0;
  if (r == 0) waitpid(pid, &st, 0);
  printf("%s: spawn %d child exit %d\n", how, r, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
}

static void spawn_timer(int ep, int tfd, posix_spawn_file_actions_t *fa, const char *fdarg, const char *how) {
  struct itimerspec its = {.it_value = {.tv_nsec = 20 * 1000 * 1000}};
  if (timerfd_settime(tfd, 0, &its, NULL) < 0) printf("%s: settime failed\n", how);
  spawn_role("timer", fa, fdarg, how);
  struct epoll_event ev;
  printf("%s: epoll_wait after the child's read %d\n", how, epoll_wait(ep, &ev, 1, 0));
}

static void spawn_and_wait(int ep, int efd, posix_spawn_file_actions_t *fa, const char *fdarg, const char *how) {
  spawn_role("child", fa, fdarg, how);
  int r;
  struct epoll_event ev;
  r = epoll_wait(ep, &ev, 1, 5000);
  printf("%s: epoll_wait %d data %llu\n", how, r, r > 0 ? (unsigned long long)ev.data.u64 : 0ULL);
  uint64_t v = 0;
  const ssize_t got = read(efd, &v, sizeof v);
  printf("%s: read %zd count %llu\n", how, got, (unsigned long long)v);
}

/* A thread asleep reading a blocking eventfd while the main thread hands
 * it to a spawned child that adds 5: the reader gets the child's 5 (under
 * uepoll-run it leaves the uepoll eventfd as that becomes a kernel one, and
 * reads the kernel one). */
static uint64_t asleep_count;
static ssize_t asleep_got;

static void *read_eventfd(void *arg) {
  asleep_got = read(*(int *)arg, &asleep_count, sizeof asleep_count);
  return NULL;
}

static void asleep_reader(void) {
  int efd = eventfd(0, EFD_CLOEXEC);
  pthread_t t;
  pthread_create(&t, NULL, read_eventfd, &efd);
  usleep(200 * 1000); /* the reader is asleep in read() by now */
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, efd, 9);
  spawn_role("child", &fa, "9", "asleep reader");
  posix_spawn_file_actions_destroy(&fa);
  pthread_join(t, NULL);
  printf("asleep reader: read %zd count %llu\n", asleep_got, (unsigned long long)asleep_count);
  close(efd);
}

int main(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "child") == 0) return child(atoi(argv[2]), 5);
  if (argc == 3 && strcmp(argv[1], "timer") == 0) return timer_child(atoi(argv[2]));
  setvbuf(stdout, NULL, _IONBF, 0);
  int ep = epoll_create1(EPOLL_CLOEXEC);
  int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK); /* close-on-exec: given by the file action */
  int inh = eventfd(2, EFD_NONBLOCK);               /* inherited, count 2 carried */
  struct epoll_event ev = {.events = EPOLLIN, .data.u64 = 1};
  epoll_ctl(ep, EPOLL_CTL_ADD, efd, &ev);
  ev.data.u64 = 2;
  epoll_ctl(ep, EPOLL_CTL_ADD, inh, &ev);
  uint64_t v;
  printf("efd %d inh %d read %zd\n", efd, inh, read(inh, &v, sizeof v)); /* empties the initial 2 */

  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  printf("adddup2 %d\n", posix_spawn_file_actions_adddup2(&fa, efd, 9));
  spawn_and_wait(ep, efd, &fa, "9", "file action");
  posix_spawn_file_actions_destroy(&fa);

  char num[16];
  snprintf(num, sizeof num, "%d", inh);
  spawn_and_wait(ep, inh, NULL, num, "inherited");

  /* Timerfds: one given by a file action, one inherited. */
  int tfa = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC), tinh = timerfd_create(CLOCK_MONOTONIC, 0);
  ev.data.u64 = 3;
  epoll_ctl(ep, EPOLL_CTL_ADD, tfa, &ev);
  ev.data.u64 = 4;
  epoll_ctl(ep, EPOLL_CTL_ADD, tinh, &ev);
  posix_spawn_file_actions_init(&fa);
  printf("adddup2 timer %d\n", posix_spawn_file_actions_adddup2(&fa, tfa, 9));
  spawn_timer(ep, tfa, &fa, "9", "timer file action");
  posix_spawn_file_actions_destroy(&fa);
  snprintf(num, sizeof num, "%d", tinh);
  spawn_timer(ep, tinh, NULL, num, "timer inherited");
  close(tfa);
  close(tinh); /* the shell below takes descriptor numbers below 10 only */

  /* system() and popen() spawn inside libc: their shell inherits a pipe. */
  int p[2];
  if (pipe(p) < 0) return 1;
  char cmd[64], buf[16] = "";
  snprintf(cmd, sizeof cmd, "echo system >&%d", p[1]);
  printf("system %d\n", system(cmd));
  ssize_t n = read(p[0], buf, sizeof buf - 1);
  printf("system: read %zd %.*s", n, n > 0 ? (int)n : 0, buf);
  close(p[0]);
  close(p[1]);
  if (pipe(p) < 0) return 1;
  printf("write %zd\n", write(p[1], "popen\n", 6));
  close(p[1]);
  snprintf(cmd, sizeof cmd, "cat <&%d", p[0]);
  FILE *f = popen(cmd, "r");
  printf("popen: %s", f && fgets(buf, sizeof buf, f) ? buf : "(nothing)\n");
  printf("pclose %d\n", f ? pclose(f) : -1);
  close(p[0]);

  int dn = open("/dev/null", O_RDWR | O_CLOEXEC);
  int irq = eventfd(0, EFD_CLOEXEC), res = eventfd(0, EFD_CLOEXEC), io = eventfd(0, EFD_CLOEXEC);
  struct kvm_irqfd q = {.fd = (uint32_t)irq, .flags = KVM_IRQFD_FLAG_RESAMPLE, .resamplefd = (uint32_t)res};
  int r = ioctl(dn, KVM_IRQFD, &q);
  printf("KVM_IRQFD %d %s\n", r, r < 0 ? strerror(errno) : "");
  struct kvm_ioeventfd qe = {.fd = io};
  r = ioctl(dn, KVM_IOEVENTFD, &qe);
  printf("KVM_IOEVENTFD %d %s\n", r, r < 0 ? strerror(errno) : "");
  show_kind("irqfd", irq);
  show_kind("resamplefd", res);
  show_kind("ioeventfd", io);
  asleep_reader();
  return 0;
}
