/*
 * spawn_system.c - system() under the preload (owned by src/preload/).
 *
 * glibc's system() spawns its shell through libc's internal posix_spawn,
 * which no interposer reaches.  The conversions that make the program's
 * uepoll pipes and pairs kernel ones (fork_convert.c) could run before it,
 * but nothing would keep another thread from making a new pipe between
 * them and the child's start, and that pipe would reach the shell as its
 * close-on-exec placeholder: a descriptor the shell does not have.  So
 * system() is made here, the way glibc 2.36 makes it, through the
 * interposed posix_spawn, which holds the conversion lock from its
 * conversions until the child exists:
 *
 *   - while any thread's command runs, SIGINT and SIGQUIT are ignored (the
 *     first caller saves their actions, the last one restores them), and
 *     the calling thread blocks SIGCHLD;
 *   - the child is "/bin/sh" with argv {"sh", "-c", command} and environ,
 *     the caller's signal mask, and the default action for SIGINT and
 *     SIGQUIT unless they were ignored before;
 *   - the answer is waitpid's status (the wait is made again after EINTR;
 *     -1 when it fails), or 127 << 8 with errno set when the spawn failed;
 *   - a thread cancelled in the wait kills the child (SIGKILL), reaps it
 *     and restores the signals.
 *
 * system(NULL) and calls uepoll makes itself go to libc's own (which
 * holds the descriptor-limit window of core/own_fds.h for the spawn).
 *
 * Locks: ign_mu (the saved SIGINT and SIGQUIT actions and the count of
 * commands running), taken and dropped before posix_spawn takes its own.
 */
#define _GNU_SOURCE
#include "preload/preload.h"

#include "capi/preload_support.h"
#include "preload/interpose.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>

extern char **environ;

static pthread_mutex_t ign_mu = PTHREAD_MUTEX_INITIALIZER;
static int ign_count;                         /* guarded by ign_mu */
static struct sigaction saved_int, saved_quit; /* guarded by ign_mu */

/* Ignores SIGINT and SIGQUIT for the first command; *reset gets the
 * signals the shell is to take back to their default action. */
static void ignore_interrupts(sigset_t *reset) {
  struct sigaction ign = {.sa_handler = SIG_IGN};
  sigemptyset(&ign.sa_mask);
  pthread_mutex_lock(&ign_mu);
  if (ign_count++ == 0) {
    sigaction(SIGINT, &ign, &saved_int);
    sigaction(SIGQUIT, &ign, &saved_quit);
  }
  sigemptyset(reset);
  if (saved_int.sa_handler != SIG_IGN) sigaddset(reset, SIGINT);
  if (saved_quit.sa_handler != SIG_IGN) sigaddset(reset, SIGQUIT);
  pthread_mutex_unlock(&ign_mu);
}

static void restore_interrupts(void) {
  pthread_mutex_lock(&ign_mu);
  if (--ign_count == 0) {
    sigaction(SIGINT, &saved_int, NULL);
    sigaction(SIGQUIT, &saved_quit, NULL);
  }
  pthread_mutex_unlock(&ign_mu);
}

struct waiting {
  pid_t pid;
  const sigset_t *mask; /* the caller's, from before SIGCHLD was blocked */
};

/* A cancellation in waitpid: the command goes with the thread. */
static void cancelled(void *arg) {
  const struct waiting *w = arg;
  kill(w->pid, SIGKILL);
  while (waitpid(w->pid, NULL, 0) < 0 && errno == EINTR) {
  }
  restore_interrupts();
  sigprocmask(SIG_SETMASK, w->mask, NULL);
}

static int run_shell(const char *command) {
  sigset_t reset, chld, mask;
  ignore_interrupts(&reset);
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  sigprocmask(SIG_BLOCK, &chld, &mask);

  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setsigmask(&attr, &mask);
  posix_spawnattr_setsigdefault(&attr, &reset);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
  char *argv[] = {(char *)"sh", (char *)"-c", (char *)command, NULL};
  pid_t pid = 0;
  const int failed = posix_spawn(&pid, "/bin/sh", NULL, &attr, argv, environ);
  posix_spawnattr_destroy(&attr);

  int status = W_EXITCODE(127, 0); /* POSIX: as if the shell had exited 127 */
  if (!failed) {
    struct waiting w = {pid, &mask};
    pthread_cleanup_push(cancelled, &w);
    pid_t got;
    while ((got = waitpid(pid, &status, 0)) < 0 && errno == EINTR) {
    }
    if (got != pid) status = -1;
    pthread_cleanup_pop(0);
  }
  const int e = errno;
  restore_interrupts();
  sigprocmask(SIG_SETMASK, &mask, NULL);
  errno = failed ? failed : e;
  return status;
}

int system(const char *command) {
  if (command && !uep_pl_inside()) return run_shell(command);
  uep__own_fds_hold();
  const int r = UEP_PL_REAL(system)(command);
  uep__own_fds_release();
  return r;
}
