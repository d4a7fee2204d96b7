/*
 * lwip_provider.c - the lwIP provider's entry points (providers/lwip/):
 * uep_provider_init (<uepoll/provider.h>) reads the configuration once
 * (the stack starts at the first socket()), and the provider's socket() serves AF_INET SOCK_STREAM (lwip_sock.c) and
 * SOCK_DGRAM (lwip_udp.c) sockets; every other family and type is
 * declined, so it stays the kernel's.
 *
 * Locks: none of its own (lw_sock_new / lw_sock_attach take lw_ev).
 */
#define _GNU_SOURCE
#include "lwip_provider.h"

#include <errno.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include <uepoll/provider.h>

static int lw_socket(int family, int type, int protocol, int *fd) {
  int base = type & ~(SOCK_NONBLOCK | SOCK_CLOEXEC);
  int tcp = base == SOCK_STREAM && (protocol == 0 || protocol == IPPROTO_TCP);
  int udp = base == SOCK_DGRAM && (protocol == 0 || protocol == IPPROTO_UDP);
  if (family != AF_INET || (!tcp && !udp)) return UEP_PROVIDER_DECLINE;
  int r = lw_stack_ensure();
  if (r) return r;
  struct netconn *nc = netconn_new_with_callback(tcp ? NETCONN_TCP : NETCONN_UDP, lw_event);
  if (!nc) return -ENOBUFS;
  struct lw_sock *s = lw_sock_new(nc, 0, udp);
  if (!s) {
    netconn_delete(nc);
    return -ENOMEM;
  }
  pthread_mutex_lock(&lw_ev);
  uint32_t initial = lw_mask_locked(s);
  pthread_mutex_unlock(&lw_ev);
  struct uep_file *f;
  int u = uep_file_create(tcp ? &lw_tcp_ops : &lw_udp_ops, s, type & (SOCK_NONBLOCK | SOCK_CLOEXEC), initial, &f);
  if (u < 0) {
    int err = errno;
    lw_sock_free(s);
    return -err;
  }
  lw_sock_attach(s, f);
  *fd = u;
  return 0;
}

static const struct uep_provider lw_provider = {
    .size = sizeof(struct uep_provider),
    .name = "lwip",
    .socket = lw_socket,
    .at_fork = lw_stack_at_fork,
    .fini = NULL,
};

__attribute__((visibility("default"))) const struct uep_provider *uep_provider_init(const char *config) {
  static int started; /* once per process: the preload calls it once */
  if (!started) {
    int r = lw_stack_configure(config);
    if (r) {
      errno = -r;
      return NULL;
    }
    started = 1;
  }
  return &lw_provider;
}
