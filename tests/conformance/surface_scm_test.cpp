// surface_scm_test.cpp - control messages on AF_UNIX stream pairs, Linux vs
// uepoll (surface_harness.h): SCM_RIGHTS with the implementation's own
// descriptors (uepoll pipes and sockets on the uepoll side) and kernel
// descriptors, MSG_CTRUNC, MSG_CMSG_CLOEXEC, SCM_MAX_FD, EBADF, several
// cmsgs, the stream rules for bytes that carry files (where a receive
// stops, MSG_PEEK, MSG_WAITALL, read()), files released with unread
// messages (credentials: surface_scm_creds_test.cpp).
//
// Received descriptors are named in the order they arrive (harness.h), and
// where a payload is of one kind its numbers are logged as their rank among
// the numbers free before the receive (Linux numbers them lowest first).
// The "user-files" variant skips the scenarios that pass uepoll descriptors
// (variant_skips.inc): its test provider's pair is a kernel pair.
#include "conformance/surface_scm.h"

namespace {

using conf::ST;
using namespace conf::scm;  // NOLINT: the scenarios' helpers

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
  conf::surface_differential([](ST& t) { close_releases_in_flight(t, [&t] { return t.unix_stream(SOCK_NONBLOCK); }); });
}

}  // namespace
