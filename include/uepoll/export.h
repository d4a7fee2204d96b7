/*
 * export.h - which of uepoll's symbols a shared libuepoll exports.
 *
 * The library is compiled with -fvisibility=hidden (src/CMakeLists.txt): a
 * symbol is exported only if its declaration is marked.  Public headers mark
 * whole blocks of declarations with UEP_API_BEGIN / UEP_API_END (or a single
 * one with UEP_EXPORT), so that every function a public header declares is
 * exported and nothing else is: an internal function added under src/ stays
 * hidden.  tests/install/check.sh checks the exported list with nm -D.
 *
 * For programs that include uepoll's headers these marks change nothing (they
 * only restate the default visibility).  Valid C (C99 and later) and C++.
 */
#ifndef UEPOLL_EXPORT_H
#define UEPOLL_EXPORT_H

#if defined(__GNUC__) || defined(__clang__)
#define UEP_EXPORT __attribute__((visibility("default")))
#define UEP_API_BEGIN _Pragma("GCC visibility push(default)")
#define UEP_API_END _Pragma("GCC visibility pop")
#else
#define UEP_EXPORT
#define UEP_API_BEGIN
#define UEP_API_END
#endif

#endif /* UEPOLL_EXPORT_H */
