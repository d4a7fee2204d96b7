/*
 * lwip_provider.h - what the parts of the lwIP provider share
 * (providers/lwip/): the socket record, the event lock, the wire
 * (lwip_wire.c), the TAP link (lwip_tap.c), what the two links share
 * (lwip_link.c), and the helpers of
 * lwip_stack.c (the stack, its loopback netif, netconn events, readiness)
 * that lwip_sock.c (the socket operations) uses.
 *
 * Locks, in the order they may be taken:
 *   1. lw_sock.rx_mu / lw_sock.tx_mu - one receiver / one sender at a time
 *      on a socket (the leftover pbuf, stream order of writes).  Held
 *      across non-blocking netconn calls.
 *   2. lwIP's core lock (LOCK_TCPIP_CORE), taken by every netconn call and
 *      held by lwIP around the event callbacks of its own thread.
 *   3. lw_ev - every field marked "ev" below, the slot table and
 *      netconn.socket.  Leaf, except that uep_file_set_mask and
 *      uep_file_set_error run under it (they take no lock of ours and never
 *      call back).  Never held across a netconn call.
 */
#ifndef UEPOLL_PROVIDER_LWIP_H
#define UEPOLL_PROVIDER_LWIP_H

#include <pthread.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

#include <lwip/api.h>
#include <lwip/ip4_addr.h>
#include <lwip/netif.h>

#include <uepoll/file.h>

enum lw_state {
  LW_NEW,        /* created (maybe bound), neither listening nor connected */
  LW_LISTEN,     /* listening */
  LW_CONNECTING, /* connect returned EINPROGRESS, no answer yet */
  LW_CONNECTED,  /* established (also after a normal close: see fin, wr_shut) */
  LW_FAILED      /* reset, refused or aborted: the error is posted */
};

/* A pbuf a MSG_PEEK took from the mbox past `left` (TCP). */
struct lw_ahead {
  struct pbuf *p;
  struct lw_ahead *next;
};

struct lw_sock {
  struct netconn *conn;  /* immutable */
  struct uep_file *file; /* ev: set once uep_file_create returned */
  int slot;              /* immutable: index in the slot table */

  pthread_mutex_t rx_mu; /* level 1: receivers */
  pthread_mutex_t tx_mu; /* level 1: senders */
  struct pbuf *left;     /* rx_mu: rest of the pbuf last received */
  uint16_t left_off;     /* rx_mu: bytes of `left` already read */
  struct lw_ahead *ahead; /* rx_mu: pbufs peeked past `left`, in order */
  int eof_read;          /* rx_mu: the FIN was read: reads return 0 */

  /* ev: readiness state, from netconn events and the operations */
  enum lw_state state;
  int rcv_events;    /* RCVPLUS - RCVMINUS: entries in the receive mbox */
  int sendable;      /* SENDPLUS since the last SENDMINUS / EAGAIN */
  unsigned send_gen; /* count of SENDPLUS events (lost-wakeup check) */
  int fin;           /* the peer's FIN (or an error marker) is queued */
  int rd_shut;       /* shutdown(SHUT_RD) */
  int wr_shut;       /* shutdown(SHUT_WR) */
  int closed;        /* lwIP closed the connection normally (ERR_CLSD) */
  int has_left;      /* `left` or `ahead` is non-NULL (readable without the mbox) */
  int left_bytes;    /* bytes in `left` and `ahead` (TCP) */
  int rcvlowat;      /* SO_RCVLOWAT (1..32767; 0 in a fresh record means 1) */
  int rx_hold;       /* a receiver is between two pbufs: keep EPOLLIN */
  int pending_err;   /* errno to post once the file exists */
  uint32_t shown;    /* the mask last given to uep_file_set_mask */
  int bound;         /* bind() (or an implicit bind) done */
  int nodelay;       /* TCP_NODELAY as set (listeners pass it on) */
  int dgram;         /* immutable: a UDP socket (lwip_udp.c) */
  struct netbuf *peeked; /* rx_mu: UDP: a datagram MSG_PEEK left unread */
};

extern pthread_mutex_t lw_ev;

/* The links (UEPOLL_PROVIDER_CONFIG, comma-separated key=value).  Each
 * configure returns 1 when its keys are there (and valid), 0 when none
 * are, -errno when they are wrong; each start adds its netif in lwIP's
 * thread, core lock held (0 when not configured).
 * The datagram wire (lwip_wire.c): addr, wire, peer; binds the socket.
 * The TAP link (lwip_tap.c): tap, tap_addr; checks the device opens. */
int lw_wire_configure(const char *config);
int lw_wire_start_locked(void);
int lw_tap_configure(const char *config);
int lw_tap_start_locked(void);
/* A link's netif and the kernel descriptor its frames (TAP) or packets
 * (wire) are read from.  Set by the link's configure and start; the reader
 * thread reads fd and netif once started. */
enum { LW_LINK_FRAME_MAX = 1518 }; /* 1500 bytes of IP, the Ethernet header, a VLAN tag */
struct lw_link {
  struct netif netif;
  int fd;           /* -1 until the link is configured (wire) or started (TAP) */
  size_t frame_max; /* immutable: the longest read, at most LW_LINK_FRAME_MAX */
};
/* In lwIP's thread, core lock held: adds l->netif (addr and mask, no
 * gateway, set up by init, input tcpip_input), marks it link-up and up, then
 * starts a detached thread reading l->fd into it.  0, -ENOMEM (netif_add
 * failed) or -EAGAIN (no thread). */
int lw_link_start_locked(struct lw_link *l, const ip4_addr_t *addr, const ip4_addr_t *mask, netif_init_fn init);
/* The value of key in config (1), none (0), or -ENAMETOOLONG. */
int lw_config_get(const char *config, const char *key, char *out, size_t n);
/* "A.B.C.D/P" (P 1..30, default 24; text is changed) as address and mask. */
int lw_addr_prefix(char *text, ip4_addr_t *addr, ip4_addr_t *mask);

/* The stack: configured by uep_provider_init (0 or -errno: the launch
 * stops), started at the process's first socket() (lw_stack_ensure: 0, or
 * -ENETDOWN in a child forked after the start, or the start's -errno). */
int lw_stack_configure(const char *config);
int lw_stack_ensure(void);
/* Non-zero after fork in the child: the stack's thread is gone. */
int lw_stack_dead(void);
void lw_stack_at_fork(int phase);

/* A record for conn (slot registered, conn->socket set, locks made).
 * accepted: conn came from netconn_accept (its events before now are
 * folded in); dgram: a UDP netconn.  NULL on ENOMEM. */
struct lw_sock *lw_sock_new(struct netconn *conn, int accepted, int dgram);
/* Unregisters, deletes the netconn, frees (release). */
void lw_sock_free(struct lw_sock *s);
/* Publishes s->file (after uep_file_create) and the current mask. */
void lw_sock_attach(struct lw_sock *s, struct uep_file *file);

/* Under lw_ev: the EPOLL* mask of s; give it to uepoll if it changed. */
uint32_t lw_mask_locked(const struct lw_sock *s);
int lw_avail_locked(const struct lw_sock *s);
void lw_publish_locked(struct lw_sock *s);

/* The netconn event callback given to netconn_new_with_callback. */
void lw_event(struct netconn *conn, enum netconn_evt evt, u16_t len);

/* lwIP's err_t as a positive errno (Linux's answers). */
int lw_errno(err_t err);

/* Shared by the TCP (lwip_sock.c) and UDP (lwip_udp.c) operations. */
extern const struct uep_file_operations lw_tcp_ops, lw_udp_ops;
int lw_addr_in(const struct sockaddr *a, socklen_t len, ip_addr_t *ip, u16_t *port);
void lw_addr_out(const ip_addr_t *ip, u16_t port, struct sockaddr *a, socklen_t *len);
enum lw_state lw_state_of(struct lw_sock *s);
/* iovecs before the first NULL / first-page buffer; -EFAULT if none. */
int lw_usable_iov(const struct iovec *iov, int iovcnt, size_t *total);
ssize_t lw_epipe(int flags); /* -EPIPE, and SIGPIPE without MSG_NOSIGNAL */
int lw_getsockname(void *ctx, struct sockaddr *a, socklen_t *len);
int lw_getpeername(void *ctx, struct sockaddr *a, socklen_t *len);
int lw_getsockopt(void *ctx, int level, int name, void *val, socklen_t *len);
int lw_setsockopt(void *ctx, int level, int name, const void *val, socklen_t len);
void lw_release(void *ctx);

#endif
