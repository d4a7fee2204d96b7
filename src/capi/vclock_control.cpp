// vclock_control.cpp - the virtual clock's control channel
// (uep_vclock_control_start in include/uepoll/vclock.h; under the preload,
// UEPOLL_VCLOCK_CONTROL): a line protocol that lets a test driver read the
// clock, advance it, set its REALTIME and wait until the program is idle,
// served by one thread over a Unix socket in a private directory or an
// inherited socket.
//
// What it owns.  The server thread (made once, all signals blocked, never
// exits while it has something to serve; not known to the clock, so it
// never holds it), its listening socket and its clients: each with a line
// buffer, a buffer of received bytes not yet parsed, and a pending
// wait-idle.  All of that is the thread's own: nothing is shared but the
// clock (core/vclock.h), which it calls like any other caller, and the
// descriptors' slots (core/own_slot.h): the sockets and a doorbell eventfd
// are uepoll's own descriptors, which a program's dup2 may move to other
// numbers.  The thread reaches each through its slot (a use for each
// system call, one for each descriptor its poll sleeps on), and a mover
// ends that poll by writing the doorbell, which the poll also watches.
//
// Input is never trusted: a line longer than kLine, an unknown command, a
// number that is not 1-19 decimal digits within range, a client that
// disconnects mid-line, one that does not read its replies, and more than
// kClients clients each get an error reply or are closed; nothing blocks
// the thread but its poll.
//
// Locks: none of its own; the clock's mutex inside core::vclock.
#include <uepoll/vclock.h>

#include "capi/edge.h"
#include "capi/vclock_support.h"
#include "core/own_fds.h"
#include "core/own_slot.h"
#include "core/vclock.h"

#include <atomic>
#include <cerrno>
#include <cinttypes>
#include <climits>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <optional>
#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

namespace vclock = uepoll::core::vclock;

namespace {

constexpr size_t kLine = 128;        // the longest line, its newline included
constexpr int kClients = 8;          // served at once; more are refused
constexpr int64_t kIdleDefaultMs = 10000;
constexpr int64_t kIdleMaxMs = 600000;

int64_t real_ms() noexcept {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);  // the kernel's: inside the library, never virtual
  return static_cast<int64_t>(t.tv_sec) * 1000 + t.tv_nsec / 1000000;
}

// 1 to 19 decimal digits with a value <= INT64_MAX, and nothing else.
bool parse_ns(const char* s, int64_t* out) noexcept {
  size_t n = 0;
  uint64_t v = 0;
  for (; s[n]; ++n) {
    if (s[n] < '0' || s[n] > '9' || n >= 19) return false;
    v = v * 10 + static_cast<uint64_t>(s[n] - '0');
  }
  if (n == 0 || v > static_cast<uint64_t>(INT64_MAX)) return false;
  *out = static_cast<int64_t>(v);
  return true;
}

const char* mode_name() noexcept {
  switch (vclock::g_mode.load(std::memory_order_relaxed)) {
    case vclock::kManual: return "manual";
    case vclock::kAuto: return "auto";
    default: return "off";
  }
}

}  // namespace

namespace uepoll::capi {

// One command line (no newline) -> its reply (with newline) in out.
// Returns 1 when the reply ends the connection (quit), 2 for a wait-idle
// (*idle_ms: how long), else 0.
int vclock_control_execute(char* line, char* out, size_t cap, int64_t* idle_ms) noexcept {
  size_t len = std::strlen(line);
  if (len && line[len - 1] == '\r') line[--len] = '\0';
  char* args[3] = {};
  int n = 0;
  char* save = nullptr;
  for (char* t = strtok_r(line, " \t", &save); t; t = strtok_r(nullptr, " \t", &save)) {
    if (n == 3) {
      std::snprintf(out, cap, "error too many arguments\n");
      return 0;
    }
    args[n++] = t;
  }
  const char* cmd = n ? args[0] : "";
  int64_t v = 0;
  const bool one_arg = n == 2;
  auto bad_number = [&]() { std::snprintf(out, cap, "error bad number (1-19 decimal digits)\n"); };
  auto clock_reply = [&](int r) {
    if (r < 0) {
      std::snprintf(out, cap, "error %s\n", !vclock::on() ? "the clock is off" : "out of range");
      return;
    }
    const int64_t now = vclock::now();
    std::snprintf(out, cap, "ok %" PRId64 " %" PRId64 "\n", now, now + vclock::rt_offset());
  };
  if (std::strcmp(cmd, "now") == 0 && n == 1) {
    clock_reply(vclock::on() ? 0 : -EINVAL);
  } else if (std::strcmp(cmd, "advance") == 0 && one_arg) {
    if (!parse_ns(args[1], &v)) return bad_number(), 0;
    clock_reply(vclock::advance(v));
  } else if (std::strcmp(cmd, "advance-to") == 0 && one_arg) {
    if (!parse_ns(args[1], &v)) return bad_number(), 0;
    clock_reply(vclock::advance_to(v));
  } else if (std::strcmp(cmd, "set-realtime") == 0 && one_arg) {
    if (!parse_ns(args[1], &v)) return bad_number(), 0;
    clock_reply(vclock::set_realtime(v));
  } else if (std::strcmp(cmd, "wait-idle") == 0 && n <= 2) {
    *idle_ms = kIdleDefaultMs;
    if (n == 2 && (!parse_ns(args[1], idle_ms) || *idle_ms > kIdleMaxMs)) {
      std::snprintf(out, cap, "error bad timeout (0-%" PRId64 " ms)\n", kIdleMaxMs);
      return 0;
    }
    return 2;
  } else if (std::strcmp(cmd, "mode") == 0 && n == 1) {
    std::snprintf(out, cap, "ok %s\n", mode_name());
  } else if (std::strcmp(cmd, "quit") == 0 && n == 1) {
    std::snprintf(out, cap, "ok bye\n");
    return 1;
  } else if (std::strcmp(cmd, "now") == 0 || std::strcmp(cmd, "advance") == 0 ||
             std::strcmp(cmd, "advance-to") == 0 || std::strcmp(cmd, "set-realtime") == 0 ||
             std::strcmp(cmd, "mode") == 0 || std::strcmp(cmd, "quit") == 0) {
    std::snprintf(out, cap, "error wrong number of arguments\n");
  } else {
    std::snprintf(out, cap, "error unknown command (now, advance NS, advance-to NS, set-realtime NS, "
                            "wait-idle [MS], mode, quit)\n");
  }
  return 0;
}

}  // namespace uepoll::capi

namespace {

using uepoll::core::OwnSlot;

struct Client {
  OwnSlot sock;             // the connection; empty when the entry is free
  unsigned gen = 0;         // counts the connections this entry has held
  char line[kLine];
  size_t len = 0;
  bool skipping = false;    // the rest of an over-long line is dropped
  char in[512];             // received, not yet parsed
  size_t in_off = 0, in_len = 0;
  int64_t idle_until = -1;  // real ms; >= 0 while a wait-idle is pending
  bool open() const noexcept { return !sock.empty(); }
};

struct Server {
  OwnSlot bell;    // an eventfd: written to end the poll (a move's kick)
  OwnSlot listen;  // empty when serving an inherited socket
  Client clients[kClients];
  void (*enter)(void) = nullptr;
};

Server* g_server = nullptr;  // set before the thread starts; the kicks' target

// A slot's kick: ends the server's poll (core/own_slot.h).
void ring(void*) noexcept { OwnSlot::write_one(&g_server->bell); }

// Takes over own descriptor fd (parked) as c's connection.
void attach(Client& c, int fd) noexcept {
  c.sock.open(fd, &ring, nullptr);
  ++c.gen;
}

// No use of c.sock may be in progress.
void drop(Client& c) noexcept {
  c.sock.close();
  c.len = 0;
  c.skipping = false;
  c.in_off = c.in_len = 0;
  c.idle_until = -1;
}

bool send_all(int fd, const char* s) noexcept {
  const size_t n = std::strlen(s);
  return ::send(fd, s, n, MSG_NOSIGNAL | MSG_DONTWAIT) == static_cast<ssize_t>(n);
}

// False if the client was dropped (it does not take its replies).
bool reply(Client& c, const char* s) noexcept {
  bool sent;
  {
    OwnSlot::Use u(c.sock);
    sent = send_all(u.fd(), s);
  }
  if (sent) return true;
  drop(c);
  return false;
}

// Parses the client's received bytes until they run out, a wait-idle
// begins, or the client is gone.
void consume(Client& c) noexcept {
  while (c.open() && c.idle_until < 0 && c.in_off < c.in_len) {
    const char ch = c.in[c.in_off++];
    if (ch != '\n') {
      if (c.skipping) continue;
      if (c.len + 1 >= kLine) {
        c.skipping = true;
        c.len = 0;
        reply(c, "error line too long\n");
        continue;
      }
      c.line[c.len++] = ch == '\0' ? '\x01' : ch;  // a NUL makes the line unknown, not shorter
      continue;
    }
    if (c.skipping) {
      c.skipping = false;
      continue;
    }
    c.line[c.len] = '\0';
    c.len = 0;
    char out[256];
    int64_t idle_ms = 0;
    const int r = uepoll::capi::vclock_control_execute(c.line, out, sizeof out, &idle_ms);
    if (r == 2) {
      c.idle_until = real_ms() + idle_ms;
      return;
    }
    if (reply(c, out) && r == 1) drop(c);
  }
}

void check_idle(Client& c) noexcept {
  if (!c.open() || c.idle_until < 0) return;
  const bool idle = vclock::idle();
  if (!idle && real_ms() < c.idle_until) return;
  c.idle_until = -1;
  if (reply(c, idle ? "ok idle\n" : "error timeout (not idle)\n")) consume(c);
}

void accept_one(Server& s) noexcept {
  int fd;
  {
    OwnSlot::Use l(s.listen);
    fd = ::accept4(l.fd(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
  }
  if (fd < 0) return;
  fd = uepoll::core::park_high(fd);
  ucred cred{};
  socklen_t len = sizeof cred;
  const char* refused = nullptr;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || cred.uid != ::geteuid())
    refused = "error permission denied (another user)\n";
  Client* free_entry = nullptr;
  for (Client& c : s.clients)
    if (!c.open()) {
      free_entry = &c;
      break;
    }
  if (!refused && !free_entry) refused = "error too many clients\n";
  if (refused) {
    (void)send_all(fd, refused);
    uepoll::core::close_own(fd);
    return;
  }
  attach(*free_entry, fd);
}

// One round of the server: a poll of the doorbell, the listening socket
// and the clients, each through a use that the poll's return ends.
// False when there is nothing left to serve or the poll failed.
bool poll_round(Server& s, pollfd* fds, int* idx, unsigned* gens, nfds_t* count) noexcept {
  std::optional<OwnSlot::Use> uses[kClients + 2];
  nfds_t n = 0;
  bool waiting = false;
  uses[n].emplace(s.bell);
  fds[n] = {uses[n]->fd(), POLLIN, 0};
  idx[n++] = -2;
  if (!s.listen.empty()) {
    uses[n].emplace(s.listen);
    fds[n] = {uses[n]->fd(), POLLIN, 0};
    idx[n++] = -1;
  }
  for (int i = 0; i < kClients; ++i) {
    Client& c = s.clients[i];
    if (!c.open()) continue;
    waiting |= c.idle_until >= 0;
    uses[n].emplace(c.sock);
    fds[n] = {uses[n]->fd(), static_cast<short>(c.idle_until >= 0 ? 0 : POLLIN), 0};
    gens[n] = c.gen;
    idx[n++] = i;
  }
  *count = n;
  if (n == 1) return false;  // an inherited socket that hung up, nothing else
  if (::poll(fds, n, waiting ? 1 : -1) < 0 && errno != EINTR) return false;
  if (fds[0].revents & POLLIN) {  // a mover's kick: go round on the new numbers
    uint64_t v;
    ssize_t unused = ::read(fds[0].fd, &v, sizeof v);
    (void)unused;
  }
  return true;
}

void* serve(void* p) {
  Server& s = *static_cast<Server*>(p);
  if (s.enter) s.enter();  // the preload's: this thread's calls are uepoll's own
  for (;;) {
    pollfd fds[kClients + 2];
    int idx[kClients + 2];
    unsigned gens[kClients + 2];
    nfds_t n = 0;
    if (!poll_round(s, fds, idx, gens, &n)) return nullptr;
    for (Client& c : s.clients) check_idle(c);
    for (nfds_t k = 1; k < n; ++k) {
      if (!fds[k].revents) continue;
      if (idx[k] < 0) {
        accept_one(s);
        continue;
      }
      Client& c = s.clients[idx[k]];
      if (!c.open() || c.gen != gens[k]) continue;  // dropped (and perhaps replaced) meanwhile
      if (c.idle_until >= 0) {  // not reading meanwhile; a hang-up ends the wait
        if (fds[k].revents & (POLLHUP | POLLERR)) drop(c);
        continue;
      }
      ssize_t got;
      {
        OwnSlot::Use u(c.sock);
        got = ::recv(u.fd(), c.in, sizeof c.in, MSG_DONTWAIT);
      }
      if (got <= 0) {
        if (got == 0 || (errno != EAGAIN && errno != EINTR)) drop(c);  // a partial line is dropped with it
        continue;
      }
      c.in_off = 0;
      c.in_len = static_cast<size_t>(got);
      consume(c);
    }
  }
}

// The directory of path: a directory (not a link) owned by this user that
// nobody else may enter or list.
int check_private_dir(const char* path) noexcept {
  char dir[sizeof(sockaddr_un::sun_path)];
  std::snprintf(dir, sizeof dir, "%s", path);
  char* slash = std::strrchr(dir, '/');
  if (!slash) std::snprintf(dir, sizeof dir, ".");
  else if (slash == dir) dir[1] = '\0';
  else *slash = '\0';
  struct stat st{};
  if (::lstat(dir, &st) != 0) return -errno;
  if (!S_ISDIR(st.st_mode) || st.st_uid != ::geteuid() || (st.st_mode & 077) != 0) return -EPERM;
  return 0;
}

int listen_at(const char* path) noexcept {
  sockaddr_un a{};
  if (std::strlen(path) >= sizeof a.sun_path) return -ENAMETOOLONG;
  if (int r = check_private_dir(path)) return r;
  struct stat st{};
  if (::lstat(path, &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) return -EEXIST;
    ::unlink(path);  // a stale socket of an earlier run, in our own directory
  }
  a.sun_family = AF_UNIX;
  std::memcpy(a.sun_path, path, std::strlen(path) + 1);
  const int fd = uepoll::core::park_high(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (fd < 0) return -errno;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, kClients) != 0) {
    const int e = errno;
    uepoll::core::close_own(fd);
    return -e;
  }
  return fd;
}

// An inherited descriptor "fd:N": a connected stream socket.
int inherited(const char* spec, int* out) noexcept {
  int64_t n = 0;
  if (!parse_ns(spec + 3, &n) || n > INT_MAX) return -EINVAL;
  int type = 0;
  socklen_t len = sizeof type;
  if (::getsockopt(static_cast<int>(n), SOL_SOCKET, SO_TYPE, &type, &len) != 0) return errno == EBADF ? -EBADF : -ENOTSOCK;
  if (type != SOCK_STREAM) return -ENOTSOCK;
  *out = static_cast<int>(n);
  return 0;
}

std::atomic<bool> g_started{false};  // one server per process (exchange: the first caller wins)

}  // namespace

extern "C" {

int uep__vclock_control_start(const char* spec, void (*enter)(void)) {
  if (!spec || !*spec) return uepoll::capi::to_c(-EINVAL);
  if (g_started.exchange(true, std::memory_order_relaxed)) return uepoll::capi::to_c(-EBUSY);
  static Server server;  // lives as long as the thread
  server.enter = enter;
  g_server = &server;
  int r = 0;
  int fd = -1;
  if (std::strncmp(spec, "fd:", 3) == 0) {
    r = inherited(spec, &fd);
    if (r == 0) fd = uepoll::core::park_high(fd);  // moved high, close-on-exec
  } else {
    r = listen_at(spec);
    fd = r;
  }
  int bell = -1;
  if (r >= 0) {
    bell = uepoll::core::park_high(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    if (bell < 0) {
      r = -errno;
      uepoll::core::close_own(fd);
    }
  }
  if (r < 0) {
    g_started.store(false, std::memory_order_relaxed);
    return uepoll::capi::to_c(r);
  }
  server.bell.open(bell, &ring, nullptr);
  if (std::strncmp(spec, "fd:", 3) == 0)
    attach(server.clients[0], fd);
  else
    server.listen.open(fd, &ring, nullptr);
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);  // the program's signals are not this thread's
  pthread_t th;
  const int rc = pthread_create(&th, nullptr, &serve, &server);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (rc != 0) return uepoll::capi::to_c(-rc);
  pthread_detach(th);
  return 0;
}

int uep_vclock_control_start(const char* spec) { return uep__vclock_control_start(spec, nullptr); }

}  // extern "C"
