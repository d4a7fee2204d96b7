// surface_scm_creds_test.cpp - credentials on AF_UNIX stream pairs, Linux
// vs uepoll (surface_harness.h, surface_scm.h): SO_PASSCRED on either end,
// SCM_CREDENTIALS sent explicitly (allowed values, EINVAL, EPERM without
// privilege, in a child that gives up root), where a receive stops between
// writers, SO_PEERCRED; and fork with files in flight.  SO_PASSPIDFD's
// SCM_PIDFD on stream, datagram and seqpacket pairs.
#include "conformance/surface_scm.h"

#include <grp.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

using conf::ST;
using namespace conf::scm;  // NOLINT: the scenarios' helpers

TEST(SurfaceScm, Credentials) {
  conf::surface_differential([](ST& t) {
    Scm m(t);
    auto [a, b] = t.unix_stream(SOCK_NONBLOCK);
    t.getsockopt_int(b, SOL_SOCKET, SO_PASSCRED, "SO_PASSCRED");
    log_peercred(t, a);
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

// SO_PASSPIDFD: each receive gets SCM_PIDFD, a new close-on-exec pidfd
// of the sender, after SCM_CREDENTIALS and SCM_RIGHTS; MSG_CTRUNC with no
// partial message when its 20 bytes do not fit (or without a buffer);
// nothing for a message queued before either end passed credentials.
// SO_PASSPIDFD alone makes sends carry credentials, and a stream receive
// stop between a message without them and one with them.
TEST(SurfacePidfd, PassPidfd) {
  constexpr int kSoPassPidfd = 76;
  conf::surface_differential([](ST& t) {
    for (const int type : {SOCK_STREAM, SOCK_DGRAM, SOCK_SEQPACKET}) {
      t.log(type == SOCK_STREAM ? "stream" : type == SOCK_DGRAM ? "dgram" : "seqpacket");
      Scm m(t);
      auto [a, b] = t.socketpair(AF_UNIX, type | SOCK_NONBLOCK, 0);
      t.getsockopt_int(b, SOL_SOCKET, kSoPassPidfd, "SO_PASSPIDFD");
      t.send(a, 1, 0, "0", 'n');  // queued before SO_PASSPIDFD: no sender
      const int one = 1, zero = 0;
      t.rec("setsockopt(b,SO_PASSPIDFD,1)", t.sa.setsockopt(b, SOL_SOCKET, kSoPassPidfd, &one, sizeof one));
      t.getsockopt_int(b, SOL_SOCKET, kSoPassPidfd, "SO_PASSPIDFD");
      t.getsockopt_int(b, SOL_SOCKET, SO_PASSCRED, "SO_PASSCRED");
      t.send(a, 1, 0, "0", 'y');
      m.recv(b, 8, 64, 0, "0");  // a stream stops between them
      m.recv(b, 8, 64, 0, "0");
      t.send(a, 1, 0, "0", 'c');
      m.recv(b, 8, 64, MSG_PEEK, "PEEK");
      m.recv(b, 8, 64, MSG_CMSG_CLOEXEC, "CMSG_CLOEXEC");
      for (const long room : {-1L, 0L, 18L, 19L, 20L}) {
        t.send(a, 1, 0, "0", 'r');
        m.recv(b, 8, room, 0, "0");
      }
      // With SO_PASSCRED: credentials first; a buffer that holds only them.
      t.rec("setsockopt(b,SO_PASSCRED,1)", t.sa.setsockopt(b, SOL_SOCKET, SO_PASSCRED, &one, sizeof one));
      for (const long room : {64L, 40L, 52L}) {
        t.send(a, 1, 0, "0", 'k');
        m.recv(b, 8, room, 0, "0");
      }
      // With files: after SCM_RIGHTS (a kernel pipe's end, which every
      // variant's pair can carry).
      auto [pr, pw] = kernel_pipe(t);
      m.send_fds(a, 1, {pw});
      m.recv(b, 8, 128, 0, "0");
      for (int fd : m.last()) t.close(fd);
      t.rec("setsockopt(b,SO_PASSCRED,0)", t.sa.setsockopt(b, SOL_SOCKET, SO_PASSCRED, &zero, sizeof zero));
      t.rec("setsockopt(b,SO_PASSPIDFD,0)", t.sa.setsockopt(b, SOL_SOCKET, kSoPassPidfd, &zero, sizeof zero));
      sender_only_option(t, m, a, b, kSoPassPidfd, "SO_PASSPIDFD");
      kclose(t, pr);
      kclose(t, pw);
      t.close(a);
      t.close(b);
    }
  });
}

}  // namespace
