// fdinfo.h - /proc/self/fdinfo/FD text for uepoll files (beyond Linux)
// and the structured list of an instance's registrations.
// Locks: an instance's shard locks (6), one at a time (for_each_item).
#pragma once

#include "core/file.h"

#include <cstdint>
#include <string>
#include <vector>

namespace uepoll::epoll {

class Instance;

struct Registration {
  int fd;
  uint32_t events;
  uint64_t data;
  uint64_t target_id;  // the target file's uepoll id (fdinfo's ino)
};

// Every registration of ep, sorted by (target_id, fd).
std::vector<Registration> registrations(Instance* ep);

// Linux 6.18's fdinfo text for f (see uep_fdinfo in uepoll.h); `cloexec`:
// the descriptor's FD_CLOEXEC (shown as O_CLOEXEC in flags:).
std::string fdinfo_text(core::File* f, bool cloexec);

}  // namespace uepoll::epoll
