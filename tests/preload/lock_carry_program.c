/* lock_carry_program.c - run plainly and under uepoll-run (run.sh): flock,
 * OFD and POSIX record locks on a pipe, a socket pair and an eventfd, kept
 * when the object becomes a kernel one (before fork() for the pipe and the
 * pair, at posix_spawn() for an inheritable eventfd: src/preload/
 * lock_carry.c).  A forked child shares the open file descriptions, so
 * their flock and OFD locks, and sees the parent's POSIX locks as
 * conflicts; a new description of the same pipe (opened through
 * /proc/self/fd) conflicts with them in both processes; a close of a
 * descriptor of the pipe drops the parent's POSIX locks, as on Linux; 200
 * locks on one pipe are all kept. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static const char *type_name(int t) { return t == F_RDLCK ? "F_RDLCK" : t == F_WRLCK ? "F_WRLCK" : "F_UNLCK"; }

static void show_rc(const char *what, int r) {
  if (r < 0)
    printf("%s: -1 %s\n", what, strerror(errno));
  else
    printf("%s: %d\n", what, r);
}

static int set_lock(int fd, int cmd, int type, off_t start, off_t len) {
  struct flock l = {.l_type = (short)type, .l_whence = SEEK_SET, .l_start = start, .l_len = len};
  return fcntl(fd, cmd, &l);
}

/* Who would block a lock of `type` over [start, start+len) through fd:
 * the type found, and whether its holder is `owner` (-1: an OFD lock). */
static void show_getlk(const char *what, int fd, int cmd, int type, off_t start, off_t len, pid_t owner) {
  struct flock l = {.l_type = (short)type, .l_whence = SEEK_SET, .l_start = start, .l_len = len};
  if (fcntl(fd, cmd, &l) < 0) {
    printf("%s: -1 %s\n", what, strerror(errno));
    return;
  }
  printf("%s: %s", what, type_name(l.l_type));
  if (l.l_type != F_UNLCK)
    printf(" [%lld, +%lld) held by %s", (long long)l.l_start, (long long)l.l_len,
           l.l_pid == owner ? "the expected owner" : "another");
  printf("\n");
}

static int reopen(int fd, int flags) {
  char path[64];
  snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  return open(path, flags);
}

static void child_of_pipe(int p[2], pid_t parent) {
  show_rc("child: flock(read end, LOCK_EX|LOCK_NB), the shared description", flock(p[0], LOCK_EX | LOCK_NB));
  const int q = reopen(p[0], O_RDONLY | O_NONBLOCK);
  show_rc("child: flock(read end reopened, LOCK_SH|LOCK_NB)", flock(q, LOCK_SH | LOCK_NB));
  show_getlk("child: F_GETLK write [0,10) on the write end", p[1], F_GETLK, F_WRLCK, 0, 10, parent);
  show_getlk("child: F_GETLK write [12,+4) on the read end", p[0], F_GETLK, F_WRLCK, 12, 4, parent);
  show_getlk("child: F_OFD_GETLK write [20,30) on the reopened end", q, F_OFD_GETLK, F_WRLCK, 20, 10, -1);
  show_getlk("child: F_OFD_GETLK write [20,30) on the read end", p[0], F_OFD_GETLK, F_WRLCK, 20, 10, -1);
  show_rc("child: F_SETLK read [0,10) on the read end", set_lock(p[0], F_SETLK, F_RDLCK, 0, 10));
}

static void pipe_locks(void) {
  printf("-- pipe\n");
  int p[2];
  if (pipe(p) < 0) exit(1);
  const int ep = epoll_create1(0);
  struct epoll_event ev = {.events = EPOLLIN, .data.u32 = 7}, got;
  epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev);
  printf("write: %zd\n", write(p[1], "x", 1));
  printf("epoll_wait: %d\n", epoll_wait(ep, &got, 1, 1000));
  show_rc("flock(read end, LOCK_EX)", flock(p[0], LOCK_EX));
  show_rc("F_SETLK write [0,10) on the write end", set_lock(p[1], F_SETLK, F_WRLCK, 0, 10));
  show_rc("F_SETLK read [12,EOF) on the read end", set_lock(p[0], F_SETLK, F_RDLCK, 12, 0));
  show_rc("F_OFD_SETLK read [20,30) on the read end", set_lock(p[0], F_OFD_SETLK, F_RDLCK, 20, 10));
  fflush(stdout);
  const pid_t parent = getpid(), pid = fork();
  if (pid == 0) {
    child_of_pipe(p, parent);
    fflush(stdout);
    _exit(0);
  }
  waitpid(pid, NULL, 0);
  const int r = reopen(p[0], O_RDONLY | O_NONBLOCK);
  show_rc("flock(read end reopened, LOCK_EX|LOCK_NB)", flock(r, LOCK_EX | LOCK_NB));
  show_getlk("F_OFD_GETLK write [20,30) on the reopened end", r, F_OFD_GETLK, F_WRLCK, 20, 10, -1);
  char b;
  printf("read: %zd\n", read(p[0], &b, 1));
  /* Any close of a descriptor of the pipe drops the process's POSIX locks. */
  close(r);
  fflush(stdout);
  const pid_t again = fork();
  if (again == 0) {
    show_getlk("second child: F_GETLK write [0,10) on the write end", p[1], F_GETLK, F_WRLCK, 0, 10, parent);
    show_getlk("second child: F_OFD_GETLK write [20,30)", p[1], F_OFD_GETLK, F_WRLCK, 20, 10, -1);
    show_rc("second child: flock(write end, LOCK_EX|LOCK_NB)", flock(p[1], LOCK_EX | LOCK_NB));
    fflush(stdout);
    _exit(0);
  }
  waitpid(again, NULL, 0);
  close(p[0]);
  close(p[1]);
  close(ep);
}

/* More locks than fit in a page of fdinfo text: 200 disjoint ones, all
 * seen by the child. */
static void many_locks(void) {
  printf("-- pipe, 200 POSIX locks\n");
  int p[2];
  if (pipe(p) < 0) exit(1);
  int set = 0;
  for (int i = 0; i < 200; ++i) set += set_lock(p[0], F_SETLK, F_RDLCK, 1000 + 2 * i, 1) == 0;
  printf("set: %d\n", set);
  fflush(stdout);
  const pid_t parent = getpid(), pid = fork();
  if (pid == 0) {
    int seen = 0;
    for (int i = 0; i < 200; ++i) {
      struct flock l = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 1000 + 2 * i, .l_len = 1};
      seen += fcntl(p[0], F_GETLK, &l) == 0 && l.l_type == F_RDLCK && l.l_pid == parent;
    }
    printf("child: the parent's locks it sees: %d\n", seen);
    fflush(stdout);
    _exit(0);
  }
  waitpid(pid, NULL, 0);
  close(p[0]);
  close(p[1]);
}

static void pair_locks(void) {
  printf("-- socket pair\n");
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0) exit(1);
  show_rc("flock(sv[0], LOCK_SH)", flock(sv[0], LOCK_SH));
  show_rc("flock(sv[1], LOCK_EX)", flock(sv[1], LOCK_EX));
  show_rc("F_SETLK write [5,+5) on sv[0]", set_lock(sv[0], F_SETLK, F_WRLCK, 5, 5));
  show_rc("F_OFD_SETLK write [0,+1) on sv[1]", set_lock(sv[1], F_OFD_SETLK, F_WRLCK, 0, 1));
  fflush(stdout);
  const pid_t parent = getpid(), pid = fork();
  if (pid == 0) {
    show_getlk("child: F_GETLK read [0,EOF) on sv[0]", sv[0], F_GETLK, F_RDLCK, 0, 0, parent);
    show_getlk("child: F_GETLK write [0,EOF) on sv[1]", sv[1], F_GETLK, F_WRLCK, 0, 0, parent);
    show_rc("child: flock(sv[1], LOCK_EX|LOCK_NB), the shared description", flock(sv[1], LOCK_EX | LOCK_NB));
    show_rc("child: F_SETLK read [5,+1) on sv[0]", set_lock(sv[0], F_SETLK, F_RDLCK, 5, 1));
    fflush(stdout);
    _exit(0);
  }
  waitpid(pid, NULL, 0);
  close(sv[0]);
  close(sv[1]);
}

static void eventfd_locks(void) {
  printf("-- eventfd\n");
  const int e = eventfd(3, 0); /* inheritable: posix_spawn makes it a kernel one */
  show_rc("flock(eventfd, LOCK_EX)", flock(e, LOCK_EX));
  show_rc("F_OFD_SETLK write [100,+1) on the eventfd", set_lock(e, F_OFD_SETLK, F_WRLCK, 100, 1));
  pid_t pid;
  char *argv[] = {"true", NULL};
  printf("posix_spawn: %d\n", posix_spawn(&pid, "/bin/true", NULL, NULL, argv, environ));
  waitpid(pid, NULL, 0);
  uint64_t v = 0;
  const ssize_t n = read(e, &v, sizeof v);
  printf("read: %zd %llu\n", n, (unsigned long long)v);
  /* Every eventfd is one anonymous inode: another one conflicts. */
  const int other = eventfd(0, EFD_CLOEXEC);
  show_rc("flock(another eventfd, LOCK_SH|LOCK_NB)", flock(other, LOCK_SH | LOCK_NB));
  show_getlk("F_OFD_GETLK read [100,+1) on another eventfd", other, F_OFD_GETLK, F_RDLCK, 100, 1, -1);
  close(other);
  close(e);
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  pipe_locks();
  many_locks();
  pair_locks();
  eventfd_locks();
  return 0;
}
