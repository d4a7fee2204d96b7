// ctl.h - epoll_ctl's checks after the instance lookup, shared by
// uep_epoll_ctl (capi/epoll_api.cpp) and uep_epoll_ctl_batch
// (capi/beyond_api.cpp).  Locks: none here (the instance takes its own).
#pragma once

#include <uepoll/uepoll.h>

#include "core/file.h"

#include <sys/epoll.h>

namespace uepoll::capi {

// Linux ep_op_has_event(); UEP_EPOLL_CTL_DISABLE takes no event either.
inline bool ctl_has_event(int op) noexcept { return op != EPOLL_CTL_DEL && op != UEP_EPOLL_CTL_DISABLE; }

// Linux do_epoll_ctl() from the target's lookup on: ep is the file behind
// epfd (non-null), ev the caller's event already copied in.  0 or -errno.
// Preconditions: inside a core::reclaim::ReadGuard that covers ep.
//
// ADD takes a reference on the target (it links a new item to the file,
// whose release must not run meanwhile); MOD, DEL and DISABLE use it
// without one.  The guard keeps its memory; the instance touches its state
// (poll) only after finding the item under the item's shard lock, and a
// file's release must take that lock to remove the item before the
// object's own teardown runs, so the state is live for as long as it is
// used.
int ctl_on(core::File* ep, int op, int fd, const struct epoll_event& ev);

}  // namespace uepoll::capi
