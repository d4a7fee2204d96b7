/*
 * lwip_sock.c - the lwIP provider's TCP sockets (providers/lwip/): AF_INET
 * SOCK_STREAM sockets as uepoll files (<uepoll/file.h>) over lwIP netconns,
 * and the helpers lwip_udp.c shares (addresses, release); names and options
 * are lwip_opts.c's.
 *
 * Every operation is non-blocking (netconns are made non-blocking, calls
 * pass NETCONN_DONTBLOCK) and returns -EAGAIN where Linux would sleep:
 * uepoll does the sleeping, woken by the masks lwip_stack.c pushes.
 * Answers follow Linux's TCP (net/ipv4/af_inet.c, tcp.c) where lwIP's
 * differ: EPIPE (and SIGPIPE) for a send on an unconnected or shut
 * socket, ENOTCONN for a receive on one, EISCONN / EALREADY for connect.
 *
 * Locks: lw_sock.rx_mu around receives, tx_mu around sends, lwIP's core
 * lock around direct pcb access (TIOCOUTQ, the delayed ACK, TCP_NODELAY
 * passed to an accepted socket), lw_ev for the record's readiness fields
 * (order: lwip_provider.h).
 */
#define _GNU_SOURCE
#include "lwip_provider.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <linux/tcp.h> /* not netinet/tcp.h: its TCP_MSS is not lwIP's */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <lwip/ip_addr.h>
#include <lwip/tcp.h>
#include <lwip/tcpip.h>

#include <uepoll/provider.h>


/* ---- addresses ------------------------------------------------------------------------ */
/* Linux inet_bind / inet_stream_connect's checks of a sockaddr_in. */
int lw_addr_in(const struct sockaddr *a, socklen_t len, ip_addr_t *ip, u16_t *port) {
  if (!a || len < (socklen_t)sizeof(struct sockaddr_in)) return -EINVAL;
  const struct sockaddr_in *sin = (const struct sockaddr_in *)a;
  if (sin->sin_family != AF_INET) return -EAFNOSUPPORT;
  ip_addr_set_ip4_u32_val(*ip, sin->sin_addr.s_addr);
  *port = ntohs(sin->sin_port);
  return 0;
}

void lw_addr_out(const ip_addr_t *ip, u16_t port, struct sockaddr *a, socklen_t *len) {
  struct sockaddr_in sin;
  memset(&sin, 0, sizeof sin);
  sin.sin_family = AF_INET;
  sin.sin_port = htons(port);
  sin.sin_addr.s_addr = ip4_addr_get_u32(ip_2_ip4(ip));
  socklen_t n = *len < (socklen_t)sizeof sin ? *len : (socklen_t)sizeof sin;
  memcpy(a, &sin, (size_t)n);
  *len = sizeof sin;
}

enum lw_state lw_state_of(struct lw_sock *s) {
  pthread_mutex_lock(&lw_ev);
  enum lw_state st = s->state;
  pthread_mutex_unlock(&lw_ev);
  return st;
}

/* ---- bind, listen, connect, accept -------------------------------------------------- */
static int lw_bind(void *ctx, const struct sockaddr *a, socklen_t len) {
  struct lw_sock *s = ctx;
  ip_addr_t ip;
  u16_t port;
  int r = lw_addr_in(a, len, &ip, &port);
  if (r) return r;
  if (lw_stack_dead()) return -ENETDOWN;
  if (s->bound || lw_state_of(s) != LW_NEW) return -EINVAL;
  err_t e = netconn_bind(s->conn, &ip, port);
  if (e != ERR_OK) return e == ERR_USE ? -EADDRINUSE : -lw_errno(e);
  s->bound = 1;
  return 0;
}

static int lw_listen(void *ctx, int backlog) {
  struct lw_sock *s = ctx;
  if (lw_stack_dead()) return -ENETDOWN;
  enum lw_state st = lw_state_of(s);
  if (st != LW_NEW && st != LW_LISTEN) return -EINVAL;
  if (!s->bound) { /* Linux: inet_autobind picks a port */
    if (netconn_bind(s->conn, IP4_ADDR_ANY, 0) != ERR_OK) return -EADDRINUSE;
    s->bound = 1;
  }
  if (backlog < 0 || backlog > 255) backlog = 255;
  err_t e = netconn_listen_with_backlog(s->conn, (u8_t)backlog);
  if (e != ERR_OK) return -lw_errno(e);
  pthread_mutex_lock(&lw_ev);
  s->state = LW_LISTEN;
  lw_publish_locked(s);
  pthread_mutex_unlock(&lw_ev);
  return 0;
}

static int lw_connect(void *ctx, const struct sockaddr *a, socklen_t len, const struct uep_file_call *call) {
  (void)call;
  struct lw_sock *s = ctx;
  ip_addr_t ip;
  u16_t port;
  int r = lw_addr_in(a, len, &ip, &port);
  if (r) return r;
  if (lw_stack_dead()) return -ENETDOWN;
  pthread_mutex_lock(&lw_ev);
  enum lw_state st = s->state;
  if (st == LW_NEW) s->state = LW_CONNECTING; /* before lwIP can answer */
  pthread_mutex_unlock(&lw_ev);
  switch (st) {
    case LW_NEW: break;
    case LW_CONNECTING: return -EALREADY;
    case LW_FAILED: return -ECONNABORTED;
    default: return -EISCONN;
  }
  err_t e = netconn_connect(s->conn, &ip, port);
  pthread_mutex_lock(&lw_ev);
  if (e == ERR_OK && s->state == LW_CONNECTING) s->state = LW_CONNECTED;
  if (e != ERR_OK && e != ERR_INPROGRESS && s->state == LW_CONNECTING) s->state = LW_NEW;
  s->bound = 1;
  lw_publish_locked(s);
  pthread_mutex_unlock(&lw_ev);
  if (e == ERR_INPROGRESS) return -EINPROGRESS;
  if (e == ERR_RST) return -ECONNREFUSED;
  return -lw_errno(e);
}

static int lw_accept4(void *ctx, struct sockaddr *a, socklen_t *len, const struct uep_file_call *call) {
  struct lw_sock *s = ctx;
  if (lw_stack_dead()) return -ENETDOWN;
  if (lw_state_of(s) != LW_LISTEN) return -EINVAL;
  struct netconn *nc;
  err_t e = netconn_accept(s->conn, &nc);
  if (e == ERR_WOULDBLOCK) return -EAGAIN;
  if (e != ERR_OK) return e == ERR_ABRT ? -ECONNABORTED : -lw_errno(e);
  struct lw_sock *ns = lw_sock_new(nc, 1, 0);
  if (!ns) {
    netconn_delete(nc);
    return -ENOMEM;
  }
  if (s->nodelay) {
    LOCK_TCPIP_CORE();
    if (nc->pcb.tcp) tcp_nagle_disable(nc->pcb.tcp);
    UNLOCK_TCPIP_CORE();
    ns->nodelay = 1;
  }
  if (a && len) {
    ip_addr_t ip;
    u16_t port = 0;
    ip_addr_set_zero_ip4(&ip);
    netconn_peer(nc, &ip, &port);
    lw_addr_out(&ip, port, a, len);
  }
  pthread_mutex_lock(&lw_ev);
  uint32_t initial = lw_mask_locked(ns);
  pthread_mutex_unlock(&lw_ev);
  struct uep_file *f;
  int fd = uep_file_create(&lw_tcp_ops, ns, call->flags & (SOCK_NONBLOCK | SOCK_CLOEXEC), initial, &f);
  if (fd < 0) {
    int err = errno;
    lw_sock_free(ns);
    return -err;
  }
  lw_sock_attach(ns, f);
  return fd;
}

/* ---- receiving ----------------------------------------------------------------------- */
/* Copies p from offset *off on into iov[*i] from offset *io on; returns bytes. */
static size_t copy_from(struct pbuf *p, u16_t *off, const struct iovec *iov, int iovcnt, int *i, size_t *io) {
  size_t done = 0;
  while (*i < iovcnt && *off < p->tot_len) {
    size_t room = iov[*i].iov_len - *io;
    if (!room) {
      ++*i;
      *io = 0;
      continue;
    }
    u16_t want = (u16_t)(room < (size_t)(p->tot_len - *off) ? room : (size_t)(p->tot_len - *off));
    u16_t got = pbuf_copy_partial(p, (char *)iov[*i].iov_base + *io, want, *off);
    *off = (u16_t)(*off + got);
    *io += got;
    done += got;
  }
  return done;
}

/* Under rx_mu: the next pbuf from the mbox (NULL: none now, or the end,
 * then eof_read is set: ERR_CLSD is the FIN; a reset or abort has its
 * error posted by the event callback and ends the stream here). */
static struct pbuf *take_pbuf(struct lw_sock *s) {
  if (s->eof_read) return NULL;
  struct pbuf *p = NULL;
  err_t e = netconn_recv_tcp_pbuf_flags(s->conn, &p, NETCONN_DONTBLOCK);
  if (e == ERR_WOULDBLOCK) return NULL;
  if (e != ERR_OK) {
    s->eof_read = 1;
    return NULL;
  }
  return p;
}

/* Under rx_mu: reads (and consumes) into the iovecs. */
static size_t recv_consume(struct lw_sock *s, const struct iovec *iov, int iovcnt, size_t total) {
  size_t copied = 0, io = 0;
  int i = 0;
  while (copied < total) {
    if (!s->left) {
      struct lw_ahead *a = s->ahead;
      if (a) {
        s->ahead = a->next;
        s->left = a->p;
        free(a);
      } else if (!(s->left = take_pbuf(s))) {
        break;
      }
      s->left_off = 0;
    }
    copied += copy_from(s->left, &s->left_off, iov, iovcnt, &i, &io);
    if (s->left_off >= s->left->tot_len) {
      pbuf_free(s->left);
      s->left = NULL;
      s->left_off = 0;
    }
  }
  return copied;
}

/* Under rx_mu: MSG_PEEK, as Linux's across segments: copies what `left`
 * and the pbufs already peeked past it hold, taking more from the mbox
 * (kept in `ahead`, in order) while the iovecs have room. */
static size_t recv_peek(struct lw_sock *s, const struct iovec *iov, int iovcnt, size_t total) {
  size_t copied = 0, io = 0;
  int i = 0;
  struct lw_ahead *a = s->ahead, **tail = &s->ahead;
  while (*tail) tail = &(*tail)->next;
  struct pbuf *p = s->left;
  u16_t off = s->left_off;
  while (copied < total) {
    if (!p) {
      if (a) {
        p = a->p;
        a = a->next;
      } else {
        struct lw_ahead *n = malloc(sizeof *n);
        if (!n) break;
        if (!(p = take_pbuf(s))) {
          free(n);
          break;
        }
        if (!s->left) {
          free(n);
          s->left = p;
          s->left_off = 0;
        } else {
          n->p = p;
          n->next = NULL;
          *tail = n;
          tail = &n->next;
        }
      }
      off = 0;
    }
    copied += copy_from(p, &off, iov, iovcnt, &i, &io);
    if (off < p->tot_len) break; /* the iovecs are full */
    p = NULL;
  }
  return copied;
}

/* The iovecs before the first one uepoll leaves to us to fault on (NULL or
 * the first page, file.h): the call uses those; none usable is EFAULT. */
int lw_usable_iov(const struct iovec *iov, int iovcnt, size_t *total) {
  *total = 0;
  for (int k = 0; k < iovcnt; ++k) {
    if (iov[k].iov_len && (uintptr_t)iov[k].iov_base < 4096) return *total ? k : -EFAULT;
    *total += iov[k].iov_len;
  }
  return iovcnt;
}

/* A read that empties the receive queue sends the ACK lwIP was delaying,
 * as Linux's tcp_cleanup_rbuf does once more than a segment is unacked:
 * lwIP's sender runs classic Nagle (a small tail waits for every byte in
 * flight to be acknowledged), and without this a request of a few
 * segments plus a small tail (memcached's SET of 4 KiB) waits for the
 * 250 ms delayed-ACK timer. */
static void ack_on_drain(struct lw_sock *s) {
  LOCK_TCPIP_CORE();
  struct tcp_pcb *pcb = s->conn->pcb.tcp;
  if (pcb && (pcb->flags & TF_ACK_DELAY)) {
    pcb->flags |= TF_ACK_NOW;
    tcp_output(pcb);
  }
  UNLOCK_TCPIP_CORE();
}

/* Under lw_ev: bytes a receive can take now (the mbox, and what is left
 * over from earlier receives and peeks). */
int lw_avail_locked(const struct lw_sock *s) {
  int q = __atomic_load_n(&s->conn->recv_avail, __ATOMIC_RELAXED);
  return (q > 0 ? q : 0) + s->left_bytes;
}

/* blocking: a call uepoll would sleep in (SO_RCVLOWAT's target holds for
 * it only, as Linux's timeo). */
static ssize_t recv_iov(struct lw_sock *s, const struct iovec *iov, int iovcnt, int flags, int blocking) {
  if (flags & MSG_OOB) return -EINVAL; /* no urgent data (Linux tcp_recv_urg) */
  if (lw_stack_dead()) return -ENETDOWN;
  size_t total;
  iovcnt = lw_usable_iov(iov, iovcnt, &total);
  if (iovcnt < 0) return iovcnt;
  pthread_mutex_lock(&lw_ev);
  enum lw_state st = s->state;
  /* Nothing in the mbox (every entry, data, FIN or error marker, counts a
   * RCVPLUS), nothing left over, no end: EAGAIN without asking lwIP. */
  int ended = s->fin || s->rd_shut || s->closed;
  int empty = s->rcv_events <= 0 && !s->has_left && !ended;
  /* SO_RCVLOWAT: a blocking call waits for min(lowat, len) bytes (Linux
   * tcp_recvmsg's target; MSG_WAITALL's whole count is uepoll's loop) */
  size_t target = s->rcvlowat < total ? (size_t)s->rcvlowat : total;
  if (st == LW_CONNECTED && blocking && !ended && target > 1 && (size_t)lw_avail_locked(s) < target) empty = 1;
  if (st == LW_CONNECTED) s->rx_hold = !empty;
  pthread_mutex_unlock(&lw_ev);
  if (st == LW_CONNECTED && empty && total) return -EAGAIN;
  if (st == LW_LISTEN || st == LW_NEW) return -ENOTCONN;
  if (st == LW_CONNECTING) return -EAGAIN;
  if (st == LW_FAILED) return 0; /* the error itself was uepoll's to return */
  pthread_mutex_lock(&s->rx_mu);
  size_t copied = (flags & MSG_PEEK) ? recv_peek(s, iov, iovcnt, total) : recv_consume(s, iov, iovcnt, total);
  int eof = s->eof_read;
  pthread_mutex_lock(&lw_ev);
  s->has_left = s->left != NULL || s->ahead != NULL;
  s->left_bytes = s->left ? s->left->tot_len - s->left_off : 0;
  for (const struct lw_ahead *a = s->ahead; a; a = a->next) s->left_bytes += a->p->tot_len;
  s->rx_hold = 0;
  int drained = copied && !(flags & MSG_PEEK) && !s->has_left && s->rcv_events <= 0;
  lw_publish_locked(s);
  pthread_mutex_unlock(&lw_ev);
  pthread_mutex_unlock(&s->rx_mu);
  if (drained) ack_on_drain(s);
  if (copied || total == 0 || eof) return (ssize_t)copied;
  pthread_mutex_lock(&lw_ev);
  int rd_shut = s->rd_shut;
  pthread_mutex_unlock(&lw_ev);
  return rd_shut ? 0 : -EAGAIN;
}

static ssize_t lw_recvmsg(void *ctx, struct msghdr *m, const struct uep_file_call *call) {
  m->msg_namelen = 0; /* a stream socket names no sender (Linux ____sys_recvmsg) */
  m->msg_controllen = 0;
  m->msg_flags = 0;
  return recv_iov(ctx, m->msg_iov, (int)m->msg_iovlen, call->flags,
                  !(call->f_flags & O_NONBLOCK) && !(call->flags & MSG_DONTWAIT));
}

static ssize_t lw_read(void *ctx, const struct iovec *iov, int iovcnt, const struct uep_file_call *call) {
  return recv_iov(ctx, iov, iovcnt, 0, !(call->f_flags & O_NONBLOCK));
}

/* ---- sending --------------------------------------------------------------------------- */
ssize_t lw_epipe(int flags) {
  if (!(flags & MSG_NOSIGNAL)) pthread_kill(pthread_self(), SIGPIPE);
  return -EPIPE;
}

static ssize_t send_iov(struct lw_sock *s, const struct iovec *iov, int iovcnt, int flags) {
  if (flags & MSG_OOB) return -EOPNOTSUPP;
  if (lw_stack_dead()) return -ENETDOWN;
  pthread_mutex_lock(&lw_ev);
  enum lw_state st = s->state;
  int shut = s->wr_shut || s->closed;
  unsigned gen = s->send_gen;
  pthread_mutex_unlock(&lw_ev);
  if (st == LW_CONNECTING) return -EAGAIN;
  if (st != LW_CONNECTED || shut) return lw_epipe(flags);
  size_t usable;
  iovcnt = lw_usable_iov(iov, iovcnt, &usable);
  if (iovcnt < 0) return iovcnt;
  struct netvector small[64], *v = small;
  if (iovcnt > 64 && !(v = malloc((size_t)iovcnt * sizeof *v))) return -ENOMEM;
  u16_t n = 0;
  size_t total = 0;
  for (int k = 0; k < iovcnt && total < (1u << 30); ++k)
    if (iov[k].iov_len) {
      v[n].ptr = iov[k].iov_base;
      v[n].len = iov[k].iov_len;
      total += v[n++].len;
    }
  ssize_t r = 0;
  if (n) {
    size_t written = 0;
    u8_t api = NETCONN_COPY | NETCONN_DONTBLOCK | ((flags & MSG_MORE) ? NETCONN_MORE : 0);
    pthread_mutex_lock(&s->tx_mu);
    err_t e = netconn_write_vectors_partly(s->conn, v, n, api, &written);
    pthread_mutex_unlock(&s->tx_mu);
    if (written) r = (ssize_t)written;
    else if (e == ERR_OK || e == ERR_WOULDBLOCK || e == ERR_MEM) r = -EAGAIN;
    else r = lw_state_of(s) == LW_FAILED ? lw_epipe(flags) : -lw_errno(e);
    if (r == -EAGAIN) { /* wait for the next SENDPLUS (none came meanwhile) */
      pthread_mutex_lock(&lw_ev);
      if (s->send_gen == gen) s->sendable = 0;
      lw_publish_locked(s);
      pthread_mutex_unlock(&lw_ev);
    }
  }
  if (v != small) free(v);
  return r;
}

static ssize_t lw_sendmsg(void *ctx, const struct msghdr *m, const struct uep_file_call *call) {
  return send_iov(ctx, m->msg_iov, (int)m->msg_iovlen, call->flags);
}

static ssize_t lw_write(void *ctx, const struct iovec *iov, int iovcnt, const struct uep_file_call *call) {
  (void)call;
  return send_iov(ctx, iov, iovcnt, 0);
}

static int lw_shutdown(void *ctx, int how) {
  struct lw_sock *s = ctx;
  if (how < SHUT_RD || how > SHUT_RDWR) return -EINVAL;
  if (lw_stack_dead()) return -ENETDOWN;
  enum lw_state st = lw_state_of(s);
  if (st == LW_LISTEN && how != SHUT_WR) { /* Linux: a listener just stops */
    return 0;
  }
  if (st != LW_CONNECTED) return -ENOTCONN;
  int rd = how != SHUT_WR, wr = how != SHUT_RD;
  if (wr) netconn_shutdown(s->conn, 0, 1);
  pthread_mutex_lock(&lw_ev);
  if (rd) s->rd_shut = 1;
  if (wr) s->wr_shut = 1;
  lw_publish_locked(s);
  pthread_mutex_unlock(&lw_ev);
  return 0;
}

/* ---- ioctl ----------------------------------------------------------------------------- */
static int lw_ioctl(void *ctx, unsigned long req, void *arg, const struct uep_file_call *call) {
  (void)call;
  struct lw_sock *s = ctx;
  if (req != FIONREAD && req != TIOCOUTQ && req != SIOCATMARK) return -ENOTTY;
  if (lw_stack_dead()) return -ENETDOWN;
  int v = 0;
  if (lw_state_of(s) == LW_LISTEN) return -EINVAL; /* Linux tcp_ioctl */
  if (req == SIOCATMARK) {
    v = 0; /* no urgent data is ever taken in (recvmsg: MSG_OOB is EINVAL) */
  } else if (req == FIONREAD) {
    pthread_mutex_lock(&s->rx_mu);
    int avail = __atomic_load_n(&s->conn->recv_avail, __ATOMIC_RELAXED);
    v = (avail > 0 ? avail : 0) + (s->left ? s->left->tot_len - s->left_off : 0);
    for (const struct lw_ahead *a = s->ahead; a; a = a->next) v += a->p->tot_len;
    pthread_mutex_unlock(&s->rx_mu);
  } else {
    LOCK_TCPIP_CORE();
    struct tcp_pcb *pcb = s->conn->pcb.tcp;
    v = pcb ? (int)(TCP_SND_BUF - tcp_sndbuf(pcb)) : 0;
    UNLOCK_TCPIP_CORE();
  }
  memcpy(arg, &v, sizeof v);
  return 0;
}

void lw_release(void *ctx) { lw_sock_free(ctx); }

const struct uep_file_operations lw_tcp_ops = {
    .size = sizeof(struct uep_file_operations),
    .flags = UEP_FILE_PUSH | UEP_FILE_STREAM,
    .sock_family = AF_INET,
    .sock_type = SOCK_STREAM,
    .sock_protocol = IPPROTO_TCP,
    .read_iter = lw_read,
    .write_iter = lw_write,
    .ioctl = lw_ioctl,
    .release = lw_release,
    .bind = lw_bind,
    .listen = lw_listen,
    .accept4 = lw_accept4,
    .connect = lw_connect,
    .sendmsg = lw_sendmsg,
    .recvmsg = lw_recvmsg,
    .shutdown = lw_shutdown,
    .getsockopt = lw_getsockopt,
    .setsockopt = lw_setsockopt,
    .getsockname = lw_getsockname,
    .getpeername = lw_getpeername,
};
