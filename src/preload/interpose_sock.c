/*
 * interpose_sock.c - libuepoll-preload.so's socket provider host and its
 * interposers for socket, bind, listen, accept, accept4 and connect (owned
 * by src/preload/; see interpose_fd.c for the rules every interposer keeps).
 *
 * UEPOLL_PROVIDER=LIB|NAME (uepoll-run --provider) names a provider
 * library (<uepoll/provider.h>): a path, or a name resolved to
 * libuepoll-provider-NAME.so in the directory of this library (installed
 * beside it, and so it is in the build tree).  It is loaded with dlopen by
 * a constructor, before the program's main, and uep_provider_init is called
 * with UEPOLL_PROVIDER_CONFIG.  A provider that cannot be loaded or refuses
 * to start ends the process with a message and exit status 127: a program
 * never runs silently on kernel sockets instead.  Set-user-ID (AT_SECURE)
 * programs load none, as the dynamic loader ignores LD_PRELOAD for them.
 *
 * socket() asks the provider first: a socket it serves is a uepoll
 * descriptor shown under a kernel number (fdmap.h, kind "provider", counted
 * as UEPOLL_STATS's provider_sockets); one it declines is the kernel's.
 * bind/listen/accept/accept4/connect on a uepoll descriptor go to the
 * uep_* call of the same name, which reaches the file's operations.
 * Around fork the provider's at_fork hook runs (pthread_atfork).  At exec a
 * provider socket, like every uepoll descriptor, is not inherited.
 *
 * Locks: none here.  The provider pointer is written once, by the
 * constructor, before the program runs any thread.
 */
#define _GNU_SOURCE
#include "preload/preload.h"

#include <uepoll/provider.h>
#include <uepoll/uepoll.h>

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/socket.h>
#include <unistd.h>

#include "preload/interpose.h"

static const struct uep_provider *provider;

/* ---- loading ------------------------------------------------------------------------- */
static void provider_fail(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
static void provider_fail(const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  fprintf(stderr, "uepoll: %s\n", msg);
  _exit(127);
}

/* path of provider `spec`: itself if it names a file, else
 * libuepoll-provider-SPEC.so beside this library. */
static void provider_path(const char *spec, char *out, size_t n) {
  if (strchr(spec, '/')) {
    snprintf(out, n, "%s", spec);
    return;
  }
  Dl_info info;
  const char *self = dladdr((void *)&provider_path, &info) && info.dli_fname ? info.dli_fname : "";
  const char *slash = strrchr(self, '/');
  int dirlen = slash ? (int)(slash - self) : 1;
  snprintf(out, n, "%.*s/libuepoll-provider-%s.so", dirlen, slash ? self : ".", spec);
}

static void fork_prepare(void) { provider->at_fork(UEP_PROVIDER_FORK_PREPARE); }
static void fork_parent(void) { provider->at_fork(UEP_PROVIDER_FORK_PARENT); }
static void fork_child(void) { provider->at_fork(UEP_PROVIDER_FORK_CHILD); }
static void provider_fini(void) { provider->fini(); }

__attribute__((constructor)) static void load_provider(void) {
  const char *spec = getenv("UEPOLL_PROVIDER");
  if (!spec || !*spec || getauxval(AT_SECURE)) return;
  char path[PATH_MAX];
  provider_path(spec, path, sizeof path);
  spec = path; /* the messages name the file */
  UEP_PL_ENTER();
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) provider_fail("socket provider %s: cannot load: %s", spec, dlerror());
  uep_provider_init_fn init = (uep_provider_init_fn)dlsym(h, UEP_PROVIDER_INIT_SYMBOL);
  if (!init) provider_fail("socket provider %s: no %s", spec, UEP_PROVIDER_INIT_SYMBOL);
  errno = 0;
  const struct uep_provider *p = init(getenv("UEPOLL_PROVIDER_CONFIG"));
  int e = errno;
  UEP_PL_LEAVE();
  if (!p)
    provider_fail("socket provider %s refused to start: %s", spec, e ? strerror(e) : "no reason given");
  if (p->size < offsetof(struct uep_provider, fini) + sizeof p->fini || !p->socket)
    provider_fail("socket provider %s: its struct uep_provider is incomplete", spec);
  provider = p;
  if (p->at_fork) pthread_atfork(fork_prepare, fork_parent, fork_child);
  if (p->fini) atexit(provider_fini); /* runs after the program's own handlers */
}

/* ---- socket ---------------------------------------------------------------------------- */
int socket(int family, int type, int protocol) {
  const struct uep_provider *p = provider;
  if (!p || uep_pl_inside()) return UEP_PL_REAL(socket)(family, type, protocol);
  int u = -1;
  UEP_PL_ENTER();
  int r = p->socket(family, type, protocol, &u);
  UEP_PL_LEAVE();
  if (r == UEP_PROVIDER_DECLINE) return UEP_PL_REAL(socket)(family, type, protocol);
  if (r < 0) {
    errno = -r;
    return -1;
  }
  UEP_PL_ENTER();
  int n = uep_pl_show(u, UEP_PL_PROVIDER);
  int e = errno;
  UEP_PL_LEAVE();
  errno = e;
  return n;
}

/* ---- the calls that name an address or make a socket ----------------------------------- */
/* Naming a socket pair's end (Linux binds it: its address, its peer's
 * getpeername, messages to that name): uepoll pairs carry no names, so the
 * pair becomes a kernel one under the same numbers first (as a datagram
 * pair does before it sends to a name: dgram_named.c), and the kernel binds
 * it.  A pair that cannot be converted (a thread blocked on it) is refused. */
int bind(int fd, const struct sockaddr *a, socklen_t len) {
  if (!uep_pl_inside() && uep_pl_map(fd) && uep_pl_kind(fd) == UEP_PL_SOCKET) {
    uep_pl_convert_stream(fd);
    if (!uep_pl_map(fd)) {
      uep_pl_count(UEP_PL_FORWARDED, 1);
      return UEP_PL_REAL(bind)(fd, a, len);
    }
    uep_pl_refuse("bind() on a uepoll socket pair while a thread is blocked on it: not supported (EOPNOTSUPP)");
    errno = EOPNOTSUPP;
    return -1;
  }
  UEP_PL_FORWARD2(fd, bind, (u, a, len), bind, (fd, a, len));
}
int listen(int fd, int backlog) { UEP_PL_FORWARD2(fd, listen, (u, backlog), listen, (fd, backlog)); }
/* A datagram pair end connecting to an AF_UNIX address: dgram_named.c. */
int connect(int fd, const struct sockaddr *a, socklen_t len) {
  int r;
  if (uep_pl_map(fd) && uep_pl_dgram_named_connect(fd, a, len, &r)) return r;
  UEP_PL_FORWARD2(fd, connect, (u, a, len), connect, (fd, a, len));
}

/* The accepted socket is shown as the listener is (its kind). */
static int accept_common(int fd, struct sockaddr *a, socklen_t *len, int flags) {
  int u = uep_pl_map(fd);
  UEP_PL_ENTER();
  int nu = uep_accept4(u, a, len, flags);
  int e = errno;
  int n = nu < 0 ? -1 : uep_pl_show(nu, uep_pl_kind(fd));
  if (nu >= 0) e = errno;
  UEP_PL_LEAVE();
  uep_pl_count(UEP_PL_UEPOLL_CALL, 1);
  errno = e;
  return n;
}

int accept(int fd, struct sockaddr *a, socklen_t *len) {
  if (!uep_pl_map(fd)) {
    uep_pl_count(UEP_PL_FORWARDED, 1);
    return UEP_PL_REAL(accept)(fd, a, len);
  }
  return accept_common(fd, a, len, 0);
}
int accept4(int fd, struct sockaddr *a, socklen_t *len, int flags) {
  if (!uep_pl_map(fd)) {
    uep_pl_count(UEP_PL_FORWARDED, 1);
    return UEP_PL_REAL(accept4)(fd, a, len, flags);
  }
  return accept_common(fd, a, len, flags);
}
