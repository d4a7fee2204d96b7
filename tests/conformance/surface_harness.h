// surface_harness.h - the differential harness (harness.h) extended with the
// rest of the descriptor surface: fcntl, ioctl, dup2/dup3, readv/writev,
// pread/pwrite/lseek, fstat, ppoll and the socket calls.  A scenario takes
// an `ST&` (a conf::T with these calls, each recorded as a trace line) and
// runs against Linux and uepoll through surface_differential(), and once
// more with every eventfd a provider's file (variants.h "user-files": the
// descriptor surface reaches the file interface's operations).  Owned by
// the descriptor-surface tests (surface_*_test.cpp).
#pragma once

#include "conformance/harness.h"
#include "conformance/variants.h"

#include <pthread.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>

namespace conf {

struct SurfaceApi {
  int (*fcntl)(int, int, unsigned long);
  int (*ioctl)(int, unsigned long, void*);
  int (*dup2)(int, int);
  int (*dup3)(int, int, int);
  ssize_t (*readv)(int, const struct iovec*, int);
  ssize_t (*writev)(int, const struct iovec*, int);
  ssize_t (*pread)(int, void*, size_t, off_t);
  ssize_t (*pwrite)(int, const void*, size_t, off_t);
  off_t (*lseek)(int, off_t, int);
  int (*fstat)(int, struct stat*);
  int (*ppoll)(struct pollfd*, nfds_t, const struct timespec*, const sigset_t*);
  ssize_t (*send)(int, const void*, size_t, int);
  ssize_t (*recv)(int, void*, size_t, int);
  ssize_t (*sendmsg)(int, const struct msghdr*, int);
  ssize_t (*recvmsg)(int, struct msghdr*, int);
  int (*getsockopt)(int, int, int, void*, socklen_t*);
  int (*setsockopt)(int, int, int, const void*, socklen_t);
  int (*getsockname)(int, struct sockaddr*, socklen_t*);
  int (*flock)(int, int);
};

inline const SurfaceApi& linux_surface() {
  static const SurfaceApi s{
      [](int fd, int cmd, unsigned long arg) { return ::fcntl(fd, cmd, arg); },
      [](int fd, unsigned long req, void* arg) { return ::ioctl(fd, req, arg); },
      ::dup2, ::dup3, ::readv, ::writev, ::pread, ::pwrite, ::lseek,
      [](int fd, struct stat* st) { return ::fstat(fd, st); },
      ::ppoll, ::send, ::recv, ::sendmsg, ::recvmsg, ::getsockopt, ::setsockopt, ::getsockname, ::flock};
  return s;
}

inline const SurfaceApi& uepoll_surface() {
  static const SurfaceApi s{
      [](int fd, int cmd, unsigned long arg) { return ::uep_fcntl(fd, cmd, arg); },
      [](int fd, unsigned long req, void* arg) { return ::uep_ioctl(fd, req, arg); },
      ::uep_dup2, ::uep_dup3, ::uep_readv, ::uep_writev, ::uep_pread, ::uep_pwrite, ::uep_lseek, ::uep_fstat,
      ::uep_ppoll, ::uep_send, ::uep_recv, ::uep_sendmsg, ::uep_recvmsg, ::uep_getsockopt, ::uep_setsockopt,
      ::uep_getsockname, ::uep_flock};
  return s;
}

class ST : public T {
 public:
  ST(const Api& a, const SurfaceApi& s) : T(a), sa(s) {}
  const SurfaceApi& sa;

  // Records "what = result" for a call returning a number; `fdres` names it.
  // (dup2/dup3 log 0 for "returned newfd", -2 for any other number.)
  long rec(const std::string& what, long r, bool fdres = false) {
    const int e = errno;
    if (fdres) adopt(static_cast<int>(r));
    errno = e;
    log(what + " = " + (fdres ? res_fd(static_cast<int>(r)) : res(r)));
    errno = e;
    return r;
  }
  std::string n(int fd) const { return name(fd); }

  int fcntl(int fd, int cmd, unsigned long arg, const char* desc) {
    errno = 0;
    const bool dupcmd = cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC;
    const int r = sa.fcntl(fd, cmd, arg);
    return static_cast<int>(rec("fcntl(" + n(fd) + "," + desc + ")", r, dupcmd));
  }
  int flock(int fd, int op, const char* desc) {
    errno = 0;
    return static_cast<int>(rec("flock(" + n(fd) + "," + desc + ")", sa.flock(fd, op)));
  }
  int getfl(int fd) {
    errno = 0;
    const int r = sa.fcntl(fd, F_GETFL, 0);
    char buf[32];
    snprintf(buf, sizeof buf, "%#o", r);
    log("fcntl(" + n(fd) + ",F_GETFL) = " + (r < 0 ? res(r) : std::string(buf)));
    return r;
  }
  int setfl(int fd, int flags, const char* desc) {
    errno = 0;
    return static_cast<int>(rec("fcntl(" + n(fd) + ",F_SETFL," + desc + ")", sa.fcntl(fd, F_SETFL, flags)));
  }
  int ioctl_int(int fd, unsigned long req, const char* desc, int in = 0) {
    int v = in;
    errno = 0;
    const int r = sa.ioctl(fd, req, &v);
    const int e = errno;
    log("ioctl(" + n(fd) + "," + desc + ") = " + (errno = e, res(r)) + (r == 0 ? " value=" + std::to_string(v) : ""));
    errno = e;
    return r;
  }
  int ioctl_ptr(int fd, unsigned long req, void* p, const char* desc) {
    errno = 0;
    return static_cast<int>(rec("ioctl(" + n(fd) + "," + desc + ")", sa.ioctl(fd, req, p)));
  }
  int dup2(int a, int b) {
    errno = 0;
    const int r = sa.dup2(a, b);
    return static_cast<int>(rec("dup2(" + n(a) + "," + n(b) + ")", r >= 0 ? (r == b ? 0 : -2) : r));
  }
  int dup3(int a, int b, int flags) {
    errno = 0;
    const int r = sa.dup3(a, b, flags);
    return static_cast<int>(rec("dup3(" + n(a) + "," + n(b) + "," + flag_str(flags) + ")", r >= 0 ? (r == b ? 0 : -2) : r));
  }
  // Scatter/gather with the given segment sizes (a data buffer of fill).
  ssize_t writev(int fd, const std::vector<size_t>& segs, char fill = 'v') {
    std::vector<std::vector<char>> bufs;
    std::vector<struct iovec> iov;
    for (size_t s : segs) bufs.emplace_back(s ? s : 1, fill);
    for (size_t i = 0; i < segs.size(); ++i) iov.push_back({bufs[i].data(), segs[i]});
    errno = 0;
    return rec("writev(" + n(fd) + "," + segs_str(segs) + ")", sa.writev(fd, iov.data(), static_cast<int>(iov.size())));
  }
  ssize_t writev_u64(int fd, const std::vector<uint64_t>& vals, size_t seglen) {
    std::vector<uint64_t> v = vals;
    std::vector<struct iovec> iov;
    for (auto& x : v) iov.push_back({&x, seglen});
    errno = 0;
    return rec("writev_u64(" + n(fd) + "," + std::to_string(vals.size()) + "x" + std::to_string(seglen) + ")",
               sa.writev(fd, iov.data(), static_cast<int>(iov.size())));
  }
  // Logs the count and the bytes as text (they are printable in scenarios).
  ssize_t readv(int fd, const std::vector<size_t>& segs) {
    std::vector<std::vector<char>> bufs;
    std::vector<struct iovec> iov;
    for (size_t s : segs) bufs.emplace_back(s ? s : 1, '.');
    for (size_t i = 0; i < segs.size(); ++i) iov.push_back({bufs[i].data(), segs[i]});
    errno = 0;
    const ssize_t r = sa.readv(fd, iov.data(), static_cast<int>(iov.size()));
    const int e = errno;
    std::string s = "readv(" + n(fd) + "," + segs_str(segs) + ") = " + (errno = e, res(r));
    if (r > 0) {
      s += " [";
      for (size_t i = 0; i < segs.size(); ++i) {
        if (i) s += '|';  // (two steps: see segs_str)
        s.append(bufs[i].data(), segs[i]);
      }
      s += "]";
    }
    log(s);
    errno = e;
    return r;
  }
  ssize_t iov_raw(int fd, const struct iovec* iov, int cnt, bool write, const char* desc) {
    errno = 0;
    const ssize_t r = write ? sa.writev(fd, iov, cnt) : sa.readv(fd, iov, cnt);
    return rec(std::string(write ? "writev(" : "readv(") + n(fd) + "," + desc + ")", r);
  }
  void seeks(int fd) {
    char b[4] = {};
    errno = 0;
    rec("lseek(" + n(fd) + ",0,CUR)", sa.lseek(fd, 0, SEEK_CUR));
    rec("lseek(" + n(fd) + ",5,SET)", sa.lseek(fd, 5, SEEK_SET));
    rec("lseek(" + n(fd) + ",-1,SET)", sa.lseek(fd, -1, SEEK_SET));
    rec("lseek(" + n(fd) + ",0,99)", sa.lseek(fd, 0, 99));
    rec("pread(" + n(fd) + ",4,0)", sa.pread(fd, b, 4, 0));
    rec("pread(" + n(fd) + ",4,-1)", sa.pread(fd, b, 4, -1));
    rec("pwrite(" + n(fd) + ",4,0)", sa.pwrite(fd, b, 4, 0));
    rec("pwrite(" + n(fd) + ",4,-1)", sa.pwrite(fd, b, 4, -1));
  }
  // fstat: the fields a program can rely on (not ino, dev, times).
  int fstat(int fd) {
    struct stat st;
    memset(&st, 0, sizeof st);
    errno = 0;
    const int r = sa.fstat(fd, &st);
    const int e = errno;
    char buf[128];
    snprintf(buf, sizeof buf, " mode=%o nlink=%lu size=%ld blksize=%ld uid=%d", st.st_mode,
             static_cast<unsigned long>(st.st_nlink), static_cast<long>(st.st_size), static_cast<long>(st.st_blksize),
             static_cast<int>(st.st_uid));
    log("fstat(" + n(fd) + ") = " + (errno = e, res(r)) + (r == 0 ? buf : ""));
    errno = e;
    return r;
  }
  int ppoll(const std::vector<std::pair<int, short>>& fds, const struct timespec* ts, const char* tsdesc) {
    std::vector<struct pollfd> p;
    for (auto& [fd, ev] : fds) p.push_back({fd, ev, 0});
    errno = 0;
    const int r = sa.ppoll(p.data(), p.size(), ts, nullptr);
    const int e = errno;
    std::string s = "ppoll(";
    for (size_t i = 0; i < p.size(); ++i) {
      if (i) s += " ";
      s += n(p[i].fd);
    }
    s += "," + std::string(tsdesc) + ") = " + (errno = e, res(r));
    if (r >= 0) {
      s += " [";
      for (size_t i = 0; i < p.size(); ++i) {
        if (i) s += " ";
        s += mask_str(static_cast<uint16_t>(p[i].revents));
      }
      s += "]";
    }
    log(s);
    errno = e;
    return r;
  }
  ssize_t send(int fd, size_t len, int flags, const char* fdesc, char fill = 's') {
    std::vector<char> b(len ? len : 1, fill);
    errno = 0;
    return rec("send(" + n(fd) + "," + std::to_string(len) + "," + fdesc + ")", sa.send(fd, b.data(), len, flags));
  }
  ssize_t recv(int fd, size_t len, int flags, const char* fdesc) {
    std::vector<char> b(len ? len : 1, '.');
    errno = 0;
    const ssize_t r = sa.recv(fd, b.data(), len, flags);
    const int e = errno;
    log("recv(" + n(fd) + "," + std::to_string(len) + "," + fdesc + ") = " + (errno = e, res(r)) +
        (r > 0 ? " [" + std::string(b.data(), static_cast<size_t>(r)) + "]" : ""));
    errno = e;
    return r;
  }
  int getsockopt_int(int fd, int level, int opt, const char* desc, socklen_t len = sizeof(int)) {
    int v = -7;
    errno = 0;
    const int r = sa.getsockopt(fd, level, opt, &v, &len);
    const int e = errno;
    log("getsockopt(" + n(fd) + "," + desc + ") = " + (errno = e, res(r)) +
        (r == 0 ? " value=" + std::to_string(len < sizeof(int) ? (v & ((1 << (8 * len)) - 1)) : v) + " len=" +
                      std::to_string(len)
                : ""));
    errno = e;
    return r;
  }
  // The signals pending on this thread now (consumed), e.g. SIGPIPE.
  std::string take_pending(int sig) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    struct timespec zero = {0, 0};
    const int r = sigtimedwait(&set, nullptr, &zero);
    return r == sig ? "pending" : "none";
  }

  static std::string segs_str(const std::vector<size_t>& segs) {
    std::string s = "[";
    for (size_t i = 0; i < segs.size(); ++i) {
      // (appended in two steps: GCC 12 -O3 warns -Wrestrict, falsely, on
      // `const char* + std::string&&`)
      if (i) s += ',';
      s += std::to_string(segs[i]);
    }
    return s + "]";
  }
};

// Blocks SIGPIPE in this thread for a scenario: a raised one stays pending
// (take_pending() shows it) instead of ending the test.
struct BlockSigpipe {
  sigset_t old;
  BlockSigpipe() {
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &s, &old);
  }
  ~BlockSigpipe() { pthread_sigmask(SIG_SETMASK, &old, nullptr); }
};

using SurfaceScenario = std::function<void(ST&)>;

// As conf::differential, with an ST.
inline Traces surface_differential(const SurfaceScenario& s) {
  Traces r;
  {
    ST t(uepoll_test::linux_api(), linux_surface());
    s(t);
    r.linux_trace = t.lines;
  }
  if (env_flag("UEPOLL_CONF_VERBOSE")) printf("linux trace:\n%s", dump(r.linux_trace).c_str());
  if (linux_only()) return r;
  {
    ST t(uepoll_test::uepoll_api(), uepoll_surface());
    s(t);
    r.uepoll_trace = t.lines;
  }
  EXPECT_TRUE(r.linux_trace == r.uepoll_trace) << "traces differ (L = Linux, U = uepoll):\n"
                                               << format_traces(r.linux_trace, r.uepoll_trace);
  if (!variant_skip_reason("user-files")) {
    ST t(user_files_api(), uepoll_surface());
    s(t);
    EXPECT_TRUE(r.linux_trace == t.lines) << "traces differ (L = Linux, U = uepoll variant \"user-files\"):\n"
                                          << format_traces(r.linux_trace, t.lines);
  }
  return r;
}

}  // namespace conf
