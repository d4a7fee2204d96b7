/*
 * lwip_fake_host_test.c - the lwIP provider alone, hosted by a fake file
 * layer: this program defines uep_file_create / notify / set_mask /
 * set_error / put itself (recording each file's pushed mask and posted
 * error), so that the provider's socket operations and the readiness it
 * pushes are checked without uepoll.  Over the provider's own loopback
 * netif: listen, connect, accept, data both ways, FIONREAD, peek, options,
 * names, shutdown and EOF, a refused connect (ECONNREFUSED posted),
 * UDP datagrams, and release.  Each wait for a mask is bounded (2 s).
 *
 * Locks: host_mu guards the fake files (the provider calls in from lwIP's
 * thread).
 */
#define _GNU_SOURCE
#include <uepoll/file.h>
#include <uepoll/provider.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <time.h>

struct uep_file {
  const struct uep_file_operations *ops;
  void *ctx;
  uint32_t mask;
  int err, refs, used;
};

static pthread_mutex_t host_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t host_cv = PTHREAD_COND_INITIALIZER;
static struct uep_file files[64];
enum { kBase = 1000 };

int uep_file_create(const struct uep_file_operations *ops, void *ctx, int flags, uint32_t mask,
                    struct uep_file **h) {
  (void)flags;
  pthread_mutex_lock(&host_mu);
  for (int i = 0; i < 64; ++i)
    if (!files[i].used) {
      files[i] = (struct uep_file){ops, ctx, mask, 0, 1, 1};
      *h = &files[i];
      pthread_mutex_unlock(&host_mu);
      return kBase + i;
    }
  pthread_mutex_unlock(&host_mu);
  errno = EMFILE;
  return -1;
}
void uep_file_notify(struct uep_file *h, uint32_t key) {
  pthread_mutex_lock(&host_mu);
  h->mask |= key;
  pthread_cond_broadcast(&host_cv);
  pthread_mutex_unlock(&host_mu);
}
void uep_file_set_mask(struct uep_file *h, uint32_t mask) {
  pthread_mutex_lock(&host_mu);
  h->mask = mask;
  pthread_cond_broadcast(&host_cv);
  pthread_mutex_unlock(&host_mu);
}
void uep_file_notify_mask(struct uep_file *h, uint32_t mask, uint32_t key) {
  (void)key;
  uep_file_set_mask(h, mask);
}
void uep_file_set_error(struct uep_file *h, int err) {
  pthread_mutex_lock(&host_mu);
  h->err = err;
  pthread_cond_broadcast(&host_cv);
  pthread_mutex_unlock(&host_mu);
}
void uep_file_put(struct uep_file *h) {
  pthread_mutex_lock(&host_mu);
  if (--h->refs == 0) h->used = 0;
  pthread_mutex_unlock(&host_mu);
}

const struct uep_provider *uep_provider_init(const char *config); /* the provider library's */

static int failures;
#define CHECK(c)                                                    \
  do {                                                              \
    if (!(c)) {                                                     \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #c); \
      ++failures;                                                   \
    }                                                               \
  } while (0)

static struct uep_file *F(int fd) { return &files[fd - kBase]; }
static const struct uep_file_call plain = {0, 0};

/* fd's mask now (the stack's thread sets it under host_mu). */
static uint32_t mask_of(int fd) {
  pthread_mutex_lock(&host_mu);
  const uint32_t m = F(fd)->mask;
  pthread_mutex_unlock(&host_mu);
  return m;
}

/* Waits (2 s at most) until fd's mask has all of `bits`; returns the mask. */
static uint32_t wait_mask(int fd, uint32_t bits) {
  struct timespec dl;
  clock_gettime(CLOCK_REALTIME, &dl);
  dl.tv_sec += 2;
  pthread_mutex_lock(&host_mu);
  while ((F(fd)->mask & bits) != bits)
    if (pthread_cond_timedwait(&host_cv, &host_mu, &dl)) break;
  uint32_t m = F(fd)->mask;
  pthread_mutex_unlock(&host_mu);
  return m;
}
static int wait_err(int fd) {
  struct timespec dl;
  clock_gettime(CLOCK_REALTIME, &dl);
  dl.tv_sec += 2;
  pthread_mutex_lock(&host_mu);
  while (!F(fd)->err)
    if (pthread_cond_timedwait(&host_cv, &host_mu, &dl)) break;
  int e = F(fd)->err;
  pthread_mutex_unlock(&host_mu);
  return e;
}

static ssize_t xsend(int fd, const char *s, int flags) {
  struct iovec v = {(void *)s, strlen(s)};
  struct msghdr m = {.msg_iov = &v, .msg_iovlen = 1};
  struct uep_file_call c = {0, flags};
  return F(fd)->ops->sendmsg(F(fd)->ctx, &m, &c);
}
static ssize_t xrecv(int fd, char *buf, size_t n, int flags) {
  struct iovec v = {buf, n};
  struct msghdr m = {.msg_iov = &v, .msg_iovlen = 1};
  struct uep_file_call c = {0, flags};
  return F(fd)->ops->recvmsg(F(fd)->ctx, &m, &c);
}
static void xclose(int fd) {
  F(fd)->ops->release(F(fd)->ctx);
}

/* UDP: datagrams with their sender, PEEK, TRUNC, FIONREAD, connect. */
static void udp_checks(const struct uep_provider *p) {
  int a = -1, b = -1;
  CHECK(p->socket(AF_INET, SOCK_DGRAM, 0, &a) == 0);
  CHECK(p->socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0, &b) == 0);
  if (a < kBase || b < kBase) return;
  const struct uep_file_operations *u = F(a)->ops;
  CHECK(u->sock_type == SOCK_DGRAM && mask_of(a) == (EPOLLOUT | EPOLLWRNORM | EPOLLWRBAND));
  struct sockaddr_in sa = {.sin_family = AF_INET}, sb = {.sin_family = AF_INET};
  sa.sin_addr.s_addr = sb.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  CHECK(u->bind(F(a)->ctx, (struct sockaddr *)&sa, sizeof sa) == 0);
  CHECK(u->bind(F(b)->ctx, (struct sockaddr *)&sb, sizeof sb) == 0);
  socklen_t l = sizeof sa;
  CHECK(u->getsockname(F(a)->ctx, (struct sockaddr *)&sa, &l) == 0 && sa.sin_port);
  l = sizeof sb;
  CHECK(u->getsockname(F(b)->ctx, (struct sockaddr *)&sb, &l) == 0 && sb.sin_port);
  char msg[] = "datagram", buf[64];
  struct iovec v = {msg, 8};
  struct msghdr m = {.msg_iov = &v, .msg_iovlen = 1};
  CHECK(u->sendmsg(F(b)->ctx, &m, &plain) == -EDESTADDRREQ);
  m.msg_name = &sa;
  m.msg_namelen = sizeof sa;
  CHECK(u->sendmsg(F(b)->ctx, &m, &plain) == 8);
  CHECK(u->sendmsg(F(b)->ctx, &m, &plain) == 8);
  CHECK(wait_mask(a, EPOLLIN) & EPOLLIN);
  int n = -1;
  CHECK(u->ioctl(F(a)->ctx, FIONREAD, &n, &plain) == 0 && n == 8);
  CHECK(mask_of(a) & EPOLLIN);
  struct sockaddr_in from;
  struct iovec rv = {buf, 4};
  struct msghdr rm = {.msg_name = &from, .msg_namelen = sizeof from, .msg_iov = &rv, .msg_iovlen = 1};
  struct uep_file_call peek = {0, MSG_PEEK}, trunc = {0, MSG_TRUNC};
  CHECK(u->recvmsg(F(a)->ctx, &rm, &peek) == 4 && (rm.msg_flags & MSG_TRUNC) && memcmp(buf, "data", 4) == 0);
  CHECK(rm.msg_namelen == sizeof from && from.sin_port == sb.sin_port);
  CHECK(u->recvmsg(F(a)->ctx, &rm, &trunc) == 8); /* the whole length, 4 copied */
  rv.iov_len = sizeof buf;
  /* lwIP's loopback hands each datagram to its thread later: the second
   * may arrive after the first was taken. */
  CHECK(wait_mask(a, EPOLLIN) & EPOLLIN);
  CHECK(u->recvmsg(F(a)->ctx, &rm, &plain) == 8 && rm.msg_flags == 0 && memcmp(buf, "datagram", 8) == 0);
  CHECK((mask_of(a) & EPOLLIN) == 0);
  CHECK(u->recvmsg(F(a)->ctx, &rm, &plain) == -EAGAIN);
  CHECK(u->connect(F(a)->ctx, (struct sockaddr *)&sb, sizeof sb, &plain) == 0);
  struct msghdr cm = {.msg_iov = &v, .msg_iovlen = 1};
  CHECK(u->sendmsg(F(a)->ctx, &cm, &plain) == 8);
  CHECK(wait_mask(b, EPOLLIN) & EPOLLIN);
  struct sockaddr_in peer;
  l = sizeof peer;
  CHECK(u->getpeername(F(a)->ctx, (struct sockaddr *)&peer, &l) == 0 && peer.sin_port == sb.sin_port);
  rv.iov_len = sizeof buf;
  rm.msg_namelen = sizeof from;
  CHECK(u->recvmsg(F(b)->ctx, &rm, &plain) == 8 && from.sin_port == sa.sin_port);
  int one = 1;
  CHECK(u->setsockopt(F(a)->ctx, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) == -ENOPROTOOPT);
  CHECK(u->setsockopt(F(a)->ctx, SOL_SOCKET, SO_BROADCAST, &one, sizeof one) == 0);
  xclose(a);
  xclose(b);
}

int main(void) {
  const struct uep_provider *p = uep_provider_init(NULL);
  CHECK(p && strcmp(p->name, "lwip") == 0);
  if (!p) return 1;
  int fd = -1;
  CHECK(p->socket(AF_INET6, SOCK_STREAM, 0, &fd) == UEP_PROVIDER_DECLINE);
  CHECK(p->socket(AF_INET, SOCK_RAW, IPPROTO_ICMP, &fd) == UEP_PROVIDER_DECLINE);
  CHECK(p->socket(AF_INET, SOCK_DGRAM, IPPROTO_TCP, &fd) == UEP_PROVIDER_DECLINE);
  int ls, cs;
  CHECK(p->socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0, &ls) == 0);
  CHECK(p->socket(AF_INET, SOCK_STREAM, IPPROTO_TCP, &cs) == 0);
  const struct uep_file_operations *ops = F(ls)->ops;
  CHECK(ops->sock_family == AF_INET && ops->sock_type == SOCK_STREAM && (ops->flags & UEP_FILE_PUSH));
  CHECK(mask_of(cs) == (EPOLLOUT | EPOLLWRNORM | EPOLLHUP)); /* Linux: a fresh TCP socket */

  int one = 1, v = 0;
  socklen_t vl = sizeof v;
  CHECK(ops->setsockopt(F(ls)->ctx, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) == 0);
  CHECK(ops->getsockopt(F(ls)->ctx, SOL_SOCKET, SO_REUSEADDR, &v, &vl) == 0 && v == 1 && vl == sizeof v);
  CHECK(ops->setsockopt(F(ls)->ctx, SOL_SOCKET, SO_REUSEADDR, &one, 1) == -EINVAL);
  CHECK(ops->getsockopt(F(ls)->ctx, SOL_SOCKET, 12345, &v, &vl) == -ENOPROTOOPT);
  struct linger lg = {1, 5}, lg2 = {0, 0};
  socklen_t lgl = sizeof lg2;
  CHECK(ops->setsockopt(F(cs)->ctx, SOL_SOCKET, SO_LINGER, &lg, sizeof lg) == 0);
  CHECK(ops->getsockopt(F(cs)->ctx, SOL_SOCKET, SO_LINGER, &lg2, &lgl) == 0 && lg2.l_onoff == 1 && lg2.l_linger == 5);
  lg.l_onoff = 0;
  CHECK(ops->setsockopt(F(cs)->ctx, SOL_SOCKET, SO_LINGER, &lg, sizeof lg) == 0);

  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  CHECK(ops->bind(F(ls)->ctx, (struct sockaddr *)&a, sizeof a - 1) == -EINVAL);
  CHECK(ops->bind(F(ls)->ctx, (struct sockaddr *)&a, sizeof a) == 0);
  CHECK(ops->bind(F(ls)->ctx, (struct sockaddr *)&a, sizeof a) == -EINVAL); /* already bound */
  CHECK(ops->listen(F(ls)->ctx, 16) == 0);
  CHECK(mask_of(ls) == 0);
  struct sockaddr_in got;
  socklen_t gl = sizeof got;
  CHECK(ops->getsockname(F(ls)->ctx, (struct sockaddr *)&got, &gl) == 0 && gl == sizeof got);
  CHECK(got.sin_addr.s_addr == htonl(INADDR_LOOPBACK) && got.sin_port != 0);
  gl = sizeof got;
  CHECK(ops->getpeername(F(ls)->ctx, (struct sockaddr *)&got, &gl) == -ENOTCONN);
  gl = sizeof got;
  ops->getsockname(F(ls)->ctx, (struct sockaddr *)&got, &gl);

  struct sockaddr_in6 a6 = {.sin6_family = AF_INET6};
  CHECK(ops->connect(F(cs)->ctx, (struct sockaddr *)&a6, sizeof a6, &plain) == -EAFNOSUPPORT);
  CHECK(xsend(cs, "x", MSG_NOSIGNAL) == -EPIPE);   /* not connected */
  char buf[64];
  CHECK(xrecv(cs, buf, sizeof buf, 0) == -ENOTCONN);
  int r = ops->connect(F(cs)->ctx, (struct sockaddr *)&got, sizeof got, &plain);
  CHECK(r == -EINPROGRESS || r == 0);
  CHECK(ops->connect(F(cs)->ctx, (struct sockaddr *)&got, sizeof got, &plain) == -EALREADY ||
        ops->connect(F(cs)->ctx, (struct sockaddr *)&got, sizeof got, &plain) == -EISCONN);
  CHECK(wait_mask(ls, EPOLLIN) & EPOLLIN);
  CHECK(wait_mask(cs, EPOLLOUT) & EPOLLOUT);
  struct sockaddr_in peer;
  socklen_t pl = sizeof peer;
  struct uep_file_call acc = {0, SOCK_NONBLOCK};
  int ss = ops->accept4(F(ls)->ctx, (struct sockaddr *)&peer, &pl, &acc);
  CHECK(ss >= kBase);
  if (ss < kBase) return 1;
  CHECK(pl == sizeof peer && peer.sin_addr.s_addr == htonl(INADDR_LOOPBACK));
  CHECK((mask_of(ls) & EPOLLIN) == 0);
  CHECK(ops->accept4(F(ls)->ctx, NULL, NULL, &acc) == -EAGAIN);
  CHECK(mask_of(ss) == (EPOLLOUT | EPOLLWRNORM));
  struct sockaddr_in cn;
  socklen_t cl = sizeof cn;
  CHECK(ops->getsockname(F(cs)->ctx, (struct sockaddr *)&cn, &cl) == 0 && cn.sin_port == peer.sin_port);

  CHECK(ops->setsockopt(F(cs)->ctx, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) == 0);
  v = 0;
  vl = sizeof v;
  CHECK(ops->getsockopt(F(cs)->ctx, IPPROTO_TCP, TCP_NODELAY, &v, &vl) == 0 && v == 1);

  CHECK(xrecv(ss, buf, sizeof buf, 0) == -EAGAIN);
  CHECK(xsend(cs, "", 0) == 0);
  struct iovec badv = {NULL, 4};
  struct msghdr badm = {.msg_iov = &badv, .msg_iovlen = 1};
  CHECK(ops->sendmsg(F(cs)->ctx, &badm, &plain) == -EFAULT);
  CHECK(xsend(cs, "hello, lwip", 0) == 11);
  CHECK(wait_mask(ss, EPOLLIN) & EPOLLIN);
  int n = -1;
  CHECK(ops->ioctl(F(ss)->ctx, FIONREAD, &n, &plain) == 0 && n == 11);
  CHECK(ops->recvmsg(F(ss)->ctx, &badm, &plain) == -EFAULT);
  CHECK(xrecv(ss, buf, 0, 0) == 0);
  CHECK(xrecv(ss, buf, 5, MSG_PEEK) == 5 && memcmp(buf, "hello", 5) == 0);
  memset(buf, 0, sizeof buf);
  CHECK(xrecv(ss, buf, 5, 0) == 5 && memcmp(buf, "hello", 5) == 0);
  CHECK(mask_of(ss) & EPOLLIN); /* the rest is left */
  CHECK(xrecv(ss, buf, sizeof buf, 0) == 6 && memcmp(buf, ", lwip", 6) == 0);
  CHECK((mask_of(ss) & EPOLLIN) == 0);
  CHECK(ops->ioctl(F(ss)->ctx, 0x5401 /* TCGETS */, &n, &plain) == -ENOTTY);

  /* a bigger transfer the other way, through several pbufs */
  static char big[200000], back[200000];
  for (size_t i = 0; i < sizeof big; ++i) big[i] = (char)(i * 7);
  size_t sent = 0, recvd = 0;
  for (int rounds = 0; recvd < sizeof big && rounds < 100000; ++rounds) {
    if (sent < sizeof big) {
      struct iovec iv = {big + sent, sizeof big - sent};
      struct msghdr m = {.msg_iov = &iv, .msg_iovlen = 1};
      ssize_t w = ops->sendmsg(F(ss)->ctx, &m, &plain);
      if (w > 0) sent += (size_t)w;
      else CHECK(w == -EAGAIN);
    }
    ssize_t g = xrecv(cs, back + recvd, sizeof back - recvd, 0);
    if (g > 0) recvd += (size_t)g;
    else if (g == -EAGAIN) wait_mask(cs, EPOLLIN);
    else CHECK(g > 0);
  }
  CHECK(recvd == sizeof big && memcmp(big, back, sizeof big) == 0);

  /* shutdown(SHUT_WR) on the client: EOF and RDHUP at the server */
  CHECK(ops->shutdown(F(cs)->ctx, 7) == -EINVAL);
  CHECK(ops->shutdown(F(cs)->ctx, SHUT_WR) == 0);
  CHECK(xsend(cs, "late", MSG_NOSIGNAL) == -EPIPE);
  CHECK(wait_mask(ss, EPOLLRDHUP) & EPOLLRDHUP);
  CHECK(xrecv(ss, buf, sizeof buf, 0) == 0);
  CHECK(xrecv(ss, buf, sizeof buf, 0) == 0);
  CHECK(xsend(ss, "bye", 0) == 3);
  CHECK(wait_mask(cs, EPOLLIN) & EPOLLIN);
  CHECK(xrecv(cs, buf, sizeof buf, 0) == 3);
  CHECK(ops->shutdown(F(ss)->ctx, SHUT_WR) == 0);
  CHECK(wait_mask(ss, EPOLLHUP) & EPOLLHUP);
  CHECK(wait_mask(cs, EPOLLRDHUP | EPOLLHUP) & EPOLLHUP);
  CHECK(xrecv(cs, buf, sizeof buf, 0) == 0);

  /* data and FIN that arrive before the program accepts: folded in at accept */
  int es;
  CHECK(p->socket(AF_INET, SOCK_STREAM, 0, &es) == 0);
  r = ops->connect(F(es)->ctx, (struct sockaddr *)&got, sizeof got, &plain);
  CHECK(wait_mask(es, EPOLLOUT) & EPOLLOUT);
  CHECK(xsend(es, "early", 0) == 5);
  CHECK(ops->shutdown(F(es)->ctx, SHUT_WR) == 0);
  struct timespec pause = {0, 50000000};
  nanosleep(&pause, NULL); /* lwIP's thread queues both before the accept, mostly */
  int as = ops->accept4(F(ls)->ctx, NULL, NULL, &acc);
  CHECK(as >= kBase);
  /* folded in at accept, or pushed just after on a slow machine */
  CHECK((wait_mask(as, EPOLLIN | EPOLLRDHUP) & (EPOLLIN | EPOLLRDHUP)) == (EPOLLIN | EPOLLRDHUP));
  CHECK(xrecv(as, buf, sizeof buf, 0) == 5 && memcmp(buf, "early", 5) == 0);
  CHECK(xrecv(as, buf, sizeof buf, 0) == 0);
  xclose(as);
  xclose(es);

  udp_checks(p);

  /* refused: nobody listens on the port any more */
  xclose(ls);
  int rs;
  CHECK(p->socket(AF_INET, SOCK_STREAM, 0, &rs) == 0);
  r = ops->connect(F(rs)->ctx, (struct sockaddr *)&got, sizeof got, &plain);
  CHECK(r == -EINPROGRESS || r == -ECONNREFUSED);
  if (r == -EINPROGRESS) CHECK(wait_err(rs) == ECONNREFUSED);
  CHECK(wait_mask(rs, EPOLLHUP) & EPOLLHUP);
  CHECK(xsend(rs, "x", MSG_NOSIGNAL) == -EPIPE);
  xclose(rs);
  xclose(ss);
  xclose(cs);
  if (failures) fprintf(stderr, "%d check(s) failed\n", failures);
  else printf("lwip provider (fake host): all checks passed\n");
  return failures != 0;
}
