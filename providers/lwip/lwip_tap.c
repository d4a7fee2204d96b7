/*
 * lwip_tap.c - the lwIP provider's TAP link (providers/lwip/): an
 * Ethernet netif on a kernel TAP device, so that kernel programs reach the
 * lwIP stack (typically inside a network namespace the caller made:
 * `unshare -n`, `ip tuntap add dev tap0 mode tap`, an address on it,
 * `ip link set tap0 up`).
 *
 *   UEPOLL_PROVIDER_CONFIG="tap=tap0,tap_addr=10.8.0.2/24"
 *
 * tap: the device (it must exist, or the caller must be allowed to make
 * it; the provider configures nothing on the kernel side); tap_addr: this
 * stack's address and prefix on it.  A device that cannot be had refuses
 * the launch (configure checks it).
 *
 * The driver is the provider's own (this file and the reader thread of
 * lwip_link.c), not the tapif Debian's liblwip ships: that
 * one reads each frame into PBUF_POOL pbufs and, in this build
 * (MEMP_MEM_MALLOC), writes a 1514-byte frame past the end of a 616-byte
 * block (valgrind: pbuf_take from its reader thread), corrupting the heap
 * at the first full-size segment.  Here one reader thread reads each frame
 * into a PBUF_RAM pbuf of its size and hands it to lwIP's thread
 * (tcpip_input: ethernet_input, ARP included); output (etharp_output, then
 * linkoutput) writes each frame with one write, in lwIP's thread or a
 * program's thread inside a netconn call, under the core lock.
 *
 * Locks: none of ours; the netif is added in lwIP's thread under its core
 * lock (lwip_stack.c).
 */
#define _GNU_SOURCE
#include "lwip_provider.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <lwip/etharp.h>
#include <lwip/netif.h>
#include <lwip/pbuf.h>

static struct lw_link tap_link = {.fd = -1, .frame_max = LW_LINK_FRAME_MAX};
static char tap_name[IFNAMSIZ]; /* set by configure: the link is wanted */
static ip4_addr_t tap_addr, tap_mask;

/* Opens the TAP device `name` (a kernel descriptor, close-on-exec). */
static int tap_open(const char *name) {
  int fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC);
  if (fd < 0) return -errno;
  struct ifreq ifr;
  memset(&ifr, 0, sizeof ifr);
  const size_t n = strlen(name);
  if (n >= sizeof ifr.ifr_name) {
    close(fd);
    return -EINVAL;
  }
  memcpy(ifr.ifr_name, name, n); /* zero-terminated: ifr is zeroed */
  ifr.ifr_flags = IFF_TAP | IFF_NO_PI;
  if (ioctl(fd, TUNSETIFF, &ifr) < 0) {
    int e = errno;
    close(fd);
    return -e;
  }
  return fd;
}

/* The device is opened once here to check it can be had, and closed: the
 * stack opens it again when it starts (a process that never makes a
 * socket, a shell on the way to the program, does not hold it; a TAP
 * device takes one reader at a time). */
int lw_tap_configure(const char *config) {
  char addr[64];
  int t = lw_config_get(config, "tap", tap_name, sizeof tap_name), a = lw_config_get(config, "tap_addr", addr, sizeof addr);
  if (t < 0 || a < 0) return -ENAMETOOLONG;
  if (!t && !a) return 0;
  if (!t || !a || !tap_name[0] || lw_addr_prefix(addr, &tap_addr, &tap_mask)) return -EINVAL;
  int fd = tap_open(tap_name);
  if (fd < 0) return fd;
  close(fd);
  return 1;
}

static err_t tap_linkoutput(struct netif *nif, struct pbuf *p) {
  (void)nif;
  char buf[LW_LINK_FRAME_MAX];
  if (p->tot_len > sizeof buf) return ERR_BUF;
  pbuf_copy_partial(p, buf, p->tot_len, 0);
  (void)write(tap_link.fd, buf, p->tot_len); /* a full device queue drops, as a wire does */
  return ERR_OK;
}

static err_t tap_init(struct netif *nif) {
  nif->name[0] = 't';
  nif->name[1] = 'p';
  nif->output = etharp_output;
  nif->linkoutput = tap_linkoutput;
  nif->mtu = 1500;
  nif->hwaddr_len = 6;
  /* a locally administered address, different in each process */
  const unsigned pid = (unsigned)getpid();
  const u8_t mac[6] = {0x02, 0x75, 0x65, (u8_t)(pid >> 16), (u8_t)(pid >> 8), (u8_t)pid};
  memcpy(nif->hwaddr, mac, sizeof mac);
  nif->flags = NETIF_FLAG_BROADCAST | NETIF_FLAG_ETHARP | NETIF_FLAG_ETHERNET;
  return ERR_OK;
}

int lw_tap_start_locked(void) {
  if (!tap_name[0]) return 0;
  if ((tap_link.fd = tap_open(tap_name)) < 0) return tap_link.fd;
  return lw_link_start_locked(&tap_link, &tap_addr, &tap_mask, tap_init);
}
