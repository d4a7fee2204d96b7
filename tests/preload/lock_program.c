/* lock_program.c - run plainly and under uepoll-run (run.sh): flock and
 * fcntl record locks on pipes, socket pairs and eventfds (uepoll objects
 * under the preload) answer as Linux's, by name and by syscall(): a pipe's
 * two ends conflict, every eventfd and epoll instance shares one inode, a
 * socket's is its own; a blocked flock ends when the holder unlocks, and a
 * close of any descriptor of a pipe drops the process's record locks. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

static void show(const char *what, long r) { printf("%s = %ld %s\n", what, r, r < 0 ? strerrorname_np(errno) : ""); }

static int g_rd;
static void *unlock_later(void *arg) {
  (void)arg;
  usleep(30000);
  flock(g_rd, LOCK_UN);
  return NULL;
}

static void holder(int fd, const char *what) {
  struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
  show(what, fcntl(fd, F_OFD_GETLK, &fl));
  printf("  holder %s%s\n", fl.l_type == F_UNLCK ? "none" : fl.l_type == F_RDLCK ? "read" : "write",
         fl.l_type != F_UNLCK && fl.l_pid == getpid() ? " (this process)" : "");
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  int p[2], s[2];
  if (pipe(p) < 0 || socketpair(AF_UNIX, SOCK_STREAM, 0, s) < 0) return 1;
  const int e1 = eventfd(0, 0), e2 = eventfd(0, 0), ep = epoll_create1(0);
  struct epoll_event ev = {.events = EPOLLIN};
  epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev);
  show("flock(pipe read end, LOCK_EX)", flock(p[0], LOCK_EX));
  errno = 0;
  show("flock(pipe write end, LOCK_SH|LOCK_NB)", flock(p[1], LOCK_SH | LOCK_NB));
  show("syscall flock(pipe write end, LOCK_EX|LOCK_NB)", syscall(SYS_flock, p[1], LOCK_EX | LOCK_NB));
  g_rd = p[0];
  pthread_t t;
  pthread_create(&t, NULL, unlock_later, NULL);
  show("flock(pipe write end, LOCK_EX) blocking", flock(p[1], LOCK_EX));
  pthread_join(t, NULL);
  show("flock(pipe write end, LOCK_UN)", flock(p[1], LOCK_UN));
  show("flock(socket 0, LOCK_EX)", flock(s[0], LOCK_EX));
  show("flock(socket 1, LOCK_EX|LOCK_NB)", flock(s[1], LOCK_EX | LOCK_NB));
  show("flock(eventfd 1, LOCK_EX)", flock(e1, LOCK_EX));
  show("flock(eventfd 2, LOCK_SH|LOCK_NB)", flock(e2, LOCK_SH | LOCK_NB));
  show("flock(epoll, LOCK_SH|LOCK_NB)", flock(ep, LOCK_SH | LOCK_NB));
  show("flock(eventfd 1, LOCK_UN)", flock(e1, LOCK_UN));
  show("flock(pipe, 0)", flock(p[0], 0));
  struct flock rl = {.l_type = F_RDLCK, .l_whence = SEEK_SET};
  show("fcntl(pipe read end, F_SETLK, F_RDLCK)", fcntl(p[0], F_SETLK, &rl));
  holder(p[1], "fcntl(pipe write end, F_OFD_GETLK)");
  close(dup(p[1]));
  holder(p[1], "after a close of a dup: fcntl(pipe write end, F_OFD_GETLK)");
  rl.l_type = F_WRLCK;
  show("fcntl(pipe read end, F_OFD_SETLK, F_WRLCK)", fcntl(p[0], F_OFD_SETLK, &rl));
  int w = 0;
  show("epoll_wait", epoll_wait(ep, &ev, 1, 0));
  show("write", write(p[1], &w, 1));
  show("epoll_wait", epoll_wait(ep, &ev, 1, 0));
  return 0;
}
