// epoll_ioctl.h - the hook through which uep_ioctl() hands an epoll
// instance's own ioctls (EPIOCSPARAMS, EPIOCGPARAMS, ...) to the code that
// implements them.  uep_ioctl (fd_surface_api.cpp) handles the generic
// requests (FIONBIO, FIOCLEX, FIONCLEX, FIOASYNC) itself and calls this for
// every other request on an epoll instance.  No locks.
#pragma once

#include "core/file.h"

namespace uepoll::capi {

// Returns 0 or a value, or a negative errno; Linux answers a request the
// epoll file does not know with -EINVAL (ep_eventpoll_ioctl).  `ep` is
// referenced for the duration of the call.  Defined in beyond_api.cpp
// (EPIOCSPARAMS, EPIOCGPARAMS).
long epoll_ioctl(core::File* ep, unsigned long request, void* arg) noexcept;

}  // namespace uepoll::capi
