/*
 * lwip_opts.c - the lwIP provider's socket names and options
 * (providers/lwip/), shared by TCP (lwip_sock.c) and UDP (lwip_udp.c):
 * getsockname/getpeername through netconn_getaddr, and the SOL_SOCKET /
 * IPPROTO_TCP options lwIP keeps in its pcbs (SO_REUSEADDR, SO_KEEPALIVE,
 * SO_BROADCAST, SO_LINGER, TCP_NODELAY, TCP_KEEPIDLE/KEEPINTVL/KEEPCNT;
 * SO_RCVBUF/SO_SNDBUF read lwIP's fixed sizes).
 *
 * Locks: lwIP's core lock, then lw_ev, around pcb access (order:
 * lwip_provider.h); none across a netconn call.
 */
#define _GNU_SOURCE
#include "lwip_provider.h"

#include <errno.h>
#include <netinet/in.h>
#include <linux/tcp.h> /* not netinet/tcp.h: its TCP_MSS is not lwIP's */
#include <string.h>
#include <sys/socket.h>

#include <lwip/ip_addr.h>
#include <lwip/tcp.h>
#include <lwip/tcpip.h>

static int getname(void *ctx, struct sockaddr *a, socklen_t *len, int local) {
  struct lw_sock *s = ctx;
  if (lw_stack_dead()) return -ENETDOWN;
  ip_addr_t ip;
  u16_t port = 0;
  ip_addr_set_zero_ip4(&ip);
  err_t e = netconn_getaddr(s->conn, &ip, &port, (u8_t)local);
  if (e != ERR_OK) {
    if (!local) return -ENOTCONN;
    ip_addr_set_zero_ip4(&ip);
    port = 0;
  }
  lw_addr_out(&ip, port, a, len);
  return 0;
}
int lw_getsockname(void *ctx, struct sockaddr *a, socklen_t *len) { return getname(ctx, a, len, 1); }
int lw_getpeername(void *ctx, struct sockaddr *a, socklen_t *len) {
  if (lw_state_of(ctx) != LW_CONNECTED) return -ENOTCONN;
  return getname(ctx, a, len, 0);
}

static int put_int(void *val, socklen_t *len, int v) {
  if ((int)*len < 0) return -EINVAL;
  socklen_t n = *len < (socklen_t)sizeof v ? *len : (socklen_t)sizeof v;
  memcpy(val, &v, (size_t)n);
  *len = n;
  return 0;
}

/* Under the core lock: pcb is conn->pcb.tcp (NULL after an error); a
 * listening pcb (struct tcp_pcb_listen) has only so_options. */
static int sockopt_locked(struct lw_sock *s, int level, int name, int set, int *v) {
  struct tcp_pcb *pcb = s->dgram ? NULL : s->conn->pcb.tcp;
  struct ip_pcb *ip = s->conn->pcb.ip; /* so_options: every pcb begins with IP_PCB */
  int listening = s->state == LW_LISTEN;
  if (level == SOL_SOCKET) {
    u8_t opt = name == SO_REUSEADDR ? SOF_REUSEADDR : name == SO_KEEPALIVE ? SOF_KEEPALIVE
             : name == SO_BROADCAST ? SOF_BROADCAST : 0;
    if (opt) {
      if (set && ip) {
        if (*v) ip_set_option(ip, opt);
        else ip_reset_option(ip, opt);
      }
      if (!set) *v = ip && ip_get_option(ip, opt) ? 1 : 0;
      return 0;
    }
    switch (name) {
      case SO_RCVBUF: if (!set) *v = TCP_WND; return 0;      /* fixed at build time */
      case SO_RCVLOWAT: /* Linux tcp_set_rcvlowat: < 0 is INT_MAX, 0 is 1, at most half the buffer */
        if (set) {
          s->rcvlowat = *v < 0 || *v > TCP_WND / 2 ? TCP_WND / 2 : *v ? *v : 1;
          lw_publish_locked(s); /* readiness follows the new mark */
        } else {
          *v = s->rcvlowat ? s->rcvlowat : 1;
        }
        return 0;
      case SO_SNDBUF: if (!set) *v = TCP_SND_BUF; return 0;  /* fixed at build time */
      case SO_ACCEPTCONN: if (set) return -ENOPROTOOPT; *v = listening; return 0;
      /* Errors are posted with uep_file_set_error, which answers SO_ERROR
       * while one is pending; none is pending when this is asked. */
      case SO_ERROR: if (set) return -ENOPROTOOPT; *v = 0; return 0;
      default: return -ENOPROTOOPT;
    }
  }
  if (level == IPPROTO_TCP && !s->dgram) {
    switch (name) {
      case TCP_NODELAY:
        if (set) {
          s->nodelay = *v != 0;
          if (pcb && !listening) {
            if (*v) tcp_nagle_disable(pcb);
            else tcp_nagle_enable(pcb);
          }
        } else {
          *v = s->nodelay;
        }
        return 0;
      case TCP_KEEPIDLE:
      case TCP_KEEPINTVL:
      case TCP_KEEPCNT: {
        if (set && *v < 1) return -EINVAL;
        if (!pcb || listening) {
          if (!set) *v = name == TCP_KEEPCNT ? 9 : name == TCP_KEEPIDLE ? 7200 : 75;
          return 0;
        }
        u32_t *f = name == TCP_KEEPIDLE ? &pcb->keep_idle : name == TCP_KEEPINTVL ? &pcb->keep_intvl : &pcb->keep_cnt;
        u32_t scale = name == TCP_KEEPCNT ? 1 : 1000;
        if (set) *f = (u32_t)*v * scale;
        else *v = (int)(*f / scale);
        return 0;
      }
      default: return -ENOPROTOOPT;
    }
  }
  return -ENOPROTOOPT;
}

/* SO_LINGER: lwIP's netconn.linger (seconds, < 0: off), used by its close. */
static int linger_opt(struct lw_sock *s, int set, struct linger *l) {
  LOCK_TCPIP_CORE();
  if (set) s->conn->linger = l->l_onoff ? (s16_t)(l->l_linger < 0 ? 0 : l->l_linger > 32767 ? 32767 : l->l_linger) : -1;
  else *l = (struct linger){s->conn->linger >= 0, s->conn->linger >= 0 ? s->conn->linger : 0};
  UNLOCK_TCPIP_CORE();
  return 0;
}

int lw_getsockopt(void *ctx, int level, int name, void *val, socklen_t *len) {
  struct lw_sock *s = ctx;
  if (lw_stack_dead()) return -ENETDOWN;
  if (level == SOL_SOCKET && name == SO_LINGER) {
    if ((int)*len < 0) return -EINVAL;
    struct linger l;
    linger_opt(s, 0, &l);
    socklen_t n = *len < (socklen_t)sizeof l ? *len : (socklen_t)sizeof l;
    memcpy(val, &l, (size_t)n);
    *len = n;
    return 0;
  }
  int v = 0;
  LOCK_TCPIP_CORE();
  pthread_mutex_lock(&lw_ev);
  int r = sockopt_locked(s, level, name, 0, &v);
  pthread_mutex_unlock(&lw_ev);
  UNLOCK_TCPIP_CORE();
  return r ? r : put_int(val, len, v);
}

int lw_setsockopt(void *ctx, int level, int name, const void *val, socklen_t len) {
  struct lw_sock *s = ctx;
  if (lw_stack_dead()) return -ENETDOWN;
  if (level == SOL_SOCKET && name == SO_LINGER) {
    struct linger l;
    if (len < (socklen_t)sizeof l) return -EINVAL;
    memcpy(&l, val, sizeof l);
    return linger_opt(s, 1, &l);
  }
  if (len < (socklen_t)sizeof(int)) return -EINVAL;
  int v;
  memcpy(&v, val, sizeof v);
  LOCK_TCPIP_CORE();
  pthread_mutex_lock(&lw_ev);
  int r = sockopt_locked(s, level, name, 1, &v);
  pthread_mutex_unlock(&lw_ev);
  UNLOCK_TCPIP_CORE();
  return r;
}
