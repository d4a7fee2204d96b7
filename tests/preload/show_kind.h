/* show_kind.h - prints whether the kernel holds an eventfd at a descriptor
 * number (the kernel's view, from /proc/self/fdinfo: an eventfd's lists
 * its "eventfd-count"; a uepoll object's placeholder, an O_PATH /dev/null,
 * does not).  The preload shows /proc/self/fd/N of a uepoll eventfd as
 * Linux does (anon_inode:[eventfd]), so readlink cannot tell them apart.
 * For the preload's test programs. */
#ifndef UEPOLL_TESTS_PRELOAD_SHOW_KIND_H
#define UEPOLL_TESTS_PRELOAD_SHOW_KIND_H

#include <stdio.h>
#include <string.h>

static inline void show_kind(const char *how, int fd) {
  char path[64], line[256];
  snprintf(path, sizeof path, "/proc/self/fdinfo/%d", fd);
  FILE *f = fopen(path, "re");
  int eventfd = 0;
  while (f && fgets(line, sizeof line, f))
    if (!strncmp(line, "eventfd-count:", 14)) eventfd = 1;
  if (f) fclose(f);
  printf("%s: fd %d is %s\n", how, fd, eventfd ? "a kernel eventfd" : "not a kernel eventfd");
}

#endif
