/*
 * fork_convert.c - before a process forks, its uepoll pipes and socket
 * pairs become kernel ones (owned by src/preload/).
 *
 * A uepoll object is process memory: after fork() each process would have
 * its own copy, and a pipe or pair made before the fork would no longer
 * connect parent and child (nginx's master/worker channel, Redis's BGSAVE
 * child-info pipe).  So fork(), vfork() and posix_spawn[p]() first turn
 * every uepoll pipe and socket pair the program shows into a kernel pipe or
 * AF_UNIX stream pair, under the same descriptor numbers:
 *
 *   1. the kernel object is made (pipe2, with O_DIRECT when the write end
 *      is packetized; socketpair AF_UNIX SOCK_STREAM);
 *   2. the bytes queued in the uepoll object are moved, in order
 *      (fork_move.c): a pipe's ring is read from its read end and written
 *      to the kernel write end (packet by packet in O_DIRECT mode); each
 *      socket's receive queue is read and written through the kernel peer;
 *   3. shutdown() state, O_NONBLOCK, O_ASYNC (set on the number, for
 *      si_fd), the owner (F_SETOWN_EX) and F_SETSIG are carried over;
 *      an end that no descriptor shows any more (closed) is closed in the
 *      kernel too, after its bytes were written (so the reader sees them,
 *      then end of file, or the writer gets EPIPE, as it did);
 *   4. each kernel end is dup3()'d onto the numbers that showed the uepoll
 *      end (replacing the placeholder; FD_CLOEXEC from the uepoll slot), so
 *      that the number is an ordinary kernel descriptor from now on;
 *   5. every registration of the uepoll end in every uepoll instance the
 *      program shows (uep__epoll_registrations: events, including a
 *      disabled EPOLLONESHOT's, and data) is deleted and made again, same events and
 *      data, on the kernel descriptor, which uepoll instances watch like any
 *      other kernel descriptor;
 *   6. the uepoll ends are closed, and the flock and record locks held
 *      through them are taken again on the kernel ends (lock_carry.c).
 *
 * A thread asleep in a call on the object (read, write, send, recv, poll,
 * select, splice...) first leaves it (uep_pl_evict_sleepers, core/handover.h) and
 * makes its call again on the kernel object once the conversion is done,
 * or the rest of it (a write that had written part).  An object with a
 * call asleep on it that cannot leave is left as it is: one the preload
 * cannot make again (one not made through its interposers: uep__sleepers'
 * `fixed`), or one that does not leave within two seconds (its thread runs
 * a signal handler that long).  The child then has a copy and says so
 * (interpose_net.c, fdmap.cpp).
 * So is a registration made under
 * a descriptor number the program has closed since (a dup'd number):
 * nothing could show it in the kernel; it is dropped with a warning.
 * What differs from Linux is listed in docs/linux-deviations.md (fork).
 *
 * Other threads may use the same descriptors meanwhile.  Once an object
 * is marked (uep_pl_evict_sleepers, before step 1), a read or write of it
 * through the interposers (a pipe's read and write, a pair's send) leaves
 * before it moves any data and is made again on the kernel object, so
 * nothing written meanwhile is lost; a splice or tee into it, a receive
 * from a pair after its bytes moved (EAGAIN) and a change of its flags
 * still race with the conversion.  Runs in the forking thread
 * before the real fork, never from the fork handlers.  Two threads never
 * convert at once, and no pipe or pair is made while a fork or spawn goes
 * from its conversions to its child (convert_mu: two conversions of one
 * pipe at once would put its two numbers on two different kernel pipes,
 * and a pipe made after the conversions would be a copy in the child).
 *
 * Locks: convert_mu (outermost, recursive), then uepoll's calls take theirs.
 */
#define _GNU_SOURCE
#include "preload/preload.h"

#include <uepoll/uepoll.h>

#include "capi/preload_support.h"
#include "preload/interpose.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* One descriptor number showing a uepoll pipe end or socket. */
struct shown {
  int n, u, kind;
  struct uep__stream_state st;
  int done; /* converted (or skipped) with its group */
};

/* Makes room for one more element in a doubling array: the array (moved or
 * not, *cap updated), or NULL when out of memory (arr still valid). */
void *uep_pl_grow_for_one(void *arr, int *cap, int used, size_t elem) {
  if (used < *cap) return arr;
  int ncap = *cap ? *cap * 2 : 16;
  void *t = realloc(arr, (size_t)ncap * elem);
  if (t) *cap = ncap;
  return t;
}

static pthread_mutex_t convert_mu = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;

void uep_pl_await_conversion(void) {
  pthread_mutex_lock(&convert_mu);
  pthread_mutex_unlock(&convert_mu);
}
void uep_pl_convert_lock(void) { pthread_mutex_lock(&convert_mu); }
void uep_pl_convert_unlock(void) { pthread_mutex_unlock(&convert_mu); }
void uep_pl_convert_lock_child(void) {
  const pthread_mutex_t fresh = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
  memcpy(&convert_mu, &fresh, sizeof fresh);
}

/* The pipes and pairs whose bytes are being moved now (a pair's in-flight
 * pipe or pair is converted from inside its move): not converted again
 * from inside.  Only the thread that holds convert_mu converts. */
enum { kMaxActive = 16 };
static unsigned long long active_conn[kMaxActive];
static int nactive;

static int is_active(unsigned long long conn) {
  for (int i = 0; i < nactive; ++i)
    if (active_conn[i] == conn) return 1;
  return 0;
}

/* The object of a registered uepoll pipe end or socket (its connection), or
 * 0 for any other descriptor. */
static unsigned long long stream_key(int tfd) {
  struct uep__stream_state st;
  return uep__stream_state(tfd, &st) < 0 ? 0 : st.conn;
}

/* Every registration in the uepoll instances the program shows of a uepoll
 * descriptor that key() names (nonzero: its object); *count set, malloc'd
 * array (NULL if none). */
struct uep_pl_reg *uep_pl_collect_registrations(int hw, int *count, unsigned long long (*key)(int tfd)) {
  struct uep_pl_reg *regs = NULL;
  int nregs = 0, cap = 0;
  struct uep__registration *rows = NULL;
  long rows_cap = 0;
  for (int n = 0; n < hw; ++n) {
    if (uep_pl_kind(n) != UEP_PL_EPOLL) continue;
    int ue = uep_pl_map(n);
    if (!ue) continue;
    long len = uep__epoll_registrations(ue, rows, rows_cap);
    if (len > rows_cap) {
      struct uep__registration *t = realloc(rows, (size_t)len * sizeof *rows);
      if (!t) continue;
      rows = t;
      rows_cap = len;
      len = uep__epoll_registrations(ue, rows, rows_cap);
      if (len > rows_cap) len = rows_cap; /* registered meanwhile: the ones that fit */
    }
    for (long i = 0; i < len; ++i) {
      const int tfd = rows[i].tfd;
      const unsigned long long conn = tfd < UEP_FD_BASE ? 0 : key(tfd); /* kernel fd, or another object */
      if (!conn) continue;
      struct uep_pl_reg *r = uep_pl_grow_for_one(regs, &cap, nregs, sizeof *regs);
      if (!r) break;
      regs = r;
      regs[nregs].ue = ue;
      regs[nregs].tfd = tfd;
      regs[nregs].conn = conn;
      regs[nregs].ev.events = rows[i].events;
      regs[nregs].ev.data.u64 = rows[i].data;
      ++nregs;
    }
  }
  free(rows);
  *count = nregs;
  return regs;
}

/* The descriptor number showing uepoll descriptor u among the group, or -1. */
static int number_of(const struct shown *s, int ns, unsigned long long conn, int u) {
  for (int i = 0; i < ns; ++i)
    if (s[i].st.conn == conn && s[i].u == u) return s[i].n;
  return -1;
}

/* One pipe or pair being converted: its shown ends (s[first..] with this
 * conn) and, per side, one uepoll descriptor showing it (0: none, the end
 * is closed), its status flags and owner, and the kernel end. */
struct group {
  struct shown *s;
  int ns, first;
  unsigned long long conn;
  int is_socket;
  int sock_type; /* a pair's: SOCK_STREAM, SOCK_DGRAM or SOCK_SEQPACKET */
  int end_u[2], fl[2], sig[2], k[2];
  struct f_owner_ex owner[2];
};

static int in_group(const struct group *g, int i) { return g->s[i].st.conn == g->conn; }

/* The calls asleep on files u[0..n) (one uepoll descriptor per file):
 * *movable, one the preload makes again elsewhere; returns 1 if one that
 * cannot is there. */
static int sleepers(const int *u, int n, int *movable) {
  int fixed = 0;
  *movable = 0;
  for (int i = 0; i < n; ++i) {
    int f = 0, m = 0;
    if (u[i] && uep__sleepers(u[i], &f, &m) == 0) {
      fixed |= f;
      *movable |= m;
    }
  }
  return fixed;
}

static void mark_handed_over(const int *u, int n, int on) {
  for (int i = 0; i < n; ++i)
    if (u[i]) (void)uep__hand_over(u[i], on);
}

/* The calls asleep on files u[0..n) (one uepoll descriptor per file, 0 for
 * none) leave them before they become kernel objects (core/handover.h):
 * each file is marked handed over and its sleepers woken; the movable ones
 * return to their interposers, which wait on convert_mu (held here) and
 * then make their calls again on what the number shows.  From the mark on,
 * a movable call that has not slept leaves too before it moves any data,
 * so that the bytes the conversion moves next are all there are.  1 once
 * no call sleeps on them; 0, with the marks taken back, when one that
 * cannot leave is there, or the movable ones did not leave within two
 * seconds. */
int uep_pl_evict_sleepers(const int *u, int n) {
  int movable = 0;
  if (sleepers(u, n, &movable)) return 0;
  mark_handed_over(u, n, 1);
  if (!movable) return 1;
  struct timespec now, end; /* the real clock's: the sleepers leave in real time */
  UEP_PL_REAL(clock_gettime)(CLOCK_MONOTONIC, &end);
  end.tv_sec += 2;
  do {
    if (sleepers(u, n, &movable)) break;
    if (!movable) return 1;
    UEP_PL_REAL(nanosleep)(&(struct timespec){0, 100000}, NULL);
    UEP_PL_REAL(clock_gettime)(CLOCK_MONOTONIC, &now);
  } while (now.tv_sec < end.tv_sec || (now.tv_sec == end.tv_sec && now.tv_nsec < end.tv_nsec));
  mark_handed_over(u, n, 0);
  return 0;
}

/* Fills end_u, fl, owner; 0 if a call that cannot leave is blocked on an
 * end (left alone). */
static int inspect(struct group *g) {
  for (int i = g->first; i < g->ns; ++i) {
    if (!in_group(g, i)) continue;
    g->s[i].done = 1;
    if (!g->end_u[g->s[i].st.side]) g->end_u[g->s[i].st.side] = g->s[i].u;
  }
  if (!uep_pl_evict_sleepers(g->end_u, 2)) return 0;
  for (int side = 0; side < 2; ++side) {
    if (!g->end_u[side]) continue;
    g->fl[side] = uep_fcntl(g->end_u[side], F_GETFL);
    g->sig[side] = uep_fcntl(g->end_u[side], F_GETSIG);
    if (uep_fcntl(g->end_u[side], F_GETOWN_EX, &g->owner[side]) < 0) g->owner[side].pid = 0;
    if (g->fl[side] < 0) g->fl[side] = 0;
    if (g->sig[side] < 0) g->sig[side] = 0;
  }
  return 1;
}

/* The messages queued at one side of a datagram or seqpacket group, read
 * again now that inspect() has marked it: a send made since the group was
 * listed has queued its message, and a movable one made from now on leaves
 * (core/handover.h), so this is every message the move must carry. */
static long queued_msgs(const struct group *g, int side) {
  struct uep__stream_state st;
  if (g->end_u[side] && uep__stream_state(g->end_u[side], &st) == 0) return st.msgs;
  for (int i = g->first; i < g->ns; ++i)
    if (in_group(g, i) && g->s[i].st.side == side) return g->s[i].st.msgs;
  return 0;
}

/* Steps 1-2: the kernel object, with the queued bytes moved into it: what
 * is readable at a side went through the other side (a pipe's read end 0 is
 * fed by write end 1).  0, or -1 when no kernel object could be made. */
static int make_kernel_object(struct group *g) {
  const int packet = !g->is_socket && (g->fl[1] & O_DIRECT);
  /* Made non-blocking: the moves must never block (nobody reads the
   * kernel object yet); carry_state() sets the program's O_NONBLOCK. */
  int r = g->is_socket ? UEP_PL_REAL(socketpair)(AF_UNIX, g->sock_type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, g->k)
                       : UEP_PL_REAL(pipe2)(g->k, O_CLOEXEC | O_NONBLOCK | (packet ? O_DIRECT : 0));
  if (r < 0) return -1;
  /* A pipe keeps its size (F_SETPIPE_SZ), so that its bytes fit and its
   * writers see the same capacity.  The size was granted under Linux's
   * rules; the kernel grants it again. */
  if (!g->is_socket) {
    const int u = g->end_u[0] ? g->end_u[0] : g->end_u[1];
    const int size = u ? uep_fcntl(u, F_GETPIPE_SZ) : -1;
    if (size > 0 && size != UEP_PL_REAL(fcntl)(g->k[0], F_GETPIPE_SZ))
      (void)UEP_PL_REAL(fcntl)(g->k[0], F_SETPIPE_SZ, size);
  }
  /* A datagram or seqpacket pair keeps each side's SO_SNDBUF: the limit of
   * its messages and of what it may have queued at its peer. */
  if (g->is_socket && g->sock_type != SOCK_STREAM) {
    for (int side = 0; side < 2; ++side) {
      int v = 0, kv = 0;
      socklen_t l = sizeof v, kl = sizeof kv;
      if (!g->end_u[side] || uep_getsockopt(g->end_u[side], SOL_SOCKET, SO_SNDBUF, &v, &l) < 0) continue;
      if (UEP_PL_REAL(getsockopt)(g->k[side], SOL_SOCKET, SO_SNDBUF, &kv, &kl) == 0 && kv != v) {
        int half = v / 2;
        (void)UEP_PL_REAL(setsockopt)(g->k[side], SOL_SOCKET, SO_SNDBUF, &half, sizeof half);
      }
    }
  }
  /* The moved bytes fit: uepoll charged them as Linux does for the
   * program's own writes, and the move's writes of up to 64 KiB make the
   * largest skbs, the least charge per byte. */
  /* A pending ECONNRESET (the peer closed with unread data; stream and
   * seqpacket) is taken before the moves and made again by the kernel: a
   * byte queued at the kernel peer, which is closed with it (step 6). */
  int reset[2] = {0, 0};
  if (g->is_socket && g->sock_type != SOCK_DGRAM) {
    for (int side = 0; side < 2; ++side) {
      int e = 0;
      socklen_t el = sizeof e;
      if (g->end_u[side] && !g->end_u[1 - side] &&
          uep_getsockopt(g->end_u[side], SOL_SOCKET, SO_ERROR, &e, &el) == 0 && e == ECONNRESET)
        reset[side] = 1;
    }
  }
  int ok = 1;
  if (g->is_socket) {
    for (int side = 0; side < 2 && ok; ++side) {
      if (!g->end_u[side]) continue;
      if (g->sock_type == SOCK_STREAM ? uep_pl_move_queued_socket(g->end_u[side], g->k[1 - side]) < 0
                                      : uep_pl_move_messages(g->end_u[side], queued_msgs(g, side), g->k[1 - side]) < 0)
        ok = 0;
    }
  } else if (g->end_u[0]) {
    ok = uep_pl_move_queued(g->end_u[0], g->k[1]) == 0;
  }
  for (int side = 0; side < 2; ++side)
    if (reset[side]) (void)UEP_PL_REAL(send)(g->k[side], "r", 1, MSG_DONTWAIT);
  /* Cannot happen with Linux's capacities (uepoll's are the same); the
   * bytes already read would be lost, so say so. */
  if (!ok) uep_pl_refuse("fork(): could not move the bytes of a uepoll pipe/socket pair into a kernel one");
  return 0;
}

/* Step 3: shutdown state, status flags, owner. */
static void carry_state(const struct group *g) {
  for (int side = 0; side < 2; ++side) {
    if (!g->end_u[side]) continue;
    const int k = g->k[side];
    if (g->is_socket) {
      int bits = 0;
      for (int i = g->first; i < g->ns; ++i)
        if (in_group(g, i) && g->s[i].st.side == side) bits |= g->s[i].st.shutdown;
      static const int how[4] = {-1, SHUT_RD, SHUT_WR, SHUT_RDWR};
      if (bits) UEP_PL_REAL(shutdown)(k, how[bits & 3]);
      int on = 0;
      socklen_t len = sizeof on;
      if (uep_getsockopt(g->end_u[side], SOL_SOCKET, SO_PASSCRED, &on, &len) == 0 && on)
        UEP_PL_REAL(setsockopt)(k, SOL_SOCKET, SO_PASSCRED, &on, sizeof on);
      uep__carry_sockopts(g->end_u[side], k); /* SO_SNDBUF, timeouts, ... */
    }
    if (g->owner[side].pid) UEP_PL_REAL(fcntl)(k, F_SETOWN_EX, &g->owner[side]);
    if (g->sig[side]) UEP_PL_REAL(fcntl)(k, F_SETSIG, g->sig[side]);
    /* O_NONBLOCK from the move goes unless the program set it.  The end
     * is as make_kernel_object() made it: of the flags F_SETFL sets, it
     * has O_NONBLOCK and, a packet pipe's write end, O_DIRECT (Linux:
     * fs/pipe.c create_pipe_files), so no F_GETFL is needed. */
    if (!(g->fl[side] & O_NONBLOCK))
      UEP_PL_REAL(fcntl)(k, F_SETFL, !g->is_socket && side == 1 && (g->fl[1] & O_DIRECT) ? O_DIRECT : 0);
  }
}

/* Step 4: each number showing an end becomes that kernel end. */
static void place_numbers(const struct group *g) {
  for (int i = g->first; i < g->ns; ++i) {
    if (!in_group(g, i)) continue;
    const struct shown *e = &g->s[i];
    int fdfl = uep_fcntl(e->u, F_GETFD);
    if (UEP_PL_REAL(dup3)(g->k[e->st.side], e->n, fdfl > 0 && (fdfl & FD_CLOEXEC) ? O_CLOEXEC : 0) < 0)
      /* Out of kernel memory: this number keeps its placeholder and shows
       * nothing; the program sees EBADF on it. */
      uep_pl_refuse("fork(): could not place a converted pipe/socket pair end (dup3 failed)");
    uep_pl_unbind(e->n);
  }
}

/* O_ASYNC, set on a number the end now shows, so that the kernel's signals
 * carry that number as si_fd (the first number showing the end). */
static void carry_async(const struct group *g) {
  for (int side = 0; side < 2; ++side) {
    if (!g->end_u[side] || !(g->fl[side] & O_ASYNC)) continue;
    for (int i = g->first; i < g->ns; ++i) {
      if (!in_group(g, i) || g->s[i].st.side != side) continue;
      const int n = g->s[i].n, fl = UEP_PL_REAL(fcntl)(n, F_GETFL);
      if (fl >= 0) UEP_PL_REAL(fcntl)(n, F_SETFL, fl | O_ASYNC);
      break;
    }
  }
}

/* Step 5: registrations of the uepoll ends move to the kernel numbers. */
static void move_registrations(const struct group *g, const struct uep_pl_reg *regs, int nregs) {
  for (int j = 0; j < nregs; ++j) {
    if (regs[j].conn != g->conn) continue;
    uep_epoll_ctl(regs[j].ue, EPOLL_CTL_DEL, regs[j].tfd, NULL);
    int n = number_of(g->s, g->ns, g->conn, regs[j].tfd);
    struct epoll_event ev = regs[j].ev;
    if (n < 0 || uep_epoll_ctl(regs[j].ue, EPOLL_CTL_ADD, n, &ev) < 0)
      uep_pl_refuse("fork(): a registration of a uepoll pipe/socket pair could not be moved to its kernel "
                    "descriptor (registered under a number since closed, or out of memory)");
  }
}

/* Converts the pipe or pair that s[first] shows (steps 1-6 above).
 * Returns 1 if converted, 0 if left as a uepoll object. */
static int convert_group(struct shown *s, int ns, int first, const struct uep_pl_reg *regs, int nregs) {
  /* Converted meanwhile, when one of its ends was in flight in a pair
   * converted before it (move_queued_socket). */
  if (uep_pl_map(s[first].n) != s[first].u) {
    for (int i = first; i < ns; ++i)
      if (s[i].st.conn == s[first].st.conn) s[i].done = 1;
    return 0;
  }
  struct group g = {.s = s, .ns = ns, .first = first, .conn = s[first].st.conn, .is_socket = s[first].st.is_socket,
                    .sock_type = s[first].st.sock_type};
  if (!inspect(&g)) return 0;
  /* A group left as it is: its calls go on there (inspect marked it). */
  if (nactive == kMaxActive) {
    mark_handed_over(g.end_u, 2, 0);
    return 0;
  }
  active_conn[nactive++] = g.conn;
  const int made = make_kernel_object(&g);
  --nactive;
  if (made < 0) {
    mark_handed_over(g.end_u, 2, 0);
    return 0;
  }
  carry_state(&g);
  place_numbers(&g);
  carry_async(&g);
  move_registrations(&g, regs, nregs);
  /* Step 6: the uepoll ends and the spare kernel ones (an end no number
   * shows closes here, after its bytes were written); then the locks held
   * through each end, taken again through the first number showing it
   * (lock_carry.c: after every close of the new object's spare numbers). */
  struct uep_pl_locks held[2] = {{0}, {0}};
  for (int side = 0; side < 2; ++side)
    if (g.end_u[side]) uep_pl_locks_collect(g.end_u[side], &held[side]);
  for (int i = first; i < ns; ++i)
    if (in_group(&g, i)) uep_close(s[i].u);
  UEP_PL_REAL(close)(g.k[0]);
  UEP_PL_REAL(close)(g.k[1]);
  for (int side = 0; side < 2; ++side) {
    if (!held[side].n) continue;
    for (int i = first; i < ns; ++i)
      if (in_group(&g, i) && g.s[i].st.side == side) {
        uep_pl_locks_take(&held[side], s[i].n);
        break;
      }
  }
  return 1;
}

/* Converts every uepoll pipe and socket pair the program shows (only < 0),
 * or only the one that number `only` shows. */
static void convert_streams_locked(int only);

void uep_pl_convert_streams_of(int only) {
  uep_pl_convert_lock();
  convert_streams_locked(only);
  uep_pl_convert_unlock();
}

static void convert_streams_locked(int only) {
  const int hw = uep_pl_high_water();
  struct shown *s = NULL;
  int ns = 0, cap = 0;
  for (int n = 0; n < hw; ++n) {
    int kind = uep_pl_kind(n);
    if (kind != UEP_PL_PIPE && kind != UEP_PL_SOCKET) continue;
    int u = uep_pl_map(n);
    if (!u) continue;
    struct shown *t = uep_pl_grow_for_one(s, &cap, ns, sizeof *s);
    if (!t) break;
    s = t;
    UEP_PL_ENTER();
    int r = uep__stream_state(u, &s[ns].st);
    UEP_PL_LEAVE();
    if (r < 0) continue;
    s[ns].n = n;
    s[ns].u = u;
    s[ns].kind = kind;
    s[ns].done = 0;
    ++ns;
  }
  if (!ns) {
    free(s);
    return;
  }
  UEP_PL_ENTER();
  int nregs = 0;
  struct uep_pl_reg *regs = uep_pl_collect_registrations(hw, &nregs, stream_key);
  int converted = 0;
  for (int i = 0; i < ns; ++i) {
    if (s[i].done || is_active(s[i].st.conn)) continue;
    if (only >= 0) {
      /* The group's first entry, i, shares the connection of `only`'s. */
      int hit = 0;
      for (int j = i; j < ns && !hit; ++j) hit = s[j].n == only && s[j].st.conn == s[i].st.conn;
      if (!hit) continue;
    }
    converted += convert_group(s, ns, i, regs, nregs);
  }
  UEP_PL_LEAVE();
  uep_pl_count(UEP_PL_CONVERTED, (uint64_t)converted);
  free(regs);
  free(s);
}

static void convert_streams(void) { uep_pl_convert_streams_of(-1); }

/* stdin, stdout, stderr: glibc's stdio reads and writes them with its
 * internal calls, which only a kernel descriptor serves, so a uepoll pipe or
 * socket pair dup2'd onto 0, 1 or 2 is made a kernel one first
 * (interpose_fd.c).  Returns with `n` a kernel descriptor, or unchanged
 * when the object could not be converted (a thread blocked on it). */
void uep_pl_convert_stream(int n) {
  if (!uep_pl_inside()) uep_pl_convert_streams_of(n);
}

/* From the conversions until the child exists, no other thread makes or
 * converts a uepoll pipe or pair: the child sees each one as the kernel's. */
pid_t fork(void) {
  if (uep_pl_inside()) return UEP_PL_REAL(fork)();
  uep_pl_convert_lock();
  convert_streams();
  uep_pl_convert_at_fork(); /* eventfds and timerfds, shared too (eventfd_convert.c) */
  const pid_t pid = UEP_PL_REAL(fork)();
  if (pid == 0)
    uep_pl_convert_lock_child();
  else
    uep_pl_convert_unlock();
  return pid;
}

/* vfork's child shares the parent's memory, uepoll's objects and the
 * preload's map included, until it execs: a close() or dup2() the child
 * makes on a uepoll descriptor before exec would change the parent's.  So
 * under the preload vfork is fork (which POSIX allows). */
pid_t vfork(void) { return fork(); }

/* popen() spawns its child inside libc (posix_spawn's internal entry): the
 * child inherits what fork would show it, so the same conversions come
 * first, and convert_mu is held from them until the child exists, as
 * posix_spawn holds it.  Each spawn holds uepoll's descriptor-limit window
 * (core/own_fds.h), so that the child gets the program's limit.  system()
 * is made through the interposed posix_spawn (spawn_system.c). */
FILE *popen(const char *command, const char *mode) {
  const int outside = !uep_pl_inside();
  if (outside) {
    uep_pl_convert_lock();
    convert_streams();
    uep_pl_convert_inherited();
  }
  uep__own_fds_hold();
  FILE *f = UEP_PL_REAL(popen)(command, mode);
  const int e = errno;
  uep__own_fds_release();
  if (outside) uep_pl_convert_unlock();
  errno = e;
  return f;
}

int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *actions,
                const posix_spawnattr_t *attr, char *const argv[], char *const envp[]) {
  const int outside = !uep_pl_inside();
  if (outside) {
    uep_pl_convert_lock();
    convert_streams();
    uep_pl_convert_inherited(); /* the child shares its eventfds and timerfds (eventfd_convert.c) */
  }
  uep__own_fds_hold();
  const int r = UEP_PL_REAL(posix_spawn)(pid, path, actions, attr, argv, envp);
  uep__own_fds_release();
  if (outside) uep_pl_convert_unlock();
  return r;
}

int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *actions,
                 const posix_spawnattr_t *attr, char *const argv[], char *const envp[]) {
  const int outside = !uep_pl_inside();
  if (outside) {
    uep_pl_convert_lock();
    convert_streams();
    uep_pl_convert_inherited(); /* the child shares its eventfds and timerfds (eventfd_convert.c) */
  }
  uep__own_fds_hold();
  const int r = UEP_PL_REAL(posix_spawnp)(pid, file, actions, attr, argv, envp);
  uep__own_fds_release();
  if (outside) uep_pl_convert_unlock();
  return r;
}
