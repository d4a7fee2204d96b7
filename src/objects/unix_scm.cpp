// unix_scm.cpp - ScmPayload, scm_send and ScmRecv (see unix_scm.h): Linux
// net/core/scm.c and the control-message parts of net/unix/af_unix.c.
// Locks: none; callers hold no SpinLock (descriptors are made and closed
// here, memory allocated) except around glue() and take(), which only
// compare and move pointers.
#include "objects/unix_scm.h"

#include "core/alloc.h"
#include "core/file.h"
#include "core/own_slot.h"
#include "core/user_memory.h"
#include "fd/table.h"
#include "objects/unix_gc.h"

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <linux/capability.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace uepoll::objects {

namespace {

constexpr uid_t kOverflowId = 65534;  // Linux overflowuid/overflowgid: from_kuid_munged(INVALID_UID)

std::atomic<ScmInstallHook> g_install{nullptr};  // relaxed: set once, before any receive
std::atomic<ScmResolveHook> g_resolve{nullptr};  // relaxed: set once, before any send

// capable(cap) / ns_capable in the initial namespace: the effective set.
bool capable(int cap) noexcept {
  __user_cap_header_struct hdr{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2]{};
  if (::syscall(SYS_capget, &hdr, data) != 0) return false;
  return (data[cap / 32].effective >> (cap % 32)) & 1;
}

// Releases a file the payload did not take yet (not counted in flight).
void release_uncounted(ScmFile& f) noexcept {
  if (f.file) f.file->put();
  core::OwnSlot::free_on_heap(f.kslot);
  f = ScmFile{};
}

// Releases one of the payload's files: it leaves flight (when counted),
// then is put.
void release(ScmFile& f, bool counted) noexcept {
  if (counted) unix_notinflight(f.file);
  if (f.file) f.file->put();
  core::OwnSlot::free_on_heap(f.kslot);
  f = ScmFile{};
}

// fget_raw of descriptor n: a pinned uepoll file, or a kernel descriptor
// duplicated and owned by uepoll (O_PATH ones too, as fget_raw takes them).
int pin(int n, ScmFile* out) noexcept {
  if (ScmResolveHook h = g_resolve.load(std::memory_order_relaxed)) {
    n = h(n);
    if (n < 0) return -EBADF;
  }
  if (n < 0) return -EBADF;
  if (fd::in_range(n)) {
    core::File* f = fd::lookup(n);
    if (!f) return -EBADF;
    out->file = f;
    return 0;
  }
  const int saved = errno;
  const int d = ::fcntl(n, F_DUPFD_CLOEXEC, 0);
  const int e = errno;
  errno = saved;
  if (d < 0) return e == EBADF ? -EBADF : -e;
  out->kslot = core::OwnSlot::make_on_heap(d);
  return out->kslot ? 0 : -ENOMEM;
}

// scm_check_creds, then the pid lookup of __scm_send.
int check_creds(const struct ucred& c) noexcept {
  if (c.uid == static_cast<uid_t>(-1) || c.gid == static_cast<gid_t>(-1)) return -EINVAL;  // !uid_valid
  uid_t ru, eu, su;
  gid_t rg, eg, sg;
  ::getresuid(&ru, &eu, &su);
  ::getresgid(&rg, &eg, &sg);
  const bool pid_ok = c.pid == ::getpid() || capable(CAP_SYS_ADMIN);
  const bool uid_ok = c.uid == ru || c.uid == eu || c.uid == su || capable(CAP_SETUID);
  const bool gid_ok = c.gid == rg || c.gid == eg || c.gid == sg || capable(CAP_SETGID);
  if (!(pid_ok && uid_ok && gid_ok)) return -EPERM;
  if (c.pid != ::getpid() && (c.pid <= 0 || (::kill(c.pid, 0) != 0 && errno == ESRCH))) return -ESRCH;
  return 0;
}

int add_rights(const struct cmsghdr* cm, ScmPayload* out) noexcept {
  // scm_fp_copy: (cmsg_len - header) / sizeof(int) descriptors.
  const long num = static_cast<long>((cm->cmsg_len - sizeof(struct cmsghdr)) / sizeof(int));
  if (num <= 0) return 0;
  if (num > kScmMaxFd || out->nfiles() + num > kScmMaxFd) return -EINVAL;
  const auto* fds = reinterpret_cast<const int*>(CMSG_DATA(cm));
  for (long i = 0; i < num; ++i) {
    int n;
    std::memcpy(&n, fds + i, sizeof n);
    ScmFile f;
    if (int r = pin(n, &f)) return r;
    if (int r = out->add(f)) return r;
  }
  return 0;
}

}  // namespace

void set_scm_install_hook(ScmInstallHook hook) noexcept { g_install.store(hook, std::memory_order_relaxed); }
void set_scm_resolve_hook(ScmResolveHook hook) noexcept { g_resolve.store(hook, std::memory_order_relaxed); }

// ---- ScmPayload ----------------------------------------------------------------

ScmPayload::ScmPayload(ScmPayload&& o) noexcept
    : files_(o.files_), nfiles_(o.nfiles_), cap_(o.cap_), counted_(o.counted_), creds_(o.creds_) {
  o.files_ = nullptr;
  o.nfiles_ = o.cap_ = 0;
}

ScmPayload& ScmPayload::operator=(ScmPayload&& o) noexcept {
  if (this != &o) {
    clear();
    files_ = o.files_;
    nfiles_ = o.nfiles_;
    cap_ = o.cap_;
    counted_ = o.counted_;
    creds_ = o.creds_;
    o.files_ = nullptr;
    o.nfiles_ = o.cap_ = 0;
  }
  return *this;
}

int ScmPayload::add(ScmFile f) noexcept {
  if (nfiles_ >= kScmMaxFd) {
    release_uncounted(f);
    return -EINVAL;
  }
  if (nfiles_ == cap_) {
    const int cap = cap_ ? (cap_ * 2 > kScmMaxFd ? kScmMaxFd : cap_ * 2) : 4;
    auto* n = static_cast<ScmFile*>(core::raw_alloc(sizeof(ScmFile) * static_cast<size_t>(cap), alignof(ScmFile)));
    if (!n) {
      release_uncounted(f);
      return -ENOMEM;
    }
    if (nfiles_) std::memcpy(static_cast<void*>(n), files_, sizeof(ScmFile) * static_cast<size_t>(nfiles_));
    core::raw_free(files_);
    files_ = n;
    cap_ = cap;
  }
  files_[nfiles_++] = f;
  if (counted_) unix_inflight(f.file);  // unix_inflight (Linux counts at attach; this payload is on its way there)
  return 0;
}

ScmPayload ScmPayload::take_files() noexcept {
  ScmPayload p;
  p.files_ = files_;
  p.nfiles_ = nfiles_;
  p.cap_ = cap_;
  p.counted_ = counted_;
  p.creds_ = creds_;
  files_ = nullptr;
  nfiles_ = cap_ = 0;
  return p;
}

ScmPayload ScmPayload::clone_creds() const noexcept {
  ScmPayload p;
  p.creds_ = creds_;
  return p;
}

int ScmPayload::dup_files(ScmPayload* out) const noexcept {
  out->clear();
  out->counted_ = false;
  for (int i = 0; i < nfiles_; ++i) {
    ScmFile f;
    if (files_[i].file) {
      files_[i].file->get();
      f.file = files_[i].file;
    } else {
      core::OwnSlot::Use u(*files_[i].kslot);
      const int d = ::fcntl(u.fd(), F_DUPFD_CLOEXEC, 0);
      if (d < 0) {
        const int e = errno;
        out->clear();
        return -e;
      }
      f.kslot = core::OwnSlot::make_on_heap(d);
      if (!f.kslot) {
        out->clear();
        return -ENOMEM;
      }
    }
    if (int r = out->add(f)) {
      out->clear();
      return r;
    }
  }
  return 0;
}

void ScmPayload::clear() noexcept {
  for (int i = 0; i < nfiles_; ++i) release(files_[i], counted_);
  core::raw_free(files_);
  files_ = nullptr;
  nfiles_ = cap_ = 0;
  counted_ = true;
}

namespace {
// Constant-initialized: readable under a SpinLock from the first call on.
constinit const ScmPayload kNoScm;
}  // namespace

const ScmPayload& scm_or_none(const ScmPayload* p) noexcept { return p ? *p : kNoScm; }

ScmCreds current_creds() noexcept {
  ScmCreds c;
  c.set = true;
  c.pid = ::getpid();
  c.uid = ::getuid();
  c.gid = ::getgid();
  return c;
}

void maybe_add_creds(ScmPayload* p, bool passcred) noexcept {
  if (passcred && !p->creds().set) p->set_creds(current_creds());
}

int scm_send(const struct msghdr* msg, ScmPayload* out) noexcept {
  out->clear();
  out->set_creds(ScmCreds{});
  const size_t len = msg->msg_controllen;
  if (!len) return 0;
  if (len > static_cast<size_t>(INT32_MAX)) return -ENOBUFS;  // ____sys_sendmsg
  if (!core::user_readable(msg->msg_control, len)) return -EFAULT;
  // for_each_cmsghdr over the buffer, as CMSG_FIRSTHDR/__CMSG_NXTHDR walk it.
  const auto* base = static_cast<const char*>(msg->msg_control);
  size_t off = 0;
  int err = 0;
  while (off + sizeof(struct cmsghdr) <= len) {
    struct cmsghdr cm;
    std::memcpy(&cm, base + off, sizeof cm);
    // CMSG_OK: a length of at least the header, inside the buffer.
    if (cm.cmsg_len < sizeof(struct cmsghdr) || cm.cmsg_len > len - off) {
      err = -EINVAL;
      break;
    }
    if (cm.cmsg_level == SOL_SOCKET) {
      const auto* c = reinterpret_cast<const struct cmsghdr*>(base + off);
      if (cm.cmsg_type == SCM_RIGHTS) {
        err = add_rights(c, out);
      } else if (cm.cmsg_type == SCM_CREDENTIALS) {
        if (cm.cmsg_len != CMSG_LEN(sizeof(struct ucred))) {
          err = -EINVAL;
        } else {
          struct ucred uc;
          std::memcpy(&uc, CMSG_DATA(c), sizeof uc);
          err = check_creds(uc);
          if (!err) out->set_creds(ScmCreds{true, uc.pid, uc.uid, uc.gid});
        }
      } else {
        err = -EINVAL;  // SCM_PIDFD, SCM_SECURITY... are not sent; unknown types fail
      }
      if (err) break;
    }
    const size_t step = CMSG_ALIGN(cm.cmsg_len);
    if (step > len - off) break;
    off += step;
  }
  if (err) {
    out->clear();
    out->set_creds(ScmCreds{});
  }
  return err;
}

// ---- ScmRecv ---------------------------------------------------------------------

bool ScmRecv::glue(const ScmPayload& p, bool passcred) noexcept {
  if (check_creds_) return p.creds() == creds_;  // "Never glue messages from different writers"
  if (passcred) {
    creds_ = p.creds();  // scm_set_cred
    check_creds_ = true;
  }
  return true;
}

bool ScmRecv::take(ScmPayload* p) noexcept {
  if (!p->has_files()) return false;
  fp_ = p->take_files();
  return true;
}

bool ScmRecv::peek(const ScmPayload& p) noexcept {
  if (!p.has_files()) return false;
  (void)p.dup_files(&fp_);  // Linux's scm_fp_dup failing leaves no files either
  return true;
}

namespace {

// The control-buffer cursor of one scm_recv (put_cmsg and
// scm_detach_fds advance it).
struct CtlCursor {
  char* at;
  size_t left;
  int* flags;

  // put_cmsg: as much of the message as fits (MSG_CTRUNC when cut).
  void put(int level, int type, const void* data, size_t len) noexcept {
    if (!at || left < sizeof(struct cmsghdr)) {
      *flags |= MSG_CTRUNC;
      return;
    }
    size_t cmlen = CMSG_LEN(len);
    if (left < cmlen) {
      *flags |= MSG_CTRUNC;
      cmlen = left;
    }
    if (!core::user_readable(at, cmlen)) return;  // put_cmsg's -EFAULT, ignored by its callers
    struct cmsghdr cm {};
    cm.cmsg_len = cmlen;
    cm.cmsg_level = level;
    cm.cmsg_type = type;
    std::memcpy(at, &cm, sizeof cm);
    std::memcpy(at + sizeof cm, data, cmlen - sizeof cm);
    const size_t step = CMSG_SPACE(len) < left ? CMSG_SPACE(len) : left;
    at += step;
    left -= step;
  }
};

// receive_fd: a new descriptor for in-flight file f (a new reference: the
// payload keeps its own until it is cleared), or -errno.
int install_one(const ScmFile& f, bool cloexec) noexcept {
  if (f.file) {
    f.file->get();
    int n = fd::install(f.file);
    if (n < 0) {
      f.file->put();
      return n;
    }
    if (cloexec) fd::set_cloexec(n, true);
    if (ScmInstallHook h = g_install.load(std::memory_order_relaxed)) n = h(n, static_cast<int>(f.file->kind()));
    return n;
  }
  const int saved = errno;
  core::OwnSlot::Use u(*f.kslot);
  const int n = ::fcntl(u.fd(), cloexec ? F_DUPFD_CLOEXEC : F_DUPFD, 0);
  const int e = errno;
  errno = saved;
  return n < 0 ? -e : n;
}

// scm_detach_fds: as many files as the buffer has room for, each installed
// and its number written; MSG_CTRUNC when some did not fit or could not be
// installed.  The payload is cleared (what was not installed is closed).
void deliver_files(ScmPayload* fp, CtlCursor* cur, bool cloexec) noexcept {
  const int count = fp->nfiles();
  int fdmax = cur->at && cur->left > sizeof(struct cmsghdr)
                  ? static_cast<int>((cur->left - sizeof(struct cmsghdr)) / sizeof(int))
                  : 0;
  if (fdmax > count) fdmax = count;
  int i = 0;
  if (fdmax > 0 && core::user_readable(cur->at, CMSG_LEN(static_cast<size_t>(fdmax) * sizeof(int)))) {
    auto* data = reinterpret_cast<int*>(CMSG_DATA(reinterpret_cast<struct cmsghdr*>(cur->at)));
    for (; i < fdmax; ++i) {
      const int n = install_one(fp->file(i), cloexec);
      if (n < 0) break;
      std::memcpy(data + i, &n, sizeof n);
    }
  }
  if (i > 0) {
    struct cmsghdr cm {};
    cm.cmsg_len = CMSG_LEN(static_cast<size_t>(i) * sizeof(int));
    cm.cmsg_level = SOL_SOCKET;
    cm.cmsg_type = SCM_RIGHTS;
    std::memcpy(cur->at, &cm, sizeof cm);
    size_t step = CMSG_SPACE(static_cast<size_t>(i) * sizeof(int));
    if (step > cur->left) step = cur->left;
    cur->at += step;
    cur->left -= step;
  }
  if (i < count || (count && fdmax <= 0)) *cur->flags |= MSG_CTRUNC;
  fp->clear();
}

}  // namespace

void ScmRecv::set_timestamp(int type, const void* data) noexcept {
  ts_type_ = type;
  std::memcpy(ts_data_, data, sizeof ts_data_);
}

void ScmRecv::set_timestamping(int type, const void* data) noexcept {
  tsing_type_ = type;
  std::memcpy(tsing_data_, data, sizeof tsing_data_);
}

namespace {

// scm_pidfd_recv: room for the whole message first (MSG_CTRUNC without
// it), nothing for a message that carries no sender, else a new pidfd of
// the sender (close-on-exec, as pidfd_prepare makes every one), or the
// error in its place when there is none to open.
void put_pidfd(CtlCursor* cur, const ScmCreds& c) noexcept {
  if (cur->left < CMSG_LEN(sizeof(int))) {
    *cur->flags |= MSG_CTRUNC;
    return;
  }
  if (!c.set || c.pid <= 0 || !core::user_readable(cur->at, CMSG_LEN(sizeof(int)))) return;
  int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, c.pid, 0));
  if (pidfd < 0) pidfd = -errno;
  cur->put(SOL_SOCKET, kScmPidfd, &pidfd, sizeof pidfd);
}

}  // namespace

void ScmRecv::finish(ScmWants wants) noexcept {
  struct msghdr* m = msg_;
  int out_flags = flags_ & MSG_CMSG_CLOEXEC;  // ____sys_recvmsg returns it in msg_flags
  CtlCursor cur{static_cast<char*>(m->msg_control), m->msg_control ? m->msg_controllen : 0, &out_flags};
  char* const start = cur.at;
  if (!m->msg_control) {
    if (ts_type_ || wants.any() || fp_.has_files()) out_flags |= MSG_CTRUNC;
    fp_.clear();
  } else {
    if (ts_type_) cur.put(SOL_SOCKET, ts_type_, ts_data_, sizeof ts_data_);
    if (tsing_type_) cur.put(SOL_SOCKET, tsing_type_, tsing_data_, sizeof tsing_data_);
    if (wants.cred) {
      struct ucred uc;
      uc.pid = creds_.set ? creds_.pid : 0;
      uc.uid = creds_.uid == static_cast<uid_t>(-1) ? kOverflowId : creds_.uid;
      uc.gid = creds_.gid == static_cast<gid_t>(-1) ? kOverflowId : creds_.gid;
      cur.put(SOL_SOCKET, SCM_CREDENTIALS, &uc, sizeof uc);
    }
    if (fp_.has_files()) deliver_files(&fp_, &cur, (flags_ & MSG_CMSG_CLOEXEC) != 0);
    if (wants.pidfd) put_pidfd(&cur, creds_);
  }
  m->msg_controllen = static_cast<size_t>(cur.at - start);
  m->msg_flags = out_flags;
}

}  // namespace uepoll::objects
