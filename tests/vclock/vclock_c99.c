/* vclock_c99.c - <uepoll/vclock.h> is valid C99 (-pedantic, warnings as
 * errors): compiled, and linked into nothing. */
#define _POSIX_C_SOURCE 200809L /* CLOCK_*: POSIX, not C99 */
#include <uepoll/vclock.h>

int vclock_c99_check(void);
int vclock_c99_check(void) {
  struct timespec ts;
  int64_t now = uep_vclock_now(CLOCK_MONOTONIC);
  return uep_vclock_gettime(CLOCK_REALTIME, &ts) + (int)(now & 1) + uep_vclock_mode();
}
