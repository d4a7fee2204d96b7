// harness.h - the differential conformance harness (owned by the conformance
// suite).  A scenario is written once as `void scenario(conf::T& t)` and run
// twice: against real Linux descriptors (uepoll_test::linux_api()) and against
// uepoll (uepoll_test::uepoll_api()).  Every call made through `T` is recorded
// as one line of a trace:
//
//     ctl(fd0,ADD,fd1,IN|ET,7) = 0
//     wait(fd0,3,0) = 2 [IN:7 OUT|HUP:9]
//     read(fd2,8) = -1 EAGAIN
//
// Descriptors are replaced by names ("fd0", "fd1", ...) given in creation
// order, so the two traces are comparable although uepoll's descriptors start
// at UEP_FD_BASE.  `differential()` runs a scenario on both and EXPECT_EQs
// the traces, printing both (with the first difference marked) on mismatch.
// Absolute expectations on the Linux trace (so a scenario can fail even when
// both implementations agree) are written by the test with `has()`/`line()`.
//
// Environment:
//   UEPOLL_CONF_LINUX_ONLY=1  run only the Linux side (the oracle itself),
//                             e.g. before uepoll's core exists.
//   UEPOLL_CONF_VERBOSE=1     print every Linux trace.
#pragma once

// The sanitizers' interceptors read syscall arguments before the kernel
// does: a kernel-address pointer, or a pollfd array shorter than nfds, makes
// the interceptor crash or report instead of the kernel returning EFAULT or
// EINVAL, and ASan turns a deliberate SIGSEGV into exit(1).  Scenarios built
// on that run in the normal build only (UEPOLL_SKIP_UNDER_SANITIZERS).
// TSan also reports a close() racing a blocked call on the same kernel
// descriptor as a data race: those run without TSan (UEPOLL_SKIP_UNDER_TSAN);
// the uepoll side of such races is covered under TSan by
// tests/reliability/torture_test.cpp.
#if defined(__SANITIZE_THREAD__)
#define UEPOLL_SKIP_UNDER_TSAN(why) GTEST_SKIP() << "not under TSan: " << why
#else
#define UEPOLL_SKIP_UNDER_TSAN(why) (void)0
#endif
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define UEPOLL_SKIP_UNDER_SANITIZERS(why) GTEST_SKIP() << "not under a sanitizer: " << why
#else
#define UEPOLL_SKIP_UNDER_SANITIZERS(why) (void)0
#endif

#include "support/api.h"
#include "support/forked_child.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace conf {

using uepoll_test::Api;

// Linux: include/uapi/linux/eventpoll.h EPOLLNVAL (glibc does not define it).
inline constexpr uint32_t kEpollNval = 0x020;
// Linux: fs/eventpoll.c EP_MAX_EVENTS = INT_MAX / sizeof(struct epoll_event).
inline constexpr int kEpMaxEvents = static_cast<int>(INT_MAX / sizeof(struct epoll_event));
// Every bit a target's ->poll() can report; used to observe the full state.
inline constexpr uint32_t kAllPollBits = EPOLLIN | EPOLLPRI | EPOLLOUT | EPOLLRDNORM | EPOLLRDBAND |
                                         EPOLLWRNORM | EPOLLWRBAND | EPOLLMSG | EPOLLRDHUP;
// A kernel-half address: fails access_ok() on x86-64 (and is never mapped).
inline void* kernel_address() { return reinterpret_cast<void*>(0xffff888000000000ULL); }

inline std::string errno_name(int e) {
  const char* n = strerrorname_np(e);
  return n ? n : "E" + std::to_string(e);
}

inline std::string mask_str(uint32_t m) {
  static const std::pair<uint32_t, const char*> bits[] = {
      {EPOLLIN, "IN"},         {EPOLLPRI, "PRI"},       {EPOLLOUT, "OUT"},         {EPOLLERR, "ERR"},
      {EPOLLHUP, "HUP"},       {kEpollNval, "NVAL"},     {EPOLLRDNORM, "RDNORM"},   {EPOLLRDBAND, "RDBAND"},
      {EPOLLWRNORM, "WRNORM"}, {EPOLLWRBAND, "WRBAND"}, {EPOLLMSG, "MSG"},         {EPOLLRDHUP, "RDHUP"},
      {EPOLLEXCLUSIVE, "EXCL"}, {EPOLLWAKEUP, "WAKEUP"}, {EPOLLONESHOT, "ONESHOT"}, {EPOLLET, "ET"}};
  if (m == 0) return "0";
  std::string s;
  for (auto& [b, n] : bits) {
    if (m & b) {
      if (!s.empty()) s += "|";
      s += n;
      m &= ~b;
    }
  }
  if (m) {
    char buf[32];
    snprintf(buf, sizeof buf, "%s0x%x", s.empty() ? "" : "|", m);
    s += buf;
  }
  return s;
}

inline const char* op_str(int op) {
  switch (op) {
    case EPOLL_CTL_ADD: return "ADD";
    case EPOLL_CTL_DEL: return "DEL";
    case EPOLL_CTL_MOD: return "MOD";
    default: return nullptr;
  }
}

inline bool env_flag(const char* name) {
  const char* v = getenv(name);
  return v && *v && strcmp(v, "0") != 0;
}
inline bool linux_only() { return env_flag("UEPOLL_CONF_LINUX_ONLY"); }

inline double now_ms() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

// One run of a scenario against one implementation: records every call.
class T {
 public:
  explicit T(const Api& a) : api(a) {}
  T(const T&) = delete;
  T& operator=(const T&) = delete;
  ~T() {
    for (int fd : open_) api.close(fd);
  }

  const Api& api;
  std::vector<std::string> lines;
  bool is_linux() const { return std::string(api.name) == "linux"; }

  // ---- trace bookkeeping -------------------------------------------------
  void log(const std::string& s) {
    if (quiet_ != 0) return;
    lines.push_back(s);
    if (sink_ >= 0) {  // forked run: stream each line to the parent at once
      std::string l = s + "\n";
      ssize_t unused = ::write(sink_, l.data(), l.size());
      (void)unused;
    }
  }
  // Forked runs only: also send every recorded line to this pipe.
  void set_sink(int fd) { sink_ = fd; }
  // RAII: calls made while a Quiet is alive are not recorded.
  struct Quiet {
    explicit Quiet(T& t) : t_(t) { ++t_.quiet_; }
    ~Quiet() { --t_.quiet_; }
    T& t_;
  };

  std::string name(int fd) const {
    auto it = names_.find(fd);
    if (it != names_.end()) return it->second;
    if (fd < 0) return std::to_string(fd);
    return "?unnamed";  // a number this scenario never created
  }
  // Names a descriptor this scenario just created (or re-names a reused number).
  int adopt(int fd) {
    if (fd < 0) return fd;
    names_[fd] = "fd" + std::to_string(next_++);
    open_.insert(fd);
    return fd;
  }
  // The raw number behind a name is still needed to check reuse: true when
  // `fd` is numerically the same descriptor as `other`.
  static std::string same(int a, int b) { return a == b ? "same number" : "different number"; }

  std::string res(long r) const { return r < 0 ? "-1 " + errno_name(errno) : std::to_string(r); }
  std::string res_fd(int r) const { return r < 0 ? "-1 " + errno_name(errno) : name(r); }

  // ---- epoll -------------------------------------------------------------
  int epoll_create(int size) {
    errno = 0;
    int r = adopt(api.epoll_create(size));
    log("epoll_create(" + std::to_string(size) + ") = " + res_fd(r));
    return r;
  }
  int epoll_create1(int flags = 0) {
    errno = 0;
    int r = adopt(api.epoll_create1(flags));
    log("epoll_create1(" + flag_str(flags) + ") = " + res_fd(r));
    return r;
  }
  std::string op_name(int op) const {
    const char* s = op_str(op);
    return s ? s : "op" + std::to_string(op);
  }
  int ctl(int ep, int op, int fd, uint32_t events, uint64_t data) {
    struct epoll_event ev;
    memset(&ev, 0, sizeof ev);
    ev.events = events;
    ev.data.u64 = data;
    errno = 0;
    int r = api.epoll_ctl(ep, op, fd, &ev);
    int e = errno;
    log("ctl(" + name(ep) + "," + op_name(op) + "," + name(fd) + "," + mask_str(events) + "," +
        std::to_string(data) + ") = " + (errno = e, res(r)));
    errno = e;
    return r;
  }
  int ctl_ptr(int ep, int op, int fd, struct epoll_event* ev, const char* what) {
    errno = 0;
    int r = api.epoll_ctl(ep, op, fd, ev);
    int e = errno;
    log("ctl(" + name(ep) + "," + op_name(op) + "," + name(fd) + "," + what + ") = " + (errno = e, res(r)));
    errno = e;
    return r;
  }
  int del(int ep, int fd) { return ctl_ptr(ep, EPOLL_CTL_DEL, fd, nullptr, "NULL"); }

  static std::string events_str(const struct epoll_event* ev, int n) {
    std::string s = " [";
    for (int i = 0; i < n; ++i) {
      if (i) s += " ";
      s += mask_str(ev[i].events) + ":" + std::to_string(ev[i].data.u64);
    }
    return s + "]";
  }
  // epoll_wait with an internal buffer (at most 256 events are ever ready in
  // these scenarios; maxevents may be larger: access_ok covers the range).
  int wait(int ep, int maxevents, int timeout, const char* label = "wait") {
    static thread_local struct epoll_event buf[256 + 1024];
    errno = 0;
    int r = api.epoll_wait(ep, buf, maxevents, timeout);
    int e = errno;
    std::string s = std::string(label) + "(" + name(ep) + "," + std::to_string(maxevents) + "," +
                    std::to_string(timeout) + ") = " + (errno = e, res(r));
    if (r > 0) s += events_str(buf, r);
    log(s);
    last_.assign(buf, buf + (r > 0 ? r : 0));
    errno = e;
    return r;
  }
  int wait_raw(int ep, struct epoll_event* buf, int maxevents, int timeout, const char* bufdesc) {
    errno = 0;
    int r = api.epoll_wait(ep, buf, maxevents, timeout);
    int e = errno;
    std::string s = "wait(" + name(ep) + "," + bufdesc + "," + std::to_string(maxevents) + "," +
                    std::to_string(timeout) + ") = " + (errno = e, res(r));
    if (r > 0 && buf) s += events_str(buf, r);
    log(s);
    errno = e;
    return r;
  }
  int pwait(int ep, int maxevents, int timeout, const sigset_t* mask) {
    struct epoll_event buf[64];
    errno = 0;
    int r = api.epoll_pwait(ep, buf, maxevents, timeout, mask);
    int e = errno;
    std::string s = "pwait(" + name(ep) + "," + std::to_string(maxevents) + "," + std::to_string(timeout) +
                    (mask ? ",mask" : ",NULL") + ") = " + (errno = e, res(r));
    if (r > 0) s += events_str(buf, r);
    log(s);
    errno = e;
    return r;
  }
  int pwait2(int ep, int maxevents, const struct timespec* ts, const char* tsdesc) {
    struct epoll_event buf[64];
    errno = 0;
    int r = api.epoll_pwait2(ep, buf, maxevents, ts, nullptr);
    int e = errno;
    std::string s = "pwait2(" + name(ep) + "," + std::to_string(maxevents) + "," + tsdesc + ") = " +
                    (errno = e, res(r));
    if (r > 0) s += events_str(buf, r);
    log(s);
    errno = e;
    return r;
  }
  const std::vector<struct epoll_event>& last_events() const { return last_; }

  // ---- objects -----------------------------------------------------------
  int eventfd(unsigned int init, int flags = 0) {
    errno = 0;
    int r = adopt(api.eventfd(init, flags));
    log("eventfd(" + std::to_string(init) + "," + flag_str(flags, "SEMAPHORE") + ") = " + res_fd(r));
    return r;
  }
  // Returns {read end, write end}; {-1,-1} on failure.
  std::pair<int, int> pipe(int flags = -1) {
    int p[2] = {-1, -1};
    errno = 0;
    int r = flags < 0 ? api.pipe(p) : api.pipe2(p, flags);
    int e = errno;
    std::string call = flags < 0 ? "pipe()" : "pipe2(" + flag_str(flags) + ")";
    if (r == 0) {
      adopt(p[0]);
      adopt(p[1]);
      log(call + " = 0 [" + name(p[0]) + "," + name(p[1]) + "]");
      return {p[0], p[1]};
    }
    errno = e;
    log(call + " = " + res(r));
    errno = e;
    return {-1, -1};
  }
  std::pair<int, int> pipe2(int flags) { return pipe(flags); }
  std::pair<int, int> socketpair(int domain, int type, int protocol, const char* desc = nullptr) {
    int sv[2] = {-1, -1};
    errno = 0;
    int r = api.socketpair(domain, type, protocol, sv);
    int e = errno;
    std::string call = "socketpair(" + (desc ? std::string(desc)
                                             : std::to_string(domain) + "," + std::to_string(type) + "," +
                                                   std::to_string(protocol)) +
                       ")";
    if (r == 0) {
      adopt(sv[0]);
      adopt(sv[1]);
      log(call + " = 0 [" + name(sv[0]) + "," + name(sv[1]) + "]");
      return {sv[0], sv[1]};
    }
    errno = e;
    log(call + " = " + res(r));
    errno = e;
    return {-1, -1};
  }
  std::pair<int, int> unix_stream(int flags = 0) {
    return socketpair(AF_UNIX, SOCK_STREAM | flags, 0, flags ? "AF_UNIX,SOCK_STREAM|flags,0" : "AF_UNIX,SOCK_STREAM,0");
  }
  int shutdown(int fd, int how) {
    errno = 0;
    int r = api.shutdown(fd, how);
    int e = errno;
    static const char* hows[] = {"RD", "WR", "RDWR"};
    std::string h = how >= 0 && how <= 2 ? hows[how] : std::to_string(how);
    log("shutdown(" + name(fd) + "," + h + ") = " + (errno = e, res(r)));
    errno = e;
    return r;
  }
  int timerfd_create(int clock, int flags) {
    errno = 0;
    int r = adopt(api.timerfd_create(clock, flags));
    log("timerfd_create(" + std::to_string(clock) + "," + flag_str(flags) + ") = " + res_fd(r));
    return r;
  }
  // Relative or absolute (flags) setting in nanoseconds.
  int timerfd_settime(int fd, int flags, long long value_ns, long long interval_ns,
                      struct itimerspec* old = nullptr, const char* desc = nullptr) {
    struct itimerspec its;
    its.it_value.tv_sec = value_ns / 1000000000LL;
    its.it_value.tv_nsec = value_ns % 1000000000LL;
    its.it_interval.tv_sec = interval_ns / 1000000000LL;
    its.it_interval.tv_nsec = interval_ns % 1000000000LL;
    return timerfd_settime_raw(fd, flags, &its, old, desc);
  }
  int timerfd_settime_raw(int fd, int flags, const struct itimerspec* its, struct itimerspec* old,
                          const char* desc) {
    errno = 0;
    int r = api.timerfd_settime(fd, flags, its, old);
    int e = errno;
    std::string d = desc ? desc : "value,interval";
    log("timerfd_settime(" + name(fd) + "," + std::to_string(flags) + "," + d + ") = " + (errno = e, res(r)));
    errno = e;
    return r;
  }
  int timerfd_gettime(int fd, struct itimerspec* cur) {
    errno = 0;
    int r = api.timerfd_gettime(fd, cur);
    int e = errno;
    log("timerfd_gettime(" + name(fd) + ") = " + (errno = e, res(r)));
    errno = e;
    return r;
  }

  // ---- descriptors -------------------------------------------------------
  // Reads up to n bytes; logs the count (and an 8-byte value if n == 8 and
  // it read 8: eventfd/timerfd counters).
  ssize_t read(int fd, size_t n, void* out = nullptr) {
    std::vector<unsigned char> buf(n ? n : 1);
    errno = 0;
    ssize_t r = api.read(fd, buf.data(), n);
    int e = errno;
    std::string s = "read(" + name(fd) + "," + std::to_string(n) + ") = " + (errno = e, res(r));
    if (r == 8 && n >= 8) {
      uint64_t v;
      memcpy(&v, buf.data(), 8);
      s += " value=" + std::to_string(v);
    }
    log(s);
    if (out && r > 0) memcpy(out, buf.data(), static_cast<size_t>(r));
    errno = e;
    return r;
  }
  // Reads an 8-byte counter; returns the value, or -1 (errno set).
  long long read_u64(int fd) {
    uint64_t v = 0;
    ssize_t r = read(fd, 8, &v);
    return r == 8 ? static_cast<long long>(v) : -1;
  }
  ssize_t write(int fd, const void* p, size_t n, const char* desc = nullptr) {
    errno = 0;
    ssize_t r = api.write(fd, p, n);
    int e = errno;
    log("write(" + name(fd) + "," + (desc ? std::string(desc) + "," : std::string()) + std::to_string(n) +
        ") = " + (errno = e, res(r)));
    errno = e;
    return r;
  }
  ssize_t write_u64(int fd, uint64_t v) {
    errno = 0;
    ssize_t r = api.write(fd, &v, 8);
    int e = errno;
    char hex[32];
    snprintf(hex, sizeof hex, "%#llx", static_cast<unsigned long long>(v));
    log("write_u64(" + name(fd) + "," + hex + ") = " + (errno = e, res(r)));
    errno = e;
    return r;
  }
  ssize_t write_bytes(int fd, size_t n, char fill = 'x') {
    std::vector<char> buf(n ? n : 1, fill);
    return write(fd, buf.data(), n);
  }
  int close(int fd) {
    errno = 0;
    int r = api.close(fd);
    int e = errno;
    if (r == 0) open_.erase(fd);
    log("close(" + name(fd) + ") = " + (errno = e, res(r)));
    errno = e;
    return r;
  }
  int dup(int fd) {
    errno = 0;
    int r = adopt(api.dup(fd));
    log("dup(" + name(fd) + ") = " + res_fd(r));
    return r;
  }
  // poll() over {fd, events}; logs each revents.
  int poll(const std::vector<std::pair<int, short>>& fds, int timeout) {
    std::vector<struct pollfd> p;
    for (auto& [fd, ev] : fds) p.push_back({fd, ev, static_cast<short>(0x5a5a)});
    errno = 0;
    int r = api.poll(p.data(), p.size(), timeout);
    int e = errno;
    std::string s = "poll(";
    for (size_t i = 0; i < p.size(); ++i) {
      if (i) s += ' ';  // not `" " + name()`: GCC 12 -O3 -Wrestrict false positive (PR 105329)
      s += name(p[i].fd);
    }
    s += "," + std::to_string(timeout) + ") = " + (errno = e, res(r));
    if (r >= 0) {
      s += " [";
      for (size_t i = 0; i < p.size(); ++i) {
        if (i) s += ' ';  // GCC 12 -O3 -Wrestrict false positive otherwise (PR 105329)
        s += mask_str(static_cast<uint16_t>(p[i].revents));
      }
      s += "]";
    }
    last_revents_.clear();
    for (auto& x : p) last_revents_.push_back(x.revents);
    log(s);
    errno = e;
    return r;
  }
  const std::vector<short>& last_revents() const { return last_revents_; }

  // A kernel descriptor for a regular file (no ->poll): the EPERM target.
  // Closed through the Api, which forwards kernel descriptors.
  int regular_file() {
    int fd = ::open("/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd < 0) {
      FILE* f = tmpfile();
      fd = f ? ::dup(fileno(f)) : -1;
      if (f) fclose(f);
    }
    adopt(fd);
    log("open(regular file) = " + res_fd(fd));
    return fd;
  }
  // Forget a descriptor (closed by other means, e.g. the kernel side).
  void forget(int fd) { open_.erase(fd); }

  // Flag names for logging; bit 0 is EFD_SEMAPHORE for eventfd only.
  static std::string flag_str(int flags, const char* bit0 = nullptr) {
    if (flags == 0) return "0";
    std::string s;
    auto add = [&](int bit, const char* n) {
      if (flags & bit) {
        s += (s.empty() ? "" : "|");
        s += n;
        flags &= ~bit;
      }
    };
    add(O_CLOEXEC, "CLOEXEC");
    add(O_NONBLOCK, "NONBLOCK");
    if (bit0) add(1, bit0);
    if (flags) {
      char hex[16];
      snprintf(hex, sizeof hex, "%#x", static_cast<unsigned>(flags));
      s += (s.empty() ? "" : "|") + std::string(hex);
    }
    return s;
  }

 private:
  int quiet_ = 0;
  int sink_ = -1;
  int next_ = 0;
  std::map<int, std::string> names_;
  std::set<int> open_;
  std::vector<struct epoll_event> last_;
  std::vector<short> last_revents_;
};

// ---- sequencing threads ----------------------------------------------------
// Scheduler state of one of our threads ('R', 'S', 'D', ...), from
// /proc/self/task/<tid>/stat; '?' if unreadable.
inline char task_state(pid_t tid) {
  char path[64];
  snprintf(path, sizeof path, "/proc/self/task/%d/stat", static_cast<int>(tid));
  FILE* f = fopen(path, "r");
  if (!f) return '?';
  char buf[512];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  const char* p = strrchr(buf, ')');
  return p && p[1] == ' ' ? p[2] : '?';
}
// Returns once thread `tid` (0 until the thread publishes it) has been seen
// sleeping in four samples 3 ms apart, or after 3 s.  Used before generating
// the event a blocked waiter is meant to receive.
inline void wait_until_sleeping(const std::atomic<pid_t>& tid) {
  double end = now_ms() + 3000;
  int streak = 0;
  while (now_ms() < end && streak < 4) {
    pid_t t = tid.load();
    streak = t != 0 && task_state(t) == 'S' ? streak + 1 : 0;
    usleep(3000);
  }
}

// Runs `fn` on a helper thread as soon as the constructing thread is asleep,
// i.e. blocked in the call it makes right after constructing this.  Joined
// by the destructor (or join()).  Makes "X blocks until Y" deterministic.
class WhenBlocked {
 public:
  explicit WhenBlocked(std::function<void()> fn)
      : tid_(static_cast<pid_t>(gettid())), th_([this, fn = std::move(fn)] {
          wait_until_sleeping(tid_);
          fn();
        }) {}
  ~WhenBlocked() { join(); }
  void join() {
    if (th_.joinable()) th_.join();
  }

 private:
  std::atomic<pid_t> tid_;
  std::thread th_;
};

using Scenario = std::function<void(T&)>;

struct Traces {
  std::vector<std::string> linux_trace;
  std::vector<std::string> uepoll_trace;
};

inline std::string format_traces(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  std::ostringstream o;
  size_t n = std::max(a.size(), b.size());
  size_t first = n;
  for (size_t i = 0; i < n; ++i) {
    if (i >= a.size() || i >= b.size() || a[i] != b[i]) {
      first = i;
      break;
    }
  }
  o << "  #  | linux / uepoll\n";
  for (size_t i = 0; i < n; ++i) {
    std::string la = i < a.size() ? a[i] : "<none>";
    std::string lb = i < b.size() ? b[i] : "<none>";
    char idx[32];
    snprintf(idx, sizeof idx, "%4zu", i);
    if (la == lb) {
      o << idx << " |   " << la << "\n";
    } else {
      o << idx << (i == first ? " |>L " : " | L ") << la << "\n";
      o << "     " << (i == first ? " |>U " : " | U ") << lb << "\n";
    }
  }
  return o.str();
}

inline std::vector<std::string> run_one(const Api& api, const Scenario& s) {
  T t(api);
  s(t);
  return std::move(t.lines);
}

// Runs `s` in a forked child, streaming the trace back line by line, so a
// crash (e.g. SIGSEGV on a bad pointer that Linux answers with EFAULT) ends
// the trace with a "<killed by SIG...>" line instead of ending the test
// binary.  Used for scenarios that pass invalid pointers.  The child has no
// threads but the one that forked: nothing in these scenarios needs others.
inline std::vector<std::string> run_forked(const Api& api, const Scenario& s) {
  uepoll_support::ChildResult c = uepoll_support::run_in_child(
      [&](int out) {
        // uepoll sleeps on kernel descriptors of its own (the thread's
        // waiter), created at a thread's first sleep; in a fresh child that
        // would take the number of a kernel descriptor the scenario has just
        // closed (docs/linux-deviations.md, descriptor numbers).  Create it
        // before the scenario starts.
        if (&api != &uepoll_test::linux_api()) {
          int ep = uep_epoll_create1(0);
          epoll_event ev;
          uep_epoll_wait(ep, &ev, 1, 1);
          uep_close(ep);
        }
        T t(api);
        t.set_sink(out);
        s(t);
      },
      20000);
  if (!c.started) return {"<pipe or fork failed: " + std::string(strerror(c.error)) + ">"};
  std::string data = std::move(c.output);
  if (c.timed_out) {
    data += "<hung: killed after 20 s>\n";
  } else if (int sig = c.signal()) {
    const char* ab = sigabbrev_np(sig);
    data += "<killed by " + (ab ? "SIG" + std::string(ab) : "signal " + std::to_string(sig)) + ">\n";
  }
  std::vector<std::string> lines;
  std::istringstream in(data);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

// variants.h: the same scenario against the mixed topologies (kernel
// objects in uepoll instances, waits through uep_epoll_kernel_fd).
inline void run_variants(const Scenario& s, bool forked, const std::vector<std::string>& linux_trace);

// Runs `s` on Linux then on uepoll (and the variants of variants.h) and
// expects identical traces.  With `forked`, each side runs in a child
// process (see run_forked).
inline Traces differential(const Scenario& s, bool forked = false) {
  Traces r;
  r.linux_trace = forked ? run_forked(uepoll_test::linux_api(), s) : run_one(uepoll_test::linux_api(), s);
  if (env_flag("UEPOLL_CONF_VERBOSE")) {
    std::string all;
    for (auto& l : r.linux_trace) all += "    " + l + "\n";
    printf("linux trace:\n%s", all.c_str());
  }
  if (linux_only()) return r;
  r.uepoll_trace = forked ? run_forked(uepoll_test::uepoll_api(), s) : run_one(uepoll_test::uepoll_api(), s);
  EXPECT_TRUE(r.linux_trace == r.uepoll_trace)
      << "traces differ (L = Linux, U = uepoll):\n"
      << format_traces(r.linux_trace, r.uepoll_trace);
  run_variants(s, forked, r.linux_trace);
  return r;
}

// Runs `s` on both without comparing: for the intentional differences listed
// in docs/linux-deviations.md, where the test asserts each side separately.
inline Traces both_sides(const Scenario& s) {
  Traces r;
  r.linux_trace = run_one(uepoll_test::linux_api(), s);
  if (!linux_only()) r.uepoll_trace = run_one(uepoll_test::uepoll_api(), s);
  return r;
}

// ---- absolute checks on a trace ------------------------------------------
inline bool has(const std::vector<std::string>& tr, const std::string& needle) {
  for (auto& l : tr)
    if (l.find(needle) != std::string::npos) return true;
  return false;
}
inline std::string dump(const std::vector<std::string>& tr) {
  std::string s;
  for (auto& l : tr) s += "    " + l + "\n";
  return s;
}
// EXPECT that some line of the Linux trace contains `needle`.
#define EXPECT_LINUX_HAS(traces, needle)                                                           \
  EXPECT_TRUE(::conf::has((traces).linux_trace, (needle)))                                         \
      << "Linux trace lacks \"" << (needle) << "\":\n"                                            \
      << ::conf::dump((traces).linux_trace)

// Index of the first line at or after `from` equal to `text`, or -1.
inline long find_line(const std::vector<std::string>& tr, const std::string& text, size_t from = 0) {
  for (size_t i = from; i < tr.size(); ++i)
    if (tr[i] == text) return static_cast<long>(i);
  return -1;
}
// Empty when `want` occurs in `tr` as a subsequence of whole lines (in
// order, gaps allowed); otherwise says which line is missing.
inline std::string subsequence(const std::vector<std::string>& tr, const std::vector<std::string>& want) {
  size_t from = 0;
  for (size_t k = 0; k < want.size(); ++k) {
    long i = find_line(tr, want[k], from);
    if (i < 0) return "expected line #" + std::to_string(k) + " not found (in order): \"" + want[k] + "\"";
    from = static_cast<size_t>(i) + 1;
  }
  return "";
}
// EXPECT that these exact lines appear in the Linux trace, in this order.
#define EXPECT_LINUX_SEQ(traces, ...)                                                               \
  do {                                                                                             \
    std::string why_ = ::conf::subsequence((traces).linux_trace, std::vector<std::string>__VA_ARGS__); \
    EXPECT_TRUE(why_.empty()) << why_ << "\nLinux trace:\n" << ::conf::dump((traces).linux_trace); \
  } while (0)

}  // namespace conf

#include "variants.h"  // IWYU pragma: export
