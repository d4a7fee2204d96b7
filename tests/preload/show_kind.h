/* show_kind.h - prints what /proc/self/fd says a descriptor is (the
 * kernel's view: a uepoll object shows its placeholder, a kernel eventfd
 * "anon_inode:[eventfd]").  For the preload's test programs. */
#ifndef UEPOLL_TESTS_PRELOAD_SHOW_KIND_H
#define UEPOLL_TESTS_PRELOAD_SHOW_KIND_H

#include <stdio.h>
#include <unistd.h>

static inline void show_kind(const char *how, int fd) {
  char path[64], link[128] = "";
  snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(path, link, sizeof link - 1);
  if (n >= 0) link[n] = 0;
  printf("%s: fd %d is %s\n", how, fd, link);
}

#endif
