// random_diff_engine.cpp - executor, comparator and shrinker for the
// Linux-vs-uepoll differential random test (see random_diff_engine.h; the
// generator is in random_diff_generate.cpp, the printer in
// random_diff_format.cpp).  Everything here is single-threaded and
// deterministic for a given seed; all objects are created non-blocking and
// every wait uses timeout 0, so no call can block.
#include "random_diff_engine.h"

#include <climits>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <unordered_map>

#include "rel_common.h"

namespace uepoll_test::rdiff {

namespace {

constexpr int kSkip = INT_MIN;

struct Runner {
  const Api& api;
  rel::FreeMap fm;
  int never_open = 0;
  std::unordered_map<int, int> fd_of;  // object id -> raw descriptor
  std::set<int> open;                  // raw descriptors this run holds

  explicit Runner(const Api& a) : api(a) {}

  int fd(int ref) const {
    if (ref == kRefMinusOne) return -1;
    if (ref == kRefNeverOpen) return never_open;
    auto it = fd_of.find(ref);
    return it == fd_of.end() ? kSkip : it->second;
  }
  std::string norm(long raw) const {
    return "fd+" + std::to_string(fm.rank(raw));
  }
  static std::string err(long ret, int e) {
    return std::to_string(ret) + " " + rel::errno_name(e);
  }
  void created(int id, int raw) {
    fd_of[id] = raw;
    open.insert(raw);
  }

  std::string run(const Op& op) {
    errno = 0;
    switch (op.kind) {
      case Kind::EpCreate1:
      case Kind::EpCreate:
      case Kind::Eventfd:
      case Kind::Timerfd: {
        int r;
        if (op.kind == Kind::EpCreate1)
          r = api.epoll_create1(op.flags);
        else if (op.kind == Kind::EpCreate)
          r = api.epoll_create(op.n);
        else if (op.kind == Kind::Eventfd)
          r = api.eventfd(static_cast<unsigned>(op.val), op.flags);
        else
          r = api.timerfd_create(op.flags, TFD_NONBLOCK);
        if (r < 0) return err(r, errno);
        created(2 * op.id, r);
        return norm(r);
      }
      case Kind::Pipe2:
      case Kind::Socketpair: {
        int sv[2] = {-7, -7};
        int r = op.kind == Kind::Pipe2 ? api.pipe2(op.null_ptr ? nullptr : sv, op.flags)
                                       : api.socketpair(AF_UNIX, op.flags, 0, sv);
        if (r < 0) return err(r, errno);
        created(2 * op.id, sv[0]);
        created(2 * op.id + 1, sv[1]);
        return std::to_string(r) + " [" + norm(sv[0]) + "," + norm(sv[1]) + "]";
      }
      case Kind::TimerSet: {
        int f = fd(op.a);
        if (f == kSkip) return "skip";
        struct itimerspec its {};
        if (op.flags == 1) its.it_value.tv_sec = 1000;
        if (op.flags == 2) its.it_value.tv_nsec = 2000000000L;
        int r = api.timerfd_settime(f, 0, &its, nullptr);
        return r < 0 ? err(r, errno) : std::to_string(r);
      }
      case Kind::TimerGet: {
        int f = fd(op.a);
        if (f == kSkip) return "skip";
        struct itimerspec its {};
        int r = api.timerfd_gettime(f, &its);
        if (r < 0) return err(r, errno);
        bool armed = its.it_value.tv_sec != 0 || its.it_value.tv_nsec != 0;
        return std::to_string(r) + (armed ? " armed" : " disarmed");
      }
      case Kind::Ctl: {
        int e = fd(op.a), t = fd(op.b);
        if (e == kSkip || t == kSkip) return "skip";
        struct epoll_event ev {};
        ev.events = op.mask;
        ev.data.u64 = op.val;
        int r = api.epoll_ctl(e, op.flags, t, op.null_ptr ? nullptr : &ev);
        return r < 0 ? err(r, errno) : std::to_string(r);
      }
      case Kind::Wait: {
        int e = fd(op.a);
        if (e == kSkip) return "skip";
        struct epoll_event evs[8];
        std::memset(evs, 0xa5, sizeof evs);
        struct epoll_event* p = op.null_ptr ? nullptr : evs;
        int r;
        if (op.wait_variant == 0) {
          r = api.epoll_wait(e, p, op.n, 0);
        } else if (op.wait_variant == 1) {
          r = api.epoll_pwait(e, p, op.n, 0, nullptr);
        } else {
          struct timespec ts {};
          r = api.epoll_pwait2(e, p, op.n, &ts, nullptr);
        }
        if (r < 0) return err(r, errno);
        std::string s = std::to_string(r);
        for (int i = 0; i < r && i < 8 && p; ++i) {
          char buf[48];
          std::snprintf(buf, sizeof buf, ":%llx", static_cast<unsigned long long>(evs[i].data.u64));
          s += " [" + rel::mask_name(evs[i].events) + buf + "]";
        }
        return s;
      }
      case Kind::Read: {
        int f = fd(op.a);
        if (f == kSkip) return "skip";
        unsigned char buf[16];
        std::memset(buf, 0, sizeof buf);
        ssize_t r = api.read(f, buf, static_cast<size_t>(op.n));
        if (r < 0) return err(r, errno);
        std::string s = std::to_string(r) + " ";
        for (ssize_t i = 0; i < r && i < 16; ++i) {
          char h[4];
          std::snprintf(h, sizeof h, "%02x", buf[i]);
          s += h;
        }
        return s;
      }
      case Kind::Write: {
        int f = fd(op.a);
        if (f == kSkip) return "skip";
        unsigned char buf[16];
        if (op.n <= 8) {
          std::memcpy(buf, &op.val, 8);
        } else {
          for (int i = 0; i < 16; ++i) buf[i] = static_cast<unsigned char>(op.val >> ((i % 8) * 8));
        }
        ssize_t r = api.write(f, buf, static_cast<size_t>(op.n));
        return r < 0 ? err(r, errno) : std::to_string(r);
      }
      case Kind::Close: {
        int f = fd(op.a);
        if (f == kSkip) return "skip";
        int r = api.close(f);
        if (r == 0) open.erase(f);
        return r < 0 ? err(r, errno) : std::to_string(r);
      }
      case Kind::Dup: {
        int f = fd(op.a);
        if (f == kSkip) return "skip";
        int r = api.dup(f);
        if (r < 0) return err(r, errno);
        created(2 * op.id, r);
        return norm(r);
      }
      case Kind::Shutdown: {
        int f = fd(op.a);
        if (f == kSkip) return "skip";
        int r = api.shutdown(f, op.flags);
        return r < 0 ? err(r, errno) : std::to_string(r);
      }
      case Kind::Poll: {
        struct pollfd pf[3];
        for (int j = 0; j < op.n; ++j) {
          int f = fd(op.prefs[j]);
          if (f == kSkip) return "skip";
          pf[j].fd = f;
          pf[j].events = op.pev[j];
          pf[j].revents = 0x5a5a;
        }
        int r = api.poll(op.null_ptr ? nullptr : pf, static_cast<nfds_t>(op.n), 0);
        if (r < 0) return err(r, errno);
        std::string s = std::to_string(r);
        for (int j = 0; j < op.n && !op.null_ptr; ++j) {
          char h[16];
          std::snprintf(h, sizeof h, " %x", static_cast<unsigned short>(pf[j].revents));
          s += h;
        }
        return s;
      }
    }
    return "?";
  }
};

}  // namespace

std::vector<std::string> execute(const Api& api, const Program& prog, bool* ok_env) {
  static bool sigpipe_ignored = [] {
    std::signal(SIGPIPE, SIG_IGN);
    return true;
  }();
  (void)sigpipe_ignored;
  Runner run(api);
  bool uep = rel::is_uepoll_api(api);
  auto is_open = uep ? rel::uepoll_is_open : rel::linux_is_open;
  run.fm = rel::probe_free(is_open, uep ? UEP_FD_BASE : 0, 512);
  run.never_open = run.fm.never_open(is_open);
  // Enough free numbers for the largest program (<= ~130 descriptors).
  if (ok_env) *ok_env = run.fm.occupied.size() < 300;
  std::vector<std::string> out;
  out.reserve(prog.size());
  for (const Op& op : prog) out.push_back(run.run(op));
  for (int f : run.open) api.close(f);
  return out;
}

int first_divergence(const Program& prog, std::vector<std::string>* linux_out,
                     std::vector<std::string>* uep_out) {
  auto l = execute(linux_api(), prog);
  auto u = execute(uepoll_api(), prog);
  int d = -1;
  for (size_t i = 0; i < l.size(); ++i) {
    if (l[i] != u[i]) {
      d = static_cast<int>(i);
      break;
    }
  }
  if (linux_out) *linux_out = std::move(l);
  if (uep_out) *uep_out = std::move(u);
  return d;
}

Program shrink(const Program& prog, int max_rounds) {
  Program cur = prog;
  int d = first_divergence(cur);
  if (d < 0) return cur;
  cur.resize(static_cast<size_t>(d) + 1);
  size_t chunk = cur.size() / 2;
  if (chunk == 0) chunk = 1;
  int rounds = 0;
  while (rounds++ < max_rounds) {
    bool removed = false;
    for (size_t start = 0; start < cur.size();) {
      Program cand;
      for (size_t i = 0; i < cur.size(); ++i)
        if (i < start || i >= start + chunk) cand.push_back(cur[i]);
      int cd = cand.empty() ? -1 : first_divergence(cand);
      if (cd >= 0) {
        cand.resize(static_cast<size_t>(cd) + 1);
        cur = std::move(cand);
        removed = true;
      } else {
        start += chunk;
      }
    }
    if (!removed) {
      if (chunk == 1) break;
      chunk /= 2;
    }
  }
  return cur;
}

}  // namespace uepoll_test::rdiff
