/* preload.h - what the C interposers (interpose_*.c) use from the C++ side
 * of the preload (fdmap.cpp, stats.cpp).  Owned by src/preload/. */
#ifndef UEPOLL_PRELOAD_H
#define UEPOLL_PRELOAD_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Kinds, as uepoll::preload::Kind.  UEP_PL_NKINDS: the kinds that
 * UEPOLL_PRELOAD_KINDS chooses from; UEP_PL_PROVIDER: a socket a provider
 * served (interpose_sock.c). */
enum { UEP_PL_KERNEL = 0, UEP_PL_EPOLL, UEP_PL_EVENTFD, UEP_PL_PIPE, UEP_PL_SOCKET, UEP_PL_TIMER, UEP_PL_NKINDS,
       UEP_PL_PROVIDER = UEP_PL_NKINDS };

/* The map (fdmap.h): slot n holds the uepoll descriptor shown as n (0:
 * none), its kind, and whether it is a copy a forked child has not used
 * yet (fork_copy).  The array is published once (release, before which
 * uep_pl_nslots_ is set); u is stored with release after the descriptor is
 * made.  Read only through uep_pl_map() and fdmap.cpp. */
struct uep_pl_slot {
  int u;
  unsigned char kind;
  unsigned char fork_copy;
};
extern struct uep_pl_slot *uep_pl_slots_;
extern long uep_pl_nslots_;
/* Nonzero only in a forked child that holds a close-on-exec pipe or pair
 * it could not get as a kernel one (interpose_net.c); relaxed: set before
 * the child runs any other code, read by every thread after. */
extern int uep_pl_fork_copies_;
/* Says once that the child used such a copy (interpose_net.c). */
void uep_pl_fork_copy_used(int n);
/* The uepoll fd shown as n, or 0, for a call that only manages the number
 * (F_GETFD/F_SETFD, the fork child handler's walk): not a use of the
 * object.  The conversions' walks use uep_pl_map: converting a copy is a
 * use. */
static inline int uep_pl_map_quiet(int n) {
  struct uep_pl_slot *s = __atomic_load_n(&uep_pl_slots_, __ATOMIC_ACQUIRE);
  if (!s || n < 0 || n >= uep_pl_nslots_) return 0;
  return __atomic_load_n(&s[n].u, __ATOMIC_ACQUIRE);
}
/* The uepoll fd shown as n, or 0.  Inline: every interposed call on a
 * kernel descriptor asks it first.  Lock-free, async-signal-safe; the
 * acquires pair with the release stores of fdmap.cpp's init and publish. */
static inline int uep_pl_map(int n) {
  const int u = uep_pl_map_quiet(n);
  if (__builtin_expect(u != 0 && __atomic_load_n(&uep_pl_fork_copies_, __ATOMIC_RELAXED) != 0, 0))
    uep_pl_fork_copy_used(n);
  return u;
}
/* Marks n as a copy in a forked child (fork_copy above); 0 if n shows
 * none.  uep_pl_take_fork_copy clears the mark: 1 if it was set. */
int uep_pl_mark_fork_copy(int n);
int uep_pl_take_fork_copy(int n);
int uep_pl_kind(int n);
int uep_pl_bind_new(int u, int kind, int min); /* n or -errno */
int uep_pl_bind_at(int n, int u, int kind);    /* previous uepoll fd (0) or -errno */
int uep_pl_unbind(int n);                      /* uepoll fd that was shown as n, or 0 */
int uep_pl_high_water(void);
void *uep_pl_resolve(const char *name);        /* aborts if absent */
void *uep_pl_resolve_optional(const char *name);

/* Counters (stats.h). */
enum {
  UEP_PL_CTL, UEP_PL_WAIT, UEP_PL_WAKEUP, UEP_PL_UEPOLL_CALL, UEP_PL_FORWARDED,
  UEP_PL_CONVERTED, /* pipes/pairs turned into kernel ones before fork (fork_convert.c) */
  UEP_PL_EVENTFD_CONVERTED /* eventfds turned into kernel ones (eventfd_convert.c) */
};
/* Counted only when UEPOLL_STATS named a file at load (uep_pl_stats_on_:
 * -1 not looked at yet, 0 off, 1 on; relaxed, every thread finds the same
 * value), so that a forwarded call writes no shared line. */
extern int uep_pl_stats_on_;
/* uep_pl_stats_on_, looked at first if it was not yet: 1 or 0. */
int uep_pl_stats_enabled(void);
void uep_pl_count_slow(int which, uint64_t n);
static inline void uep_pl_count(int which, uint64_t n) {
  if (__builtin_expect(__atomic_load_n(&uep_pl_stats_on_, __ATOMIC_RELAXED) != 0, 0)) uep_pl_count_slow(which, n);
}
void uep_pl_count_created(int kind);
void uep_pl_count_registration(int kind);
/* "uepoll: MESSAGE" once on stderr; counts a refused call every time. */
void uep_pl_refuse(const char *message);

#ifdef __cplusplus
}
#endif

#endif
