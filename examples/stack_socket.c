/*
 * stack_socket.c - how a user-space network stack makes its sockets uepoll
 * files (<uepoll/file.h>): a stack author's starting point.
 *
 * The "stack" here is a toy: connected socket pairs whose bytes travel
 * through the stack's own thread (as a real stack's TCP input would), all
 * of its state under ONE non-recursive pthread mutex, the stack lock.  What
 * carries over to a real stack:
 *   - readiness is pushed (UEP_FILE_PUSH): the stack calls
 *     uep_file_set_mask / uep_file_notify with the stack lock held, from
 *     its own thread or from inside an operation; uepoll never calls back
 *     into the stack from a wake, so that cannot deadlock;
 *   - operations take the stack lock, never sleep, and return -EAGAIN:
 *     blocking (and O_NONBLOCK, MSG_DONTWAIT, SO_RCVTIMEO) is uepoll's;
 *   - errors that belong to no call go through uep_file_set_error
 *     (the next call returns it, SO_ERROR reads it, EPOLLERR meanwhile);
 *   - release runs when the program closes the socket (never in a wake or
 *     a uep_file_put): it takes the stack lock and tears the socket down.
 * The program side is plain epoll + socket calls on the descriptors.
 * Prints "stack_socket: ok" and exits 0.
 */
#define _GNU_SOURCE
#include <uepoll/file.h>
#include <uepoll/uepoll.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#define BUF 4096

struct ssock {
  char rx[BUF];            /* received, not yet read (stack lock) */
  size_t rx_len;
  char tx[BUF];            /* written, not yet carried by the stack thread */
  size_t tx_len;
  struct ssock *peer;      /* NULL once the peer is released */
  int peer_closed;
  struct uep_file *h;      /* the uepoll file's handle */
};

static pthread_mutex_t stack_lock = PTHREAD_MUTEX_INITIALIZER; /* not recursive */
static pthread_cond_t stack_work = PTHREAD_COND_INITIALIZER;
static int stack_stop;

/* The mask of s as the stack sees it; stack lock held. */
static uint32_t mask_locked(const struct ssock *s) {
  uint32_t m = 0;
  if (s->rx_len) m |= EPOLLIN | EPOLLRDNORM;
  if (s->peer_closed) m |= EPOLLIN | EPOLLRDHUP | EPOLLHUP;
  if (s->tx_len < BUF && !s->peer_closed) m |= EPOLLOUT | EPOLLWRNORM;
  return m;
}

static ssize_t op_read(void *ctx, const struct iovec *iov, int n, const struct uep_file_call *call) {
  struct ssock *s = ctx;
  size_t done = 0;
  (void)call;
  pthread_mutex_lock(&stack_lock);
  if (!s->rx_len) {
    ssize_t r = s->peer_closed ? 0 : -EAGAIN; /* uepoll sleeps for us */
    pthread_mutex_unlock(&stack_lock);
    return r;
  }
  for (int i = 0; i < n && done < s->rx_len; ++i) {
    size_t k = iov[i].iov_len < s->rx_len - done ? iov[i].iov_len : s->rx_len - done;
    memcpy(iov[i].iov_base, s->rx + done, k);
    done += k;
  }
  memmove(s->rx, s->rx + done, s->rx_len - done);
  s->rx_len -= done;
  uep_file_set_mask(s->h, mask_locked(s)); /* EPOLLIN may go away: lock held */
  pthread_mutex_unlock(&stack_lock);
  return (ssize_t)done;
}

static ssize_t op_write(void *ctx, const struct iovec *iov, int n, const struct uep_file_call *call) {
  struct ssock *s = ctx;
  size_t done = 0;
  (void)call;
  pthread_mutex_lock(&stack_lock);
  if (s->peer_closed) {
    pthread_mutex_unlock(&stack_lock);
    return -EPIPE;
  }
  for (int i = 0; i < n && s->tx_len < BUF; ++i) {
    size_t k = iov[i].iov_len < BUF - s->tx_len ? iov[i].iov_len : BUF - s->tx_len;
    memcpy(s->tx + s->tx_len, iov[i].iov_base, k);
    s->tx_len += k;
    done += k;
  }
  uep_file_set_mask(s->h, mask_locked(s));
  pthread_cond_signal(&stack_work);
  pthread_mutex_unlock(&stack_lock);
  return done ? (ssize_t)done : -EAGAIN;
}

static ssize_t op_sendmsg(void *ctx, const struct msghdr *m, const struct uep_file_call *call) {
  return op_write(ctx, m->msg_iov, (int)m->msg_iovlen, call);
}

static ssize_t op_recvmsg(void *ctx, struct msghdr *m, const struct uep_file_call *call) {
  ssize_t r = op_read(ctx, m->msg_iov, (int)m->msg_iovlen, call);
  m->msg_namelen = 0;
  m->msg_controllen = 0;
  m->msg_flags = 0;
  return r;
}

static void op_release(void *ctx) {
  struct ssock *s = ctx;
  pthread_mutex_lock(&stack_lock); /* allowed: release never runs in a wake */
  if (s->peer) {
    s->peer->peer = NULL;
    s->peer->peer_closed = 1;
    uep_file_set_mask(s->peer->h, mask_locked(s->peer));
  }
  pthread_mutex_unlock(&stack_lock);
  uep_file_put(s->h);
  free(s);
}

static const struct uep_file_operations ssock_ops = {
    .size = sizeof(struct uep_file_operations),
    .flags = UEP_FILE_PUSH | UEP_FILE_STREAM,
    .sock_family = AF_INET,
    .sock_type = SOCK_STREAM,
    .read_iter = op_read,
    .write_iter = op_write,
    .sendmsg = op_sendmsg,
    .recvmsg = op_recvmsg,
    .release = op_release,
};

/* The stack's thread: carries tx bytes to the peer's rx, as TCP input. */
static void *stack_main(void *arg) {
  struct ssock **all = arg;
  pthread_mutex_lock(&stack_lock);
  while (!stack_stop) {
    for (int i = 0; i < 2; ++i) {
      struct ssock *s = all[i];
      if (!s || !s->peer || !s->tx_len) continue;
      size_t room = BUF - s->peer->rx_len, k = s->tx_len < room ? s->tx_len : room;
      memcpy(s->peer->rx + s->peer->rx_len, s->tx, k);
      s->peer->rx_len += k;
      memmove(s->tx, s->tx + k, s->tx_len - k);
      s->tx_len -= k;
      /* Wakes with the stack lock held, from the stack's own thread. */
      uep_file_notify(s->peer->h, EPOLLIN | EPOLLRDNORM);
      uep_file_set_mask(s->h, mask_locked(s));
    }
    pthread_cond_wait(&stack_work, &stack_lock);
  }
  pthread_mutex_unlock(&stack_lock);
  return NULL;
}

static int fail(const char *what) {
  fprintf(stderr, "stack_socket: %s: %s\n", what, strerror(errno));
  return 1;
}

int main(void) {
  static struct ssock *all[2];
  struct ssock *a = calloc(1, sizeof *a), *b = calloc(1, sizeof *b);
  a->peer = b;
  b->peer = a;
  const uint32_t writable = EPOLLOUT | EPOLLWRNORM;
  int fa = uep_file_create(&ssock_ops, a, 0, writable, &a->h);
  int fb = uep_file_create(&ssock_ops, b, SOCK_NONBLOCK, writable, &b->h);
  if (fa < 0 || fb < 0) return fail("uep_file_create");
  all[0] = a;
  all[1] = b;
  pthread_t stack;
  pthread_create(&stack, NULL, stack_main, all);

  /* The program: epoll over a stack socket, edge-triggered. */
  int ep = uep_epoll_create1(0);
  struct epoll_event ev = {.events = EPOLLIN | EPOLLET, .data.fd = fb};
  if (uep_epoll_ctl(ep, EPOLL_CTL_ADD, fb, &ev) < 0) return fail("epoll_ctl");
  if (uep_send(fa, "hello", 5, 0) != 5) return fail("send");
  struct epoll_event out;
  if (uep_epoll_wait(ep, &out, 1, 5000) != 1 || out.data.fd != fb) return fail("epoll_wait");
  char buf[64];
  ssize_t n = uep_recv(fb, buf, sizeof buf, 0);
  if (n != 5 || memcmp(buf, "hello", 5) != 0) return fail("recv");
  if (uep_recv(fb, buf, sizeof buf, 0) != -1 || errno != EAGAIN) return fail("recv (empty, O_NONBLOCK)");

  /* A blocking read on fa: uepoll sleeps until the stack's notify. */
  if (uep_write(fb, "back", 4) != 4) return fail("write");
  n = uep_read(fa, buf, sizeof buf);
  if (n != 4 || memcmp(buf, "back", 4) != 0) return fail("blocking read");

  /* An error that belongs to no call: SO_ERROR reads it once. */
  uep_file_set_error(a->h, ECONNRESET);
  int err = 0;
  socklen_t len = sizeof err;
  if (uep_getsockopt(fa, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != ECONNRESET) return fail("SO_ERROR");

  /* Closing fb releases b (in this thread); fa then sees the hang-up. */
  pthread_mutex_lock(&stack_lock);
  all[1] = NULL;
  pthread_mutex_unlock(&stack_lock);
  uep_close(fb);
  if (uep_read(fa, buf, sizeof buf) != 0) return fail("read at EOF");

  pthread_mutex_lock(&stack_lock);
  all[0] = NULL;
  stack_stop = 1;
  pthread_cond_signal(&stack_work);
  pthread_mutex_unlock(&stack_lock);
  pthread_join(stack, NULL);
  uep_close(fa);
  uep_close(ep);
  printf("stack_socket: ok\n");
  return 0;
}
