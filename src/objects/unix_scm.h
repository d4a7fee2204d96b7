// unix_scm.h - control messages of uepoll AF_UNIX sockets: SCM_RIGHTS and
// SCM_CREDENTIALS (Linux net/core/scm.c: __scm_send, scm_fp_copy,
// scm_check_creds, put_cmsg, scm_detach_fds; include/net/scm.h: scm_send,
// scm_recv_unix; net/unix/af_unix.c: unix_scm_to_skb, maybe_add_creds,
// unix_skb_scm_eq, unix_peek_fds).
//
// What it owns.  ScmPayload is what one message (Linux: one skb) carries
// besides its bytes: the credentials it was sent with and the in-flight
// files.  A uepoll file is held by a reference; a kernel descriptor by a
// duplicate that uepoll owns (close-on-exec, parked high and recorded as
// uepoll's own, core/own_fds.h; in an OwnSlot, core/own_slot.h, so that a
// program's dup2 onto its number moves it), so the sender may close its
// descriptor while the message is queued.  Destroying a payload (or clear()) releases
// its files: a queue purged at close, a receive with no room for them.
//
// The socket calls it:
//   sendmsg:  scm_send(msg, &p)           parse and pin (errors before any data)
//             maybe_add_creds(&p, on)     the sender's own pid/uid/gid when
//                                         SO_PASSCRED is on at either end
//             p.take_files() / p.clone_creds()  the files go with the first
//                                         message, the credentials with each
//   recvmsg:  ScmRecv r(msg, flags)       starts a receive (msg_flags reset)
//             r.glue(p) / r.take(p)       per message, Linux's rules for
//                                         what one receive may merge
//             r.finish(passcred)          writes the cmsgs, installs the files
//
// Installing a received file.  A kernel descriptor is duplicated to the
// lowest free kernel number (F_DUPFD, O_CLOEXEC with MSG_CMSG_CLOEXEC); a
// uepoll file is installed at the lowest free uepoll descriptor, then handed
// to the installer hook if one is set (the preload shows it under a kernel
// number, as it shows every uepoll descriptor), so that descriptors are
// numbered in message order, as Linux numbers them.  Without a hook the
// receiver sees the uepoll descriptor itself.
//
// Locks: none of its own.  ScmRecv::glue() and take(), the moves
// (move constructor, take_files), clone_creds and the accessors neither allocate nor
// make system calls: they may run under the socket's SpinLock.  Everything
// else (scm_send, add, dup_files, clear, ScmRecv::peek and
// finish, destroying a payload that has files) allocates or makes system
// calls, and may release files (a File::put): no SpinLock held.
#pragma once

#include <sys/socket.h>
#include <sys/types.h>

#include <cstdint>

namespace uepoll::core {
class File;
class OwnSlot;
}

namespace uepoll::objects {

inline constexpr int kScmMaxFd = 253;  // Linux: include/net/scm.h SCM_MAX_FD

// Credentials carried by a message (struct scm_creds plus whether the
// message has any: Linux's UNIXCB(skb).pid != NULL).  uid/gid -1 when none
// were attached (INVALID_UID).
// Linux 6.5's SO_PASSPIDFD and SCM_PIDFD (Debian 12's headers predate them).
constexpr int kSoPassPidfd = 76;
constexpr int kScmPidfd = 4;

// What a receiving socket asks for with each message: SCM_CREDENTIALS
// (SO_PASSCRED) and SCM_PIDFD (SO_PASSPIDFD).  Either makes a send attach
// the sender's credentials and a stream receive keep writers apart
// (unix_may_passcred).
struct ScmWants {
  bool cred = false;
  bool pidfd = false;
  bool any() const noexcept { return cred || pidfd; }
};

struct ScmCreds {
  bool set = false;
  pid_t pid = 0;
  uid_t uid = static_cast<uid_t>(-1);
  gid_t gid = static_cast<gid_t>(-1);
  bool operator==(const ScmCreds& o) const noexcept {
    return set == o.set && pid == o.pid && uid == o.uid && gid == o.gid;
  }
};

// One in-flight file: a uepoll file (reference held) or a kernel
// descriptor that uepoll owns, in an OwnSlot of its own (core/own_slot.h:
// a program's dup2 onto its number moves it).
struct ScmFile {
  core::File* file = nullptr;
  core::OwnSlot* kslot = nullptr;
};

class ScmPayload {
 public:
  ScmPayload() noexcept = default;
  ~ScmPayload() { clear(); }
  ScmPayload(ScmPayload&& o) noexcept;
  ScmPayload& operator=(ScmPayload&& o) noexcept;
  ScmPayload(const ScmPayload&) = delete;
  ScmPayload& operator=(const ScmPayload&) = delete;

  int nfiles() const noexcept { return nfiles_; }
  bool has_files() const noexcept { return nfiles_ > 0; }
  const ScmFile& file(int i) const noexcept { return files_[i]; }
  const ScmCreds& creds() const noexcept { return creds_; }
  void set_creds(const ScmCreds& c) noexcept { creds_ = c; }

  // Appends one file; the payload takes over the reference or the owned
  // descriptor.  -EINVAL past kScmMaxFd, -ENOMEM (the file is then
  // released).
  int add(ScmFile f) noexcept;
  // The files, moved into a new payload (credentials stay); this one keeps
  // its credentials and no files.
  ScmPayload take_files() noexcept;
  // A payload with these credentials and no files.
  ScmPayload clone_creds() const noexcept;
  // New references to the same files (Linux scm_fp_dup, for MSG_PEEK),
  // not counted in flight (unix_peek_fds counts none), so that no GC
  // mutex is taken under the iolock_ a peek holds:
  // 0, or -ENOMEM / -EMFILE with *out empty.
  int dup_files(ScmPayload* out) const noexcept;
  // Releases every file (uepoll references put, owned descriptors closed).
  void clear() noexcept;

 private:
  ScmFile* files_ = nullptr;  // nfiles_ used, cap_ allocated (core::raw_alloc)
  int nfiles_ = 0;
  int cap_ = 0;
  bool counted_ = true;       // its files count in flight (objects/unix_gc.h); not a MSG_PEEK's copies
  ScmCreds creds_;
};

// *p, or the empty payload of a message sent without control data (p null).
const ScmPayload& scm_or_none(const ScmPayload* p) noexcept;

// The sending process's credentials as Linux attaches them (task_tgid,
// the real uid and gid: current_uid_gid).
ScmCreds current_creds() noexcept;

// __scm_send for an AF_UNIX socket: walks msg's control messages
// (msg_control, msg_controllen; a length under sizeof(cmsghdr) carries
// none).  SCM_RIGHTS: each descriptor resolved and pinned (a negative or
// closed one -EBADF, more than kScmMaxFd in all -EINVAL, a uepoll epoll
// instance is accepted as Linux accepts an epoll file); SCM_CREDENTIALS:
// cmsg_len must be CMSG_LEN(sizeof(struct ucred)) (-EINVAL), the values
// scm_check_creds allows (-EPERM: another pid without CAP_SYS_ADMIN,
// another uid without CAP_SETUID, another gid without CAP_SETGID), a pid
// that does not exist -ESRCH.  A cmsg whose length runs past the buffer or
// under sizeof(cmsghdr), or an unknown SOL_SOCKET type, -EINVAL; other
// levels are skipped.  An unreadable buffer -EFAULT.  On error *out is
// left empty (everything pinned so far released).  Allocates; may block
// in no way.  Thread-safe.
int scm_send(const struct msghdr* msg, ScmPayload* out) noexcept;

// maybe_add_creds: when `passcred` (SO_PASSCRED on the sender or its peer)
// and the payload has no credentials yet, the sender's own.
void maybe_add_creds(ScmPayload* p, bool passcred) noexcept;

// One receive's control state (Linux: the scm_cookie of
// unix_stream_read_generic) and its delivery (scm_recv_unix).
class ScmRecv {
 public:
  // flags: the recvmsg flags (MSG_CMSG_CLOEXEC, MSG_PEEK).
  ScmRecv(struct msghdr* msg, int flags) noexcept : msg_(msg), flags_(flags) {}
  // Linux's rule before a receive takes bytes of another message, with
  // `passcred` the receiver's SO_PASSCRED: false when the bytes must not
  // be glued to what was taken (credentials that differ from the first
  // message's, once SO_PASSCRED made the receive note them).  The first
  // call records the message's credentials.
  bool glue(const ScmPayload& p, bool passcred) noexcept;
  // The message's files become this receive's (Linux: swap(scm.fp,
  // UNIXCB(skb).fp)); *p keeps its credentials.  Returns true if it had
  // files (the receive then stops after this message).
  bool take(ScmPayload* p) noexcept;
  // MSG_PEEK: this receive gets new references to p's files (unix_peek_fds);
  // returns true if p has files.
  bool peek(const ScmPayload& p) noexcept;
  // Writes the control messages into msg (scm_recv_unix): without a
  // control buffer, MSG_CTRUNC if `wants` any or files came, and the files
  // are closed; else SCM_CREDENTIALS when wanted, then SCM_RIGHTS with as
  // many files as fit, each installed as a new descriptor (the rest
  // closed, MSG_CTRUNC), then SCM_PIDFD when wanted (a new pidfd of the
  // sender).  Sets msg_controllen to what was written and msg_flags to
  // MSG_CTRUNC and MSG_CMSG_CLOEXEC as Linux returns them.  Call once,
  // after a receive that succeeded.
  void finish(ScmWants wants) noexcept;
  // A timestamp control message (__sock_recv_timestamp: SOL_SOCKET, `type`
  // one of SO_TIMESTAMP{,NS}_{OLD,NEW}, 16 bytes of data) that finish()
  // writes before the others.
  void set_timestamp(int type, const void* data) noexcept;
  // SCM_TIMESTAMPING after it (SO_TIMESTAMPING_OLD or _NEW as `type`):
  // three timespecs, the software stamp first, 48 bytes of data.
  void set_timestamping(int type, const void* data) noexcept;

 private:
  struct msghdr* msg_;
  int flags_;
  int ts_type_ = 0;  // 0: no timestamp
  unsigned char ts_data_[16] = {};
  int tsing_type_ = 0;  // 0: no SCM_TIMESTAMPING
  unsigned char tsing_data_[48] = {};
  bool check_creds_ = false;
  ScmCreds creds_{false, 0, 0, 0};  // Linux memsets the cookie: 0/0/0 until a message is noted
  ScmPayload fp_;
};

// The installer hook (see the opening comment): given a newly installed
// uepoll descriptor and its core::FileKind (as an int), returns the number
// the receiver is to see, or -errno (the descriptor has then been closed
// by the hook).  Set once, before any receive; nullptr: none.
using ScmInstallHook = int (*)(int ufd, int kind);
void set_scm_install_hook(ScmInstallHook hook) noexcept;
// The sending side's counterpart: maps a number the sender named to the
// descriptor it stands for (a uepoll descriptor, or a kernel one), or
// returns -EBADF.  nullptr: numbers are taken as they are.
using ScmResolveHook = int (*)(int n);
void set_scm_resolve_hook(ScmResolveHook hook) noexcept;

}  // namespace uepoll::objects
