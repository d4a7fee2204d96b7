/* libc_program.c - run plainly and under uepoll-run (run.sh): the same
 * output.  The calls on pipes, socket pairs, eventfds and epoll instances
 * that uepoll-run serves without uepoll implementing them: glibc functions
 * that reach the descriptor only inside libc (eventfd_read/eventfd_write,
 * dprintf, popen, the termios calls, sockatmark, lockf), system calls
 * answered as Linux answers for the object's type (signalfd, fstatfs,
 * fallocate, posix_fadvise, readahead, sync_file_range, syncfs, fchdir,
 * inotify_add_watch, the xattr calls, fcntl's record locks and seals), the
 * positioned vector calls, recvmmsg/sendmmsg, epoll_wait's error order on a
 * closed descriptor, and reopening through /proc/self/fd and /dev/fd. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <dirent.h>
#include <sys/epoll.h>
#include <sys/fanotify.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/uio.h>
#include <sys/xattr.h>
#include <termios.h>
#include <unistd.h>

static void say(const char *what, long r) {
  if (r < 0) printf("%s = -1 %s\n", what, strerrorname_np(errno));
  else printf("%s = %ld\n", what, r);
}
/* For the calls that return an error number. */
static void say_err(const char *what, int e) { printf("%s = %s\n", what, e ? strerrorname_np(e) : "0"); }

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  int p[2], s[2];
  if (pipe(p) < 0 || socketpair(AF_UNIX, SOCK_STREAM, 0, s) < 0) return 1;
  int e = eventfd(0, EFD_NONBLOCK), ep = epoll_create1(0);
  const char *names[] = {"pipe-r", "pipe-w", "socket", "eventfd", "epoll"};
  int fds[] = {p[0], p[1], s[0], e, ep};
  char what[128];

  /* stdio over a pipe dup2'd onto stdout and stdin (glibc's own writes
   * and reads of descriptors 1 and 0). */
  {
    int q[2], saved_out = dup(1), saved_in = dup(0);
    if (pipe(q) < 0 || dup2(q[1], 1) != 1) return 1;
    printf("through stdout %d\n", 7);
    fflush(stdout);
    dup2(saved_out, 1);
    if (dup2(q[0], 0) != 0) return 1;
    char line[64] = {0};
    char *got = fgets(line, sizeof line, stdin);
    dup2(saved_in, 0);
    clearerr(stdin);
    printf("stdin read back: %s", got ? line : "(nothing)\n");
    close(q[0]);
    close(q[1]);
    close(saved_out);
    close(saved_in);
  }

  /* glibc's eventfd wrappers. */
  say("eventfd_write(5)", eventfd_write(e, 5));
  say("eventfd_write(2)", eventfd_write(e, 2));
  eventfd_t v = 0;
  say("eventfd_read", eventfd_read(e, &v));
  printf("value %llu\n", (unsigned long long)v);
  say("eventfd_read (empty)", eventfd_read(e, &v));
  say("eventfd_write(pipe-r)", eventfd_write(p[0], 1));

  /* dprintf into a pipe, read back; popen's own pipe. */
  say("dprintf", dprintf(p[1], "n=%d %s\n", 42, "x"));
  char buf[64] = {0};
  say("read", read(p[0], buf, sizeof buf - 1));
  printf("got '%s'", buf);
  FILE *f = popen("echo from-popen", "r");
  if (f && fgets(buf, sizeof buf, f)) printf("popen: %s", buf);
  say("pclose", f ? pclose(f) : -1);
  say("dprintf(pipe-r)", dprintf(p[0], "x"));

  /* Epoll's error order on a closed number (Linux >= 6.15: EBADF first). */
  int gone = eventfd(0, 0);
  close(gone);
  struct epoll_event evs[2];
  volatile int bad_max[] = {-1, INT_MAX / 12 + 1}; /* (hidden from the compiler's size checks) */
  say("epoll_wait(closed, -1)", epoll_wait(gone, evs, bad_max[0], 0));
  say("epoll_wait(closed, INT_MAX/12+1)", epoll_wait(gone, evs, bad_max[1], 0));
  say("epoll_wait(pipe-r, -1)", epoll_wait(p[0], evs, bad_max[0], 0));
  struct epoll_event ev = {.events = EPOLLIN, .data.u32 = 9};
  say("epoll_ctl", epoll_ctl(ep, EPOLL_CTL_ADD, e, &ev));
  eventfd_write(e, 1);
  say("epoll_wait", epoll_wait(ep, evs, 2, 1000));

  /* One call per object type. */
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGUSR1);
  for (unsigned i = 0; i < sizeof fds / sizeof *fds; ++i) {
    int fd = fds[i];
    const char *n = names[i];
    char xl0[256];
#define SAY(fmt, call)                    \
  do {                                    \
    snprintf(what, sizeof what, fmt, n);  \
    say(what, call);                      \
  } while (0)
    SAY("signalfd(%s)", signalfd(fd, &mask, 0));
    SAY("signalfd(%s, bad flags)", signalfd(fd, &mask, 1 << 30));
    struct statfs sf;
    memset(&sf, 0, sizeof sf);
    SAY("fstatfs(%s)", fstatfs(fd, &sf));
    printf("  f_type %#lx f_bsize %ld\n", (unsigned long)sf.f_type, (long)sf.f_bsize);
    SAY("fallocate(%s)", fallocate(fd, 0, 0, 4096));
    SAY("fallocate(%s, len 0)", fallocate(fd, 0, 0, 0));
    snprintf(what, sizeof what, "posix_fadvise(%s)", n);
    say_err(what, posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL));
    snprintf(what, sizeof what, "posix_fallocate(%s)", n);
    say_err(what, posix_fallocate(fd, 0, 10));
    SAY("readahead(%s)", readahead(fd, 0, 4096));
    SAY("sync_file_range(%s)", sync_file_range(fd, 0, 0, 0));
    SAY("syncfs(%s)", syncfs(fd));
    SAY("fchdir(%s)", fchdir(fd));
    SAY("getdents64(%s)", getdents64(fd, xl0, sizeof xl0));
    SAY("fanotify_mark(%s)", fanotify_mark(fd, FAN_MARK_ADD, FAN_OPEN, AT_FDCWD, "/"));
    SAY("inotify_add_watch(%s)", inotify_add_watch(fd, "/", IN_ALL_EVENTS));
    SAY("inotify_rm_watch(%s)", inotify_rm_watch(fd, 1));
    char xl[256];
    SAY("fgetxattr(%s)", fgetxattr(fd, "user.x", xl, sizeof xl));
    SAY("fsetxattr(%s)", fsetxattr(fd, "user.x", "1", 1, 0));
    SAY("flistxattr(%s)", flistxattr(fd, xl, sizeof xl));
    struct statvfs vf;
    SAY("fstatvfs(%s)", fstatvfs(fd, &vf));
    SAY("fpathconf(%s, _PC_PIPE_BUF)", fpathconf(fd, _PC_PIPE_BUF));
    SAY("fpathconf(%s, _PC_NAME_MAX)", fpathconf(fd, _PC_NAME_MAX));
    SAY("fchmod(%s)", fchmod(fd, 0600));
    SAY("fchown(%s)", fchown(fd, (uid_t)-1, (gid_t)-1));
    SAY("futimens(%s)", futimens(fd, NULL));
    SAY("fchmodat(%s, \"\", AT_EMPTY_PATH)", fchmodat(fd, "", 0600, AT_EMPTY_PATH));
    SAY("fchownat(%s, \"\", AT_EMPTY_PATH)", fchownat(fd, "", (uid_t)-1, (gid_t)-1, AT_EMPTY_PATH));
    SAY("fchmodat(%s, \"x\")", fchmodat(fd, "x", 0600, 0));
    SAY("linkat(%s, \"\", AT_EMPTY_PATH)", linkat(fd, "", AT_FDCWD, "/nonexistent-dir/x", AT_EMPTY_PATH));
    struct {
      struct file_handle h;
      unsigned char space[128];
    } fh = {.h.handle_bytes = 128};
    int mount_id;
    SAY("name_to_handle_at(%s, \"\", AT_EMPTY_PATH)", name_to_handle_at(fd, "", &fh.h, &mount_id, AT_EMPTY_PATH));
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
    SAY("fcntl(%s, F_SETLK wr)", fcntl(fd, F_SETLK, &fl));
    fl.l_type = F_RDLCK;
    SAY("fcntl(%s, F_SETLK rd)", fcntl(fd, F_SETLK, &fl));
    SAY("fcntl(%s, F_GETLK)", fcntl(fd, F_GETLK, &fl));
    printf("  l_type %d\n", fl.l_type);
    SAY("fcntl(%s, F_NOTIFY)", fcntl(fd, F_NOTIFY, DN_CREATE));
    SAY("fcntl(%s, F_GETLEASE)", fcntl(fd, F_GETLEASE));
    SAY("fcntl(%s, F_GET_SEALS)", fcntl(fd, F_GET_SEALS));
    SAY("lockf(%s, F_TLOCK)", lockf(fd, F_TLOCK, 0));
    SAY("lockf(%s, F_TEST)", lockf(fd, F_TEST, 0));
    SAY("lockf(%s, F_ULOCK)", lockf(fd, F_ULOCK, 0));
    struct termios t;
    SAY("tcgetattr(%s)", tcgetattr(fd, &t));
    errno = 0;
    SAY("isatty(%s)", isatty(fd) ? 1 : -1);
    SAY("tcsetattr(%s, bad)", tcsetattr(fd, 99, &t));
    SAY("tcflush(%s)", tcflush(fd, TCIFLUSH));
    SAY("tcgetpgrp(%s)", tcgetpgrp(fd));
    snprintf(what, sizeof what, "ttyname_r(%s)", n);
    say_err(what, ttyname_r(fd, xl, sizeof xl));
    SAY("sockatmark(%s)", sockatmark(fd));
    struct iovec io = {buf, 4};
    SAY("preadv(%s, 0)", preadv(fd, &io, 1, 0));
    SAY("preadv(%s, -1)", preadv(fd, &io, 1, -1));
    SAY("pwritev(%s, 0)", pwritev(fd, &io, 1, 0));
    SAY("preadv2(%s, -2)", preadv2(fd, &io, 1, -2, 0));
    SAY("preadv2(%s, -1, bad flags)", preadv2(fd, &io, 1, -1, 0x4000));
#undef SAY
  }

  /* preadv2/pwritev2 at offset -1 on a pipe: readv/writev. */
  struct iovec w[2] = {{"ab", 2}, {"cd", 2}};
  say("pwritev2(pipe-w, -1)", pwritev2(p[1], w, 2, -1, 0));
  char r1[3] = {0}, r2[3] = {0};
  struct iovec rd[2] = {{r1, 1}, {r2, 2}};
  say("preadv2(pipe-r, -1)", preadv2(p[0], rd, 2, -1, 0));
  printf("got '%s' '%s'\n", r1, r2);
  say("preadv2(pipe-r, -1, RWF_NOWAIT, empty)", preadv2(p[0], rd, 2, -1, RWF_NOWAIT));
  say("pwritev2(pipe-w, -1, RWF_NOWAIT)", pwritev2(p[1], w, 1, -1, RWF_NOWAIT));
  say("preadv2(pipe-r, -1, RWF_NOWAIT)", preadv2(p[0], rd, 1, -1, RWF_NOWAIT));

  /* sendmmsg/recvmmsg over the socket pair. */
  struct iovec sv[3] = {{"aa", 2}, {"bb", 2}, {"cc", 2}};
  struct mmsghdr sm[3];
  memset(sm, 0, sizeof sm);
  for (int i = 0; i < 3; ++i) {
    sm[i].msg_hdr.msg_iov = &sv[i];
    sm[i].msg_hdr.msg_iovlen = 1;
  }
  say("sendmmsg", sendmmsg(s[0], sm, 3, 0));
  printf("msg_len %u %u %u\n", sm[0].msg_len, sm[1].msg_len, sm[2].msg_len);
  char rb[4][3];
  memset(rb, 0, sizeof rb);
  struct iovec rv[4];
  struct mmsghdr rm[4];
  memset(rm, 0, sizeof rm);
  for (int i = 0; i < 4; ++i) {
    rv[i] = (struct iovec){rb[i], 2};
    rm[i].msg_hdr.msg_iov = &rv[i];
    rm[i].msg_hdr.msg_iovlen = 1;
  }
  say("recvmmsg(WAITFORONE)", recvmmsg(s[1], rm, 4, MSG_WAITFORONE, NULL));
  printf("got '%s' '%s' '%s' (%u %u %u)\n", rb[0], rb[1], rb[2], rm[0].msg_len, rm[1].msg_len, rm[2].msg_len);
  say("recvmmsg(DONTWAIT, empty)", recvmmsg(s[1], rm, 4, MSG_DONTWAIT, NULL));
  say("recvmmsg(pipe-r)", recvmmsg(p[0], rm, 1, MSG_DONTWAIT, NULL));
  say("sendmmsg(pipe-w)", sendmmsg(p[1], sm, 1, 0));

  /* Reopening through /proc/self/fd and /dev/fd: a pipe end reopens the
   * pipe (either direction); the other objects are ENXIO. */
  int q[2];
  if (pipe(q) < 0) return 1;
  char path[64];
  snprintf(path, sizeof path, "/proc/self/fd/%d", q[0]);
  int w2 = open(path, O_WRONLY); /* the read end's path, opened for writing */
  say("open(/proc/self/fd/pipe-r, O_WRONLY)", w2);
  say("write through it", write(w2, "hi", 2));
  snprintf(path, sizeof path, "/dev/fd/%d", q[0]);
  int rr = open(path, O_RDONLY | O_NONBLOCK);
  say("open(/dev/fd/pipe-r, O_RDONLY|O_NONBLOCK)", rr);
  memset(buf, 0, sizeof buf);
  say("read through it", read(rr, buf, sizeof buf));
  printf("got '%s', flags %#o / %#o\n", buf, fcntl(rr, F_GETFL) & ~O_LARGEFILE, fcntl(q[0], F_GETFL) & ~O_LARGEFILE);
  say("read(pipe-r, nonblocking reopen drained it)", (write(q[1], "z", 1), read(q[0], buf, 1)));
  snprintf(path, sizeof path, "/proc/%d/fd/%d", (int)getpid(), q[1]);
  FILE *pf = fopen(path, "w");
  printf("fopen(/proc/PID/fd/pipe-w) %s\n", pf ? "ok" : strerrorname_np(errno));
  if (pf) {
    fputs("via-fopen\n", pf);
    fclose(pf);
  }
  memset(buf, 0, sizeof buf);
  say("read", read(q[0], buf, sizeof buf - 1));
  printf("got '%s'", buf);
  int others[] = {s[0], e, ep};
  for (unsigned i = 0; i < 3; ++i) {
    snprintf(path, sizeof path, "/proc/self/fd/%d", others[i]);
    snprintf(what, sizeof what, "open(/proc/self/fd/%s)", i == 0 ? "socket" : i == 1 ? "eventfd" : "epoll");
    say(what, open(path, O_RDWR));
    snprintf(path, sizeof path, "/dev/fd/%d", others[i]);
    FILE *of = fopen(path, "r");
    printf("fopen(/dev/fd/...) %s\n", of ? "ok" : strerrorname_np(errno));
  }
  return 0;
}
