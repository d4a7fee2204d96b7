// kernel_watch_fdinfo.cpp - the "tfd:" fdinfo lines of the kernel
// descriptors an instance watches (KernelWatch::show_fdinfo): they are
// shadow_'s registrations, with the caller's events and data, so the
// kernel's own lines for shadow_ (fs/eventpoll.c ep_show_fdinfo) are
// Linux's lines for them; the doorbell's (kick_tag()) is left out.
//
// Locks: none; it reads /proc, so it is never called with a SpinLock held.
#include "epoll/kernel_watch.h"

#include "core/internal_call.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

namespace uepoll::epoll {

void KernelWatch::show_fdinfo(std::string& out) const noexcept {
  std::string text;
  {
    // The proc file finds the descriptor by number at each read: one use
    // of shadow_ from the open to the close.
    core::OwnSlot::Use sh(shadow_);
    char path[64];
    std::snprintf(path, sizeof path, "/proc/self/fdinfo/%d", sh.fd());
    core::InternalCalls own;  // shadow_ is one of uepoll's own: the kernel's file
    const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    char chunk[1024];
    for (ssize_t n; (n = ::read(fd, chunk, sizeof chunk)) > 0;) {
      try {
        text.append(chunk, static_cast<size_t>(n));
      } catch (...) {  // out of memory: the lines read so far
        break;
      }
    }
    ::close(fd);
  }
  const unsigned long long kick = kick_tag();
  for (size_t at = 0; at < text.size();) {
    size_t eol = text.find('\n', at);
    eol = eol == std::string::npos ? text.size() : eol + 1;
    const char* line = text.c_str() + at;
    unsigned long long data = 0;
    int tfd;
    unsigned events;
    if (std::sscanf(line, "tfd: %d events: %x data: %llx", &tfd, &events, &data) == 3 && data != kick) {
      try {
        out.append(line, eol - at);
      } catch (...) {
        return;
      }
    }
    at = eol;
  }
}

}  // namespace uepoll::epoll
