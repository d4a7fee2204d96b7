// release.h - what happens to epoll registrations when a file's last
// reference goes away (Linux eventpoll_release() from __fput()): every item
// that watches the file is removed from its instance, silently.
//
// Locks: the file's wait-queue lock (to find and unlink one item at a time),
// then the owning instance's shard lock and ready lock.  Called by
// File::put() with no lock held.
#pragma once

namespace uepoll::core {
class File;
}

namespace uepoll::epoll {

void release_file(core::File* f) noexcept;

}  // namespace uepoll::epoll
