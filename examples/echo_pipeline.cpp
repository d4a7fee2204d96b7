// examples/echo_pipeline.cpp - a small event-driven "echo server" that runs
// entirely on uepoll descriptors, with the shape of a real network server:
//
//                      loop (uepoll instance, level-triggered)
//        +-------------+-------------+--------------+---------------+
//        |             |             |              |               |
//      timerfd     conns (nested   client ends   results pipe    done eventfd
//      (2 ms tick)  instance)      (3 sockets)   (from worker)   (from worker)
//                      |
//              server ends (3 sockets, EPOLLIN|EPOLLRDHUP|EPOLLET)
//
// Each timer tick, one of three clients sends a line ("hello 0 from client
// 1\n") on its end of an AF_UNIX stream socket pair.  The server learns that
// *some* connection is readable because the nested instance `conns` becomes
// readable in the loop, asks `conns` which ones, drains them (edge-triggered:
// until EAGAIN), and hands each line to a worker thread through a pipe.  The
// worker (blocked in uep_read) upper-cases it and sends it back through a
// second pipe that the loop watches; the server writes the answer to the
// connection.  When a client has sent its lines it shuts down its write side;
// the server sees EPOLLRDHUP and end-of-file, answers what is pending, and
// shuts down its side too; the client sees end-of-file and closes.  When all
// clients are gone the server closes the job pipe, the worker finishes and
// signals an eventfd, and the loop ends.
//
// Checks (exit 1 with a message otherwise): every answer arrives, on the right
// connection, upper-cased, in order; nothing stays silent for 5 s; every
// descriptor is a uepoll one.  Prints what happens; exits 0.
//
// Build: part of the default build (target echo_pipeline); run:
//   build/examples/echo_pipeline
#include <uepoll/uepoll.h>

#include <fcntl.h>

#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr int kClients = 3;
constexpr int kLinesPerClient = 3;

// Tags in epoll_event.data.u64: what the loop woke up for.
enum : std::uint64_t { kTimer = 1, kConns, kResults, kDone, kClientBase = 100 };

[[noreturn]] void die(const char* what) {
  std::fprintf(stderr, "echo_pipeline: %s: %s\n", what, std::strerror(errno));
  std::exit(1);
}

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "echo_pipeline: FAILED: %s\n", what.c_str());
  std::exit(1);
}

int check_fd(int fd, const char* what) {
  if (fd < 0) die(what);
  if (fd < UEP_FD_BASE || !uep_is_uepoll_fd(fd)) fail(std::string(what) + " is not a uepoll descriptor");
  return fd;
}

void add(int ep, int fd, std::uint32_t events, std::uint64_t tag) {
  epoll_event ev{};
  ev.events = events;
  ev.data.u64 = tag;
  if (uep_epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) != 0) die("epoll_ctl(ADD)");
}

// Writes all of buf; the sockets and pipes here are small-message, so a
// nonblocking write that would block is a failure of the example itself.
void write_all(int fd, const std::string& buf) {
  std::size_t off = 0;
  while (off < buf.size()) {
    ssize_t n = uep_write(fd, buf.data() + off, buf.size() - off);
    if (n < 0) die("write");
    off += static_cast<std::size_t>(n);
  }
}

// One record on the job and result pipes: at most PIPE_BUF bytes, so that
// each write is atomic and each read of sizeof(Job) returns one whole record.
struct Job {
  int conn;        // index of the connection the line came from
  char line[120];  // NUL-terminated, without the newline
};
static_assert(sizeof(Job) <= 512, "a job must fit in PIPE_BUF for atomic writes");

// The worker: blocks in uep_read on the job pipe, upper-cases, answers on the
// result pipe; at end-of-file signals `done` and returns.
void worker(int jobs_rd, int results_wr, int done) {
  Job job;
  int handled = 0;
  for (;;) {
    ssize_t n = uep_read(jobs_rd, &job, sizeof job);
    if (n == 0) break;  // the server closed its end: no more work
    if (n != static_cast<ssize_t>(sizeof job)) die("worker read");
    for (char* p = job.line; *p; ++p) *p = static_cast<char>(std::toupper(static_cast<unsigned char>(*p)));
    if (uep_write(results_wr, &job, sizeof job) != static_cast<ssize_t>(sizeof job)) die("worker write");
    ++handled;
  }
  std::uint64_t v = static_cast<std::uint64_t>(handled);
  if (uep_write(done, &v, sizeof v) != static_cast<ssize_t>(sizeof v)) die("worker eventfd write");
}

struct Conn {
  int server = -1;           // server end (in `conns`)
  int client = -1;           // client end (in the loop)
  std::string server_in;     // bytes read by the server, not yet a full line
  std::string client_in;     // bytes read by the client, not yet a full line
  int sent = 0;              // lines the client sent
  int answered = 0;          // answers the client received
  int pending = 0;           // lines handed to the worker, not yet answered
  bool server_eof = false;   // the client shut down its write side
  bool server_closed = false;
  bool client_closed = false;
};

}  // namespace

int main() {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);

  int loop = check_fd(uep_epoll_create1(EPOLL_CLOEXEC), "epoll_create1(loop)");
  int conns = check_fd(uep_epoll_create1(EPOLL_CLOEXEC), "epoll_create1(conns)");
  add(loop, conns, EPOLLIN, kConns);  // a nested instance: readable when any connection is

  int timer = check_fd(uep_timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC), "timerfd_create");
  itimerspec its{};
  its.it_value.tv_nsec = 2'000'000;
  its.it_interval.tv_nsec = 2'000'000;
  if (uep_timerfd_settime(timer, 0, &its, nullptr) != 0) die("timerfd_settime");
  add(loop, timer, EPOLLIN, kTimer);

  std::vector<Conn> c(kClients);
  for (int i = 0; i < kClients; ++i) {
    int sv[2];
    if (uep_socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) != 0) die("socketpair");
    c[i].server = check_fd(sv[0], "socketpair[0]");
    c[i].client = check_fd(sv[1], "socketpair[1]");
    add(conns, c[i].server, EPOLLIN | EPOLLRDHUP | EPOLLET, static_cast<std::uint64_t>(i));
    add(loop, c[i].client, EPOLLIN, kClientBase + static_cast<std::uint64_t>(i));
  }

  int jobs[2], results[2];
  if (uep_pipe2(jobs, O_CLOEXEC) != 0 || uep_pipe2(results, O_CLOEXEC | O_NONBLOCK) != 0) die("pipe2");
  for (int fd : {jobs[0], jobs[1], results[0], results[1]}) check_fd(fd, "pipe2");
  int done = check_fd(uep_eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK), "eventfd");
  add(loop, results[0], EPOLLIN, kResults);
  add(loop, done, EPOLLIN, kDone);
  std::printf("loop fd %#x, conns fd %#x (nested), timer fd %#x, %d socket pairs, worker pipes, done eventfd %#x\n",
              loop, conns, timer, kClients, done);

  std::thread th(worker, jobs[0], results[1], done);

  int ticks = 0, next_client = 0, sent_total = 0, answers = 0, clients_open = kClients;
  bool jobs_closed = false, finished = false;
  std::uint64_t worker_handled = 0;
  epoll_event evs[8];

  // Server side of connection i: drain it (edge-triggered), hand lines to the
  // worker, and finish the connection once the client is done and answered.
  auto serve = [&](int i, std::uint32_t events) {
    Conn& k = c[i];
    char buf[256];
    for (;;) {
      ssize_t n = uep_read(k.server, buf, sizeof buf);
      if (n > 0) {
        k.server_in.append(buf, static_cast<std::size_t>(n));
        continue;
      }
      if (n == 0) { k.server_eof = true; break; }
      if (errno == EAGAIN) break;
      die("server read");
    }
    for (std::size_t nl; (nl = k.server_in.find('\n')) != std::string::npos;) {
      Job job{};
      job.conn = i;
      std::snprintf(job.line, sizeof job.line, "%s", k.server_in.substr(0, nl).c_str());
      k.server_in.erase(0, nl + 1);
      std::printf("  server: conn %d got \"%s\" -> worker\n", i, job.line);
      if (uep_write(jobs[1], &job, sizeof job) != static_cast<ssize_t>(sizeof job)) die("job write");
      ++k.pending;
    }
    if (k.server_eof && (events & EPOLLRDHUP))
      std::printf("  server: conn %d: EPOLLRDHUP (client shut down its write side)\n", i);
  };
  auto maybe_finish = [&](int i) {
    Conn& k = c[i];
    if (k.server_eof && k.pending == 0 && !k.server_closed) {
      if (uep_shutdown(k.server, SHUT_WR) != 0) die("server shutdown");
      if (uep_close(k.server) != 0) die("server close");  // also leaves `conns`
      k.server_closed = true;
      std::printf("  server: conn %d answered and closed\n", i);
    }
  };

  while (!finished) {
    int n = uep_epoll_wait(loop, evs, 8, 5000);
    if (n < 0) {
      if (errno == EINTR) continue;
      die("epoll_wait(loop)");
    }
    if (n == 0) fail("nothing happened for 5 s");
    for (int e = 0; e < n; ++e) {
      std::uint64_t tag = evs[e].data.u64;
      if (tag == kTimer) {
        std::uint64_t expirations;
        if (uep_read(timer, &expirations, sizeof expirations) != static_cast<ssize_t>(sizeof expirations)) die("timer read");
        ++ticks;
        if (sent_total < kClients * kLinesPerClient) {
          Conn& k = c[next_client];
          std::string line = "hello " + std::to_string(k.sent) + " from client " + std::to_string(next_client);
          std::printf("tick %d: client %d sends \"%s\"\n", ticks, next_client, line.c_str());
          write_all(k.client, line + "\n");
          if (++k.sent == kLinesPerClient) {
            if (uep_shutdown(k.client, SHUT_WR) != 0) die("client shutdown");
            std::printf("tick %d: client %d shuts down its write side\n", ticks, next_client);
          }
          ++sent_total;
          next_client = (next_client + 1) % kClients;
        } else if (sent_total == kClients * kLinesPerClient) {
          itimerspec off{};  // all sent: disarm the timer
          if (uep_timerfd_settime(timer, 0, &off, nullptr) != 0) die("timerfd_settime(off)");
          ++sent_total;
        }
      } else if (tag == kConns) {
        // The nested instance is readable: ask it which connections are.
        epoll_event ready[kClients];
        int m = uep_epoll_wait(conns, ready, kClients, 0);
        if (m < 0) die("epoll_wait(conns)");
        for (int r = 0; r < m; ++r) serve(static_cast<int>(ready[r].data.u64), ready[r].events);
        for (int i = 0; i < kClients; ++i) maybe_finish(i);
      } else if (tag == kResults) {
        Job job;
        for (;;) {
          ssize_t r = uep_read(results[0], &job, sizeof job);
          if (r < 0 && errno == EAGAIN) break;
          if (r != static_cast<ssize_t>(sizeof job)) die("result read");
          Conn& k = c[job.conn];
          std::printf("  worker -> server: \"%s\" for conn %d\n", job.line, job.conn);
          write_all(k.server, std::string(job.line) + "\n");
          --k.pending;
          maybe_finish(job.conn);
        }
      } else if (tag == kDone) {
        if (uep_read(done, &worker_handled, sizeof worker_handled) != static_cast<ssize_t>(sizeof worker_handled)) die("done read");
        std::printf("worker finished after %llu jobs\n", static_cast<unsigned long long>(worker_handled));
        finished = true;
      } else if (tag >= kClientBase && tag < kClientBase + kClients) {
        int i = static_cast<int>(tag - kClientBase);
        Conn& k = c[i];
        char buf[256];
        ssize_t r = uep_read(k.client, buf, sizeof buf);
        if (r < 0 && errno == EAGAIN) continue;
        if (r < 0) die("client read");
        if (r == 0) {
          if (k.answered != kLinesPerClient) fail("client " + std::to_string(i) + " closed early");
          std::printf("client %d: end of file, all %d answers in: closing\n", i, k.answered);
          if (uep_close(k.client) != 0) die("client close");  // also leaves the loop
          k.client_closed = true;
          if (--clients_open == 0) {
            if (uep_close(jobs[1]) != 0) die("close(jobs)");  // the worker sees end-of-file
            jobs_closed = true;
          }
          continue;
        }
        k.client_in.append(buf, static_cast<std::size_t>(r));
        for (std::size_t nl; (nl = k.client_in.find('\n')) != std::string::npos;) {
          std::string got = k.client_in.substr(0, nl);
          k.client_in.erase(0, nl + 1);
          std::string want = "HELLO " + std::to_string(k.answered) + " FROM CLIENT " + std::to_string(i);
          std::printf("client %d: got \"%s\"\n", i, got.c_str());
          if (got != want) fail("client " + std::to_string(i) + " expected \"" + want + "\"");
          ++k.answered;
          ++answers;
        }
      } else {
        fail("unexpected tag " + std::to_string(tag));
      }
    }
  }

  th.join();
  if (!jobs_closed || answers != kClients * kLinesPerClient ||
      worker_handled != static_cast<std::uint64_t>(kClients * kLinesPerClient))
    fail("not every line was answered");
  // The instance `conns` is empty now (closing a descriptor removes it from
  // every instance watching it), so a zero-timeout wait finds nothing.
  if (uep_epoll_wait(conns, evs, 8, 0) != 0) fail("conns should be empty");
  for (int fd : {jobs[0], results[0], results[1], done, timer, conns, loop})
    if (uep_close(fd) != 0) die("close");
  std::printf("ok: %d answers over %d connections in %d timer ticks\n", answers, kClients, ticks);
  return 0;
}
