/*
 * tuning_env.c - UEPOLL_TUNING (uepoll-run --tune): knobs of
 * <uepoll/tuning.h> set for the whole process as the preload loads, before
 * the program runs.  The value is "NAME=VALUE[,NAME=VALUE...]", VALUE a
 * decimal integer, applied left to right.  An item that is not NAME=VALUE,
 * or that the library refuses (an unknown knob, a value out of range),
 * stops the launch with a message on stderr and exit status 2, as
 * uepoll-run's own bad input does: a measurement must not run with a
 * setting silently dropped.  Children inherit the variable and apply it
 * too.  Ignored for a secure-execution program (AT_SECURE), as
 * UEPOLL_PROVIDER is.
 * Owned by src/preload/.  Locks: none of its own (uep_tuning_set's).
 */
#define _GNU_SOURCE
#include "preload/interpose.h"

#include <uepoll/tuning.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

static void tuning_fail(const char *item, size_t len, const char *why) __attribute__((noreturn));
static void tuning_fail(const char *item, size_t len, const char *why) {
  fprintf(stderr, "uepoll: UEPOLL_TUNING: '%.*s': %s\n", (int)len, item, why);
  _exit(2);
}

/* One item, [item, item + len): NAME=VALUE. */
static void apply_one(const char *item, size_t len) {
  const char *eq = memchr(item, '=', len);
  char name[64];
  if (!eq || eq == item || (size_t)(eq - item) >= sizeof name) tuning_fail(item, len, "not NAME=VALUE");
  memcpy(name, item, (size_t)(eq - item));
  name[eq - item] = '\0';
  const char *digits = eq + 1;
  char *end;
  errno = 0;
  const long v = strtol(digits, &end, 10);
  if (end == digits || end != item + len || errno == ERANGE || (*digits != '-' && (*digits < '0' || *digits > '9')))
    tuning_fail(item, len, "the value is not a decimal integer");
  if (uep_tuning_set(name, v) != 0)
    tuning_fail(item, len, "an unknown knob or a value out of range (include/uepoll/tuning.h lists them)");
}

__attribute__((constructor)) static void apply_tuning_at_load(void) {
  const char *s = getenv("UEPOLL_TUNING");
  if (!s || !*s || getauxval(AT_SECURE)) return;
  UEP_PL_ENTER();
  for (const char *p = s;; ++p) {
    const size_t len = strcspn(p, ",");
    apply_one(p, len);
    p += len;
    if (!*p) break;
  }
  UEP_PL_LEAVE();
}
