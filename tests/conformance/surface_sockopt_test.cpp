// surface_sockopt_test.cpp - the socket options of AF_UNIX stream,
// datagram and seqpacket pairs (Linux net/core/sock.c sk_setsockopt /
// sk_getsockopt, net/unix/af_unix.c): what each option stores and reads
// back, its argument checks and their order, and the options that change
// what the socket does: SO_SNDBUF (a stream writer's flow control and
// EPOLLOUT, a datagram's size limit), SO_RCVTIMEO and SO_SNDTIMEO (EAGAIN
// at the deadline, partial counts, EINTR after an SA_RESTART handler),
// SO_RCVLOWAT (a stream receive's target), SO_PEEK_OFF (where MSG_PEEK
// starts, moved on by peeks and back by reads), the timestamp options (a
// datagram's send time).  Against Linux.
#include "conformance/interrupted.h"
#include "conformance/surface_harness.h"

#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/time.h>

#include <chrono>
#include <thread>

namespace {

using conf::ST;

constexpr int kTypes[] = {SOCK_STREAM, SOCK_DGRAM, SOCK_SEQPACKET};

const char* type_name(int type) {
  return type == SOCK_STREAM ? "SOCK_STREAM" : type == SOCK_DGRAM ? "SOCK_DGRAM" : "SOCK_SEQPACKET";
}

std::string hex(const unsigned char* p, socklen_t n) {
  static const char kDigits[] = "0123456789abcdef";
  std::string s;
  for (socklen_t i = 0; i < n; ++i) {
    s += kDigits[p[i] >> 4];
    s += kDigits[p[i] & 15];
  }
  return s;
}

// getsockopt into a buffer of `room` bytes: the result, the length put
// back and the bytes (as hex).
void get_bytes(ST& t, int fd, int level, int opt, socklen_t room, const std::string& desc) {
  unsigned char buf[256];
  std::memset(buf, 0xee, sizeof buf);
  socklen_t len = room;
  errno = 0;
  const int r = t.sa.getsockopt(fd, level, opt, buf, &len);
  const int e = errno;
  t.log("getsockopt(" + t.n(fd) + "," + desc + ",room " + std::to_string(room) + ") = " + (errno = e, t.res(r)) +
        " len=" + std::to_string(len) + (r == 0 ? " [" + hex(buf, len < sizeof buf ? len : sizeof buf) + "]" : ""));
}

int set_int(ST& t, int fd, int opt, int v, const std::string& desc, socklen_t len = sizeof(int)) {
  errno = 0;
  const std::string what = "setsockopt(" + t.n(fd) + "," + desc + "," + std::to_string(v) + ")";
  return static_cast<int>(t.rec(what, t.sa.setsockopt(fd, SOL_SOCKET, opt, &v, len)));
}

int set_tv(ST& t, int fd, int opt, long sec, long usec, const std::string& desc,
           socklen_t len = sizeof(struct timeval)) {
  struct timeval tv;
  tv.tv_sec = sec;
  tv.tv_usec = usec;
  errno = 0;
  return static_cast<int>(t.rec("setsockopt(" + t.n(fd) + "," + desc + ",{" + std::to_string(sec) + "," +
                                    std::to_string(usec) + "})",
                                t.sa.setsockopt(fd, SOL_SOCKET, opt, &tv, len)));
}

// Non-blocking writes of `chunk` bytes until EAGAIN: how many went.
void fill(ST& t, int fd, size_t chunk, const std::string& what) {
  std::vector<char> b(chunk, 'f');
  long n = 0, bytes = 0;
  for (; n < 100000; ++n) {
    const ssize_t r = t.sa.send(fd, b.data(), chunk, MSG_DONTWAIT);
    if (r < 0) break;
    bytes += r;
  }
  t.log(what + ": " + std::to_string(n) + " sends, " + std::to_string(bytes) + " bytes, then " + t.res(-1));
}

const struct timespec kZero = {0, 0};

void writable(ST& t, int fd) { t.ppoll({{fd, POLLOUT}}, &kZero, "0 timeout"); }

TEST(SockOpts, StoredAndReadBack) {
  conf::surface_differential([](ST& t) {
    for (const int type : kTypes) {
      t.log(type_name(type));
      const auto ab = t.socketpair(AF_UNIX, type, 0);
      const int a = ab.first, b = ab.second;
      // Boolean and integer options that only store a value.
      const std::pair<int, const char*> ints[] = {
          {SO_KEEPALIVE, "SO_KEEPALIVE"}, {SO_REUSEADDR, "SO_REUSEADDR"}, {SO_BROADCAST, "SO_BROADCAST"},
          {SO_DONTROUTE, "SO_DONTROUTE"}, {SO_OOBINLINE, "SO_OOBINLINE"},  {SO_PRIORITY, "SO_PRIORITY"},
          {SO_RCVLOWAT, "SO_RCVLOWAT"},   {SO_SNDLOWAT, "SO_SNDLOWAT"},   {SO_PASSCRED, "SO_PASSCRED"},
          {SO_BUSY_POLL, "SO_BUSY_POLL"}, {SO_TIMESTAMP, "SO_TIMESTAMP"}, {SO_MARK, "SO_MARK"},
          {SO_ACCEPTCONN, "SO_ACCEPTCONN"}, {SO_TYPE, "SO_TYPE"},       {SO_ERROR, "SO_ERROR"},
          {SO_INCOMING_CPU, "SO_INCOMING_CPU"}};
      for (const auto& [opt, name] : ints) {
        t.getsockopt_int(a, SOL_SOCKET, opt, name);
        set_int(t, a, opt, 3, name);
        t.getsockopt_int(a, SOL_SOCKET, opt, name);
        set_int(t, a, opt, 0, name);
        t.getsockopt_int(a, SOL_SOCKET, opt, name);
      }
      // Values the kernel checks or clamps.
      set_int(t, a, SO_PRIORITY, 7, "SO_PRIORITY");
      set_int(t, a, SO_PRIORITY, -1, "SO_PRIORITY");
      t.getsockopt_int(a, SOL_SOCKET, SO_PRIORITY, "SO_PRIORITY");
      set_int(t, a, SO_RCVLOWAT, -5, "SO_RCVLOWAT");
      t.getsockopt_int(a, SOL_SOCKET, SO_RCVLOWAT, "SO_RCVLOWAT");
      for (const int v : {0, 1, 1000, 100000, -1, 1 << 30}) {
        set_int(t, b, SO_SNDBUF, v, "SO_SNDBUF");
        t.getsockopt_int(b, SOL_SOCKET, SO_SNDBUF, "SO_SNDBUF");
        set_int(t, b, SO_RCVBUF, v, "SO_RCVBUF");
        t.getsockopt_int(b, SOL_SOCKET, SO_RCVBUF, "SO_RCVBUF");
      }
      set_int(t, b, SO_SNDBUFFORCE, 50000, "SO_SNDBUFFORCE");
      t.getsockopt_int(b, SOL_SOCKET, SO_SNDBUF, "SO_SNDBUF");
      // The argument checks: length, pointer, level, read-only options.
      set_int(t, a, SO_KEEPALIVE, 1, "SO_KEEPALIVE len 2", 2);
      t.rec("setsockopt(" + t.n(a) + ",SO_KEEPALIVE,NULL)", t.sa.setsockopt(a, SOL_SOCKET, SO_KEEPALIVE, nullptr, 4));
      t.rec("setsockopt(" + t.n(a) + ",SOL_TCP,TCP_NODELAY)", t.sa.setsockopt(a, IPPROTO_TCP, 1, "\1\0\0\0", 4));
      t.getsockopt_int(a, IPPROTO_TCP, 1, "SOL_TCP,TCP_NODELAY");
      set_int(t, a, 999, 1, "999");
      t.getsockopt_int(a, SOL_SOCKET, 999, "999");
      t.getsockopt_int(a, SOL_SOCKET, SO_KEEPALIVE, "SO_KEEPALIVE len 1", 1);
      t.getsockopt_int(a, SOL_SOCKET, SO_SNDBUF, "SO_SNDBUF len 0", 0);
      // Structured options.
      struct linger lg = {1, 7};
      t.rec("setsockopt(" + t.n(a) + ",SO_LINGER,{1,7})", t.sa.setsockopt(a, SOL_SOCKET, SO_LINGER, &lg, sizeof lg));
      t.rec("setsockopt(" + t.n(a) + ",SO_LINGER,short)", t.sa.setsockopt(a, SOL_SOCKET, SO_LINGER, &lg, 4));
      get_bytes(t, a, SOL_SOCKET, SO_LINGER, sizeof lg, "SO_LINGER");
      for (const int opt : {SO_RCVTIMEO, SO_SNDTIMEO}) {
        const std::string nm = opt == SO_RCVTIMEO ? "SO_RCVTIMEO" : "SO_SNDTIMEO";
        get_bytes(t, a, SOL_SOCKET, opt, 16, nm);
        set_tv(t, a, opt, 2, 500000, nm);
        get_bytes(t, a, SOL_SOCKET, opt, 16, nm);
        get_bytes(t, a, SOL_SOCKET, opt, 8, nm);
        set_tv(t, a, opt, 1, 1000000, nm);  // EDOM
        set_tv(t, a, opt, 1, -1, nm);       // EDOM
        set_tv(t, a, opt, 1, 0, nm + " short", 8);
        set_tv(t, a, opt, -3, 0, nm);       // an immediate timeout, read back as none
        get_bytes(t, a, SOL_SOCKET, opt, 16, nm);
        set_tv(t, a, opt, 0, 0, nm);
        get_bytes(t, a, SOL_SOCKET, opt, 16, nm);
      }
      // The peer's identity: this process for both ends of a pair.
      get_bytes(t, a, SOL_SOCKET, SO_PEERNAME, 2, "SO_PEERNAME");
      get_bytes(t, a, SOL_SOCKET, SO_PEERNAME, 128, "SO_PEERNAME");
      get_bytes(t, a, SOL_SOCKET, SO_PEERGROUPS, 0, "SO_PEERGROUPS");
      get_bytes(t, a, SOL_SOCKET, SO_PEERGROUPS, 256, "SO_PEERGROUPS");
      get_bytes(t, a, SOL_SOCKET, SO_PEERSEC, 64, "SO_PEERSEC");
      t.close(a);
      t.close(b);
    }
  });
}

// SO_SNDBUF sets the writer's flow control: how much a non-blocking
// writer gets in, when EPOLLOUT comes back, a datagram's size limit; and
// raising it wakes a writer (sk_write_space).
TEST(SockOpts, SndbufFlowControl) {
  conf::surface_differential([](ST& t) {
    for (const int type : kTypes) {
      t.log(type_name(type));
      const auto ab = t.socketpair(AF_UNIX, type, 0);
      const int a = ab.first, b = ab.second;
      set_int(t, a, SO_SNDBUF, 3000, "SO_SNDBUF");
      fill(t, a, 1, "1-byte sends");
      writable(t, a);
      fill(t, b, 1, "the peer's 1-byte sends");  // its own buffer is the default
      std::vector<char> sink(1 << 20);
      for (int i = 0; i < 12; ++i) t.sa.recv(b, sink.data(), 1, MSG_DONTWAIT);
      writable(t, a);
      while (t.sa.recv(b, sink.data(), sink.size(), MSG_DONTWAIT) > 0) {
      }
      writable(t, a);
      fill(t, a, 1000, "1000-byte sends");
      const int ep = t.epoll_create1();
      t.ctl(ep, EPOLL_CTL_ADD, a, EPOLLOUT | EPOLLET, 1);
      t.wait(ep, 4, 0);
      set_int(t, a, SO_SNDBUF, 200000, "SO_SNDBUF");  // writable now: a wakeup
      t.wait(ep, 4, 0);
      fill(t, a, 4096, "4096-byte sends");
      t.close(ep);
      while (t.sa.recv(b, sink.data(), sink.size(), MSG_DONTWAIT) > 0) {
      }
      if (type != SOCK_STREAM) {
        set_int(t, a, SO_SNDBUF, 5000, "SO_SNDBUF");
        t.send(a, 9968, 0, "0");  // sk_sndbuf - 32
        t.send(a, 9969, 0, "0");  // EMSGSIZE
      }
      t.close(a);
      t.close(b);
    }
  });
}

// A blocking call under SO_RCVTIMEO / SO_SNDTIMEO: EAGAIN when the
// deadline passes (the time taken is checked loosely), the count so far
// when some data moved, EAGAIN at once for an immediate timeout, and EINTR
// after a handler even with SA_RESTART (sock_intr_errno).
TEST(SockOpts, Timeouts) {
  conf::surface_differential([](ST& t) {
    std::vector<char> sink(1 << 20);
    for (const int type : kTypes) {
      t.log(type_name(type));
      const auto ab = t.socketpair(AF_UNIX, type, 0);
      const int a = ab.first, b = ab.second;
      set_tv(t, a, SO_RCVTIMEO, 0, 60000, "SO_RCVTIMEO");
      auto t0 = std::chrono::steady_clock::now();
      t.recv(a, 10, 0, "0");
      const auto ms = [&] {
        return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
      };
      t.log(std::string("waited ~60 ms: ") + (ms() >= 50 && ms() < 2000 ? "yes" : "no"));
      t.write_bytes(b, 3);
      t.recv(a, 10, 0, "0");
      set_tv(t, a, SO_RCVTIMEO, -1, 0, "SO_RCVTIMEO");
      t0 = std::chrono::steady_clock::now();
      t.recv(a, 10, 0, "0");
      t.log(std::string("at once: ") + (ms() < 50 ? "yes" : "no"));
      t.read(a, 10);
      // The sender: a full socket, then a send that gets part in.
      set_int(t, b, SO_SNDBUF, 3000, "SO_SNDBUF");
      set_tv(t, b, SO_SNDTIMEO, 0, 60000, "SO_SNDTIMEO");
      fill(t, b, 500, "500-byte sends");
      t0 = std::chrono::steady_clock::now();
      t.send(b, 500, 0, "0");
      t.log(std::string("waited ~60 ms: ") + (ms() >= 50 && ms() < 2000 ? "yes" : "no"));
      while (t.sa.recv(a, sink.data(), sink.size(), MSG_DONTWAIT) > 0) {
      }
      if (type == SOCK_STREAM) t.send(b, 20000, 0, "0");  // part of it, then the deadline
      while (t.sa.recv(a, sink.data(), sink.size(), MSG_DONTWAIT) > 0) {
      }
      // A handler with SA_RESTART ends a receive that has a timeout.
      set_tv(t, a, SO_RCVTIMEO, 5, 0, "SO_RCVTIMEO");
      conf_interrupted::interrupted(
          t, true, "recv with SO_RCVTIMEO", [&] { return static_cast<long>(t.sa.recv(a, sink.data(), 10, 0)); },
          [&t, b] { (void)t.sa.send(b, "z", 1, 0); });  // what a restarted receive would take
      t.recv(a, 10, MSG_DONTWAIT, "MSG_DONTWAIT");
      set_tv(t, a, SO_RCVTIMEO, 0, 0, "SO_RCVTIMEO");
      t.close(a);
      t.close(b);
    }
  });
}

// SO_RCVLOWAT on a stream socket: a receive returns once it has the lesser
// of the low-water mark and its length (MSG_WAITALL: the length), or what
// there is when it may not wait; readiness does not follow it.
TEST(SockOpts, StreamRcvlowat) {
  conf::surface_differential([](ST& t) {
    const auto ab = t.unix_stream();
      const int a = ab.first, b = ab.second;
    set_int(t, a, SO_RCVLOWAT, 10, "SO_RCVLOWAT");
    t.write_bytes(b, 4);
    t.ppoll({{a, POLLIN}}, &kZero, "0 timeout");
    t.recv(a, 100, MSG_DONTWAIT, "MSG_DONTWAIT");
    t.write_bytes(b, 4);
    const auto w = t.sa.send;
    std::thread later([w, b] {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      (void)w(b, "abcdefgh", 8, 0);
    });
    t.recv(a, 100, 0, "0");  // 4 bytes, then 8 more: 12
    later.join();
    t.write_bytes(b, 4);
    t.recv(a, 3, 0, "0");  // the length is less than the mark
    t.recv(a, 100, MSG_DONTWAIT, "MSG_DONTWAIT");
    t.close(a);
    t.close(b);
  });
}

// SO_PEEK_OFF: each MSG_PEEK starts where the last one ended, a read moves
// the offset back by what it took; on a datagram socket the offset runs
// across messages (a zero-length one is passed over once it was peeked
// at) and into one, whose rest a peek returns (MSG_TRUNC: its length).  A
// peek past everything queued waits, or gives EAGAIN.
TEST(SockOpts, PeekOffset) {
  conf::surface_differential([](ST& t) {
    for (const int type : kTypes) {
      t.log(type_name(type));
      const auto ab = t.socketpair(AF_UNIX, type, 0);
      const int a = ab.first, b = ab.second;
      t.getsockopt_int(a, SOL_SOCKET, SO_PEEK_OFF, "SO_PEEK_OFF");
      set_int(t, a, SO_PEEK_OFF, -5, "SO_PEEK_OFF");
      t.getsockopt_int(a, SOL_SOCKET, SO_PEEK_OFF, "SO_PEEK_OFF");
      set_int(t, a, SO_PEEK_OFF, 0, "SO_PEEK_OFF len 2", 2);
      set_int(t, a, SO_PEEK_OFF, 0, "SO_PEEK_OFF");
      t.send(b, 5, 0, "0", 'a');
      t.send(b, 0, 0, "0");
      t.send(b, 6, 0, "0", 'b');
      t.recv(a, 3, MSG_PEEK, "MSG_PEEK");
      t.getsockopt_int(a, SOL_SOCKET, SO_PEEK_OFF, "SO_PEEK_OFF");
      t.recv(a, 3, MSG_PEEK, "MSG_PEEK");
      t.recv(a, 100, MSG_PEEK | MSG_TRUNC, "MSG_PEEK|MSG_TRUNC");
      t.getsockopt_int(a, SOL_SOCKET, SO_PEEK_OFF, "SO_PEEK_OFF");
      t.recv(a, 100, MSG_PEEK | MSG_DONTWAIT, "MSG_PEEK|MSG_DONTWAIT");
      t.getsockopt_int(a, SOL_SOCKET, SO_PEEK_OFF, "SO_PEEK_OFF");
      t.recv(a, 100, MSG_PEEK | MSG_DONTWAIT, "MSG_PEEK|MSG_DONTWAIT");
      t.recv(a, 2, 0, "0");
      t.getsockopt_int(a, SOL_SOCKET, SO_PEEK_OFF, "SO_PEEK_OFF");
      set_int(t, a, SO_PEEK_OFF, 1, "SO_PEEK_OFF");
      t.recv(a, 100, MSG_PEEK, "MSG_PEEK");
      t.recv(a, 100, 0, "0");
      t.getsockopt_int(a, SOL_SOCKET, SO_PEEK_OFF, "SO_PEEK_OFF");
      // A blocking peek past the queue waits for more.
      t.send(b, 2, 0, "0", 'c');
      set_int(t, a, SO_PEEK_OFF, 2, "SO_PEEK_OFF");
      const auto send_fn = t.sa.send;
      std::thread later([send_fn, b] {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        (void)send_fn(b, "dd", 2, 0);
      });
      t.recv(a, 100, MSG_PEEK, "MSG_PEEK");
      later.join();
      set_int(t, a, SO_PEEK_OFF, -1, "SO_PEEK_OFF");
      t.recv(a, 100, MSG_PEEK, "MSG_PEEK");
      t.close(a);
      t.close(b);
    }
  });
}

// One send and its receive with `room` bytes of control buffer, logged:
// the result, msg_flags, msg_controllen and each control message.  A
// timestamp (`opt`: SO_TIMESTAMP{,NS}_{OLD,NEW}) or SCM_TIMESTAMPING's
// software stamp is checked to lie between the send and the receive; the
// latter's other two stamps must be zero.
void send_recv_stamped(ST& t, int a, int b, int opt, size_t room) {
  struct timespec before, after;
  clock_gettime(CLOCK_REALTIME, &before);
  t.send(b, 3, 0, "0");
  char data[8];
  alignas(struct cmsghdr) char ctl[256];
  struct iovec iov = {data, sizeof data};
  struct msghdr m = {};
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  m.msg_control = room ? ctl : nullptr;
  m.msg_controllen = room;
  errno = 0;
  const long r = t.sa.recvmsg(a, &m, 0);
  clock_gettime(CLOCK_REALTIME, &after);
  const int64_t hi = after.tv_sec * 1000000000LL + after.tv_nsec;
  const int64_t lo_ns = before.tv_sec * 1000000000LL + before.tv_nsec;
  std::string line = "recvmsg(room " + std::to_string(room) + ") = " + t.res(r) + " flags " +
                     std::to_string(m.msg_flags) + " controllen " + std::to_string(m.msg_controllen);
  for (struct cmsghdr* c = room ? CMSG_FIRSTHDR(&m) : nullptr; c; c = CMSG_NXTHDR(&m, c)) {
    line += " [" + std::to_string(c->cmsg_level) + "," + std::to_string(c->cmsg_type) + "," +
            std::to_string(c->cmsg_len);
    if (c->cmsg_type == opt && c->cmsg_len >= CMSG_LEN(16)) {
      int64_t v[2];
      std::memcpy(v, CMSG_DATA(c), sizeof v);
      const bool nano = opt == SO_TIMESTAMPNS_OLD || opt == SO_TIMESTAMPNS_NEW;
      const int64_t ns = v[0] * 1000000000 + (nano ? v[1] : v[1] * 1000);
      const int64_t lo = lo_ns - (nano ? 0 : 1000);
      line += ns >= lo && ns <= hi ? " in time" : " out of time";
    }
    if ((c->cmsg_type == SO_TIMESTAMPING_OLD || c->cmsg_type == SO_TIMESTAMPING_NEW) &&
        c->cmsg_len >= CMSG_LEN(48)) {
      int64_t v[6];
      std::memcpy(v, CMSG_DATA(c), sizeof v);
      const int64_t ns = v[0] * 1000000000 + v[1];
      line += ns >= lo_ns && ns <= hi ? " sw in time" : " sw out of time";
      line += v[2] == 0 && v[3] == 0 && v[4] == 0 && v[5] == 0 ? ", hw none" : ", hw set";
    }
    line += "]";
  }
  t.log(line);
}

constexpr int kStampOpts[] = {SO_TIMESTAMP_OLD, SO_TIMESTAMPNS_OLD, SO_TIMESTAMP_NEW, SO_TIMESTAMPNS_NEW};

// The timestamp options: a datagram or seqpacket receive carries the
// message's send time as SO_TIMESTAMP (a timeval), SO_TIMESTAMPNS (a
// timespec) or their _NEW forms, first among its control messages; MSG_CTRUNC
// without room; a stream receive none.  The time itself is checked to lie
// between the send and the receive.
TEST(SockOpts, DatagramTimestamps) {
  conf::surface_differential([](ST& t) {
    for (const int type : kTypes) {
      t.log(type_name(type));
      const auto ab = t.socketpair(AF_UNIX, type, 0);
      const int a = ab.first, b = ab.second;
      const int on = 1;
      t.sa.setsockopt(a, SOL_SOCKET, SO_PASSCRED, &on, sizeof on);
      for (const int opt : kStampOpts) {
        set_int(t, a, opt, 1, "SO_TIMESTAMP*(" + std::to_string(opt) + ")");
        for (const int opt2 : kStampOpts)
          t.getsockopt_int(a, SOL_SOCKET, opt2, ("SO_TIMESTAMP*(" + std::to_string(opt2) + ")").c_str());
        for (const size_t room : {size_t{256}, size_t{0}, size_t{20}}) send_recv_stamped(t, a, b, opt, room);
        set_int(t, a, opt, 0, "SO_TIMESTAMP*(" + std::to_string(opt) + ")");
      }
      t.close(a);
      t.close(b);
    }
  });
}

// SO_TIMESTAMPING on a pair: with a timestamp option on, a datagram or
// seqpacket receive adds SCM_TIMESTAMPING after it when the flags ask for
// software stamps (SOF_TIMESTAMPING_SOFTWARE, unless
// SOF_TIMESTAMPING_OPT_RX_FILTER without SOF_TIMESTAMPING_RX_SOFTWARE);
// its _OLD or _NEW form follows the name last set of either option
// (SOCK_TSTAMP_NEW), which also turns the timestamp's own form; without a
// timestamp option, nothing.  Cut control buffers give MSG_CTRUNC and a
// partial message.  A stream receive carries none.
TEST(SockOpts, DatagramTimestamping) {
  constexpr int kRxFilter = 1 << 17;  // SOF_TIMESTAMPING_OPT_RX_FILTER
  const int flag_sets[] = {0x10 /* SOFTWARE */, 0x08 /* RX_SOFTWARE */, 0x18, 0x10 | kRxFilter,
                           0x18 | kRxFilter, 0x44 /* RAW_HARDWARE | RX_HARDWARE */, 0};
  conf::surface_differential([&](ST& t) {
    for (const int type : kTypes) {
      t.log(type_name(type));
      const auto ab = t.socketpair(AF_UNIX, type, 0);
      const int a = ab.first, b = ab.second;
      for (const int name : {SO_TIMESTAMPING_OLD, SO_TIMESTAMPING_NEW}) {
        for (const int flags : flag_sets) {
          for (const int opt : {0, SO_TIMESTAMP_OLD, SO_TIMESTAMPNS_NEW}) {
            // The option first, then SO_TIMESTAMPING, so that its name decides the form.
            if (opt) set_int(t, a, opt, 1, "SO_TIMESTAMP*(" + std::to_string(opt) + ")");
            set_int(t, a, name, flags, "SO_TIMESTAMPING(" + std::to_string(name) + ")");
            t.getsockopt_int(a, SOL_SOCKET, name, "SO_TIMESTAMPING");
            int shown = 0;  // the timestamp option's form now (the last that reads 1)
            for (const int opt2 : kStampOpts) {
              t.getsockopt_int(a, SOL_SOCKET, opt2, ("SO_TIMESTAMP*(" + std::to_string(opt2) + ")").c_str());
              int v = 0;
              socklen_t len = sizeof v;
              if (t.sa.getsockopt(a, SOL_SOCKET, opt2, &v, &len) == 0 && v == 1) shown = opt2;
            }
            for (const size_t room : {size_t{256}, size_t{0}, size_t{40}, size_t{72}})
              send_recv_stamped(t, a, b, shown, room);
            if (opt) set_int(t, a, opt, 0, "SO_TIMESTAMP*(" + std::to_string(opt) + ")");
          }
        }
      }
      // A timestamp option set after SO_TIMESTAMPING decides the form again.
      set_int(t, a, SO_TIMESTAMPING_NEW, 0x10, "SO_TIMESTAMPING_NEW");
      set_int(t, a, SO_TIMESTAMP_OLD, 1, "SO_TIMESTAMP_OLD");
      send_recv_stamped(t, a, b, SO_TIMESTAMP_OLD, 256);
      // Transmit stamps: none on AF_UNIX (the error queue stays empty).
      set_int(t, b, SO_TIMESTAMPING_OLD, 0x392 /* TX_SOFTWARE|SOFTWARE|OPT_ID|TX_SCHED|TX_ACK */, "SO_TIMESTAMPING");
      t.send(b, 1, 0, "x");
      t.recv(b, 8, MSG_ERRQUEUE | MSG_DONTWAIT, "MSG_ERRQUEUE|MSG_DONTWAIT");
      t.recv(a, 8, 0, "0");
      t.close(a);
      t.close(b);
    }
  });
}

}  // namespace
