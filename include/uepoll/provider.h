/*
 * provider.h - a socket provider for the preload: the library that
 * `uepoll-run --provider LIB` (UEPOLL_PROVIDER=LIB) loads, so that an
 * unmodified program's sockets of the families it claims are served by a
 * user-space stack through the file interface (<uepoll/file.h>), while
 * every socket it does not claim stays the kernel's.
 *
 * A provider library exports one function, uep_provider_init.  The preload
 * loads it with dlopen before the program's main runs (and only where it
 * would load itself: never for set-user-ID programs), calls it once, and
 * stops the launch with a message if it returns NULL.  Named providers
 * ("lwip") resolve to libuepoll-provider-NAME.so installed beside
 * libuepoll-preload.so.  Valid C (C99 and later) and C++.
 */
#ifndef UEPOLL_PROVIDER_H
#define UEPOLL_PROVIDER_H

#include <stddef.h>

#include <uepoll/export.h>

#ifdef __cplusplus
extern "C" {
#endif

#define UEP_PROVIDER_DECLINE 1 /* socket(): not this provider's socket */

/* fork phases for at_fork */
#define UEP_PROVIDER_FORK_PREPARE 0
#define UEP_PROVIDER_FORK_PARENT 1
#define UEP_PROVIDER_FORK_CHILD 2

struct uep_provider {
  size_t size; /* sizeof(struct uep_provider) as the provider was built */
  const char *name;
  /* socket(2) as the program called it (type with SOCK_NONBLOCK /
   * SOCK_CLOEXEC).  Returns 0 and a uepoll descriptor in *fd (made with
   * uep_file_create) for a socket it serves, UEP_PROVIDER_DECLINE to leave
   * it to the kernel, or a negative errno (the program's socket() fails
   * with it). */
  int (*socket)(int family, int type, int protocol, int *fd);
  /* What a provider socket becomes at fork is the provider's choice, made
   * here: called around fork() (phases above), in the forking thread, with
   * no uepoll lock held (not for vfork or posix_spawn, which run no atfork
   * handler).  NULL: uepoll's default, nothing is done: the child's
   * descriptors point into its copy of the provider's memory, right for a
   * stack whose state is shared or in the kernel, not for one with threads
   * of its own, which the child lacks (the lwIP provider's sockets answer
   * ENETDOWN in a child forked after its stack started).  At exec every provider socket is closed,
   * as every uepoll descriptor, and the new program loads the provider
   * again (docs/design.md, "Socket providers"). */
  void (*at_fork)(int phase);
  /* At exit, after the program's atexit handlers.  May be NULL. */
  void (*fini)(void);
};

/* Exported by the provider library.  config: UEPOLL_PROVIDER_CONFIG, or
 * NULL.  NULL with errno set refuses to start (the launch stops). */
typedef const struct uep_provider *(*uep_provider_init_fn)(const char *config);
#define UEP_PROVIDER_INIT_SYMBOL "uep_provider_init"

#ifdef __cplusplus
}
#endif

#endif /* UEPOLL_PROVIDER_H */
