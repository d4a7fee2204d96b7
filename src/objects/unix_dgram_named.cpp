// unix_dgram_named.cpp - what a uepoll datagram pair end does with named
// AF_UNIX sockets (unix_dgram_named.h): the lookup probe and delivery to a
// name through a fresh kernel datagram socket, control data included.
// Owns no state; takes no locks (pins the in-flight kernel descriptors'
// slots for the send: core/own_slot.h).
#include "objects/unix_dgram_named.h"

#include "core/own_slot.h"

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <sys/un.h>
#include <unistd.h>

namespace uepoll::objects {

long unix_validate_addr(const struct sockaddr* addr, socklen_t len) noexcept {
  if (len <= offsetof(struct sockaddr_un, sun_path) || len > sizeof(struct sockaddr_un)) return -EINVAL;
  if (addr->sa_family != AF_UNIX) return -EINVAL;
  return 0;
}

long unix_probe_named(const struct sockaddr* addr, socklen_t len) noexcept {
  const int k = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (k < 0) return -errno;
  const long r = ::connect(k, addr, len) < 0 ? -errno : 0;
  ::close(k);
  return r;
}

namespace {

// Room for the credentials and every descriptor one message may carry.
union ControlBuf {
  struct cmsghdr align;
  char bytes[CMSG_SPACE(sizeof(struct ucred)) + CMSG_SPACE(kScmMaxFd * sizeof(int))];
};

// scm's control data as the kernel takes it (SCM_CREDENTIALS, then one
// SCM_RIGHTS with the kernel descriptors in message order) into m, whose
// msg_control is buf: 0, or -EOPNOTSUPP if a file is uepoll's.
long kernel_control(const ScmPayload& scm, struct msghdr* m, ControlBuf* buf) noexcept {
  std::memset(buf, 0, sizeof *buf);
  m->msg_control = buf->bytes;
  m->msg_controllen = sizeof buf->bytes;
  size_t used = 0;
  struct cmsghdr* c = CMSG_FIRSTHDR(m);
  if (scm.creds().set) {
    const struct ucred uc = {scm.creds().pid, scm.creds().uid, scm.creds().gid};
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_CREDENTIALS;
    c->cmsg_len = CMSG_LEN(sizeof uc);
    std::memcpy(CMSG_DATA(c), &uc, sizeof uc);
    used += CMSG_SPACE(sizeof uc);
    c = reinterpret_cast<struct cmsghdr*>(buf->bytes + used);
  }
  if (scm.has_files()) {
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(static_cast<size_t>(scm.nfiles()) * sizeof(int));
    for (int i = 0; i < scm.nfiles(); ++i)
      if (!scm.file(i).kslot) return -EOPNOTSUPP;  // a uepoll file: not the kernel's to carry
    for (int i = 0; i < scm.nfiles(); ++i) {
      core::OwnSlot* k = scm.file(i).kslot;
      k->pin();  // until the send (unpin_files): its number goes into the message
      const int fd = k->peek();
      std::memcpy(CMSG_DATA(c) + static_cast<size_t>(i) * sizeof(int), &fd, sizeof(int));
    }
    used += CMSG_SPACE(static_cast<size_t>(scm.nfiles()) * sizeof(int));
  }
  m->msg_controllen = used;
  if (!used) m->msg_control = nullptr;
  return 0;
}

// Ends kernel_control's pins.
void unpin_files(const ScmPayload& scm) noexcept {
  for (int i = 0; i < scm.nfiles(); ++i)
    if (core::OwnSlot* k = scm.file(i).kslot) k->unpin();
}

}  // namespace

long unix_dgram_send_named(const struct msghdr* msg, const ScmPayload& scm, int flags, bool nonblocking,
                           bool passcred) noexcept {
  struct msghdr m = *msg;
  ControlBuf buf;
  if (long r = kernel_control(scm, &m, &buf)) return r;
  long e;
  const int k = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  const int on = 1;
  if (k < 0 || (passcred && ::setsockopt(k, SOL_SOCKET, SO_PASSCRED, &on, sizeof on) < 0)) {
    e = -errno;
  } else {
    const long r = ::sendmsg(k, &m, flags | (nonblocking ? MSG_DONTWAIT : 0));
    e = r < 0 ? -errno : r;
  }
  if (k >= 0) ::close(k);
  unpin_files(scm);
  return e;
}

}  // namespace uepoll::objects
