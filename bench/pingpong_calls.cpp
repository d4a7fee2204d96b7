// pingpong_calls.cpp - uepoll-pingpong: a blocking ping-pong through two
// epoll instances, for counting system calls per round trip
// (bench/syscalls.sh runs it under strace -c -f at two round counts and
// prints the difference per round).  Each thread blocks in epoll_wait(-1)
// on its own instance, which holds one kernel descriptor: an eventfd, or
// one end of a loopback TCP connection.  Kind "kernel-loop" is one thread
// instead: a kernel epoll (an event loop) watches the instance's kernel
// form (linux: the epoll itself, uepoll: uep_epoll_kernel_fd), the instance
// an eventfd; a round writes the eventfd, waits on the loop, harvests the
// instance with a zero timeout and reads the eventfd.  Kind "own-eventfd"
// is uepoll-bench's busy-pingpong with no busy poll: the eventfds are
// uepoll's own (uep_eventfd, uep_read, uep_write) under uepoll, kernel ones
// under linux.
//   uepoll-pingpong linux|uepoll eventfd|tcp|kernel-loop|own-eventfd ROUNDS
#include <uepoll/uepoll.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace {

bool g_uepoll = false;

int ep_create() { return g_uepoll ? uep_epoll_create1(0) : epoll_create1(0); }
int ep_add(int ep, int fd) {
  struct epoll_event e{};
  e.events = EPOLLIN;
  e.data.fd = fd;
  return g_uepoll ? uep_epoll_ctl(ep, EPOLL_CTL_ADD, fd, &e) : epoll_ctl(ep, EPOLL_CTL_ADD, fd, &e);
}
int ep_wait(int ep) {
  struct epoll_event e;
  return g_uepoll ? uep_epoll_wait(ep, &e, 1, -1) : epoll_wait(ep, &e, 1, -1);
}

// The own-eventfd kind reads and writes through uepoll under uepoll.
bool g_own = false;
ssize_t rd(int fd, void* p, size_t n) { return g_own ? uep_read(fd, p, n) : read(fd, p, n); }
ssize_t wr(int fd, const void* p, size_t n) { return g_own ? uep_write(fd, p, n) : write(fd, p, n); }

void die(const char* what) {
  std::perror(what);
  std::exit(1);
}

// Two connected loopback TCP sockets (NODELAY).
void tcp_pair(int out[2]) {
  int l = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (l < 0 || bind(l, reinterpret_cast<sockaddr*>(&a), sizeof a) < 0 || listen(l, 1) < 0 ||
      getsockname(l, reinterpret_cast<sockaddr*>(&a), &len) < 0)
    die("listen");
  out[0] = socket(AF_INET, SOCK_STREAM, 0);
  if (out[0] < 0 || connect(out[0], reinterpret_cast<sockaddr*>(&a), sizeof a) < 0) die("connect");
  out[1] = accept(l, nullptr, nullptr);
  if (out[1] < 0) die("accept");
  close(l);
  int one = 1;
  for (int i = 0; i < 2; ++i) setsockopt(out[i], IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

// The kernel-loop kind (see the top of the file).
int kernel_loop(long rounds) {
  const int fd = eventfd(0, EFD_NONBLOCK);
  const int ep = ep_create();
  if (fd < 0 || ep < 0 || ep_add(ep, fd) < 0) die("epoll");
  const int form = g_uepoll ? uep_epoll_kernel_fd(ep) : ep;
  const int loop = epoll_create1(0);
  struct epoll_event e{};
  e.events = EPOLLIN;
  if (form < 0 || loop < 0 || epoll_ctl(loop, EPOLL_CTL_ADD, form, &e) < 0) die("loop");
  uint64_t v = 1;
  for (long r = 0; r < rounds; ++r) {
    if (write(fd, &v, sizeof v) != sizeof v) die("write");
    if (epoll_wait(loop, &e, 1, -1) != 1) die("epoll_wait(loop)");
    const int n = g_uepoll ? uep_epoll_wait(ep, &e, 1, 0) : epoll_wait(ep, &e, 1, 0);
    if (n != 1) die("epoll_wait");
    if (read(fd, &v, sizeof v) != sizeof v) die("read");
  }
  std::printf("%ld rounds\n", rounds);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: uepoll-pingpong linux|uepoll eventfd|tcp|kernel-loop|own-eventfd ROUNDS\n");
    return 2;
  }
  g_uepoll = std::strcmp(argv[1], "uepoll") == 0;
  const bool tcp = std::strcmp(argv[2], "tcp") == 0;
  g_own = g_uepoll && std::strcmp(argv[2], "own-eventfd") == 0;
  const long rounds = std::atol(argv[3]);
  if (std::strcmp(argv[2], "kernel-loop") == 0) return kernel_loop(rounds);
  // me[i]: what thread i waits on and reads; peer[i]: what it writes to
  // reach the other thread (its own end of the connection, for TCP).
  int me[2], peer[2];
  if (tcp) {
    int s[2];
    tcp_pair(s);
    for (int i = 0; i < 2; ++i) me[i] = peer[i] = s[i];
  } else {
    for (int i = 0; i < 2; ++i) me[i] = g_own ? uep_eventfd(0, EFD_NONBLOCK) : eventfd(0, EFD_NONBLOCK);
    peer[0] = me[1];
    peer[1] = me[0];
  }
  int ep[2];
  for (int i = 0; i < 2; ++i) {
    ep[i] = ep_create();
    if (ep[i] < 0 || ep_add(ep[i], me[i]) < 0) die("epoll");
  }
  auto run = [&](int i) {
    uint64_t v = 1;
    for (long r = 0; r < rounds; ++r) {
      if (i == 0 && wr(peer[i], &v, sizeof v) != sizeof v) die("write");
      if (ep_wait(ep[i]) != 1) die("epoll_wait");
      if (rd(me[i], &v, sizeof v) != sizeof v) die("read");
      if (i == 1 && wr(peer[i], &v, sizeof v) != sizeof v) die("write");
    }
  };
  std::thread t(run, 1);
  run(0);
  t.join();
  std::printf("%ld round trips\n", rounds);
  return 0;
}
