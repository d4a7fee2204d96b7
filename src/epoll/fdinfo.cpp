// fdinfo.cpp - uep_fdinfo's text, in the format Linux 6.18 prints in
// /proc/self/fdinfo/FD (fs/proc/fd.c seq_show, then the file's
// show_fdinfo: ep_show_fdinfo, eventfd_show_fdinfo, timerfd_show,
// unix_show_fdinfo; pipes have none).  Fields that name kernel objects
// take uepoll's own values: mnt_id 0, ino the file id, sdev 0.
// Locks: an instance's shard locks (4), one at a time.
#include "epoll/fdinfo.h"

#include "epoll/instance.h"
#include "objects/eventfd.h"
#include "objects/timerfd.h"

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <fcntl.h>
#include <unistd.h>

namespace uepoll::epoll {

std::vector<Registration> registrations(Instance* ep) {
  std::vector<Registration> rows;
  ep->for_each_item([&](Item* it) {
    uint32_t ev;
    uint64_t d;
    it->read_event(&ev, &d);
    rows.push_back({it->fd, ev, d, it->file->id()});
  });
  std::sort(rows.begin(), rows.end(), [](const Registration& a, const Registration& b) {
    return a.target_id != b.target_id ? a.target_id < b.target_id : a.fd < b.fd;
  });
  return rows;
}

namespace {

__attribute__((format(printf, 2, 3))) void append(std::string& out, const char* fmt, ...) {
  char buf[160];
  va_list ap;
  va_start(ap, fmt);
  const int n = std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (n > 0) out.append(buf, static_cast<size_t>(std::min<int>(n, static_cast<int>(sizeof buf) - 1)));
}

// The per-type lines of a kernel timerfd: everything after its four
// common lines.
void kernel_timer_lines(std::string& out, int kfd) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/self/fdinfo/%d", kfd);
  FILE* f = std::fopen(path, "re");
  if (!f) return;
  char line[256];
  int n = 0;
  while (std::fgets(line, sizeof line, f))
    if (++n > 4) out += line;
  std::fclose(f);
}

}  // namespace

std::string fdinfo_text(core::File* f, bool cloexec) {
  std::string out;
  // Linux seq_show(): "pos:\t%lli\nflags:\t0%o\nmnt_id:\t%i\nino:\t%lu\n",
  // flags with O_CLOEXEC when the descriptor has FD_CLOEXEC.
  append(out, "pos:\t%lli\nflags:\t0%o\nmnt_id:\t%i\nino:\t%lu\n", 0LL,
         static_cast<unsigned>(f->status_flags() | (cloexec ? O_CLOEXEC : 0)), 0,
         static_cast<unsigned long>(f->id()));
  switch (f->kind()) {
    case core::FileKind::kEpoll:
      for (const Registration& r : registrations(static_cast<Instance*>(f)))
        append(out, "tfd: %8d events: %8x data: %16llx  pos:%lli ino:%lx sdev:%x\n", r.fd, r.events,
               static_cast<unsigned long long>(r.data), 0LL, static_cast<unsigned long>(r.target_id), 0u);
      break;
    case core::FileKind::kEventFd: {
      auto* e = static_cast<objects::EventFd*>(f);
      append(out, "eventfd-count: %16llx\neventfd-id: %d\neventfd-semaphore: %d\n",
             static_cast<unsigned long long>(e->count_snapshot()), static_cast<int>(f->id()),
             e->semaphore() ? 1 : 0);
      break;
    }
    case core::FileKind::kTimer:
      kernel_timer_lines(out, static_cast<objects::TimerFd*>(f)->kernel_fd());
      break;
    case core::FileKind::kSocket:
      out += "scm_fds: 0\n";  // unix_show_fdinfo: no SCM_RIGHTS in flight
      break;
    case core::FileKind::kPipeRead:
    case core::FileKind::kPipeWrite:
    default:  // pipes (and any kind without a show_fdinfo) print nothing more
      break;
  }
  return out;
}

}  // namespace uepoll::epoll
