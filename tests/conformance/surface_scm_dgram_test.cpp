// surface_scm_dgram_test.cpp - control messages on AF_UNIX datagram and
// seqpacket pairs, Linux vs uepoll (surface_harness.h, surface_scm.h):
// SCM_RIGHTS per message (uepoll and kernel descriptors, MSG_PEEK,
// MSG_TRUNC, a short or missing control buffer, read(), MSG_CMSG_CLOEXEC,
// the errors of the control data before the queue's), files released with
// unread messages, SO_PASSCRED and SCM_CREDENTIALS, SO_PEERCRED.  Every
// scenario runs once per type.  Control data sent from a datagram pair to
// a named (kernel) socket: credentials, kernel descriptors, and the
// errors of the control data before the name's.
//
// Not compared: the sender's address.  Linux autobinds a sender with
// SO_PASSCRED (unix_dgram_sendmsg), so its getsockname and the receiver's
// msg_namelen then name an abstract address; uepoll's pair stays unnamed
// (docs/linux-deviations.md).
#include "conformance/surface_scm.h"

#include <sys/un.h>

namespace {

using conf::ST;
using namespace conf::scm;  // NOLINT: the scenarios' helpers

constexpr int kTypes[] = {SOCK_DGRAM, SOCK_SEQPACKET};

std::pair<int, int> pair_of(ST& t, int type) {
  return t.socketpair(AF_UNIX, type | SOCK_NONBLOCK, 0,
                      type == SOCK_DGRAM ? "AF_UNIX,SOCK_DGRAM|NONBLOCK,0" : "AF_UNIX,SOCK_SEQPACKET|NONBLOCK,0");
}

void close_all(ST& t, const std::vector<int>& fds) {
  for (int fd : fds) kclose(t, fd);
}

TEST(SurfaceScmDgram, RightsPerMessage) {
  conf::surface_differential([](ST& t) {
    for (int type : kTypes) {
      Scm m(t);
      auto [a, b] = pair_of(t, type);
      auto [pr, pw] = t.pipe(O_NONBLOCK);  // uepoll's own on the uepoll side
      auto [kr, kw] = kernel_pipe(t);
      // A uepoll pipe end works after the sender closed its own; the
      // message after it carries none.
      m.send_fds(a, 3, {pw}, 'p');
      t.send(a, 2, 0, "0", 'q');
      t.close(pw);
      m.recv(b, 8, CMSG_SPACE(4 * sizeof(int)), 0, "0", true);
      const int pw2 = m.last().empty() ? -1 : m.last()[0];
      t.write(pw2, "hi", 2);
      t.read(pr, 8);
      t.close(pw2);
      t.read(pr, 8);  // EOF: the in-flight reference is gone too
      m.recv(b, 8, CMSG_SPACE(4 * sizeof(int)), 0, "0");
      // Kernel descriptors, MSG_PEEK (new descriptors each time, the
      // message stays), then the receive, with MSG_CMSG_CLOEXEC.
      m.send_fds(a, 4, {kw, kw}, 'k');
      m.recv(b, 8, 64, MSG_PEEK, "PEEK", true);
      close_all(t, m.last());
      m.recv(b, 2, 64, MSG_PEEK | MSG_TRUNC, "PEEK|TRUNC");
      close_all(t, m.last());
      m.recv(b, 2, 64, MSG_CMSG_CLOEXEC, "CMSG_CLOEXEC");  // truncated: the rest of the message is lost
      const std::vector<int> got = m.last();
      for (int fd : got) kwrite(t, fd, "k");
      kread(t, kr, 8);
      close_all(t, got);
      // A control buffer with room for one of three; none at all; read().
      m.send_fds(a, 1, {kw, kw, kw});
      m.recv(b, 8, CMSG_SPACE(sizeof(int)), 0, "0");
      close_all(t, m.last());
      m.send_fds(a, 1, {kw});
      m.recv(b, 8, -1, 0, "0");
      m.send_fds(a, 1, {kw});
      m.recv(b, 8, 4, 0, "0");
      m.send_fds(a, 1, {kw});
      t.read(b, 8);
      m.send_fds(a, 0, {kw});  // a zero-length message carries files too
      m.recv(b, 8, 64, 0, "0");
      close_all(t, m.last());
      kclose(t, kw);
      kread(t, kr, 8);  // EOF: every copy in flight was closed
      // The socket pair itself and an epoll instance, in one message.
      const int ep = t.epoll_create1(0);
      m.send_fds(b, 3, {a, ep});
      m.recv(a, 8, CMSG_SPACE(4 * sizeof(int)), 0, "0");
      for (int fd : m.last()) t.close(fd);
      t.close(ep);
      kclose(t, kr);
      t.close(pr);
      t.close(a);
      t.close(b);
    }
  });
}

// The control data is parsed before anything else is checked (scm_send
// comes first in unix_dgram_sendmsg), and a send that fails releases the
// files it took.
TEST(SurfaceScmDgram, SendErrors) {
  conf::surface_differential([](ST& t) {
    for (int type : kTypes) {
      Scm m(t);
      auto [a, b] = pair_of(t, type);
      auto [kr, kw] = kernel_pipe(t);
      m.send_fds(a, 1, {-1});
      m.send_fds(a, 1, {kw, 987654});
      m.send_fds(a, 1, std::vector<int>(254, kw));
      m.send_fds(a, 1, {-1}, 'm', MSG_OOB);
      m.send_fds(a, 1, {kw}, 'm', MSG_OOB);
      m.send_fds(a, 300000, {kw});  // EMSGSIZE
      t.shutdown(a, SHUT_WR);
      m.send_fds(a, 1, {-1}, 'm', MSG_NOSIGNAL);
      m.send_fds(a, 1, {kw}, 'm', MSG_NOSIGNAL);
      m.recv(b, 8, 64, 0, "0");
      kclose(t, kw);
      kread(t, kr, 8);
      kclose(t, kr);
      t.close(a);
      t.close(b);
    }
  });
}

// Closing a socket with unread messages releases their files; a message
// queued by a sender that has gone stays readable with its files.
TEST(SurfaceScmDgram, CloseReleasesInFlight) {
  conf::surface_differential([](ST& t) {
    for (int type : kTypes) close_releases_in_flight(t, [&t, type] { return pair_of(t, type); });
  });
}

TEST(SurfaceScmDgram, Credentials) {
  conf::surface_differential([](ST& t) {
    for (int type : kTypes) {
      Scm m(t);
      auto [a, b] = pair_of(t, type);
      t.getsockopt_int(b, SOL_SOCKET, SO_PASSCRED, "SO_PASSCRED");
      log_peercred(t, a);
      t.send(a, 1, 0, "0", 'n');  // queued before SO_PASSCRED: no credentials
      int one = 1;
      t.rec("setsockopt(SO_PASSCRED,1)", t.sa.setsockopt(b, SOL_SOCKET, SO_PASSCRED, &one, sizeof one));
      t.getsockopt_int(b, SOL_SOCKET, SO_PASSCRED, "SO_PASSCRED");
      t.send(a, 1, 0, "0", 'y');
      m.recv(b, 8, 64, 0, "0");
      m.recv(b, 8, 64, 0, "0");
      m.recv(b, 8, -1, MSG_DONTWAIT, "DONTWAIT");  // nothing queued: EAGAIN
      t.send(a, 1, 0, "0", 'z');
      m.recv(b, 8, -1, 0, "0");  // no buffer: MSG_CTRUNC
      t.send(a, 1, 0, "0", 'w');
      m.recv(b, 8, 8, 0, "0");  // too short for the credentials
      {
        Ctl c;
        c.creds(getpid(), getuid(), getgid());
        m.send(a, 1, &c, "CREDENTIALS(self)", 'c');
      }
      {
        Ctl c;
        c.creds(getpid(), getuid(), getgid());
        c.rights({b});
        m.send(a, 1, &c, "CREDENTIALS(self)+RIGHTS[b]", 'r');
      }
      m.recv(b, 8, 64, MSG_PEEK, "PEEK");
      m.recv(b, 8, 64, 0, "0");
      m.recv(b, 8, 64, 0, "0");
      for (int fd : m.last()) t.close(fd);
      int zero = 0;
      t.rec("setsockopt(b,SO_PASSCRED,0)", t.sa.setsockopt(b, SOL_SOCKET, SO_PASSCRED, &zero, sizeof zero));
      sender_only_option(t, m, a, b, SO_PASSCRED, "SO_PASSCRED");
      t.close(a);
      t.close(b);
    }
  });
}

// sendmsg of `data` to the name `to` (length tl) with control buffer ctl.
long send_named(ST& t, int s, const struct sockaddr_un& to, socklen_t tl, const Ctl& ctl, const char* data,
                const std::string& desc) {
  struct iovec iov = {const_cast<char*>(data), strlen(data)};
  struct msghdr m = {};
  m.msg_name = const_cast<struct sockaddr_un*>(&to);
  m.msg_namelen = tl;
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  m.msg_control = const_cast<char*>(ctl.buf.data());
  m.msg_controllen = ctl.buf.size();
  errno = 0;
  return t.rec("sendmsg(" + t.n(s) + ",named," + desc + ")", t.sa.sendmsg(s, &m, 0));
}

// A datagram pair end sends control data to a named kernel socket (an
// abstract name, SO_PASSCRED on): the receiver gets the credentials as
// written and the kernel descriptors.  A sender with SO_PASSCRED on is
// autobound by the kernel on both sides: only its name's kind is logged.
TEST(SurfaceScmDgram, ControlToNamed) {
  conf::surface_differential([](ST& t) {
    Scm m(t);
    struct sockaddr_un to {};
    to.sun_family = AF_UNIX;
    static int seq = 0;  // each side binds its own name
    const int len = snprintf(to.sun_path + 1, sizeof to.sun_path - 1, "uepoll-conf-named-%d-%d", static_cast<int>(getpid()), ++seq);
    const socklen_t tl = static_cast<socklen_t>(offsetof(struct sockaddr_un, sun_path) + 1 + static_cast<size_t>(len));
    const int n = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    t.adopt(n);
    t.rec("bind(named)", ::bind(n, reinterpret_cast<struct sockaddr*>(&to), tl));
    int one = 1;
    t.rec("setsockopt(named,SO_PASSCRED,1)", ::setsockopt(n, SOL_SOCKET, SO_PASSCRED, &one, sizeof one));
    auto [a, b] = pair_of(t, SOCK_DGRAM);
    auto [kr, kw] = kernel_pipe(t);
    {
      Ctl c;
      c.creds(getpid(), getuid(), getgid());
      send_named(t, a, to, tl, c, "cred", "CREDENTIALS(self)");
    }
    m.recv(n, 8, 64, 0, "0");
    {
      Ctl c;
      c.rights({kw, kw});
      send_named(t, a, to, tl, c, "fds", "RIGHTS[kw kw]");
    }
    m.recv(n, 8, 64, 0, "0");
    for (int fd : m.last()) kwrite(t, fd, "k");
    kread(t, kr, 8);
    for (int fd : m.last()) kclose(t, fd);
    {
      Ctl c;
      c.creds(getpid(), getuid(), getgid());
      c.rights({kw});
      send_named(t, b, to, tl, c, "both", "CREDENTIALS(self)+RIGHTS[kw]");
    }
    m.recv(n, 8, 64, 0, "0");
    for (int fd : m.last()) kclose(t, fd);
    // The control data is checked first: a bad descriptor, a short ucred.
    {
      Ctl c;
      c.rights({-1});
      send_named(t, a, to, tl, c, "bad", "RIGHTS[-1]");
      Ctl d;
      const int short_creds = 0;
      d.add(SOL_SOCKET, SCM_CREDENTIALS, &short_creds, sizeof short_creds);
      send_named(t, a, to, tl, d, "short", "CREDENTIALS(4 bytes)");
    }
    // SO_PASSCRED on the sender: the kernel names it (autobind).
    t.rec("setsockopt(a,SO_PASSCRED,1)", t.sa.setsockopt(a, SOL_SOCKET, SO_PASSCRED, &one, sizeof one));
    {
      Ctl c;
      c.creds(getpid(), getuid(), getgid());
      send_named(t, a, to, tl, c, "named", "CREDENTIALS(self)");
    }
    struct sockaddr_un from {};
    socklen_t fl = sizeof from;
    char buf[8];
    const long r = ::recvfrom(n, buf, sizeof buf, 0, reinterpret_cast<struct sockaddr*>(&from), &fl);
    t.log("recvfrom(named) = " + std::to_string(r) + " from " +
          (fl <= offsetof(struct sockaddr_un, sun_path) ? "unnamed" : from.sun_path[0] ? "path" : "abstract"));
    kclose(t, kw);
    kclose(t, kr);
    t.close(a);
    t.close(b);
    ::close(n);
    t.forget(n);
  });
}

}  // namespace
