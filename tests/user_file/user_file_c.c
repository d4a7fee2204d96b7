/* user_file_c.c - the user-defined file API from strict C99 (built with
 * -pedantic -Werror): a one-slot mailbox written with uep_file_open, watched
 * edge-triggered, read and written through uep_read / uep_write, closed,
 * released once.  Exits 0, or 1 with the failed check. */
#define _GNU_SOURCE
#include <uepoll/uepoll.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>

struct mailbox {
  int full;           /* single-threaded here: no lock needed */
  char msg[32];
  size_t len;
  int releases;
  struct uep_file *h;
};

static uint32_t mb_poll(void *ctx) {
  struct mailbox *m = ctx;
  return m->full ? EPOLLIN | EPOLLRDNORM : EPOLLOUT | EPOLLWRNORM;
}
static ssize_t mb_read(void *ctx, void *buf, size_t len) {
  struct mailbox *m = ctx;
  size_t n;
  if (!m->full) {
    errno = EAGAIN;
    return -1;
  }
  n = m->len < len ? m->len : len;
  memcpy(buf, m->msg, n);
  m->full = 0;
  uep_file_wake(m->h, EPOLLOUT | EPOLLWRNORM);
  return (ssize_t)n;
}
static ssize_t mb_write(void *ctx, const void *buf, size_t len) {
  struct mailbox *m = ctx;
  if (m->full) {
    errno = EAGAIN;
    return -1;
  }
  if (len > sizeof m->msg) {
    errno = EMSGSIZE;
    return -1;
  }
  memcpy(m->msg, buf, len);
  m->len = len;
  m->full = 1;
  uep_file_wake(m->h, EPOLLIN | EPOLLRDNORM);
  return (ssize_t)len;
}
static void mb_release(void *ctx) { ((struct mailbox *)ctx)->releases++; }

#define CHECK(c)                                   \
  do {                                             \
    if (!(c)) {                                    \
      fprintf(stderr, "FAILED: %s (line %d)\n", #c, __LINE__); \
      return 1;                                    \
    }                                              \
  } while (0)

int main(void) {
  static const struct uep_file_ops ops = {mb_poll, mb_read, mb_write, mb_release};
  struct mailbox m;
  struct epoll_event ev, out[4];
  char buf[64];
  int fd, ep;
  memset(&m, 0, sizeof m);
  fd = uep_file_open(&ops, &m, O_NONBLOCK | O_CLOEXEC, &m.h);
  CHECK(fd >= UEP_FD_BASE);
  ep = uep_epoll_create1(0);
  memset(&ev, 0, sizeof ev);
  ev.events = EPOLLIN | EPOLLOUT | EPOLLET;
  ev.data.u32 = 7;
  CHECK(uep_epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) == 0);
  CHECK(uep_epoll_wait(ep, out, 4, 0) == 1 && out[0].events == EPOLLOUT);
  CHECK(uep_epoll_wait(ep, out, 4, 0) == 0);
  CHECK(uep_write(fd, "hi", 2) == 2);
  CHECK(uep_epoll_wait(ep, out, 4, 0) == 1 && out[0].events == EPOLLIN && out[0].data.u32 == 7);
  CHECK(uep_write(fd, "again", 5) == -1 && errno == EAGAIN);
  CHECK(uep_read(fd, buf, sizeof buf) == 2 && memcmp(buf, "hi", 2) == 0);
  CHECK(uep_read(fd, buf, sizeof buf) == -1 && errno == EAGAIN);
  CHECK(uep_write(fd, buf, 40) == -1 && errno == EMSGSIZE);
  CHECK(uep_epoll_wait(ep, out, 4, 0) == 1 && out[0].events == EPOLLOUT);
  CHECK(uep_close(fd) == 0 && m.releases == 1);
  uep_file_wake(m.h, EPOLLIN); /* after the close: nothing */
  uep_file_unref(m.h);
  CHECK(uep_epoll_wait(ep, out, 4, 0) == 0);
  CHECK(uep_close(ep) == 0 && m.releases == 1);
  puts("user_file_c: OK");
  return 0;
}
