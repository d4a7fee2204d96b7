/*
 * version.h - uepoll's version, at compile time and at run time.
 *
 * The three numbers below are the one place the version is written: the
 * top-level CMakeLists.txt reads them for project(VERSION), the shared
 * library's VERSION / SOVERSION, uepoll.pc and uepollConfigVersion.cmake.
 *
 * Compatibility: while UEPOLL_VERSION_MAJOR is 0, a new MINOR may change the
 * ABI (the shared library's SONAME is libuepoll.so.0.MINOR and find_package
 * accepts the same MAJOR.MINOR only); from 1.0 on, the same MAJOR is
 * compatible (SONAME libuepoll.so.MAJOR).
 *
 * This header is valid C (C99 and later) and C++.
 */
#ifndef UEPOLL_VERSION_H
#define UEPOLL_VERSION_H

#define UEPOLL_VERSION_MAJOR 0
#define UEPOLL_VERSION_MINOR 1
#define UEPOLL_VERSION_PATCH 0

#define UEPOLL_VERSION_STR_(x) #x
#define UEPOLL_VERSION_STR(x) UEPOLL_VERSION_STR_(x)
/* "MAJOR.MINOR.PATCH" of the headers being compiled against. */
#define UEPOLL_VERSION_STRING                                                 \
  UEPOLL_VERSION_STR(UEPOLL_VERSION_MAJOR)                                    \
  "." UEPOLL_VERSION_STR(UEPOLL_VERSION_MINOR) "." UEPOLL_VERSION_STR(        \
      UEPOLL_VERSION_PATCH)
/* One comparable number: MAJOR * 10000 + MINOR * 100 + PATCH. */
#define UEPOLL_VERSION                                                        \
  (UEPOLL_VERSION_MAJOR * 10000 + UEPOLL_VERSION_MINOR * 100 +                \
   UEPOLL_VERSION_PATCH)

#include <uepoll/export.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The version of the library linked at run time, "MAJOR.MINOR.PATCH" (the
 * value UEPOLL_VERSION_STRING had when the library was built), so that a
 * program can compare it with the headers it was compiled against.
 * Contract: thread-safe, async-signal-safe; never fails, never blocks, never
 * allocates; the string is static and must not be freed. */
UEP_EXPORT const char *uep_version(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* UEPOLL_VERSION_H */
