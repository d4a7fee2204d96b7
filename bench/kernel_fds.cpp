// kernel_fds.cpp - the "kernel-fds" scenario: the cost of going through a
// uepoll instance for KERNEL descriptors, against a kernel epoll holding
// the same descriptors.  Both backends use the kernel's own objects (an
// eventfd, a loopback TCP connection); only the instance differs ("linux":
// epoll_create1, "uepoll": uep_epoll_create1, whose kernel side is a shadow
// kernel epoll, epoll/kernel_watch.h).  Rows:
//   ctl eventfd / ctl tcp    one thread: ADD then DEL of the descriptor
//   wakeup eventfd / tcp     two threads ping-pong through two instances,
//                            each blocked in epoll_wait: round trips/s
// Target: uepoll within 10% of kernel epoll (ratio >= 0.9).
#include "kernel_fds.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <string>

namespace uepoll_bench {

namespace {

constexpr uint64_t kBatch = 64;

// Kernel descriptors of one run, closed at its end.
struct KernelFds {
  std::vector<int> fds;
  ~KernelFds() {
    for (int fd : fds) ::close(fd);
  }
  int add(int fd, const Backend& b, const char* what) {
    if (fd < 0) fail(b, what, errno);
    fds.push_back(fd);
    return fd;
  }
};

// A connected loopback TCP pair (non-blocking, Nagle off).
void tcp_pair(const Backend& b, KernelFds& k, int* a, int* c) {
  int ls = k.add(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), b, "socket");
  struct sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof sa;
  if (::bind(ls, reinterpret_cast<sockaddr*>(&sa), sizeof sa) || ::listen(ls, 1) ||
      ::getsockname(ls, reinterpret_cast<sockaddr*>(&sa), &len))
    fail(b, "listen", errno);
  *a = k.add(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), b, "socket");
  if (::connect(*a, reinterpret_cast<sockaddr*>(&sa), sizeof sa)) fail(b, "connect", errno);
  *c = k.add(::accept4(ls, nullptr, nullptr, SOCK_CLOEXEC), b, "accept");
  int one = 1;
  ::setsockopt(*a, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  ::setsockopt(*c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

void ctl_or_fail(const Backend& b, int ep, int op, int fd, uint32_t events) {
  struct epoll_event ev{};
  ev.events = events;
  if (b->epoll_ctl(ep, op, fd, &ev) != 0) fail(b, "epoll_ctl", errno);
}

RunFn ctl_pairs(const Backend& b, bool tcp, Budget bud) {
  return [&b, tcp, bud](bool warmup) {
    Budget use = warmup ? bud.scaled(0.1) : bud;
    KernelFds k;
    const int ep = k.add(b->epoll_create1(EPOLL_CLOEXEC), b, "epoll_create1");
    int fd, peer = -1;
    if (tcp)
      tcp_pair(b, k, &fd, &peer);
    else
      fd = k.add(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC), b, "eventfd");
    // The first ADD creates uepoll's kernel side: not part of the steady state.
    ctl_or_fail(b, ep, EPOLL_CTL_ADD, fd, EPOLLIN);
    ctl_or_fail(b, ep, EPOLL_CTL_DEL, fd, 0);
    uint64_t done = 0;
    double cpu = 0;
    const double secs = run_threads(1, [&](int) {
      Stopper st(use);
      struct epoll_event ev{};
      ev.events = EPOLLIN;
      const Api& a = *b;
      uint64_t n = 0;
      while (st.more(n)) {
        for (uint64_t i = 0; i < kBatch; ++i) {
          if (a.epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) != 0) fail(b, "epoll_ctl(ADD)", errno);
          if (a.epoll_ctl(ep, EPOLL_CTL_DEL, fd, nullptr) != 0) fail(b, "epoll_ctl(DEL)", errno);
        }
        n += kBatch;
      }
      done = n;
    }, &cpu);
    if (b->close(ep) == 0) k.fds.erase(k.fds.begin());
    Sample s;
    s.value = static_cast<double>(done) / secs;
    s.extra["cpu_ns/op"] = cpu * 1e9 / static_cast<double>(done);
    return s;
  };
}

// Thread 0 sends to side 1 and waits for the answer; thread 1 answers.  Each
// side's receiving descriptor is in its own instance; both block in
// epoll_wait(-1).  A message with value 2 (eventfd) or byte 'q' ends it.
RunFn round_trips(const Backend& b, bool tcp, Budget bud) {
  return [&b, tcp, bud](bool warmup) {
    Budget use = warmup ? bud.scaled(0.1) : bud;
    KernelFds k;
    int ep[2], rx[2], tx[2];
    for (int& e : ep) e = b->epoll_create1(EPOLL_CLOEXEC);
    if (ep[0] < 0 || ep[1] < 0) fail(b, "epoll_create1", errno);
    if (tcp) {
      int a, c;
      tcp_pair(b, k, &a, &c);
      rx[0] = tx[0] = a;  // thread 0 talks on a
      rx[1] = tx[1] = c;
    } else {
      rx[0] = tx[1] = k.add(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC), b, "eventfd");
      rx[1] = tx[0] = k.add(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC), b, "eventfd");
    }
    for (int i = 0; i < 2; ++i) ctl_or_fail(b, ep[i], EPOLL_CTL_ADD, rx[i], EPOLLIN);
    auto send = [tcp](int fd, bool stop) {
      if (tcp) {
        const char c = stop ? 'q' : 'x';
        return ::write(fd, &c, 1) == 1;
      }
      const uint64_t v = stop ? 2 : 1;
      return ::write(fd, &v, 8) == 8;
    };
    auto recv = [tcp](int fd, bool* stop) {  // one message
      if (tcp) {
        char c = 0;
        const ssize_t n = ::read(fd, &c, 1);
        *stop = c == 'q';
        return n == 1;
      }
      uint64_t v = 0;
      const ssize_t n = ::read(fd, &v, 8);
      *stop = v >= 2;
      return n == 8;
    };
    auto await = [&b](int e) {
      struct epoll_event ev;
      for (;;) {
        const int n = b->epoll_wait(e, &ev, 1, -1);
        if (n == 1) return;
        if (n < 0 && errno != EINTR) fail(b, "epoll_wait", errno);
      }
    };
    uint64_t done = 0;
    double cpu = 0;
    const double secs = run_threads(2, [&](int i) {
      bool stop = false;
      if (i == 1) {
        while (!stop) {
          await(ep[1]);
          if (!recv(rx[1], &stop)) fail(b, "read", errno);
          if (!stop && !send(tx[1], false)) fail(b, "write", errno);
        }
        return;
      }
      Stopper st(use);
      uint64_t n = 0;
      while (st.more(n)) {
        for (uint64_t r = 0; r < kBatch; ++r) {
          if (!send(tx[0], false)) fail(b, "write", errno);
          await(ep[0]);
          if (!recv(rx[0], &stop)) fail(b, "read", errno);
        }
        n += kBatch;
      }
      send(tx[0], true);
      done = n;
    }, &cpu);
    for (int e : ep) b->close(e);
    Sample s;
    s.value = static_cast<double>(done) / secs;
    s.extra["cpu_ns/op"] = cpu * 1e9 / static_cast<double>(done);
    return s;
  };
}

}  // namespace

std::vector<Case> kernel_fds_cases(const Options& o) {
  std::vector<Case> out;
  const uint64_t ctl_n = o.count ? o.count : (o.quick ? 20000 : 200000);
  const uint64_t rtt_n = o.count ? o.count : (o.quick ? 5000 : 50000);
  for (int kind = 0; kind < 4; ++kind) {
    const bool rtt = kind >= 2, tcp = kind % 2 == 1;
    Case c;
    c.scenario = "kernel-fds";
    c.group = rtt ? "wakeup" : "ctl";
    c.label = std::string(rtt ? "wakeup " : "ctl ") + (tcp ? "tcp" : "eventfd");
    c.x_name = "kind";
    c.x = kind;
    c.unit = rtt ? "round trips/s" : "pairs/s";
    c.target = "uepoll >= 0.9x Linux";
    c.pass = [](double l, double u, const std::map<std::string, double>&) { return l > 0 && u / l >= 0.9; };
    Budget bud;
    bud.count = rtt ? rtt_n : ctl_n;
    bud.duration = o.duration;
    c.prepare = [rtt, tcp, bud](const Backend& b) { return rtt ? round_trips(b, tcp, bud) : ctl_pairs(b, tcp, bud); };
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace uepoll_bench
