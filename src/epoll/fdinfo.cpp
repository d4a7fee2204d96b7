// fdinfo.cpp - uep_fdinfo's text, in the format Linux 6.18 prints in
// /proc/self/fdinfo/FD (fs/proc/fd.c seq_show, then the file's
// show_fdinfo: core::File::show_fdinfo, e.g. Instance's in
// instance_file.cpp), and an instance's registration rows.  Fields that
// name kernel objects take uepoll's own values: mnt_id 0, ino the file id,
// sdev 0.
// Locks: an instance's shard locks (6), one at a time.
#include "epoll/fdinfo.h"

#include "epoll/instance.h"

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <fcntl.h>

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

}  // namespace

std::string fdinfo_text(core::File* f, bool cloexec) {
  std::string out;
  // Linux seq_show(): "pos:\t%lli\nflags:\t0%o\nmnt_id:\t%i\nino:\t%lu\n",
  // flags with O_CLOEXEC when the descriptor has FD_CLOEXEC.
  append(out, "pos:\t%lli\nflags:\t0%o\nmnt_id:\t%i\nino:\t%lu\n", 0LL,
         static_cast<unsigned>(f->status_flags() | (cloexec ? O_CLOEXEC : 0)), 0,
         static_cast<unsigned long>(f->id()));
  f->show_fdinfo(out);  // the file's own lines (f_op->show_fdinfo)
  return out;
}

}  // namespace uepoll::epoll
