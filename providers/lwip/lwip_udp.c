/*
 * lwip_udp.c - the lwIP provider's AF_INET SOCK_DGRAM sockets
 * (providers/lwip/): UDP netconns as uepoll files, beside lwip_sock.c's TCP
 * ones (names, options and release are shared with it).  Answers follow
 * Linux's UDP (net/ipv4/udp.c, datagram.c): one datagram per receive,
 * MSG_TRUNC, MSG_PEEK, the sender's address; EDESTADDRREQ without a
 * destination, EMSGSIZE past 65507 bytes; connect sets the peer and
 * AF_UNSPEC removes it.
 *
 * Locks: lw_sock.rx_mu around receives (the peeked datagram), lw_ev for
 * the readiness fields (lwip_provider.h).
 */
#define _GNU_SOURCE
#include "lwip_provider.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <lwip/netbuf.h>

enum { kUdpMax = 65507 }; /* 65535 - IP and UDP headers (Linux: EMSGSIZE above) */

static int udp_bind(void *ctx, const struct sockaddr *a, socklen_t len) {
  struct lw_sock *s = ctx;
  ip_addr_t ip;
  u16_t port;
  int r = lw_addr_in(a, len, &ip, &port);
  if (r) return r;
  if (lw_stack_dead()) return -ENETDOWN;
  if (s->bound) return -EINVAL;
  err_t e = netconn_bind(s->conn, &ip, port);
  if (e != ERR_OK) return e == ERR_USE ? -EADDRINUSE : -lw_errno(e);
  s->bound = 1;
  return 0;
}

static int udp_connect(void *ctx, const struct sockaddr *a, socklen_t len, const struct uep_file_call *call) {
  (void)call;
  struct lw_sock *s = ctx;
  if (lw_stack_dead()) return -ENETDOWN;
  if (a && len >= (socklen_t)sizeof(sa_family_t) && a->sa_family == AF_UNSPEC) { /* dissolve */
    netconn_disconnect(s->conn);
    pthread_mutex_lock(&lw_ev);
    s->state = LW_NEW;
    pthread_mutex_unlock(&lw_ev);
    return 0;
  }
  ip_addr_t ip;
  u16_t port;
  int r = lw_addr_in(a, len, &ip, &port);
  if (r) return r;
  err_t e = netconn_connect(s->conn, &ip, port);
  if (e != ERR_OK) return -lw_errno(e);
  pthread_mutex_lock(&lw_ev);
  s->state = LW_CONNECTED;
  s->bound = 1;
  pthread_mutex_unlock(&lw_ev);
  return 0;
}

/* Under rx_mu, around taking a datagram from lwIP's mbox: while `on`, the
 * mask keeps EPOLLIN if it had it (the RCVMINUS comes before `peeked` is
 * set); off publishes the mask as it is then. */
static void hold(struct lw_sock *s, int on) {
  pthread_mutex_lock(&lw_ev);
  s->rx_hold = on && (s->rcv_events > 0 || s->peeked);
  if (!on) lw_publish_locked(s);
  pthread_mutex_unlock(&lw_ev);
}

static ssize_t udp_recvmsg(void *ctx, struct msghdr *m, const struct uep_file_call *call) {
  struct lw_sock *s = ctx;
  int flags = call->flags;
  if (flags & MSG_OOB) return -EOPNOTSUPP;
  if (lw_stack_dead()) return -ENETDOWN;
  size_t total;
  int iovcnt = lw_usable_iov(m->msg_iov, (int)m->msg_iovlen, &total);
  if (iovcnt < 0) return iovcnt;
  pthread_mutex_lock(&s->rx_mu);
  hold(s, 1);
  struct netbuf *nb = s->peeked;
  s->peeked = NULL;
  if (!nb) {
    err_t e = netconn_recv_udp_raw_netbuf_flags(s->conn, &nb, NETCONN_DONTBLOCK);
    if (e != ERR_OK) {
      hold(s, 0);
      pthread_mutex_unlock(&s->rx_mu);
      return e == ERR_WOULDBLOCK ? -EAGAIN : -lw_errno(e);
    }
  }
  u16_t dlen = netbuf_len(nb), off = 0;
  for (int k = 0; k < iovcnt && off < dlen; ++k) {
    size_t want = m->msg_iov[k].iov_len < (size_t)(dlen - off) ? m->msg_iov[k].iov_len : (size_t)(dlen - off);
    off = (u16_t)(off + netbuf_copy_partial(nb, m->msg_iov[k].iov_base, (u16_t)want, off));
  }
  if (m->msg_name) {
    socklen_t nl = m->msg_namelen;
    lw_addr_out(netbuf_fromaddr(nb), netbuf_fromport(nb), m->msg_name, &nl);
    m->msg_namelen = nl;
  } else {
    m->msg_namelen = 0;
  }
  m->msg_controllen = 0;
  m->msg_flags = off < dlen ? MSG_TRUNC : 0;
  if (flags & MSG_PEEK) s->peeked = nb;
  else netbuf_delete(nb);
  hold(s, 0);
  pthread_mutex_unlock(&s->rx_mu);
  return (flags & MSG_TRUNC) ? (ssize_t)dlen : (ssize_t)off;
}

static ssize_t udp_sendmsg(void *ctx, const struct msghdr *m, const struct uep_file_call *call) {
  struct lw_sock *s = ctx;
  if (call->flags & MSG_OOB) return -EOPNOTSUPP;
  if (lw_stack_dead()) return -ENETDOWN;
  ip_addr_t ip;
  u16_t port = 0;
  int to = m->msg_name && m->msg_namelen;
  if (to) {
    int r = lw_addr_in(m->msg_name, m->msg_namelen, &ip, &port);
    if (r) return r;
  } else if (lw_state_of(s) != LW_CONNECTED) {
    return -EDESTADDRREQ;
  }
  size_t total;
  int iovcnt = lw_usable_iov(m->msg_iov, (int)m->msg_iovlen, &total);
  if (iovcnt < 0) return iovcnt;
  if (iovcnt < (int)m->msg_iovlen) return -EFAULT; /* a datagram goes whole or not at all */
  if (total > kUdpMax) return -EMSGSIZE;
  struct netbuf *nb = netbuf_new();
  char *data = nb ? netbuf_alloc(nb, (u16_t)total) : NULL;
  if (!data) {
    if (nb) netbuf_delete(nb);
    return -ENOBUFS;
  }
  for (int k = 0, off = 0; k < iovcnt; off += (int)m->msg_iov[k].iov_len, ++k)
    memcpy(data + off, m->msg_iov[k].iov_base, m->msg_iov[k].iov_len);
  err_t e = to ? netconn_sendto(s->conn, nb, &ip, port) : netconn_send(s->conn, nb);
  netbuf_delete(nb);
  if (e != ERR_OK) return e == ERR_MEM || e == ERR_BUF ? -ENOBUFS : -lw_errno(e);
  s->bound = 1; /* an unbound socket got a port */
  return (ssize_t)total;
}

static ssize_t udp_read(void *ctx, const struct iovec *iov, int iovcnt, const struct uep_file_call *call) {
  (void)call;
  struct msghdr m = {.msg_iov = (struct iovec *)iov, .msg_iovlen = (size_t)iovcnt};
  struct uep_file_call c = {0, 0};
  return udp_recvmsg(ctx, &m, &c);
}

static ssize_t udp_write(void *ctx, const struct iovec *iov, int iovcnt, const struct uep_file_call *call) {
  (void)call;
  struct msghdr m = {.msg_iov = (struct iovec *)iov, .msg_iovlen = (size_t)iovcnt};
  struct uep_file_call c = {0, 0};
  return udp_sendmsg(ctx, &m, &c);
}

/* FIONREAD: the size of the next datagram (Linux udp_ioctl), 0 if none. */
static int udp_ioctl(void *ctx, unsigned long req, void *arg, const struct uep_file_call *call) {
  (void)call;
  struct lw_sock *s = ctx;
  if (req != FIONREAD && req != TIOCOUTQ) return -ENOTTY;
  if (lw_stack_dead()) return -ENETDOWN;
  int v = 0;
  if (req == FIONREAD) {
    pthread_mutex_lock(&s->rx_mu);
    hold(s, 1);
    if (!s->peeked) netconn_recv_udp_raw_netbuf_flags(s->conn, &s->peeked, NETCONN_DONTBLOCK);
    v = s->peeked ? netbuf_len(s->peeked) : 0;
    hold(s, 0); /* the datagram left the mbox for `peeked`: still readable */
    pthread_mutex_unlock(&s->rx_mu);
  }
  memcpy(arg, &v, sizeof v);
  return 0;
}

static int udp_shutdown(void *ctx, int how) {
  if (how < SHUT_RD || how > SHUT_RDWR) return -EINVAL;
  return lw_state_of(ctx) == LW_CONNECTED ? 0 : -ENOTCONN;
}

const struct uep_file_operations lw_udp_ops = {
    .size = sizeof(struct uep_file_operations),
    .flags = UEP_FILE_PUSH,
    .sock_family = AF_INET,
    .sock_type = SOCK_DGRAM,
    .sock_protocol = IPPROTO_UDP,
    .read_iter = udp_read,
    .write_iter = udp_write,
    .ioctl = udp_ioctl,
    .release = lw_release,
    .bind = udp_bind,
    .connect = udp_connect,
    .sendmsg = udp_sendmsg,
    .recvmsg = udp_recvmsg,
    .shutdown = udp_shutdown,
    .getsockopt = lw_getsockopt,
    .setsockopt = lw_setsockopt,
    .getsockname = lw_getsockname,
    .getpeername = lw_getpeername,
};
