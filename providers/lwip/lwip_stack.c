/*
 * lwip_stack.c - the lwIP provider's stack side (providers/lwip/): starts
 * lwIP's tcpip thread with a loopback netif of its own (127.0.0.1/8, every
 * packet looped back: Debian's lwIP is built without LWIP_HAVE_LOOPIF),
 * and, when UEPOLL_PROVIDER_CONFIG asks for one, the datagram wire of
 * lwip_wire.c; turns netconn events into uepoll readiness, keeps the table that
 * leads from a netconn to its socket record.
 *
 * Readiness is pushed (UEP_FILE_PUSH): lw_event runs in lwIP's thread
 * under the core lock, or in a program's thread inside a netconn call, and
 * updates the record under lw_ev, then hands the whole new mask to
 * uep_file_set_mask.  It never calls into lwIP (the core lock is not
 * recursive) and never calls a netconn function.
 *
 * A netconn that has no record yet (accepted by lwIP, not yet by the
 * program) keeps its early events in netconn.socket, as lwIP's own socket
 * layer does: -1 - (2 * receive events + fin).
 *
 * Locks: lw_ev (lwip_provider.h); lwIP's core lock around netif set-up and
 * fork.
 */
#define _GNU_SOURCE
#include "lwip_provider.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include <lwip/err.h>
#include <lwip/ip.h>
#include <lwip/netbuf.h>
#include <lwip/netif.h>
#include <lwip/tcpip.h>

pthread_mutex_t lw_ev = PTHREAD_MUTEX_INITIALIZER;

/* ---- the slot table: netconn.socket -> record (lw_ev) ---------------------------- */
static struct lw_sock **slots;
static int nslots, free_hint;

static int slot_take_locked(struct lw_sock *s) {
  for (int i = free_hint; i < nslots; ++i)
    if (!slots[i]) {
      slots[i] = s;
      free_hint = i + 1;
      return i;
    }
  int n = nslots ? nslots * 2 : 64;
  struct lw_sock **t = realloc(slots, (size_t)n * sizeof *t);
  if (!t) return -1;
  memset(t + nslots, 0, (size_t)(n - nslots) * sizeof *t);
  int i = nslots;
  slots = t;
  nslots = n;
  slots[i] = s;
  free_hint = i + 1;
  return i;
}

static struct lw_sock *slot_get_locked(int i) { return i >= 0 && i < nslots ? slots[i] : NULL; }

/* ---- readiness ------------------------------------------------------------------------ */
uint32_t lw_mask_locked(const struct lw_sock *s) {
  const uint32_t in = EPOLLIN | EPOLLRDNORM, out = EPOLLOUT | EPOLLWRNORM;
  if (s->dgram) /* Linux datagram_poll: readable while a datagram waits, always writable */
    return (s->rcv_events > 0 || s->peeked || s->rx_hold ? in : 0) | out | EPOLLWRBAND;
  switch (s->state) {
    case LW_LISTEN: return s->rcv_events > 0 ? in : 0;
    case LW_NEW: return out | EPOLLHUP; /* Linux tcp_poll: TCP_CLOSE */
    case LW_CONNECTING: return 0;
    case LW_FAILED: return in | EPOLLRDHUP | out | EPOLLHUP; /* EPOLLERR: uepoll's */
    case LW_CONNECTED: break;
  }
  uint32_t m = 0;
  int rd_done = s->fin || s->rd_shut || s->closed;
  /* SO_RCVLOWAT (Linux tcp_stream_is_readable): readable from lowat bytes */
  int lowat_ok = s->rcvlowat <= 1 || lw_avail_locked(s) >= s->rcvlowat;
  if ((s->rcv_events > 0 || s->has_left || s->rx_hold) && lowat_ok) m |= in;
  if (rd_done) m |= in | EPOLLRDHUP;
  if (s->sendable || s->wr_shut || s->closed) m |= out;
  if (rd_done && (s->wr_shut || s->closed)) m |= EPOLLHUP;
  return m;
}

/* A new mask wakes for the bits that rose (uep_file_set_mask); an arrival
 * (data, a datagram, a connection, the FIN) wakes with its own key even
 * when EPOLLIN was already set, as Linux's sk_data_ready (EPOLLIN) and
 * sk_state_change (every waiter) do: an edge-triggered watcher sees each
 * arrival, and a MSG_PEEK|MSG_WAITALL sleeper sees the data grow. */
static void publish_locked(struct lw_sock *s, int arrival, uint32_t key) {
  if (!s->file) return;
  if (s->pending_err) {
    uep_file_set_error(s->file, s->pending_err);
    s->pending_err = 0;
  }
  uint32_t m = lw_mask_locked(s);
  if (arrival) {
    s->shown = m;
    uep_file_notify_mask(s->file, m, key);
  } else if (m != s->shown) {
    s->shown = m;
    uep_file_set_mask(s->file, m);
  }
}

void lw_publish_locked(struct lw_sock *s) { publish_locked(s, 0, 0); }

int lw_errno(err_t err) {
  switch (err) {
    case ERR_OK: return 0;
    case ERR_WOULDBLOCK: return EAGAIN;
    case ERR_RTE: return ENETUNREACH;
    case ERR_CLSD: return ENOTCONN;
    default: return err_to_errno(err);
  }
}

/* The connection ended: how it ended, from netconn.pending_err. */
static void on_error_locked(struct lw_sock *s, err_t err) {
  if (err == ERR_CLSD) {
    s->closed = 1;
    return;
  }
  int e = s->state == LW_CONNECTING && err == ERR_RST ? ECONNREFUSED : lw_errno(err);
  s->state = LW_FAILED;
  s->pending_err = e ? e : ECONNABORTED;
}

void lw_event(struct netconn *conn, enum netconn_evt evt, u16_t len) {
  pthread_mutex_lock(&lw_ev);
  struct lw_sock *s = slot_get_locked(conn->socket);
  if (!s) {
    if (conn->socket < 0 && evt == NETCONN_EVT_RCVPLUS) {
      int v = -1 - conn->socket;
      v += 2;
      if (len == 0) v |= 1;
      conn->socket = -1 - v;
    }
    pthread_mutex_unlock(&lw_ev);
    return;
  }
  int arrival = 0;
  uint32_t key = EPOLLIN | EPOLLRDNORM;
  switch (evt) {
    case NETCONN_EVT_RCVPLUS:
      ++s->rcv_events;
      arrival = 1;
      if (len == 0 && s->state != LW_LISTEN && !s->dgram) { /* UDP: an empty datagram */
        s->fin = 1;
        key = 0; /* sk_state_change: every waiter */
      }
      break;
    case NETCONN_EVT_RCVMINUS: --s->rcv_events; break;
    case NETCONN_EVT_SENDPLUS:
      s->sendable = 1;
      ++s->send_gen;
      if (s->state == LW_CONNECTING) s->state = LW_CONNECTED;
      break;
    case NETCONN_EVT_SENDMINUS: s->sendable = 0; break;
    case NETCONN_EVT_ERROR: on_error_locked(s, conn->pending_err); break;
  }
  publish_locked(s, arrival, key);
  pthread_mutex_unlock(&lw_ev);
}

/* ---- records ---------------------------------------------------------------------------- */
struct lw_sock *lw_sock_new(struct netconn *conn, int accepted, int dgram) {
  struct lw_sock *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->conn = conn;
  s->dgram = dgram;
  pthread_mutex_init(&s->rx_mu, NULL);
  pthread_mutex_init(&s->tx_mu, NULL);
  /* The core lock orders this against lwIP's thread posting events and
   * a pending error for a connection not yet accepted. */
  if (accepted) LOCK_TCPIP_CORE();
  pthread_mutex_lock(&lw_ev);
  s->slot = slot_take_locked(s);
  if (s->slot < 0) {
    pthread_mutex_unlock(&lw_ev);
    if (accepted) UNLOCK_TCPIP_CORE();
    free(s);
    return NULL;
  }
  if (accepted) {
    int v = conn->socket < 0 ? -1 - conn->socket : 0;
    s->state = LW_CONNECTED;
    s->bound = 1;
    s->sendable = 1;
    s->rcv_events = v >> 1;
    s->fin = v & 1;
    if (conn->pending_err != ERR_OK) on_error_locked(s, conn->pending_err);
  }
  conn->socket = s->slot;
  pthread_mutex_unlock(&lw_ev);
  netconn_set_nonblocking(conn, 1); /* netconn.flags: lwIP's thread writes it too */
  if (accepted) UNLOCK_TCPIP_CORE();
  return s;
}

void lw_sock_attach(struct lw_sock *s, struct uep_file *file) {
  pthread_mutex_lock(&lw_ev);
  s->file = file;
  s->shown = ~0u; /* always publish the first mask */
  lw_publish_locked(s);
  pthread_mutex_unlock(&lw_ev);
}

void lw_sock_free(struct lw_sock *s) {
  pthread_mutex_lock(&lw_ev);
  slots[s->slot] = NULL;
  if (s->slot < free_hint) free_hint = s->slot;
  s->conn->socket = -1;
  struct uep_file *f = s->file;
  s->file = NULL;
  pthread_mutex_unlock(&lw_ev);
  if (s->left) pbuf_free(s->left);
  while (s->ahead) {
    struct lw_ahead *a = s->ahead;
    s->ahead = a->next;
    pbuf_free(a->p);
    free(a);
  }
  if (s->peeked) netbuf_delete(s->peeked);
  if (!lw_stack_dead()) netconn_delete(s->conn);
  if (f) uep_file_put(f);
  pthread_mutex_destroy(&s->rx_mu);
  pthread_mutex_destroy(&s->tx_mu);
  free(s);
}

/* ---- the stack and its loopback netif ------------------------------------------------- */
static struct netif loop_netif;
static int stack_dead;

static err_t loop_output4(struct netif *nif, struct pbuf *p, const ip4_addr_t *dst) {
  (void)dst;
  return netif_loop_output(nif, p);
}

#if LWIP_IPV6
static err_t loop_output6(struct netif *nif, struct pbuf *p, const ip6_addr_t *dst) {
  (void)dst;
  return netif_loop_output(nif, p);
}
#endif

static err_t loop_init(struct netif *nif) {
  nif->name[0] = 'l';
  nif->name[1] = 'o';
  nif->output = loop_output4;
#if LWIP_IPV6
  nif->output_ip6 = loop_output6;
#endif
  nif->mtu = 65535;
  return ERR_OK;
}

struct start_state {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int done, ok;
};

/* In lwIP's thread, with the core lock held (tcpip_init's done callback). */
static void stack_ready(void *arg) {
  struct start_state *st = arg;
  ip4_addr_t addr, mask, gw;
  IP4_ADDR(&addr, 127, 0, 0, 1);
  IP4_ADDR(&mask, 255, 0, 0, 0);
  IP4_ADDR(&gw, 0, 0, 0, 0);
  int ok = netif_add(&loop_netif, &addr, &mask, &gw, NULL, loop_init, ip_input) != NULL;
  if (ok) {
    netif_set_default(&loop_netif);
    netif_set_link_up(&loop_netif);
    netif_set_up(&loop_netif);
    ok = lw_wire_start_locked() == 0 && lw_tap_start_locked() == 0;
  }
  pthread_mutex_lock(&st->mu);
  st->ok = ok;
  st->done = 1;
  pthread_cond_signal(&st->cv);
  pthread_mutex_unlock(&st->mu);
}

/* The stack starts at the process's first socket() (lw_stack_ensure), not
 * at load: a process that forks before it uses the network (a daemon's
 * fork before its server starts) leaves the child a stack to start, and a
 * process that never makes a socket never starts lwIP's threads.
 * start_mu serialises the start with fork (lw_stack_at_fork); started and
 * start_err are guarded by it. */
static pthread_mutex_t start_mu = PTHREAD_MUTEX_INITIALIZER;
static int started, start_err;

int lw_stack_configure(const char *config) {
  if (!config || !*config) return 0;
  int w = lw_wire_configure(config);
  if (w < 0) return w;
  int t = lw_tap_configure(config);
  if (t < 0) return t;
  return w || t ? 0 : -EINVAL; /* settings, but none of ours */
}

static int stack_start_locked(void) {
  static struct start_state st = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0};
  /* lwIP picks its first ephemeral TCP and UDP ports with rand() (its
   * LWIP_RAND) inside tcpip_init: seeded per process here, or every
   * process's first connection would come from the same port, and a
   * server still holding the previous one (TIME_WAIT) aborts the next.
   * The seeding uses a state of ours (initstate), and the program's own
   * state, seeded or not, is put back after (setstate). */
  static char rand_state[64];
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  char *prog_state = initstate((unsigned)getpid() * 2654435761u ^ (unsigned)now.tv_nsec ^ (unsigned)now.tv_sec,
                               rand_state, sizeof rand_state);
  /* lwIP's threads (tcpip, the wire's reader) take no signal: they
   * inherit this mask; a signal for the process goes to its own threads. */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  tcpip_init(stack_ready, &st);
  pthread_mutex_lock(&st.mu);
  while (!st.done) pthread_cond_wait(&st.cv, &st.mu);
  pthread_mutex_unlock(&st.mu);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  setstate(prog_state);
  return st.ok ? 0 : -ENOMEM;
}

int lw_stack_ensure(void) {
  if (__atomic_load_n(&started, __ATOMIC_ACQUIRE)) return lw_stack_dead() ? -ENETDOWN : 0;
  pthread_mutex_lock(&start_mu);
  int r = start_err;
  if (!started && !r) {
    r = stack_start_locked();
    if (r) start_err = r;
    else __atomic_store_n(&started, 1, __ATOMIC_RELEASE); /* pairs with the acquire load above */
  }
  pthread_mutex_unlock(&start_mu);
  return r;
}

int lw_stack_dead(void) { return __atomic_load_n(&stack_dead, __ATOMIC_RELAXED); }

/* The provider's choice at fork (docs/design.md, "Socket providers").
 * Nobody is inside lwIP or lw_ev while the process forks.  A child forked
 * after the stack started has no lwIP thread: its copies of the sockets
 * answer ENETDOWN to every call but close (which frees the record and
 * leaves the connection to the parent), and so does a new socket(); a
 * child that only execs, or never touches the network, is unaffected.  A
 * child forked before the stack started starts its own at its first
 * socket(), with the wire socket it inherited. */
void lw_stack_at_fork(int phase) {
  switch (phase) {
    case 0: /* UEP_PROVIDER_FORK_PREPARE */
      pthread_mutex_lock(&start_mu);
      if (!started || lw_stack_dead()) return;
      LOCK_TCPIP_CORE();
      pthread_mutex_lock(&lw_ev);
      return;
    case 1: /* PARENT */
      if (started && !lw_stack_dead()) {
        pthread_mutex_unlock(&lw_ev);
        UNLOCK_TCPIP_CORE();
      }
      pthread_mutex_unlock(&start_mu);
      return;
    default: /* CHILD */
      if (started && !lw_stack_dead()) {
        __atomic_store_n(&stack_dead, 1, __ATOMIC_RELAXED);
        pthread_mutex_unlock(&lw_ev);
        UNLOCK_TCPIP_CORE();
      }
      pthread_mutex_unlock(&start_mu);
      return;
  }
}
