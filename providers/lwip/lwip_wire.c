/*
 * lwip_wire.c - the lwIP provider's link between processes
 * (providers/lwip/): a second netif whose IPv4 packets travel as datagrams
 * of a kernel AF_UNIX socket to one peer process running the provider too
 * (a "datagram wire": nothing leaves the machine, no privilege needed).
 *
 *   UEPOLL_PROVIDER_CONFIG="addr=10.7.0.1/24,wire=/tmp/a.sock,peer=/tmp/b.sock"
 *
 * addr: this stack's address and prefix on the wire; wire: the socket path
 * this process binds (replaced if it exists); peer: the path of the other
 * process's wire.  A packet the peer is not there to take is dropped (TCP
 * retransmits); one its full queue cannot take yet waits up to 50 ms.  One
 * reader thread per process (lwip_link.c) takes datagrams and hands them to
 * lwIP's thread (tcpip_input).
 *
 * Locks: none of ours; netif set-up runs in lwIP's thread under its core
 * lock (lwip_stack.c), output runs there too.
 */
#define _GNU_SOURCE
#include "lwip_provider.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <lwip/ip4_addr.h>
#include <lwip/netif.h>
#include <lwip/pbuf.h>

enum { kWireMtu = 1500 };
_Static_assert((int)kWireMtu <= (int)LW_LINK_FRAME_MAX, "the reader reads into LW_LINK_FRAME_MAX bytes");

static struct lw_link wire_link = {.fd = -1, .frame_max = kWireMtu};
static struct sockaddr_un wire_peer;
static ip4_addr_t wire_addr, wire_mask;

/* "key=value" in a comma-separated list: copies value into out. */
int lw_config_get(const char *config, const char *key, char *out, size_t n) {
  size_t klen = strlen(key);
  for (const char *p = config; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL) {
    if (strncmp(p, key, klen) == 0 && p[klen] == '=') {
      const char *v = p + klen + 1, *end = strchr(v, ',');
      size_t len = end ? (size_t)(end - v) : strlen(v);
      if (len >= n) return -ENAMETOOLONG;
      memcpy(out, v, len);
      out[len] = 0;
      return 1;
    }
  }
  return 0;
}

static int unix_addr(const char *path, struct sockaddr_un *sun) {
  memset(sun, 0, sizeof *sun);
  sun->sun_family = AF_UNIX;
  if (!*path || strlen(path) >= sizeof sun->sun_path) return -EINVAL;
  strcpy(sun->sun_path, path);
  return 0;
}

int lw_wire_configure(const char *config) {
  char addr[64], wire[sizeof wire_peer.sun_path], peer[sizeof wire_peer.sun_path];
  int a = lw_config_get(config, "addr", addr, sizeof addr), w = lw_config_get(config, "wire", wire, sizeof wire),
      p = lw_config_get(config, "peer", peer, sizeof peer);
  if (a < 0 || w < 0 || p < 0) return -ENAMETOOLONG;
  if (!a && !w && !p) return 0;       /* no wire */
  if (!a || !w || !p) return -EINVAL; /* all three or none */
  if (lw_addr_prefix(addr, &wire_addr, &wire_mask)) return -EINVAL;
  struct sockaddr_un self;
  if (unix_addr(wire, &self) || unix_addr(peer, &wire_peer)) return -EINVAL;
  int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -errno;
  unlink(wire);
  if (bind(fd, (struct sockaddr *)&self, sizeof self) < 0) {
    int e = errno;
    close(fd);
    return -e;
  }
  struct timeval tmo = {0, 50000}; /* wire_output4's longest wait */
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tmo, sizeof tmo);
  wire_link.fd = fd;
  return 1;
}

int lw_addr_prefix(char *text, ip4_addr_t *addr, ip4_addr_t *mask) {
  char *slash = strchr(text, '/');
  int prefix = 24;
  if (slash) {
    *slash = 0;
    prefix = atoi(slash + 1);
    if (prefix < 1 || prefix > 30) return -EINVAL;
  }
  if (!ip4addr_aton(text, addr)) return -EINVAL;
  ip4_addr_set_u32(mask, lwip_htonl(0xffffffffu << (32 - prefix)));
  return 0;
}

static err_t wire_output4(struct netif *nif, struct pbuf *p, const ip4_addr_t *dst) {
  (void)nif;
  (void)dst;
  char buf[kWireMtu];
  if (p->tot_len > sizeof buf) return ERR_BUF;
  pbuf_copy_partial(p, buf, p->tot_len, 0);
  /* A full peer queue (net.unix.max_dgram_qlen, 10 by default) makes this
   * wait, up to the socket's send timeout (wire_configure): dropping there
   * would cost TCP a retransmission timeout.  The peer's reader never waits
   * for us, so the wait ends.  An absent peer drops the packet at once. */
  (void)sendto(wire_link.fd, buf, p->tot_len, MSG_NOSIGNAL, (struct sockaddr *)&wire_peer, sizeof wire_peer);
  return ERR_OK;
}

static err_t wire_init(struct netif *nif) {
  nif->name[0] = 'w';
  nif->name[1] = 'i';
  nif->output = wire_output4;
  nif->mtu = kWireMtu;
  return ERR_OK;
}

/* In lwIP's thread, core lock held: the netif, then its reader. */
int lw_wire_start_locked(void) {
  if (wire_link.fd < 0) return 0;
  return lw_link_start_locked(&wire_link, &wire_addr, &wire_mask, wire_init);
}
