/*
 * dgram_program.c - AF_UNIX datagram and seqpacket socket pairs as a
 * program sees them: message boundaries, MSG_TRUNC, MSG_PEEK, zero-length
 * messages, FIONREAD, epoll readiness (level- and edge-triggered), a
 * blocking reader thread, shutdown and the peer's close, and messages
 * queued across fork (read by the child and by the parent); a datagram
 * pair end talking to named sockets (a path, an abstract name): connect,
 * the old peer's EPERM and ECONNRESET, readiness, a reply to the autobound
 * name, SCM_CREDENTIALS and SCM_RIGHTS (a kernel file, a pipe end) sent
 * with sendmsg and sendmmsg to a name, an SO_PASSCRED sender's one
 * autobound name (under uepoll-run the pair becomes a kernel one
 * first: src/preload/dgram_named.c).  An ordinary
 * program (no uepoll in it): run plainly it shows what Linux does; under
 * uepoll-run its pairs are uepoll objects, made kernel ones before the fork
 * (src/preload/fork_convert.c), and tests/preload/run.sh requires the same
 * output line for line.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *tname(int type) { return type == SOCK_DGRAM ? "dgram" : "seqpacket"; }

static void say(const char *what, long r) {
  if (r < 0)
    printf("%s = -1 %s\n", what, strerror(errno));
  else
    printf("%s = %ld\n", what, r);
}

/* One receive: its result, the bytes (first 8) and msg_flags. */
static void show_recv(const char *what, int fd, size_t len, int flags) {
  static char buf[300000];
  struct iovec io = {buf, len};
  struct msghdr m = {.msg_iov = &io, .msg_iovlen = 1};
  ssize_t r = recvmsg(fd, &m, flags);
  if (r < 0) {
    printf("%s = -1 %s\n", what, strerror(errno));
    return;
  }
  size_t shown = (size_t)r < len ? (size_t)r : len;
  printf("%s = %zd '%.*s' flags %#x\n", what, r, (int)(shown < 8 ? shown : 8), buf, m.msg_flags);
}

static void show_wait(const char *what, int ep) {
  struct epoll_event ev[4];
  int n = epoll_wait(ep, ev, 4, 0);
  printf("%s: epoll_wait %d", what, n);
  for (int i = 0; i < n; ++i) printf(" [%llu %#x]", (unsigned long long)ev[i].data.u64, ev[i].events);
  printf("\n");
}

static void messages(int type) {
  printf("-- %s messages\n", tname(type));
  int s[2];
  say("socketpair", socketpair(AF_UNIX, type | SOCK_NONBLOCK, 0, s));
  int ep = epoll_create1(0);
  struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT | EPOLLET, .data.u64 = 1};
  say("epoll_ctl a", epoll_ctl(ep, EPOLL_CTL_ADD, s[0], &ev));
  ev.data.u64 = 2;
  ev.events = EPOLLIN | EPOLLRDHUP;
  say("epoll_ctl b", epoll_ctl(ep, EPOLL_CTL_ADD, s[1], &ev));
  show_wait("fresh", ep);
  say("send hello", send(s[0], "hello", 5, 0));
  say("send empty", send(s[0], "", 0, 0));
  say("send world!", send(s[0], "world!", 6, MSG_EOR));
  show_wait("queued", ep);
  int n = -1;
  say("FIONREAD", ioctl(s[1], FIONREAD, &n));
  printf("  %d\n", n);
  show_recv("recv 3 PEEK", s[1], 3, MSG_PEEK);
  show_recv("recv 3 TRUNC", s[1], 3, MSG_TRUNC);
  show_recv("recv 8", s[1], 8, 0);
  show_recv("recv 8", s[1], 8, MSG_WAITALL);
  show_recv("recv 8 (empty)", s[1], 8, 0);
  show_wait("drained", ep);
  int t = 0;
  socklen_t tl = sizeof t;
  say("SO_TYPE", getsockopt(s[0], SOL_SOCKET, SO_TYPE, &t, &tl));
  printf("  %d\n", t);
  static char big[300000];
  say("send 212961", send(s[0], big, 212961, 0));
  say("send 212960", send(s[0], big, 212960, 0));
  say("send 1 (full)", send(s[0], big, 1, 0));
  show_recv("recv big", s[1], sizeof big, 0);
  show_wait("room again", ep);
  say("shutdown b WR", shutdown(s[1], SHUT_WR));
  show_wait("after shutdown", ep);
  say("send to b", send(s[0], "x", 1, 0));
  say("close b", close(s[1]));
  show_wait("after close", ep);
  say("send after close", send(s[0], "x", 1, MSG_NOSIGNAL));
  say("send again", send(s[0], "x", 1, MSG_NOSIGNAL));
  show_recv("recv after close", s[0], 8, 0);
  close(s[0]);
  close(ep);
}

struct reader {
  int fd;
  int got;
  long bytes;
};

static void *read_all(void *p) {
  struct reader *r = p;
  char b[70000];
  for (;;) {
    ssize_t n = recv(r->fd, b, sizeof b, 0);
    if (n < 0 || (n == 1 && b[0] == 'E')) break;
    r->got++;
    r->bytes += n;
  }
  return NULL;
}

static void blocking(int type) {
  printf("-- %s blocking\n", tname(type));
  int s[2];
  say("socketpair", socketpair(AF_UNIX, type, 0, s));
  struct reader r = {s[1], 0, 0};
  pthread_t th;
  pthread_create(&th, NULL, read_all, &r);
  static char m[65536];
  long sent = 0;
  for (int i = 0; i < 500; ++i) {
    ssize_t w = send(s[0], m, (size_t)(i * 131) % sizeof m, 0);
    if (w > 0) sent += w;
  }
  send(s[0], "E", 1, 0);
  pthread_join(th, NULL);
  printf("reader got %d messages, %ld bytes; sent %ld\n", r.got, r.bytes, sent);
  close(s[0]);
  close(s[1]);
}

static void across_fork(int type) {
  printf("-- %s across fork\n", tname(type));
  int s[2];
  say("socketpair", socketpair(AF_UNIX, type | SOCK_NONBLOCK, 0, s));
  int ep = epoll_create1(0);
  struct epoll_event ev = {.events = EPOLLIN, .data.u64 = 7};
  say("epoll_ctl", epoll_ctl(ep, EPOLL_CTL_ADD, s[1], &ev));
  static char big[100000];
  memset(big, 'B', sizeof big);
  say("send abc", send(s[0], "abc", 3, 0));
  say("send empty", send(s[0], "", 0, 0));
  say("send 100000", send(s[0], big, sizeof big, 0));
  say("send tail", send(s[0], "tail", 4, 0));
  say("send back", send(s[1], "back", 4, 0));
  say("shutdown a RD", shutdown(s[0], SHUT_RD));
  pid_t pid = fork();
  if (pid == 0) {
    show_recv("child recv", s[1], 2, 0);
    show_recv("child recv", s[1], 8, 0);
    _exit(0);
  }
  int st;
  waitpid(pid, &st, 0);
  show_wait("parent", ep);
  show_recv("parent recv", s[1], sizeof big, 0);
  show_recv("parent recv", s[1], 8, 0);
  show_recv("parent recv", s[1], 8, 0);
  show_recv("parent recv a", s[0], 8, 0);
  show_recv("parent recv a", s[0], 8, 0);
  say("send to a (shut RD)", send(s[1], "x", 1, 0));
  int t = 0;
  socklen_t tl = sizeof t;
  say("SO_TYPE", getsockopt(s[1], SOL_SOCKET, SO_TYPE, &t, &tl));
  printf("  %d\n", t);
  close(s[0]);
  close(s[1]);
  close(ep);
}

/* The peer closed with unread messages, then a fork: ECONNRESET once, the
 * messages, end of file (seqpacket); a datagram socket just reads them. */
static void reset_across_fork(int type) {
  printf("-- %s reset across fork\n", tname(type));
  int s[2];
  say("socketpair", socketpair(AF_UNIX, type | SOCK_NONBLOCK, 0, s));
  say("send m1", send(s[1], "m1", 2, 0));
  say("send m2", send(s[1], "m2", 2, 0));
  say("send unread", send(s[0], "u", 1, 0));
  say("close b", close(s[1]));
  pid_t pid = fork();
  if (pid == 0) _exit(0);
  int st;
  waitpid(pid, &st, 0);
  for (int i = 0; i < 4; ++i) show_recv("recv a", s[0], 8, 0);
  say("send a", send(s[0], "x", 1, MSG_NOSIGNAL));
  close(s[0]);
}

/* ---- a pair end and named sockets ---- */
/* Like say(), with errno's name. */
static void sayn(const char *what, long r) {
  if (r < 0)
    printf("%s = -1 %s\n", what, strerrorname_np(errno));
  else
    printf("%s = %ld\n", what, r);
}

/* What kind of name an address is (a pid-made name differs run to run). */
static const char *name_kind(const struct sockaddr_un *a, socklen_t len) {
  if (len <= offsetof(struct sockaddr_un, sun_path)) return "unnamed";
  return a->sun_path[0] ? "path" : "abstract";
}

static void show_recvfrom(const char *what, int fd, struct sockaddr_un *from, socklen_t *fl) {
  char buf[64];
  *fl = sizeof *from;
  ssize_t r = recvfrom(fd, buf, sizeof buf, 0, (struct sockaddr *)from, fl);
  if (r < 0) {
    printf("%s = -1 %s\n", what, strerrorname_np(errno));
    return;
  }
  printf("%s = %zd '%.*s' from %s\n", what, r, (int)r, buf, name_kind(from, *fl));
}

/* A named datagram socket at a path in dir, or at an abstract name. */
static int named_socket(struct sockaddr_un *a, socklen_t *len, const char *dir, const char *tag) {
  memset(a, 0, sizeof *a);
  a->sun_family = AF_UNIX;
  if (dir) {
    snprintf(a->sun_path, sizeof a->sun_path, "%s/%s", dir, tag);
    *len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(a->sun_path) + 1);
  } else {
    int n = snprintf(a->sun_path + 1, sizeof a->sun_path - 1, "uepoll-dgram-%d-%s", (int)getpid(), tag);
    *len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
  }
  int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK, 0);
  if (bind(fd, (struct sockaddr *)a, *len) < 0) printf("bind %s: %s\n", tag, strerrorname_np(errno));
  return fd;
}

/* s[0] connects to a named socket while s[1], its old peer, has unread
 * messages and s[0] has some from it. */
static void connect_named(const char *dir) {
  printf("-- dgram connect to a %s name\n", dir ? "path" : "abstract");
  struct sockaddr_un na, from;
  socklen_t nl, fl;
  int n = named_socket(&na, &nl, dir, "n");
  int s[2];
  say("socketpair", socketpair(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK, 0, s));
  int ep = epoll_create1(0);
  struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT, .data.u64 = 1};
  sayn("epoll_ctl a", epoll_ctl(ep, EPOLL_CTL_ADD, s[0], &ev));
  ev.data.u64 = 2;
  sayn("epoll_ctl b", epoll_ctl(ep, EPOLL_CTL_ADD, s[1], &ev));
  sayn("send b->a", send(s[1], "to-a", 4, 0));
  sayn("send a->b", send(s[0], "to-b", 4, 0));
  show_wait("before connect", ep);
  int on = 1;
  if (!dir) sayn("SO_PASSCRED a", setsockopt(s[0], SOL_SOCKET, SO_PASSCRED, &on, sizeof on));
  sayn("connect a to missing", connect(s[0], (struct sockaddr *)&(struct sockaddr_un){AF_UNIX, "/nonexistent/x"},
                                       sizeof(struct sockaddr_un)));
  sayn("connect a", connect(s[0], (struct sockaddr *)&na, nl));
  show_wait("after connect", ep);
  struct sockaddr_un pa;
  socklen_t pl = sizeof pa;
  sayn("getpeername a", getpeername(s[0], (struct sockaddr *)&pa, &pl));
  printf("  %s, same as bound: %d\n", name_kind(&pa, pl), pl == nl && memcmp(&pa, &na, nl) == 0);
  show_recv("recv a (old peer's)", s[0], 8, 0);
  sayn("send a", send(s[0], "hi", 2, 0));
  show_recvfrom("recvfrom named", n, &from, &fl);
  sayn("reply", sendto(n, "re", 2, 0, (struct sockaddr *)&from, fl));
  show_recv("recv a", s[0], 8, 0);
  int err = -1;
  socklen_t el = sizeof err;
  show_wait("old peer", ep);
  sayn("SO_ERROR b", getsockopt(s[1], SOL_SOCKET, SO_ERROR, &err, &el));
  printf("  %s\n", err ? strerrorname_np(err) : "0");
  sayn("send b (old peer)", send(s[1], "x", 1, 0));
  show_recv("recv b", s[1], 8, 0);
  show_recv("recv b", s[1], 8, 0);
  sayn("send b again", send(s[1], "x", 1, 0));
  sayn("sendto b -> named", sendto(s[1], "bn", 2, 0, (struct sockaddr *)&na, nl));
  show_recvfrom("recvfrom named", n, &from, &fl);
  show_wait("end", ep);
  close(s[0]);
  close(s[1]);
  close(n);
  close(ep);
  if (dir) unlink(na.sun_path);
}

/* The old peer had no unread messages: the connect leaves its error unset? */
static void connect_named_quiet(const char *dir) {
  printf("-- dgram connect with nothing queued\n");
  struct sockaddr_un na;
  socklen_t nl;
  int n = named_socket(&na, &nl, dir, "q");
  int s[2];
  say("socketpair", socketpair(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK, 0, s));
  sayn("connect a", connect(s[0], (struct sockaddr *)&na, nl));
  int err = -1;
  socklen_t el = sizeof err;
  sayn("SO_ERROR b", getsockopt(s[1], SOL_SOCKET, SO_ERROR, &err, &el));
  printf("  %s\n", err ? strerrorname_np(err) : "0");
  sayn("send b", send(s[1], "x", 1, 0));
  sayn("connect a AF_UNSPEC", connect(s[0], (struct sockaddr *)&(struct sockaddr){AF_UNSPEC, {0}}, sizeof(struct sockaddr)));
  sayn("send a", send(s[0], "x", 1, 0));
  sayn("send b", send(s[1], "x", 1, 0));
  close(s[0]);
  close(s[1]);
  close(n);
  unlink(na.sun_path);
}

/* sendmsg to a name with SCM_CREDENTIALS, then SCM_RIGHTS (a kernel file
 * and a pipe's read end); the named socket reads them. */
static void control_to_named(const char *dir) {
  printf("-- dgram control data to a name\n");
  struct sockaddr_un na;
  socklen_t nl;
  int n = named_socket(&na, &nl, dir, "c");
  int on = 1;
  sayn("SO_PASSCRED named", setsockopt(n, SOL_SOCKET, SO_PASSCRED, &on, sizeof on));
  int s[2];
  say("socketpair", socketpair(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK, 0, s));
  union {
    struct cmsghdr h;
    char b[CMSG_SPACE(sizeof(struct ucred)) + CMSG_SPACE(2 * sizeof(int))];
  } ctl;
  memset(&ctl, 0, sizeof ctl);
  struct iovec io = {"cred", 4};
  struct msghdr m = {.msg_name = &na, .msg_namelen = nl, .msg_iov = &io, .msg_iovlen = 1,
                     .msg_control = ctl.b, .msg_controllen = CMSG_SPACE(sizeof(struct ucred))};
  struct cmsghdr *c = CMSG_FIRSTHDR(&m);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_CREDENTIALS;
  c->cmsg_len = CMSG_LEN(sizeof(struct ucred));
  struct ucred me = {getpid(), getuid(), getgid()};
  memcpy(CMSG_DATA(c), &me, sizeof me);
  sayn("sendmsg creds", sendmsg(s[0], &m, 0));
  char path[200];
  snprintf(path, sizeof path, "%s/file", dir);
  int kf = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
  sayn("write file", write(kf, "file-bytes", 10));
  int p[2];
  sayn("pipe", pipe(p));
  sayn("write pipe", write(p[1], "pipe-bytes", 10));
  io = (struct iovec){"fds", 3};
  m.msg_controllen = CMSG_SPACE(2 * sizeof(int));
  c = CMSG_FIRSTHDR(&m);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(2 * sizeof(int));
  memcpy(CMSG_DATA(c), (int[2]){kf, p[0]}, 2 * sizeof(int));
  sayn("sendmsg rights", sendmsg(s[1], &m, 0));
  for (int i = 0; i < 2; ++i) {
    char buf[16];
    union {
      struct cmsghdr h;
      char b[256];
    } in;
    struct sockaddr_un from;
    struct iovec rio = {buf, sizeof buf};
    struct msghdr r = {.msg_name = &from, .msg_namelen = sizeof from, .msg_iov = &rio, .msg_iovlen = 1,
                       .msg_control = in.b, .msg_controllen = sizeof in.b};
    ssize_t got = recvmsg(n, &r, 0);
    if (got < 0) {
      printf("recvmsg named = -1 %s\n", strerrorname_np(errno));
      continue;
    }
    printf("recvmsg named = %zd '%.*s' from %s flags %#x\n", got, (int)got, buf, name_kind(&from, r.msg_namelen),
           r.msg_flags);
    for (struct cmsghdr *k = CMSG_FIRSTHDR(&r); k; k = CMSG_NXTHDR(&r, k)) {
      if (k->cmsg_type == SCM_CREDENTIALS) {
        struct ucred u;
        memcpy(&u, CMSG_DATA(k), sizeof u);
        printf("  creds: pid is mine %d, uid is mine %d, gid is mine %d\n", u.pid == getpid(), u.uid == getuid(),
               u.gid == getgid());
      } else if (k->cmsg_type == SCM_RIGHTS) {
        int nf = (int)((k->cmsg_len - CMSG_LEN(0)) / sizeof(int));
        for (int j = 0; j < nf; ++j) {
          int fd;
          memcpy(&fd, CMSG_DATA(k) + j * sizeof(int), sizeof fd);
          char rb[16] = {0};
          ssize_t rn = pread(fd, rb, sizeof rb - 1, 0);
          if (rn < 0 && errno == ESPIPE) rn = read(fd, rb, sizeof rb - 1);
          printf("  fd %d: read %zd '%s'\n", j, rn, rn > 0 ? rb : "");
          close(fd);
        }
      }
    }
  }
  close(kf);
  close(p[0]);
  close(p[1]);
  unlink(path);
  close(s[0]);
  close(s[1]);
  close(n);
  unlink(na.sun_path);
}

/* sendmmsg: a plain datagram to a name, then one carrying a pipe's read
 * end; the named socket reads both, the second through the pipe. */
static void mmsg_to_named(const char *dir) {
  printf("-- dgram sendmmsg with control data to a name\n");
  struct sockaddr_un na;
  socklen_t nl;
  int n = named_socket(&na, &nl, dir, "mm");
  int s[2], p[2];
  say("socketpair", socketpair(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK, 0, s));
  sayn("pipe", pipe(p));
  sayn("write pipe", write(p[1], "via-mmsg", 8));
  union {
    struct cmsghdr h;
    char b[CMSG_SPACE(sizeof(int))];
  } ctl;
  memset(&ctl, 0, sizeof ctl);
  struct iovec io[2] = {{"plain", 5}, {"fd", 2}};
  struct mmsghdr v[2] = {{.msg_hdr = {.msg_name = &na, .msg_namelen = nl, .msg_iov = &io[0], .msg_iovlen = 1}},
                         {.msg_hdr = {.msg_name = &na, .msg_namelen = nl, .msg_iov = &io[1], .msg_iovlen = 1,
                                      .msg_control = ctl.b, .msg_controllen = sizeof ctl.b}}};
  struct cmsghdr *c = CMSG_FIRSTHDR(&v[1].msg_hdr);
  *c = (struct cmsghdr){.cmsg_len = CMSG_LEN(sizeof(int)), .cmsg_level = SOL_SOCKET, .cmsg_type = SCM_RIGHTS};
  memcpy(CMSG_DATA(c), &p[0], sizeof(int));
  sayn("sendmmsg", sendmmsg(s[0], v, 2, 0));
  printf("  lengths %u %u\n", v[0].msg_len, v[1].msg_len);
  char buf[16], in[CMSG_SPACE(sizeof(int))];
  for (int i = 0; i < 2; ++i) {
    struct iovec rio = {buf, sizeof buf};
    struct msghdr r = {.msg_iov = &rio, .msg_iovlen = 1, .msg_control = in, .msg_controllen = sizeof in};
    ssize_t got = recvmsg(n, &r, 0);
    printf("recvmsg named = %zd '%.*s' controllen %zu\n", got, got > 0 ? (int)got : 0, buf, (size_t)r.msg_controllen);
    struct cmsghdr *k = got >= 0 ? CMSG_FIRSTHDR(&r) : NULL;
    if (k && k->cmsg_type == SCM_RIGHTS) {
      int fd;
      memcpy(&fd, CMSG_DATA(k), sizeof fd);
      char rb[16] = {0};
      printf("  read %zd '%s'\n", read(fd, rb, sizeof rb - 1), rb);
      close(fd);
    }
  }
  close(p[0]);
  close(p[1]);
  close(s[0]);
  close(s[1]);
  close(n);
  unlink(na.sun_path);
}

/* A pair end with SO_PASSCRED sends to a name twice: Linux autobinds it
 * once, so both datagrams come from the same abstract name, which
 * getsockname shows and a reply reaches. */
static void passcred_to_named(const char *dir) {
  printf("-- dgram SO_PASSCRED sender to a name\n");
  struct sockaddr_un na, f1, f2, me;
  socklen_t nl, l1, l2, ml = sizeof me;
  int n = named_socket(&na, &nl, dir, "pc");
  int s[2], on = 1;
  say("socketpair", socketpair(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK, 0, s));
  sayn("SO_PASSCRED a", setsockopt(s[0], SOL_SOCKET, SO_PASSCRED, &on, sizeof on));
  sayn("sendto 1", sendto(s[0], "one", 3, 0, (struct sockaddr *)&na, nl));
  sayn("sendto 2", sendto(s[0], "two", 3, 0, (struct sockaddr *)&na, nl));
  show_recvfrom("recvfrom named", n, &f1, &l1);
  show_recvfrom("recvfrom named", n, &f2, &l2);
  printf("  same sender: %d\n", l1 == l2 && memcmp(&f1, &f2, l1) == 0);
  sayn("getsockname a", getsockname(s[0], (struct sockaddr *)&me, &ml));
  printf("  %s, the sender's: %d\n", name_kind(&me, ml), ml == l1 && memcmp(&me, &f1, ml) == 0);
  sayn("reply", sendto(n, "re", 2, 0, (struct sockaddr *)&f1, l1));
  show_recv("recv a", s[0], 8, 0);
  sayn("send a->b", send(s[0], "ab", 2, 0));
  show_recv("recv b", s[1], 8, 0);
  close(s[0]);
  close(s[1]);
  close(n);
  unlink(na.sun_path);
}

static void named(void) {
  char dir[] = "/tmp/uepoll-dgram-XXXXXX";
  if (!mkdtemp(dir)) {
    perror("mkdtemp");
    exit(1);
  }
  connect_named(dir);
  connect_named(NULL);
  connect_named_quiet(dir);
  control_to_named(dir);
  mmsg_to_named(dir);
  passcred_to_named(dir);
  rmdir(dir);
}

/* A reader asleep in recv whose signal handler (SA_RESTART) runs until the
 * named calls are made: its call cannot leave the pair for a kernel one,
 * so the pair stays uepoll's (each conversion waits two seconds for it,
 * then gives up). */
static volatile sig_atomic_t named_done;
static void hold_until_done(int sig) {
  (void)sig;
  while (!named_done) nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
}

/* "named-blocked" (under uepoll-run only): a thread held asleep on the
 * pair (above) keeps it uepoll's, so connect() to a name and SCM_RIGHTS of
 * a uepoll pipe to a name get the library's EOPNOTSUPP, said on stderr;
 * credentials to a name still go (through a kernel socket).  A thread
 * asleep in recv that can leave would leave the pair for its kernel form
 * (fork_program.c "sleepers"). */
static int named_blocked(void) {
  char dir[] = "/tmp/uepoll-dgram-XXXXXX";
  if (!mkdtemp(dir)) return 1;
  struct sockaddr_un na;
  socklen_t nl;
  int n = named_socket(&na, &nl, dir, "b");
  int s[2];
  say("socketpair", socketpair(AF_UNIX, SOCK_DGRAM, 0, s));
  struct reader r = {s[1], 0, 0};
  pthread_t th;
  struct sigaction sa = {.sa_handler = hold_until_done, .sa_flags = SA_RESTART};
  sigaction(SIGUSR1, &sa, NULL);
  pthread_create(&th, NULL, read_all, &r);
  usleep(100000);
  pthread_kill(th, SIGUSR1);
  usleep(100000);
  sayn("connect a", connect(s[0], (struct sockaddr *)&na, nl));
  union {
    struct cmsghdr h;
    char b[CMSG_SPACE(sizeof(struct ucred))];
  } ctl;
  memset(&ctl, 0, sizeof ctl);
  struct iovec io = {"m", 1};
  struct msghdr m = {.msg_name = &na, .msg_namelen = nl, .msg_iov = &io, .msg_iovlen = 1, .msg_control = ctl.b,
                     .msg_controllen = CMSG_SPACE(sizeof(int))};
  struct cmsghdr *c = CMSG_FIRSTHDR(&m);
  int p[2];
  sayn("pipe", pipe(p));
  *c = (struct cmsghdr){.cmsg_len = CMSG_LEN(sizeof(int)), .cmsg_level = SOL_SOCKET, .cmsg_type = SCM_RIGHTS};
  memcpy(CMSG_DATA(c), &p[0], sizeof(int));
  sayn("sendmsg rights", sendmsg(s[0], &m, 0));
  m.msg_controllen = CMSG_SPACE(sizeof(struct ucred));
  *c = (struct cmsghdr){.cmsg_len = CMSG_LEN(sizeof(struct ucred)), .cmsg_level = SOL_SOCKET,
                        .cmsg_type = SCM_CREDENTIALS};
  memcpy(CMSG_DATA(c), &(struct ucred){getpid(), getuid(), getgid()}, sizeof(struct ucred));
  sayn("sendmsg creds", sendmsg(s[0], &m, 0));
  struct sockaddr_un from;
  socklen_t fl;
  show_recvfrom("recvfrom named", n, &from, &fl);
  named_done = 1;
  send(s[0], "E", 1, 0);
  pthread_join(th, NULL);
  printf("reader got %d\n", r.got);
  unlink(na.sun_path);
  rmdir(dir);
  return 0;
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IONBF, 0);
  signal(SIGPIPE, SIG_IGN);
  if (argc > 1 && strcmp(argv[1], "named-blocked") == 0) return named_blocked();
  for (int type = SOCK_DGRAM; type <= SOCK_SEQPACKET; type += SOCK_SEQPACKET - SOCK_DGRAM) {
    messages(type);
    blocking(type);
    across_fork(type);
    reset_across_fork(type);
  }
  named();
  return 0;
}
