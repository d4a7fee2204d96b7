// harness_trace.h - conf::T, one run of a scenario against one
// implementation (harness.h): every call made through it is logged as one
// trace line, with descriptors named in creation order.  Takes no lock and
// is not thread-safe: a scenario's other threads call t.api directly,
// untraced.
#pragma once

#include "harness_base.h"

namespace conf {

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

}  // namespace conf
