// surface_scm.h - what the control-message scenarios share
// (surface_scm_test.cpp, surface_scm_creds_test.cpp): a control buffer
// builder, sendmsg/recvmsg that log every cmsg (received descriptors named
// in arrival order, with FD_CLOEXEC and optionally their rank among the
// lowest free numbers), and calls on kernel pipes that both sides share.
// Owned by those tests.
#pragma once

#include "conformance/surface_harness.h"

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace conf::scm {

inline std::string msg_flags_str(int f) {
  std::string s;
  auto add = [&](int bit, const char* n) {
    if (f & bit) {
      s += s.empty() ? "" : "|";
      s += n;
      f &= ~bit;
    }
  };
  add(MSG_CTRUNC, "CTRUNC");
  add(MSG_CMSG_CLOEXEC, "CMSG_CLOEXEC");
  add(MSG_TRUNC, "TRUNC");
  add(MSG_EOR, "EOR");
  if (f) s += (s.empty() ? "" : "|") + std::to_string(f);
  return s.empty() ? "0" : s;
}

// A control buffer being built: cmsgs appended in order.
struct Ctl {
  std::vector<char> buf;
  void add(int level, int type, const void* data, size_t len) {
    const size_t off = buf.size();
    buf.resize(off + CMSG_SPACE(len), 0);
    struct cmsghdr cm {};
    cm.cmsg_len = CMSG_LEN(len);
    cm.cmsg_level = level;
    cm.cmsg_type = type;
    memcpy(buf.data() + off, &cm, sizeof cm);
    if (len) memcpy(buf.data() + off + CMSG_LEN(0), data, len);
  }
  void rights(const std::vector<int>& fds) { add(SOL_SOCKET, SCM_RIGHTS, fds.data(), fds.size() * sizeof(int)); }
  void creds(pid_t pid, uid_t uid, gid_t gid) {
    struct ucred uc = {pid, uid, gid};
    add(SOL_SOCKET, SCM_CREDENTIALS, &uc, sizeof uc);
  }
};

class Scm {
 public:
  explicit Scm(ST& t) : t_(t) {}

  // sendmsg of len bytes of `fill` with control buffer ctl (nullptr: none).
  long send(int s, size_t len, const Ctl* ctl, const std::string& desc, char fill = 'm', int flags = 0) {
    std::vector<char> b(len ? len : 1, fill);
    struct iovec iov = {b.data(), len};
    struct msghdr m = {};
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    if (ctl) {
      m.msg_control = const_cast<char*>(ctl->buf.data());
      m.msg_controllen = ctl->buf.size();
    }
    errno = 0;
    return t_.rec("sendmsg(" + t_.n(s) + "," + std::to_string(len) + "," + desc + ")", t_.sa.sendmsg(s, &m, flags));
  }
  long send_fds(int s, size_t len, const std::vector<int>& fds, char fill = 'm', int flags = 0) {
    Ctl c;
    c.rights(fds);
    std::string d = "RIGHTS[";
    for (size_t i = 0; i < fds.size(); ++i) {
      if (i) d += ' ';
      d += t_.n(fds[i]);
    }
    return send(s, len, &c, d + "]", fill, flags);
  }
  // recvmsg into len bytes with `space` bytes of control buffer (-1: no
  // buffer, msg_control NULL).  Logs the bytes, msg_flags, msg_controllen
  // and each cmsg; received descriptors are named, with FD_CLOEXEC, and
  // with `numbers` their offsets from the lowest free number.
  long recv(int s, size_t len, long space, int flags, const char* desc, bool numbers = false) {
    std::vector<char> b(len ? len : 1, '.');
    std::vector<char> ctl(space > 0 ? static_cast<size_t>(space) : 1, 0);
    struct iovec iov = {b.data(), len};
    struct msghdr m = {};
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    m.msg_control = space >= 0 ? ctl.data() : nullptr;
    m.msg_controllen = space >= 0 ? static_cast<size_t>(space) : 0;
    m.msg_flags = 0x7777;  // recvmsg overwrites it
    last_.clear();
    const std::vector<int> lowk = free_kernel();
    const std::vector<int> lowu = free_impl();
    errno = 0;
    const long r = t_.sa.recvmsg(s, &m, flags);
    const int e = errno;
    std::string line = "recvmsg(" + t_.n(s) + "," + std::to_string(len) + ",ctl " + std::to_string(space) + "," +
                       desc + ") = " + (errno = e, t_.res(r));
    if (r >= 0) {
      const size_t got = static_cast<size_t>(r) < len ? static_cast<size_t>(r) : len;  // MSG_TRUNC: r > len
      line += " [" + std::string(b.data(), got) + "] flags=" + msg_flags_str(m.msg_flags) +
              " controllen=" + std::to_string(m.msg_controllen);
      for (struct cmsghdr* c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
        line += ' ';  // appended, not " " + ...: GCC 12's -O3 -Wrestrict misfires on that operator+
        line += cmsg_str(c, lowk, lowu, numbers);
      }
    }
    t_.log(line);
    errno = e;
    return r;
  }
  const std::vector<int>& last() const { return last_; }

 private:
  // The kFree lowest free numbers, kernel ones and the implementation's own.
  static constexpr int kFree = 8;
  static std::vector<int> free_kernel() {
    std::vector<int> v;
    for (int i = 0; i < kFree; ++i) v.push_back(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    for (int fd : v) ::close(fd);
    return v;
  }
  std::vector<int> free_impl() {
    conf::T::Quiet q(t_);
    std::vector<int> v;
    for (int i = 0; i < kFree; ++i) v.push_back(t_.api.eventfd(0, 0));
    for (int fd : v) t_.api.close(fd);
    return v;
  }
  // "free#i": fd was the i-th lowest free number of its kind.
  static std::string free_index(int fd, const std::vector<int>& lowk, const std::vector<int>& lowu) {
    const std::vector<int>& v = fd >= UEP_FD_BASE ? lowu : lowk;
    for (size_t i = 0; i < v.size(); ++i)
      if (v[i] == fd) return "@free#" + std::to_string(i);
    return "@not-lowest";
  }
  std::string cmsg_str(struct cmsghdr* c, const std::vector<int>& lowk, const std::vector<int>& lowu, bool numbers) {
    std::string s = "{" + std::to_string(c->cmsg_level) + "," + std::to_string(c->cmsg_type) + ",len " +
                    std::to_string(c->cmsg_len);
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
      const size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (size_t i = 0; i < n; ++i) {
        int fd;
        memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
        t_.adopt(fd);
        last_.push_back(fd);
        const int fl = t_.sa.fcntl(fd, F_GETFD, 0);
        s += ' ';
        s += t_.n(fd);
        if (fl > 0) s += "(cloexec)";
        if (numbers) s += free_index(fd, lowk, lowu);
      }
    } else if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS &&
               c->cmsg_len >= CMSG_LEN(sizeof(struct ucred))) {
      struct ucred uc;
      memcpy(&uc, CMSG_DATA(c), sizeof uc);
      s += " pid=" + (uc.pid == getpid() ? std::string("self") : std::to_string(uc.pid)) +
           " uid=" + std::to_string(uc.uid) + " gid=" + std::to_string(uc.gid);
    } else if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == kScmPidfd && c->cmsg_len >= CMSG_LEN(sizeof(int))) {
      int fd;
      memcpy(&fd, CMSG_DATA(c), sizeof fd);
      s += " " + pidfd_str(fd);
    }
    return s + "}";
  }
  // SCM_PIDFD's value: a kernel pidfd (closed here), named by whose it is
  // and FD_CLOEXEC, or the error in its place.
  static std::string pidfd_str(int fd) {
    if (fd < 0) return "error " + std::to_string(fd);
    char link[64] = {};
    const std::string path = "/proc/self/fd/" + std::to_string(fd);
    const ssize_t n = ::readlink(path.c_str(), link, sizeof link - 1);
    std::string s = n > 0 && std::string(link) == "anon_inode:[pidfd]" ? "pidfd" : "other fd";
    if (::fcntl(fd, F_GETFD) & FD_CLOEXEC) s += "(cloexec)";
    const std::string self = "Pid:\t" + std::to_string(getpid()) + "\n";
    FILE* f = ::fopen(("/proc/self/fdinfo/" + std::to_string(fd)).c_str(), "re");
    bool mine = false;
    if (f) {
      char line[128];
      while (::fgets(line, sizeof line, f))
        if (self == line) mine = true;
      ::fclose(f);
    }
    ::close(fd);
    return s + (mine ? " of self" : " of another");
  }
  static constexpr int kScmPidfd = 4;  // Linux 6.5; Debian 12's headers predate it

  ST& t_;
  std::vector<int> last_;
};

// A kernel pipe on both sides (the kernel descriptors a program passes).
inline std::pair<int, int> kernel_pipe(ST& t) {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) return {-1, -1};
  t.adopt(p[0]);
  t.adopt(p[1]);
  t.log("kernel pipe = " + t.n(p[0]) + " " + t.n(p[1]));
  return {p[0], p[1]};
}

inline void kclose(ST& t, int fd) {
  errno = 0;
  t.rec("kclose(" + t.n(fd) + ")", ::close(fd));
}

// Reads up to n bytes of a kernel descriptor without blocking (EOF: 0).
inline void kread(ST& t, int fd, size_t n) {
  std::vector<char> b(n, '.');
  const int fl = ::fcntl(fd, F_GETFL);
  ::fcntl(fd, F_SETFL, fl | O_NONBLOCK);
  errno = 0;
  const ssize_t r = ::read(fd, b.data(), n);
  const int e = errno;
  ::fcntl(fd, F_SETFL, fl);
  errno = e;
  t.log("kread(" + t.n(fd) + "," + std::to_string(n) + ") = " + t.res(r) +
        (r > 0 ? " [" + std::string(b.data(), static_cast<size_t>(r)) + "]" : ""));
}

inline void kwrite(ST& t, int fd, const char* s) {
  errno = 0;
  t.rec("kwrite(" + t.n(fd) + ")", ::write(fd, s, strlen(s)));
}

// getsockopt(SO_PEERCRED) of fd, full length and then 4 bytes.
inline void log_peercred(ST& t, int fd) {
  struct ucred uc = {};
  socklen_t len = sizeof uc;
  errno = 0;
  const int r = t.sa.getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &len);
  t.log("getsockopt(SO_PEERCRED) = " + t.res(r) + " len=" + std::to_string(len) +
        (uc.pid == getpid() ? " pid=self" : " pid=other") + " uid=" + std::to_string(uc.uid) +
        " gid=" + std::to_string(uc.gid));
  len = 4;
  t.rec("getsockopt(SO_PEERCRED,len 4)", t.sa.getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &len));
}

// A passing option (`opt`, named `name`: SO_PASSCRED, SO_PASSPIDFD) on
// the sender a only: its messages carry what the option sends (Linux's
// maybe_add_creds looks at both ends), which the receiver b reports once
// it sets the option too.
inline void sender_only_option(ST& t, Scm& m, int a, int b, int opt, const std::string& name) {
  const int one = 1;
  t.rec("setsockopt(a," + name + ",1)", t.sa.setsockopt(a, SOL_SOCKET, opt, &one, sizeof one));
  t.send(a, 1, 0, "0", 'v');
  m.recv(b, 8, 64, MSG_PEEK, "PEEK");
  t.rec("setsockopt(b," + name + ",1)", t.sa.setsockopt(b, SOL_SOCKET, opt, &one, sizeof one));
  m.recv(b, 8, 64, 0, "0");
}

// Closing a socket with unread messages releases their files; bytes a
// sender queued before it closed stay readable with their files.  Pairs
// from make_pair (nonblocking).
inline void close_releases_in_flight(ST& t, const std::function<std::pair<int, int>()>& make_pair) {
  Scm m(t);
  auto [kr, kw] = kernel_pipe(t);
  auto [pr, pw] = t.pipe(O_NONBLOCK);
  {
    auto [a, b] = make_pair();
    m.send_fds(a, 1, {kw, pw});
    m.send_fds(b, 1, {kw});
    t.close(b);
    t.close(a);
  }
  {
    auto [a, b] = make_pair();
    m.send_fds(a, 1, {kw});
    t.close(a);
    m.recv(b, 8, 64, 0, "0");
    for (int fd : m.last()) kclose(t, fd);
    m.recv(b, 8, 64, 0, "0");
    m.send_fds(b, 1, {kw}, 'm', MSG_NOSIGNAL);
    t.close(b);
  }
  t.close(pw);
  t.read(pr, 8);
  kclose(t, kw);
  kread(t, kr, 8);
  kclose(t, kr);
  t.close(pr);
}

}  // namespace conf::scm
