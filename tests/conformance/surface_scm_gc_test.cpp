// surface_scm_gc_test.cpp - in-flight sockets that only flight keeps alive,
// Linux vs uepoll (surface_harness.h): the garbage collector (Linux
// net/unix/garbage.c) frees a cycle of sockets queued in each other, and the
// files in flight inside it; a socket reachable from a live one is kept;
// nesting in-flight sockets deeply is allowed (Linux 6.10 dropped
// MAX_RECURSION_LEVEL); a root process is not held to RLIMIT_NOFILE in
// flight (too_many_unix_fds: CAP_SYS_RESOURCE), and without that
// capability and CAP_SYS_ADMIN a send past it is refused (ETOOMANYREFS).
//
// Both collect at the release of a unix socket (the last close of a cycle's
// descriptor releases none: its socket is still in flight), so each
// scenario then releases a scratch pair.  Linux 6.x runs the collection
// from a work queue, so the kernel side waits for EOF a bounded while,
// releasing a scratch kernel pair now and then to schedule it again; uepoll
// collects before that close returns.
#include "conformance/surface_scm.h"

#include <linux/capability.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace {

using conf::ST;
using namespace conf::scm;  // NOLINT: the scenarios' helpers

constexpr int kTypes[] = {SOCK_STREAM, SOCK_DGRAM, SOCK_SEQPACKET};

std::pair<int, int> pair_of(ST& t, int type) {
  const char* d = type == SOCK_STREAM ? "AF_UNIX,SOCK_STREAM,0"
                  : type == SOCK_DGRAM ? "AF_UNIX,SOCK_DGRAM,0"
                                       : "AF_UNIX,SOCK_SEQPACKET,0";
  return t.socketpair(AF_UNIX, type, 0, d);
}

// Releases a scratch pair (what schedules a collection on both sides: the
// closes of a cycle's last descriptors release no socket), then logs
// whether kernel reader kr sees EOF within about 3 s.
void wait_eof(ST& t, int kr) {
  auto [x, y] = t.unix_stream();
  t.close(x);
  t.close(y);
  bool eof = false;
  for (int i = 0; i < 300 && !eof; ++i) {
    struct pollfd p = {kr, POLLIN, 0};
    if (::poll(&p, 1, 10) > 0) {
      char c;
      eof = ::read(kr, &c, 1) == 0;
      break;
    }
    if (i % 10 == 9) {  // a unix socket's release schedules Linux's collection again
      int s[2];
      if (::socketpair(AF_UNIX, SOCK_STREAM, 0, s) == 0) {
        ::close(s[0]);
        ::close(s[1]);
      }
    }
  }
  t.log(std::string("writer's in-flight reference gone (EOF): ") + (eof ? "yes" : "no"));
}

// One socket in its own queue (a), with a kernel pipe's write end beside it:
//   a --sends--> b ; b's queue: [kw] [b]     then close a, b, kw.
TEST(SurfaceScmGc, SelfCycleReleasesFilesInside) {
  for (int type : kTypes) {
    conf::surface_differential([type](ST& t) {
      Scm m(t);
      auto [a, b] = pair_of(t, type);
      auto [kr, kw] = kernel_pipe(t);
      m.send_fds(a, 1, {kw});
      m.send_fds(a, 1, {b});
      kclose(t, kw);
      t.close(a);
      t.close(b);
      wait_eof(t, kr);
      kclose(t, kr);
    });
  }
}

// Two pairs, each holding the other's receiving end:
//   b1's queue: [b2, kw]   b2's queue: [b1]    then close everything.
TEST(SurfaceScmGc, TwoSocketCycle) {
  for (int type : kTypes) {
    conf::surface_differential([type](ST& t) {
      Scm m(t);
      auto [a1, b1] = pair_of(t, type);
      auto [a2, b2] = pair_of(t, type);
      auto [kr, kw] = kernel_pipe(t);
      m.send_fds(a1, 1, {b2, kw});
      m.send_fds(a2, 1, {b1});
      kclose(t, kw);
      t.close(a1);
      t.close(b1);
      t.close(a2);
      t.close(b2);
      wait_eof(t, kr);
      kclose(t, kr);
    });
  }
}

// A socket whose only reference is in flight in a live socket's queue is
// kept, and so is what it holds: after a close has run the collector, it is
// received and its data read.
//   b's queue: [c]  ; d's queue (c's peer): "data" [kw]
TEST(SurfaceScmGc, ReachableInFlightIsKept) {
  for (int type : kTypes) {
    conf::surface_differential([type](ST& t) {
      Scm m(t);
      auto [a, b] = pair_of(t, type);
      auto [c, d] = pair_of(t, type);
      auto [kr, kw] = kernel_pipe(t);
      m.send_fds(c, 4, {kw}, 'd');
      kclose(t, kw);
      m.send_fds(a, 1, {d});
      t.close(d);
      t.close(c);  // a release: the collector runs, d is reachable from b
      auto [x, y] = pair_of(t, type);
      t.close(x);
      t.close(y);
      m.recv(b, 8, CMSG_SPACE(sizeof(int)), 0, "0");
      const int d2 = m.last().empty() ? -1 : m.last()[0];
      m.recv(d2, 8, CMSG_SPACE(sizeof(int)), 0, "0");
      for (int fd : m.last()) {
        kwrite(t, fd, "k");
        kclose(t, fd);
      }
      kread(t, kr, 8);
      kread(t, kr, 8);
      kclose(t, kr);
      t.close(d2);
      t.close(a);
      t.close(b);
    });
  }
}

// Sockets nested in flight ten deep: each pair's receiving end, whose queue
// holds the previous one, sent over the next pair.  Linux before 6.10 gave
// ETOOMANYREFS past MAX_RECURSION_LEVEL (4); this kernel, and uepoll, allow it.
TEST(SurfaceScmGc, DeepNestingAllowed) {
  conf::surface_differential([](ST& t) {
    Scm m(t);
    std::vector<std::pair<int, int>> p;
    for (int i = 0; i < 10; ++i) p.push_back(pair_of(t, SOCK_STREAM));
    for (int i = 1; i < 10; ++i) m.send_fds(p[i].first, 1, {p[i - 1].second});
    for (auto [x, y] : p) {
      t.close(x);
      t.close(y);
    }
  });
}

// too_many_unix_fds: more files in flight than RLIMIT_NOFILE is refused
// only without CAP_SYS_RESOURCE and CAP_SYS_ADMIN; the tests run as root.
TEST(SurfaceScmGc, RootPassesInFlightLimit) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs CAP_SYS_RESOURCE";
  conf::surface_differential([](ST& t) {
    Scm m(t);
    struct rlimit old;
    ::getrlimit(RLIMIT_NOFILE, &old);
    auto [a, b] = pair_of(t, SOCK_STREAM);
    auto [kr, kw] = kernel_pipe(t);
    struct rlimit low = {64, old.rlim_max};
    ::setrlimit(RLIMIT_NOFILE, &low);
    std::vector<int> fds(32, kw);
    for (int i = 0; i < 4; ++i) m.send_fds(a, 1, fds);  // 128 in flight, over 64
    ::setrlimit(RLIMIT_NOFILE, &old);
    kclose(t, kw);
    t.close(b);  // the queue purged: every in-flight reference released
    kread(t, kr, 8);
    kclose(t, kr);
    t.close(a);
  });
}

// The calling thread's effective capabilities without CAP_SYS_RESOURCE and
// CAP_SYS_ADMIN while it lives (they stay permitted, so the destructor
// raises them again).  ok() is false where capget/capset refuse.
class WithoutResourceCaps {
 public:
  WithoutResourceCaps() {
    ok_ = ::syscall(SYS_capget, &hdr_, saved_) == 0;
    if (!ok_) return;
    __user_cap_data_struct lowered[2] = {saved_[0], saved_[1]};
    for (int cap : {CAP_SYS_RESOURCE, CAP_SYS_ADMIN}) lowered[cap / 32].effective &= ~(1u << (cap % 32));
    ok_ = ::syscall(SYS_capset, &hdr_, lowered) == 0;
  }
  ~WithoutResourceCaps() {
    if (ok_) ::syscall(SYS_capset, &hdr_, saved_);
  }
  WithoutResourceCaps(const WithoutResourceCaps&) = delete;
  WithoutResourceCaps& operator=(const WithoutResourceCaps&) = delete;
  bool ok() const { return ok_; }

 private:
  __user_cap_header_struct hdr_{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct saved_[2]{};
  bool ok_ = false;
};

// Without either capability, a message is refused (ETOOMANYREFS, nothing
// queued) once more files than RLIMIT_NOFILE are already in flight: the
// first 100 pass (none in flight before), the next 100 not (100 > 64).
// Linux counts per user (every process of uid 0 here): batches of 100
// against a limit of 64 keep the outcome the same whatever fewer than 64
// files other processes may hold in flight.  The refused message leaves
// the queue as it was: one read returns the first message's files.
TEST(SurfaceScmGc, RefusedPastInFlightLimitWithoutCapabilities) {
  conf::surface_differential([](ST& t) {
    Scm m(t);
    struct rlimit old;
    ::getrlimit(RLIMIT_NOFILE, &old);
    auto [a, b] = pair_of(t, SOCK_STREAM);
    auto [kr, kw] = kernel_pipe(t);
    const std::vector<int> fds(100, kw);
    {
      WithoutResourceCaps drop;
      t.log(std::string("capabilities lowered: ") + (drop.ok() ? "yes" : "no"));
      struct rlimit low = {64, old.rlim_max};
      ::setrlimit(RLIMIT_NOFILE, &low);
      m.send_fds(a, 1, fds);
      m.send_fds(a, 1, fds);
      ::setrlimit(RLIMIT_NOFILE, &old);
    }
    m.recv(b, 8, CMSG_SPACE(100 * sizeof(int)), MSG_DONTWAIT, "MSG_DONTWAIT");
    const std::vector<int> got = m.last();
    t.log("received " + std::to_string(got.size()) + " descriptors");
    for (int fd : got) kclose(t, fd);
    m.recv(b, 8, CMSG_SPACE(100 * sizeof(int)), MSG_DONTWAIT, "MSG_DONTWAIT");
    kclose(t, kw);
    kread(t, kr, 8);
    kclose(t, kr);
    t.close(b);
    t.close(a);
  });
}

}  // namespace
