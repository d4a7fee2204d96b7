// surface_scm_test.cpp - control messages on AF_UNIX stream pairs, Linux vs
// uepoll (surface_harness.h): SCM_RIGHTS with the implementation's own
// descriptors (uepoll pipes and sockets on the uepoll side) and kernel
// descriptors, MSG_CTRUNC, MSG_CMSG_CLOEXEC, SCM_MAX_FD, EBADF, several
// cmsgs, the stream rules for bytes that carry files (where a receive
// stops, MSG_PEEK, MSG_WAITALL, read()), files released with unread
// messages; SCM_CREDENTIALS, SO_PASSCRED and SO_PEERCRED.
//
// Received descriptors are named in the order they arrive (harness.h), and
// where a payload is of one kind its numbers are logged as their rank among
// the numbers free before the receive (Linux numbers them lowest first).
// The "user-files" variant skips the scenarios that pass uepoll descriptors
// (variant_skips.inc): its test provider's pair is a kernel pair.
#include "conformance/surface_harness.h"

#include <grp.h>
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

#include <vector>

namespace {

using conf::ST;

std::string msg_flags_str(int f) {
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
    memcpy(buf.data() + off + CMSG_LEN(0), data, len);
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
    for (size_t i = 0; i < fds.size(); ++i) d += (i ? " " : "") + t_.n(fds[i]);
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
      line += " [" + std::string(b.data(), static_cast<size_t>(r)) + "] flags=" + msg_flags_str(m.msg_flags) +
              " controllen=" + std::to_string(m.msg_controllen);
      for (struct cmsghdr* c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) line += " " + cmsg_str(c, lowk, lowu, numbers);
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
        s += " " + t_.n(fd) + (fl > 0 ? "(cloexec)" : "");
        if (numbers) s += free_index(fd, lowk, lowu);
      }
    } else if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS &&
               c->cmsg_len >= CMSG_LEN(sizeof(struct ucred))) {
      struct ucred uc;
      memcpy(&uc, CMSG_DATA(c), sizeof uc);
      s += " pid=" + (uc.pid == getpid() ? std::string("self") : std::to_string(uc.pid)) +
           " uid=" + std::to_string(uc.uid) + " gid=" + std::to_string(uc.gid);
    }
    return s + "}";
  }

  ST& t_;
  std::vector<int> last_;
};

// A kernel pipe on both sides (the kernel descriptors a program passes).
std::pair<int, int> kernel_pipe(ST& t) {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) return {-1, -1};
  t.adopt(p[0]);
  t.adopt(p[1]);
  t.log("kernel pipe = " + t.n(p[0]) + " " + t.n(p[1]));
  return {p[0], p[1]};
}

void kclose(ST& t, int fd) {
  errno = 0;
  t.rec("kclose(" + t.n(fd) + ")", ::close(fd));
}

// Reads up to n bytes of a kernel descriptor without blocking (EOF: 0).
void kread(ST& t, int fd, size_t n) {
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

void kwrite(ST& t, int fd, const char* s) {
  errno = 0;
  t.rec("kwrite(" + t.n(fd) + ")", ::write(fd, s, strlen(s)));
}

TEST(SurfaceScm, RightsOfBothKinds) {
  conf::surface_differential([](ST& t) {
    Scm m(t);
    auto [a, b] = t.unix_stream(SOCK_NONBLOCK);
    auto [pr, pw] = t.pipe(O_NONBLOCK);  // uepoll's own on the uepoll side
    auto [kr, kw] = kernel_pipe(t);
    // One uepoll pipe end, received, works after the sender closed its own.
    m.send_fds(a, 1, {pw});
    t.close(pw);
    t.getsockopt_int(b, SOL_SOCKET, SO_TYPE, "SO_TYPE");
    m.recv(b, 8, CMSG_SPACE(4 * sizeof(int)), 0, "0", true);
    const int pw2 = m.last().empty() ? -1 : m.last()[0];
    t.write(pw2, "hi", 2);
    t.read(pr, 8);
    t.close(pw2);
    t.read(pr, 8);  // EOF: the in-flight reference is gone too
    // A kernel descriptor, with MSG_CMSG_CLOEXEC.
    m.send_fds(a, 2, {kw, kw});
    kclose(t, kw);
    m.recv(b, 8, CMSG_SPACE(4 * sizeof(int)), MSG_CMSG_CLOEXEC, "CMSG_CLOEXEC", true);
    const std::vector<int> got = m.last();
    for (int fd : got) kwrite(t, fd, "k");
    kread(t, kr, 8);
    for (int fd : got) kclose(t, fd);
    kread(t, kr, 8);
    // The socket pair itself, and an epoll instance, in one message.
    const int ep = t.epoll_create1(0);
    m.send_fds(b, 3, {a, ep});
    m.recv(a, 8, CMSG_SPACE(4 * sizeof(int)), 0, "0");
    for (int fd : m.last()) t.close(fd);
    t.close(ep);
    kclose(t, kr);
    t.close(pr);
    t.close(a);
    t.close(b);
  });
}

TEST(SurfaceScm, ControlBufferTooShort) {
  conf::surface_differential([](ST& t) {
    Scm m(t);
    auto [a, b] = t.unix_stream(SOCK_NONBLOCK);
    auto [kr, kw] = kernel_pipe(t);
    // Room for one of three: MSG_CTRUNC, the other two closed.
    m.send_fds(a, 1, {kw, kw, kw});
    m.recv(b, 8, CMSG_SPACE(sizeof(int)), 0, "0", true);
    for (int fd : m.last()) kclose(t, fd);
    // Room for no descriptor at all (header only, then less).
    m.send_fds(a, 1, {kw});
    m.recv(b, 8, sizeof(struct cmsghdr) + 2, 0, "0");
    m.send_fds(a, 1, {kw});
    m.recv(b, 8, 4, 0, "0");
    m.send_fds(a, 1, {kw});
    m.recv(b, 8, 0, 0, "0");
    // No control buffer: the files are dropped.
    m.send_fds(a, 1, {kw});
    m.recv(b, 8, -1, 0, "0");
    m.send_fds(a, 1, {kw});
    t.recv(b, 8, 0, "0");
    m.send_fds(a, 1, {kw});
    t.read(b, 8);
    kclose(t, kw);
    kread(t, kr, 8);  // EOF: every copy in flight was closed
    // MSG_CMSG_CLOEXEC is returned in msg_flags with nothing to receive too.
    t.send(a, 1, 0, "0");
    m.recv(b, 8, 64, MSG_CMSG_CLOEXEC, "CMSG_CLOEXEC");
    m.recv(b, 8, 64, MSG_DONTWAIT, "DONTWAIT");
    kclose(t, kr);
    t.close(a);
    t.close(b);
  });
}

TEST(SurfaceScm, SendErrors) {
  conf::surface_differential([](ST& t) {
    Scm m(t);
    auto [a, b] = t.unix_stream(SOCK_NONBLOCK);
    auto [kr, kw] = kernel_pipe(t);
    m.send_fds(a, 1, {-1});
    m.send_fds(a, 1, {kw, 987654});
    m.send_fds(a, 1, std::vector<int>(254, kw));
    {
      Ctl c;  // 200 + 100 in two cmsgs: past SCM_MAX_FD in all
      c.rights(std::vector<int>(200, kw));
      c.rights(std::vector<int>(100, kw));
      m.send(a, 1, &c, "RIGHTS[200]+RIGHTS[100]");
    }
    m.send_fds(a, 1, std::vector<int>(253, kw));
    m.recv(b, 8, -1, 0, "0");  // dropped
    {
      Ctl c;
      c.rights({kw});
      struct cmsghdr cm;
      memcpy(&cm, c.buf.data(), sizeof cm);
      cm.cmsg_len = sizeof(struct cmsghdr) - 1;
      memcpy(c.buf.data(), &cm, sizeof cm);
      m.send(a, 1, &c, "cmsg_len short");
      cm.cmsg_len = c.buf.size() + 1;
      memcpy(c.buf.data(), &cm, sizeof cm);
      m.send(a, 1, &c, "cmsg_len past the buffer");
      cm.cmsg_len = CMSG_LEN(sizeof(int));
      cm.cmsg_type = 77;
      memcpy(c.buf.data(), &cm, sizeof cm);
      m.send(a, 1, &c, "type 77");
      cm.cmsg_level = 0;  // SOL_IP
      memcpy(c.buf.data(), &cm, sizeof cm);
      m.send(a, 1, &c, "level SOL_IP");  // skipped
      c.buf.resize(sizeof(struct cmsghdr) - 1);
      m.send(a, 1, &c, "controllen under a header");  // no cmsg at all
    }
    {
      Ctl c;
      c.rights({});
      m.send(a, 1, &c, "RIGHTS[]");
    }
    m.recv(b, 16, 64, 0, "0");
    // The control data is checked before the shutdown.
    t.shutdown(a, SHUT_WR);
    m.send_fds(a, 1, {-1}, 'm', MSG_NOSIGNAL);
    m.send_fds(a, 1, {kw}, 'm', MSG_NOSIGNAL);
    // With no bytes, nothing is queued and the files are not sent.
    m.send_fds(b, 0, {kw});
    m.send_fds(b, 0, {-1});
    m.recv(a, 8, 64, 0, "0");
    kclose(t, kw);
    kread(t, kr, 8);
    kclose(t, kr);
    t.close(a);
    t.close(b);
  });
}

TEST(SurfaceScm, SeveralCmsgsOneMessage) {
  conf::surface_differential([](ST& t) {
    Scm m(t);
    auto [a, b] = t.unix_stream(SOCK_NONBLOCK);
    auto [pr, pw] = t.pipe(O_NONBLOCK);
    auto [kr, kw] = kernel_pipe(t);
    Ctl c;
    c.rights({pr});
    c.rights({kw, pw});
    m.send(a, 2, &c, "RIGHTS[pr]+RIGHTS[kw pw]");
    m.recv(b, 8, 256, 0, "0");
    for (int fd : m.last()) t.close(fd);
    t.close(pr);
    t.close(pw);
    kclose(t, kw);
    kclose(t, kr);
    t.close(a);
    t.close(b);
  });
}

// Where a receive stops (unix_stream_read_generic): after the bytes that
// carried files, never past them; bytes before them are merged in.
TEST(SurfaceScm, StreamBoundaries) {
  conf::surface_differential([](ST& t) {
    Scm m(t);
    auto [a, b] = t.unix_stream(SOCK_NONBLOCK);
    auto [kr, kw] = kernel_pipe(t);
    t.send(a, 2, 0, "0", 'a');
    m.send_fds(a, 2, {kw}, 'b');
    t.send(a, 2, 0, "0", 'c');
    m.send_fds(a, 2, {kw}, 'd');
    m.send_fds(a, 2, {kw}, 'e');
    t.ioctl_int(b, FIONREAD, "FIONREAD");
    m.recv(b, 64, 64, MSG_PEEK, "PEEK");
    for (int fd : m.last()) kclose(t, fd);
    m.recv(b, 64, 64, MSG_PEEK, "PEEK");
    for (int fd : m.last()) kclose(t, fd);
    m.recv(b, 64, 64, 0, "0");
    for (int fd : m.last()) kclose(t, fd);
    // A partial read of the bytes with files takes the files; the rest of
    // them then merges with what follows.
    m.recv(b, 3, 64, 0, "0");
    for (int fd : m.last()) kclose(t, fd);
    m.recv(b, 64, 64, 0, "0");
    for (int fd : m.last()) kclose(t, fd);
    m.recv(b, 64, 64, 0, "0");
    // read() stops there as well, and drops the files.
    m.send_fds(a, 2, {kw}, 'h');
    t.send(a, 2, 0, "0", 'i');
    t.read(b, 8);
    t.read(b, 8);
    // A peek walks on past its count to the next files; a receive of 0
    // bytes takes the files of the first message.
    t.send(a, 2, 0, "0", 'x');
    m.send_fds(a, 2, {kw}, 'y');
    m.recv(b, 1, 64, MSG_PEEK, "PEEK");
    for (int fd : m.last()) kclose(t, fd);
    m.recv(b, 0, 64, MSG_PEEK, "PEEK");
    for (int fd : m.last()) kclose(t, fd);
    m.recv(b, 0, 64, 0, "0");
    m.recv(b, 2, 64, 0, "0");
    m.recv(b, 0, 64, 0, "0");
    for (int fd : m.last()) kclose(t, fd);
    m.recv(b, 8, 64, 0, "0");
    m.recv(b, 0, 64, 0, "0");
    // MSG_WAITALL stops there too.
    t.setfl(b, 0, "0");
    m.send_fds(a, 2, {kw}, 'f');
    t.send(a, 2, 0, "0", 'g');
    m.recv(b, 4, 64, MSG_WAITALL, "WAITALL");
    for (int fd : m.last()) kclose(t, fd);
    m.recv(b, 2, 64, MSG_WAITALL, "WAITALL");
    kclose(t, kw);
    kread(t, kr, 8);
    kclose(t, kr);
    t.close(a);
    t.close(b);
  });
}

// Closing a socket with unread messages releases their files; so does
// closing the pair with the message still queued.
TEST(SurfaceScm, CloseReleasesInFlight) {
  conf::surface_differential([](ST& t) {
    Scm m(t);
    auto [kr, kw] = kernel_pipe(t);
    auto [pr, pw] = t.pipe(O_NONBLOCK);
    {
      auto [a, b] = t.unix_stream(SOCK_NONBLOCK);
      m.send_fds(a, 1, {kw, pw});
      m.send_fds(b, 1, {kw});
      t.close(b);
      t.close(a);
    }
    {
      auto [a, b] = t.unix_stream(SOCK_NONBLOCK);
      m.send_fds(a, 1, {kw});
      t.close(a);  // the message stays readable
      m.recv(b, 8, 64, 0, "0");
      for (int fd : m.last()) kclose(t, fd);
      m.send_fds(b, 1, {kw}, 'm', MSG_NOSIGNAL);
      t.close(b);
    }
    t.close(pw);
    t.read(pr, 8);
    kclose(t, kw);
    kread(t, kr, 8);
    kclose(t, kr);
    t.close(pr);
  });
}

TEST(SurfaceScm, Credentials) {
  conf::surface_differential([](ST& t) {
    Scm m(t);
    auto [a, b] = t.unix_stream(SOCK_NONBLOCK);
    t.getsockopt_int(b, SOL_SOCKET, SO_PASSCRED, "SO_PASSCRED");
    {
      struct ucred uc = {};
      socklen_t len = sizeof uc;
      errno = 0;
      const int r = t.sa.getsockopt(a, SOL_SOCKET, SO_PEERCRED, &uc, &len);
      t.log("getsockopt(SO_PEERCRED) = " + t.res(r) + " len=" + std::to_string(len) +
            (uc.pid == getpid() ? " pid=self" : " pid=other") + " uid=" + std::to_string(uc.uid) +
            " gid=" + std::to_string(uc.gid));
      len = 4;
      t.rec("getsockopt(SO_PEERCRED,len 4)", t.sa.getsockopt(a, SOL_SOCKET, SO_PEERCRED, &uc, &len));
    }
    t.send(a, 1, 0, "0", 'n');  // queued before SO_PASSCRED: no credentials
    int one = 1;
    t.rec("setsockopt(SO_PASSCRED,1)", t.sa.setsockopt(b, SOL_SOCKET, SO_PASSCRED, &one, sizeof one));
    t.getsockopt_int(b, SOL_SOCKET, SO_PASSCRED, "SO_PASSCRED");
    t.send(a, 1, 0, "0", 'y');
    m.recv(b, 8, 64, 0, "0");  // stops between them: different writers
    m.recv(b, 8, 64, 0, "0");
    m.recv(b, 8, 0, MSG_DONTWAIT, "DONTWAIT");
    m.recv(b, 8, 8, 0, "0");
    // Explicit credentials: our own are allowed.
    {
      Ctl c;
      c.creds(getpid(), getuid(), getgid());
      m.send(a, 1, &c, "CREDENTIALS(self)", 'c');
    }
    {
      Ctl c;
      c.creds(getpid(), static_cast<uid_t>(-1), getgid());
      m.send(a, 1, &c, "CREDENTIALS(uid -1)");
    }
    {
      Ctl c;
      c.creds(getpid(), getuid(), getgid());
      c.buf.resize(c.buf.size() + 8);
      struct cmsghdr cm;
      memcpy(&cm, c.buf.data(), sizeof cm);
      cm.cmsg_len += 4;
      memcpy(c.buf.data(), &cm, sizeof cm);
      m.send(a, 1, &c, "CREDENTIALS(len+4)");
    }
    {
      Ctl c;  // another process's pid, another user: EPERM unless privileged
      c.creds(1, getuid(), getgid());
      m.send(a, 1, &c, "CREDENTIALS(pid 1)", 'o');
      Ctl d;
      d.creds(getpid(), getuid() + 1, getgid());
      m.send(a, 1, &d, "CREDENTIALS(uid+1)", 'u');
    }
    t.send(a, 1, 0, "0", 'p');
    m.recv(b, 8, 64, 0, "0");
    m.recv(b, 8, 64, 0, "0");
    m.recv(b, 8, 64, 0, "0");
    m.recv(b, 8, 64, 0, "0");
    // Credentials and files together: credentials first.
    auto [kr, kw] = kernel_pipe(t);
    m.send_fds(a, 1, {kw}, 'f');
    m.recv(b, 8, CMSG_SPACE(sizeof(struct ucred)) + CMSG_SPACE(sizeof(int)), 0, "0");
    for (int fd : m.last()) kclose(t, fd);
    m.send_fds(a, 1, {kw}, 'g');
    m.recv(b, 8, CMSG_SPACE(sizeof(struct ucred)), 0, "0");  // no room for the file
    kclose(t, kw);
    kread(t, kr, 8);
    kclose(t, kr);
    // End of file with SO_PASSCRED.
    t.close(a);
    m.recv(b, 8, 64, 0, "0");
    t.close(b);
  });
}

// fork while files are in flight: the child receives them (the library's
// child has a copy of the queue, the kernel's shares it: either way the
// child's receive gets the files) and uses them.
TEST(SurfaceScm, ForkWithFilesInFlight) {
  conf::surface_differential([](ST& t) {
    Scm m(t);
    auto [a, b] = t.unix_stream(SOCK_NONBLOCK);
    auto [kr, kw] = kernel_pipe(t);
    auto [pr, pw] = t.pipe(O_NONBLOCK);
    m.send_fds(a, 1, {kw, pw});
    kclose(t, kw);
    t.close(pw);
    const pid_t child = ::fork();
    if (child == 0) {
      conf::T::Quiet q(t);
      m.recv(b, 8, 64, 0, "0");
      std::vector<int> got = m.last();
      int ok = got.size() == 2 && ::write(got[0], "k", 1) == 1 && t.api.write(got[1], "u", 1) == 1;
      char c = 0;
      ok = ok && t.api.read(pr, &c, 1) == 1 && c == 'u';
      ::_exit(ok ? 0 : 1);
    }
    int status = -1;
    ::waitpid(child, &status, 0);
    t.log("child exit " + std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1));
    kread(t, kr, 8);  // the child's write
    // (No end of file yet on the uepoll side: the parent's copy of the
    // queue still holds the message, docs/linux-deviations.md "fork()".)
    kclose(t, kr);
    t.close(pr);
    t.close(a);
    t.close(b);
  });
}

// Another pid, uid or gid without privilege: EPERM (scm_check_creds).  In
// a child that gives up root; its lines come back through a kernel pipe.
TEST(SurfaceScm, CredentialsOfOthersUnprivileged) {
  conf::surface_differential([](ST& t) {
    int p[2];
    ASSERT_EQ(::pipe(p), 0);
    const pid_t child = ::fork();
    if (child == 0) {
      ::close(p[0]);
      std::string out;
      if (::setgroups(0, nullptr) != 0 || ::setresgid(65534, 65534, 65534) != 0 ||
          ::setresuid(65534, 65534, 65534) != 0) {
        out = "cannot drop privileges\n";
      } else {
        int sv[2];
        const int r = t.api.socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv);
        auto one = [&](pid_t pid, uid_t uid, gid_t gid, const char* what) {
          Ctl c;
          c.creds(pid, uid, gid);
          char b = 'x';
          struct iovec iov = {&b, 1};
          struct msghdr m = {};
          m.msg_iov = &iov;
          m.msg_iovlen = 1;
          m.msg_control = c.buf.data();
          m.msg_controllen = c.buf.size();
          errno = 0;
          const long n = t.sa.sendmsg(sv[0], &m, 0);
          out += std::string(what) + " = " + t.res(n) + "\n";
        };
        if (r == 0) {
          one(getpid(), 65534, 65534, "self");
          one(1, 65534, 65534, "pid 1");
          one(getpid(), 0, 65534, "uid 0");
          one(getpid(), 65534, 0, "gid 0");
          one(999999999, 0, 0, "all others");
        }
      }
      ssize_t unused = ::write(p[1], out.data(), out.size());
      (void)unused;
      ::_exit(0);
    }
    ::close(p[1]);
    std::string got;
    char buf[512];
    for (ssize_t n; (n = ::read(p[0], buf, sizeof buf)) > 0;) got.append(buf, static_cast<size_t>(n));
    ::close(p[0]);
    int status = 0;
    ::waitpid(child, &status, 0);
    size_t at = 0;
    for (size_t nl; (nl = got.find('\n', at)) != std::string::npos; at = nl + 1) t.log("unprivileged: " + got.substr(at, nl - at));
  });
}

// The sender's SO_PASSCRED attaches credentials too.
TEST(SurfaceScm, SenderPasscred) {
  conf::surface_differential([](ST& t) {
    Scm m(t);
    auto [a, b] = t.unix_stream(SOCK_NONBLOCK);
    int one = 1;
    t.rec("setsockopt(a,SO_PASSCRED,1)", t.sa.setsockopt(a, SOL_SOCKET, SO_PASSCRED, &one, sizeof one));
    t.send(a, 1, 0, "0", 'x');
    t.rec("setsockopt(b,SO_PASSCRED,1)", t.sa.setsockopt(b, SOL_SOCKET, SO_PASSCRED, &one, sizeof one));
    t.send(a, 1, 0, "0", 'y');
    m.recv(b, 8, 64, 0, "0");
    t.close(a);
    t.close(b);
  });
}

}  // namespace
