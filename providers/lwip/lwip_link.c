/*
 * lwip_link.c - what the lwIP provider's links to other stacks share
 * (providers/lwip/: the datagram wire, lwip_wire.c, and the TAP link,
 * lwip_tap.c): adding a link's netif and starting the reader thread that
 * hands each frame or packet read from the link's kernel descriptor to
 * lwIP's thread (the netif's input, tcpip_input).
 *
 * Locks: none of ours; lw_link_start_locked runs in lwIP's thread under its
 * core lock (lwip_stack.c).  The reader takes no lock: netif input queues
 * the pbuf for lwIP's thread.
 */
#define _GNU_SOURCE
#include "lwip_provider.h"

#include <errno.h>
#include <pthread.h>
#include <unistd.h>

#include <lwip/pbuf.h>
#include <lwip/tcpip.h>

/* The link's reader: one frame or packet a read, of at most frame_max
 * bytes, in a PBUF_RAM pbuf of its size; nothing after fork in the child
 * (the stack's thread is gone).  Ends when the descriptor fails. */
static void *link_reader(void *arg) {
  struct lw_link *l = arg;
  char buf[LW_LINK_FRAME_MAX];
  for (;;) {
    ssize_t n = read(l->fd, buf, l->frame_max);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return NULL;
    if (n == 0 || lw_stack_dead()) continue;
    struct pbuf *p = pbuf_alloc(PBUF_RAW, (u16_t)n, PBUF_RAM);
    if (!p) continue;
    pbuf_take(p, buf, (u16_t)n);
    if (l->netif.input(p, &l->netif) != ERR_OK) pbuf_free(p);
  }
}

int lw_link_start_locked(struct lw_link *l, const ip4_addr_t *addr, const ip4_addr_t *mask, netif_init_fn init) {
  ip4_addr_t gw;
  ip4_addr_set_zero(&gw);
  if (!netif_add(&l->netif, addr, mask, &gw, NULL, init, tcpip_input)) return -ENOMEM;
  netif_set_link_up(&l->netif);
  netif_set_up(&l->netif);
  pthread_t t;
  if (pthread_create(&t, NULL, link_reader, l)) return -EAGAIN;
  pthread_detach(t);
  return 0;
}
