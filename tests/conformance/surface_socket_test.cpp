// surface_socket_test.cpp - socket calls on AF_UNIX stream pairs, Linux vs
// uepoll: send/recv flags, sendmsg/recvmsg, EPIPE and SIGPIPE, getsockopt,
// getsockname, FIONREAD/TIOCOUTQ accounting (surface_harness.h).
#include "conformance/surface_harness.h"

#include <pthread.h>
#include <sys/un.h>

namespace {

using conf::ST;

using conf::BlockSigpipe;

TEST(SurfaceSocket, SendRecvFlags) {
  auto tr = conf::surface_differential([](ST& t) {
    auto [a, b] = t.unix_stream();  // blocking sockets
    t.recv(b, 4, MSG_DONTWAIT, "DONTWAIT");
    t.send(a, 5, 0, "0", 'p');
    t.ioctl_int(b, FIONREAD, "FIONREAD");
    t.ioctl_int(a, TIOCOUTQ, "TIOCOUTQ");
    t.recv(b, 3, MSG_PEEK, "PEEK");
    t.recv(b, 8, MSG_PEEK | MSG_DONTWAIT, "PEEK|DONTWAIT");
    t.recv(b, 2, 0, "0");
    t.recv(b, 8, MSG_WAITALL | MSG_DONTWAIT, "WAITALL|DONTWAIT");
    t.recv(b, 8, MSG_DONTWAIT, "DONTWAIT");
    t.recv(b, 8, MSG_ERRQUEUE | MSG_DONTWAIT, "ERRQUEUE|DONTWAIT");
    t.recv(b, 0, MSG_DONTWAIT, "DONTWAIT");
    t.send(a, 1, 0, "0");
    t.recv(b, 0, 0, "0");
    t.recv(b, 1, 0, "0");
    t.ioctl_int(a, TIOCOUTQ, "TIOCOUTQ");
    // Fill a blocking socket with MSG_DONTWAIT: Linux's exact count.
    long sends = 0;
    {
      conf::T::Quiet q(t);
      while (t.send(a, 4096, MSG_DONTWAIT, "DONTWAIT") == 4096) ++sends;
    }
    t.log("sends of 4096 before EAGAIN: " + std::to_string(sends));
    t.send(a, 4096, MSG_DONTWAIT, "DONTWAIT");
    t.getfl(a);  // MSG_DONTWAIT did not touch O_NONBLOCK
    t.ioctl_int(b, FIONREAD, "FIONREAD");
    t.ioctl_int(a, TIOCOUTQ, "TIOCOUTQ");
  });
  EXPECT_LINUX_HAS(tr, "sends of 4096 before EAGAIN");
}

// MSG_TRUNC on a stream pair: Linux 6.18's unix_stream_read_generic copies
// the bytes as without it (only datagram sockets discard); a NULL buffer is
// EFAULT.
TEST(SurfaceSocket, RecvTruncOnStream) {
  auto tr = conf::surface_differential([](ST& t) {
    auto [a, b] = t.unix_stream(SOCK_NONBLOCK);
    t.send(a, 6, 0, "0", 't');
    t.recv(b, 2, MSG_TRUNC, "TRUNC");
    t.recv(b, 2, MSG_TRUNC | MSG_PEEK, "TRUNC|PEEK");
    errno = 0;
    t.rec("recv(NULL,100,TRUNC)", t.sa.recv(b, nullptr, 100, MSG_TRUNC));
    t.recv(b, 16, 0, "0");
    t.send(a, 3, 0, "0", 'u');
    char buf[8] = {};
    struct iovec io = {buf, 2};
    struct msghdr m{};
    m.msg_iov = &io;
    m.msg_iovlen = 1;
    errno = 0;
    const ssize_t r = t.sa.recvmsg(b, &m, MSG_TRUNC);
    t.rec("recvmsg(2,TRUNC) [" + std::string(buf, r > 0 ? static_cast<size_t>(r) : 0) +
              "] msg_flags=" + std::to_string(m.msg_flags),
          r);
  });
  EXPECT_LINUX_SEQ(tr, {"recv(fd1,2,TRUNC) = 2 [tt]", "recv(NULL,100,TRUNC) = -1 EFAULT",
                        "recvmsg(2,TRUNC) [uu] msg_flags=0 = 2"});
}

TEST(SurfaceSocket, EpipeAndSigpipe) {
  auto tr = conf::surface_differential([](ST& t) {
    BlockSigpipe block;
    auto [a, b] = t.unix_stream();
    t.shutdown(a, SHUT_WR);
    t.send(a, 1, MSG_NOSIGNAL, "NOSIGNAL");
    t.log("SIGPIPE " + t.take_pending(SIGPIPE));
    t.send(a, 1, 0, "0");
    t.log("SIGPIPE " + t.take_pending(SIGPIPE));
    t.close(b);
    auto [c, d] = t.unix_stream();
    t.close(d);
    t.send(c, 1, MSG_NOSIGNAL | MSG_DONTWAIT, "NOSIGNAL|DONTWAIT");
    t.log("SIGPIPE " + t.take_pending(SIGPIPE));
    t.write_bytes(c, 1);
    t.log("SIGPIPE " + t.take_pending(SIGPIPE));
    auto [r, w] = t.pipe();
    t.close(r);
    t.write_bytes(w, 1);
    t.log("SIGPIPE " + t.take_pending(SIGPIPE));
  });
  EXPECT_LINUX_HAS(tr, "send(fd0,1,NOSIGNAL) = -1 EPIPE");
  EXPECT_LINUX_SEQ(tr, {"send(fd0,1,NOSIGNAL) = -1 EPIPE", "SIGPIPE none", "send(fd0,1,0) = -1 EPIPE",
                        "SIGPIPE pending"});
}

TEST(SurfaceSocket, SendmsgRecvmsg) {
  auto tr = conf::surface_differential([](ST& t) {
    auto [a, b] = t.unix_stream(SOCK_NONBLOCK);
    char x[3] = {'x', 'y', 'z'}, y[2] = {'1', '2'};
    struct iovec iov[2] = {{x, 3}, {y, 2}};
    struct msghdr m = {};
    m.msg_iov = iov;
    m.msg_iovlen = 2;
    t.rec("sendmsg(" + t.n(a) + ",2 segs)", t.sa.sendmsg(a, &m, 0));
    struct sockaddr_un addr = {};
    addr.sun_family = AF_UNIX;
    m.msg_name = &addr;
    m.msg_namelen = sizeof addr;
    t.rec("sendmsg(" + t.n(a) + ",with name)", t.sa.sendmsg(a, &m, 0));
    char in1[2], in2[8];
    struct iovec riov[2] = {{in1, 2}, {in2, 8}};
    struct msghdr rm = {};
    char name[64];
    rm.msg_name = name;
    rm.msg_namelen = sizeof name;
    rm.msg_iov = riov;
    rm.msg_iovlen = 2;
    rm.msg_flags = 0x5a5a;
    const long r = t.rec("recvmsg(" + t.n(b) + ")", t.sa.recvmsg(b, &rm, 0));
    t.log("  data " + std::string(in1, 2) + "|" + std::string(in2, r > 2 ? static_cast<size_t>(r - 2) : 0) +
          " namelen=" + std::to_string(rm.msg_namelen) + " flags=" + std::to_string(rm.msg_flags) +
          " controllen=" + std::to_string(rm.msg_controllen));
    t.rec("recvmsg(" + t.n(b) + ") empty", t.sa.recvmsg(b, &rm, 0));
    m.msg_name = nullptr;
    m.msg_namelen = 0;
    m.msg_iovlen = 1025;
    t.rec("sendmsg(" + t.n(a) + ",1025 segs)", t.sa.sendmsg(a, &m, 0));
    const int e = t.eventfd(0, 0);
    t.rec("sendmsg(" + t.n(e) + ")", t.sa.sendmsg(e, &m, 0));
    t.rec("recvmsg(" + t.n(e) + ")", t.sa.recvmsg(e, &rm, 0));
  });
  EXPECT_LINUX_HAS(tr, "with name) = -1 EISCONN");
}

TEST(SurfaceSocket, SockoptAndName) {
  auto tr = conf::surface_differential([](ST& t) {
    auto [a, b] = t.unix_stream();
    t.getsockopt_int(a, SOL_SOCKET, SO_TYPE, "SO_TYPE");
    t.getsockopt_int(a, SOL_SOCKET, SO_DOMAIN, "SO_DOMAIN");
    t.getsockopt_int(a, SOL_SOCKET, SO_PROTOCOL, "SO_PROTOCOL");
    t.getsockopt_int(a, SOL_SOCKET, SO_ERROR, "SO_ERROR");
    t.getsockopt_int(a, SOL_SOCKET, SO_SNDBUF, "SO_SNDBUF");
    t.getsockopt_int(a, SOL_SOCKET, SO_RCVBUF, "SO_RCVBUF");
    t.getsockopt_int(a, SOL_SOCKET, SO_ACCEPTCONN, "SO_ACCEPTCONN");
    t.getsockopt_int(a, SOL_SOCKET, SO_TYPE, "SO_TYPE,len 2", 2);
    t.getsockopt_int(a, 6 /* SOL_TCP */, 1, "SOL_TCP,1");
    int one = 1;
    t.rec("setsockopt(" + t.n(a) + ",SO_KEEPALIVE)", t.sa.setsockopt(a, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one));
    t.rec("setsockopt(" + t.n(a) + ",SO_TYPE)", t.sa.setsockopt(a, SOL_SOCKET, SO_TYPE, &one, sizeof one));
    t.rec("setsockopt(" + t.n(a) + ",len 2)", t.sa.setsockopt(a, SOL_SOCKET, SO_KEEPALIVE, &one, 2));
    struct sockaddr_un sa;
    memset(&sa, 0x5a, sizeof sa);
    socklen_t len = sizeof sa;
    t.rec("getsockname(" + t.n(b) + ")", t.sa.getsockname(b, reinterpret_cast<struct sockaddr*>(&sa), &len));
    t.log("  len=" + std::to_string(len) + " family=" + std::to_string(sa.sun_family));
    // ECONNRESET-style pending error: the peer closes with unread data.
    t.write_bytes(a, 3);
    t.write_bytes(b, 2);
    t.close(b);
    t.getsockopt_int(a, SOL_SOCKET, SO_ERROR, "SO_ERROR");
    t.getsockopt_int(a, SOL_SOCKET, SO_ERROR, "SO_ERROR");
    auto [r, w] = t.pipe();
    (void)w;
    t.getsockopt_int(r, SOL_SOCKET, SO_TYPE, "SO_TYPE");
  });
  EXPECT_LINUX_HAS(tr, "SO_TYPE) = 0 value=1");
}

}  // namespace
