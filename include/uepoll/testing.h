/*
 * testing.h - TEST-ONLY hooks of uepoll.  NOT PART OF THE STABLE API.
 *
 * uepoll's own test suite, fuzzer and benchmark use these to inject failures
 * and to look inside the engine.  They are installed (so that a program's own
 * tests may use them too) but may change or disappear in any release, and a
 * program must not rely on them in production: they cost nothing unless
 * called, but an injected failure applies to every thread of the process.
 *
 * Valid C (C99 and later) and C++.
 */
#ifndef UEPOLL_TESTING_H
#define UEPOLL_TESTING_H

#include <uepoll/export.h>
#include <uepoll/tuning.h>

/* Allocation-failure injection, set through the knob interface of
 * <uepoll/tuning.h>:
 *   uep_tuning_set(UEP_TESTING_FAIL_ALLOC_AFTER, n)
 * makes the allocation after n more successful ones fail with ENOMEM (every
 * later one too, until the knob is set again); -1 (the default) never fails.
 * Used to check that a call failing with ENOMEM leaves state untouched. */
#define UEP_TESTING_FAIL_ALLOC_AFTER "fail_alloc_after"

#ifdef __cplusplus
extern "C" {
#endif
UEP_API_BEGIN /* every function declared here is exported (export.h) */

/* Writes a canonical text dump of the instance epfd (its items sorted by
 * (file id, fd), their masks and data, and its ready list in order) into buf;
 * returns the length it needed (like snprintf) or -1 with EBADF / EINVAL.
 * Used to check that a failed call left state untouched. */
long uep_debug_dump(int epfd, char *buf, unsigned long len);

/* Number of heap allocations uepoll has made (items, wait entries, files)
 * since start; used by the benchmark to count allocations per pair. */
unsigned long long uep_debug_alloc_count(void);

UEP_API_END
#ifdef __cplusplus
}
#endif

#endif /* UEPOLL_TESTING_H */
