// opcount.cpp - uepoll-opcount: runs one uepoll operation N times in a tight
// loop, for instruction counts per operation under callgrind:
//   valgrind --tool=callgrind --callgrind-out-file=/dev/null uepoll-opcount OP 0
//   valgrind --tool=callgrind --callgrind-out-file=/dev/null uepoll-opcount OP 100000
// and (Ir(N) - Ir(0)) / N is the cost of one operation (bench/opcount.sh does
// exactly that for every OP).  OPs: ctl-pair, ctl-pair-nested, ctl-pair-kfd
// and ctl-pair-kfd-linux (a kernel eventfd in a uepoll or a kernel epoll
// instance: user-space instructions only), wait0, wait0-nested,
// eventfd-rw, pipe-rw, ctl-mod64 and ctl-batch64 (64 MODs as single calls
// or one batch: divide by 64 for one command).  Takes no lock
// of its own.
#include <uepoll/uepoll.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <fcntl.h>

namespace {

[[noreturn]] void die(const char* what) {
  std::perror(what);
  std::exit(1);
}

int must(int r, const char* what) {
  if (r < 0) die(what);
  return r;
}

void add(int ep, int fd) {
  struct epoll_event ev {};
  ev.events = EPOLLIN;
  must(uep_epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev), "uep_epoll_ctl(ADD)");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: uepoll-opcount ctl-pair|ctl-pair-nested|ctl-pair-kfd|ctl-pair-kfd-linux|wait0|wait0-nested|eventfd-rw|pipe-rw|ctl-mod64|ctl-batch64 N\n");
    return 2;
  }
  const char* op = argv[1];
  const long n = std::atol(argv[2]);
  // Set-up common to every op (so that N=0 pays it too).
  int ep = must(uep_epoll_create1(0), "uep_epoll_create1");
  int top = must(uep_epoll_create1(0), "uep_epoll_create1");
  int efd = must(uep_eventfd(0, EFD_NONBLOCK), "uep_eventfd");
  int ready = must(uep_eventfd(1, EFD_NONBLOCK), "uep_eventfd");
  int p[2];
  must(uep_pipe2(p, O_NONBLOCK), "uep_pipe2");
  struct epoll_event evs[4];
  uint64_t v = 1;
  char byte = 'x';
  if (std::strcmp(op, "ctl-pair") == 0 || std::strcmp(op, "ctl-pair-nested") == 0) {
    if (op[8] == '-') add(top, ep);
    struct epoll_event ev {};
    ev.events = EPOLLIN;
    for (long i = 0; i < n; ++i) {
      must(uep_epoll_ctl(ep, EPOLL_CTL_ADD, efd, &ev), "ADD");
      must(uep_epoll_ctl(ep, EPOLL_CTL_DEL, efd, nullptr), "DEL");
    }
  } else if (std::strcmp(op, "ctl-pair-kfd") == 0 || std::strcmp(op, "ctl-pair-kfd-linux") == 0) {
    // The kernel-fds scenario's ctl row: ADD and DEL of a kernel eventfd in
    // a uepoll instance (its shadow epoll's epoll_ctl), or in a kernel
    // epoll instance: the difference is uepoll's own work per pair.
    const bool linux_side = op[12] == '-';
    const int kfd = must(eventfd(0, EFD_NONBLOCK), "eventfd");
    const int kep = must(epoll_create1(0), "epoll_create1");
    struct epoll_event ev {};
    ev.events = EPOLLIN;
    for (long i = 0; i < n; ++i) {
      if (linux_side) {
        must(epoll_ctl(kep, EPOLL_CTL_ADD, kfd, &ev), "ADD");
        must(epoll_ctl(kep, EPOLL_CTL_DEL, kfd, nullptr), "DEL");
      } else {
        must(uep_epoll_ctl(ep, EPOLL_CTL_ADD, kfd, &ev), "ADD");
        must(uep_epoll_ctl(ep, EPOLL_CTL_DEL, kfd, nullptr), "DEL");
      }
    }
  } else if (std::strcmp(op, "wait0") == 0 || std::strcmp(op, "wait0-nested") == 0) {
    add(ep, ready);
    int w = ep;
    if (op[5] == '-') {
      add(top, ep);
      w = top;
    }
    for (long i = 0; i < n; ++i)
      if (uep_epoll_wait(w, evs, 4, 0) != 1) die("uep_epoll_wait");
  } else if (std::strcmp(op, "ctl-mod64") == 0 || std::strcmp(op, "ctl-batch64") == 0) {
    // The ctl-batch scenario's work: 64 ONESHOT re-arms (MOD) of eventfds
    // in one instance, as 64 calls or one uep_epoll_ctl_batch.
    constexpr int kBatch = 64;
    uep_ctl_cmd cmds[kBatch];
    for (int i = 0; i < kBatch; ++i) {
      const int fd = must(uep_eventfd(0, EFD_NONBLOCK), "uep_eventfd");
      struct epoll_event ev {};
      ev.events = EPOLLIN | EPOLLONESHOT;
      ev.data.u64 = static_cast<uint64_t>(i);
      must(uep_epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev), "ADD");
      cmds[i] = uep_ctl_cmd{};
      cmds[i].op = EPOLL_CTL_MOD;
      cmds[i].fd = fd;
      cmds[i].event = ev;
    }
    const bool batch = op[4] == 'b';
    for (long i = 0; i < n; ++i) {
      if (batch) {
        if (uep_epoll_ctl_batch(ep, cmds, kBatch) != kBatch) die("uep_epoll_ctl_batch");
      } else {
        for (uep_ctl_cmd& c : cmds) must(uep_epoll_ctl(ep, c.op, c.fd, &c.event), "MOD");
      }
    }
  } else if (std::strcmp(op, "eventfd-rw") == 0) {
    for (long i = 0; i < n; ++i) {
      if (uep_write(efd, &v, sizeof v) != sizeof v) die("uep_write");
      if (uep_read(efd, &v, sizeof v) != sizeof v) die("uep_read");
      v = 1;
    }
  } else if (std::strcmp(op, "pipe-rw") == 0) {
    for (long i = 0; i < n; ++i) {
      if (uep_write(p[1], &byte, 1) != 1) die("uep_write");
      if (uep_read(p[0], &byte, 1) != 1) die("uep_read");
    }
  } else {
    std::fprintf(stderr, "uepoll-opcount: unknown op %s\n", op);
    return 2;
  }
  return 0;
}
