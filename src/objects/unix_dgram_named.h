// unix_dgram_named.h - a uepoll datagram pair end and named AF_UNIX
// sockets: the address check, the lookup, and delivery to a name through a
// kernel socket (Linux net/unix/af_unix.c: unix_validate_addr,
// unix_find_other, unix_dgram_sendmsg with msg_name).  Used by
// unix_dgram_calls.cpp.  No locks; each call makes system calls.
#pragma once

#include "objects/unix_scm.h"

#include <sys/socket.h>

namespace uepoll::objects {

// unix_validate_addr: family AF_UNIX and a sun_path of at least one byte
// within sockaddr_un: 0, or -EINVAL.
long unix_validate_addr(const struct sockaddr* addr, socklen_t len) noexcept;

// What the kernel answers an unnamed AF_UNIX datagram socket connecting to
// addr (no effect on the socket found there): 0 when a datagram socket is
// there, else -ENOENT, -ECONNREFUSED, -EPROTOTYPE, -EACCES...
long unix_probe_named(const struct sockaddr* addr, socklen_t len) noexcept;

// One datagram to the name in msg (already validated), with the control
// data `scm` holds (scm_send's result for msg), sent by a fresh unnamed
// kernel AF_UNIX datagram socket as the pair's own socket would send it:
// the credentials as the program wrote them and the kernel descriptors of
// SCM_RIGHTS (uepoll's owned duplicates), so that the kernel checks and
// attaches them; with `passcred` (the pair end's SO_PASSCRED) that socket
// has SO_PASSCRED on, so the kernel autobinds it and the receiver sees an
// abstract name.  Returns the count, the kernel's error (ENOENT,
// ECONNREFUSED, EPERM, EAGAIN...), or -EOPNOTSUPP when SCM_RIGHTS names a
// uepoll file (the kernel cannot carry it).  Blocks unless `nonblocking`
// or MSG_DONTWAIT, in that socket.  Thread-safe.
long unix_dgram_send_named(const struct msghdr* msg, const ScmPayload& scm, int flags, bool nonblocking,
                           bool passcred) noexcept;

}  // namespace uepoll::objects
