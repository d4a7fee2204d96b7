// random_diff_engine.cpp - generator, executor, comparator and shrinker for
// the Linux-vs-uepoll differential random test (see random_diff_engine.h).
// Everything here is single-threaded and deterministic for a given seed; all
// objects are created non-blocking and every wait uses timeout 0, so no call
// can block.
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

using rel::Rng;

enum class OT : uint8_t { Ep, Efd, PipeR, PipeW, Sock, Timer };

struct GenState {
  std::vector<std::pair<int, OT>> objs;  // every object ever created (may be closed)
  std::vector<int> eps;                  // epoll objects
  std::set<int> closed;                  // objects the program closed (as far as it knows)
};

int pick_obj(Rng& r, const GenState& g) {
  if (g.objs.empty() || r.chance(3)) return r.chance(50) ? kRefMinusOne : kRefNeverOpen;
  // Mostly objects believed open; sometimes closed ones (EBADF, reuse).
  for (int tries = 0; tries < 4; ++tries) {
    int id = g.objs[r.below(static_cast<uint32_t>(g.objs.size()))].first;
    if (!g.closed.count(id) || r.chance(15)) return id;
  }
  return g.objs[r.below(static_cast<uint32_t>(g.objs.size()))].first;
}

int pick_typed(Rng& r, const GenState& g, OT t, int pct) {
  if (r.chance(pct)) {
    std::vector<int> c;
    for (auto& [id, ot] : g.objs)
      if (ot == t) c.push_back(id);
    if (!c.empty()) return c[r.below(static_cast<uint32_t>(c.size()))];
  }
  return pick_obj(r, g);
}

int pick_ep(Rng& r, const GenState& g) {
  if (!g.eps.empty() && !r.chance(6)) {
    for (int tries = 0; tries < 4; ++tries) {
      int id = g.eps[r.below(static_cast<uint32_t>(g.eps.size()))];
      if (!g.closed.count(id) || r.chance(10)) return id;
    }
    return g.eps[r.below(static_cast<uint32_t>(g.eps.size()))];
  }
  return pick_obj(r, g);
}

OT type_of(const GenState& g, int ref) {
  for (auto& [id, ot] : g.objs)
    if (id == ref) return ot;
  return OT::Efd;
}

uint32_t random_mask(Rng& r) {
  uint32_t m = 0;
  if (r.chance(70)) m |= EPOLLIN;
  if (r.chance(50)) m |= EPOLLOUT;
  if (r.chance(8)) m |= EPOLLPRI;
  if (r.chance(15)) m |= EPOLLRDHUP;
  if (r.chance(35)) m |= EPOLLET;
  if (r.chance(15)) m |= EPOLLONESHOT;
  if (r.chance(7)) m |= EPOLLEXCLUSIVE;
  if (r.chance(5)) m |= EPOLLERR;
  if (r.chance(5)) m |= EPOLLHUP;
  if (r.chance(5)) m |= EPOLLRDNORM;
  if (r.chance(5)) m |= EPOLLWRNORM;
  if (r.chance(5)) m |= 1u << (11 + r.below(10));  // unknown bits 0x800..0x100000
  if (r.chance(2)) m |= 1u << 24;
  return m;
}

short random_poll_events(Rng& r) {
  short e = 0;
  if (r.chance(70)) e |= POLLIN;
  if (r.chance(50)) e |= POLLOUT;
  if (r.chance(10)) e |= POLLPRI;
  if (r.chance(15)) e |= POLLRDHUP;
  if (r.chance(10)) e |= POLLRDNORM;
  if (r.chance(10)) e |= POLLWRNORM;
  if (r.chance(5)) e |= POLLRDBAND;
  return e;
}

}  // namespace

Program generate(uint64_t seed, int len) {
  Rng r(seed * 0x2545F4914F6CDD1DULL + 1);
  GenState g;
  Program p;
  p.reserve(len);
  struct W {
    Kind k;
    int w;
  };
  static const W weights[] = {
      {Kind::EpCreate1, 6}, {Kind::EpCreate, 1}, {Kind::Eventfd, 5},  {Kind::Pipe2, 4},
      {Kind::Socketpair, 4}, {Kind::Timerfd, 1}, {Kind::TimerSet, 1}, {Kind::TimerGet, 1},
      {Kind::Ctl, 28},      {Kind::Wait, 20},    {Kind::Read, 8},     {Kind::Write, 12},
      {Kind::Close, 5},     {Kind::Dup, 3},      {Kind::Shutdown, 2}, {Kind::Poll, 5},
  };
  int total = 0;
  for (auto& w : weights) total += w.w;
  for (int i = 0; i < len; ++i) {
    Op op;
    op.id = i;
    Kind k = Kind::Ctl;
    static const Kind prelude[] = {Kind::EpCreate1, Kind::Eventfd, Kind::EpCreate1, Kind::Pipe2,
                                   Kind::Socketpair, Kind::EpCreate1};
    if (i < 6 && r.chance(85)) {
      k = prelude[r.below(6)];
    } else if (g.objs.size() < 4 && r.chance(60)) {
      static const Kind creators[] = {Kind::EpCreate1, Kind::EpCreate1, Kind::Eventfd, Kind::Pipe2,
                                      Kind::Socketpair};
      k = creators[r.below(5)];
    } else {
      int x = static_cast<int>(r.below(static_cast<uint32_t>(total)));
      for (auto& w : weights) {
        if (x < w.w) {
          k = w.k;
          break;
        }
        x -= w.w;
      }
      bool creates = k == Kind::EpCreate1 || k == Kind::EpCreate || k == Kind::Eventfd ||
                     k == Kind::Pipe2 || k == Kind::Socketpair || k == Kind::Timerfd ||
                     k == Kind::Dup;
      if (creates && g.objs.size() - g.closed.size() > 30) k = Kind::Ctl;
      if (creates && g.objs.size() > 70) k = Kind::Ctl;
    }
    op.kind = k;
    switch (k) {
      case Kind::EpCreate1:
        op.flags = r.chance(3) ? 1 : (r.chance(30) ? EPOLL_CLOEXEC : 0);
        g.objs.push_back({2 * i, OT::Ep});
        g.eps.push_back(2 * i);
        break;
      case Kind::EpCreate:
        op.n = r.chance(10) ? -static_cast<int>(r.below(2)) : 1 + static_cast<int>(r.below(10));
        g.objs.push_back({2 * i, OT::Ep});
        g.eps.push_back(2 * i);
        break;
      case Kind::Eventfd:
        op.val = r.below(3);
        op.flags = EFD_NONBLOCK | (r.chance(20) ? EFD_SEMAPHORE : 0) | (r.chance(20) ? EFD_CLOEXEC : 0);
        if (r.chance(3)) op.flags |= 2;  // not an EFD_ flag: EINVAL
        g.objs.push_back({2 * i, OT::Efd});
        break;
      case Kind::Pipe2:
        op.flags = O_NONBLOCK | (r.chance(20) ? O_CLOEXEC : 0);
        if (r.chance(3)) op.flags |= O_RDWR;
        op.null_ptr = r.chance(1);
        g.objs.push_back({2 * i, OT::PipeR});
        g.objs.push_back({2 * i + 1, OT::PipeW});
        break;
      case Kind::Socketpair:
        op.flags = SOCK_STREAM | SOCK_NONBLOCK | (r.chance(20) ? SOCK_CLOEXEC : 0);
        g.objs.push_back({2 * i, OT::Sock});
        g.objs.push_back({2 * i + 1, OT::Sock});
        break;
      case Kind::Timerfd:
        op.flags = r.chance(5) ? 12345 : CLOCK_MONOTONIC;
        g.objs.push_back({2 * i, OT::Timer});
        break;
      case Kind::TimerSet:
        op.a = pick_typed(r, g, OT::Timer, 80);
        op.flags = static_cast<int>(r.below(2));  // 0 disarm, 1 arm far in the future
        if (r.chance(5)) op.flags = 2;           // invalid tv_nsec
        break;
      case Kind::TimerGet:
        op.a = pick_typed(r, g, OT::Timer, 80);
        break;
      case Kind::Ctl: {
        op.a = pick_ep(r, g);
        op.b = (!g.eps.empty() && r.chance(25)) ? g.eps[r.below(static_cast<uint32_t>(g.eps.size()))]
                                                : pick_obj(r, g);
        uint32_t x = r.below(100);
        op.flags = x < 60 ? EPOLL_CTL_ADD : x < 80 ? EPOLL_CTL_MOD : x < 96 ? EPOLL_CTL_DEL : 0;
        if (op.flags == 0) {
          static const int bad_ops[] = {0, 4, -1};
          op.flags = bad_ops[r.below(3)];
        }
        op.mask = random_mask(r);
        op.val = (static_cast<uint64_t>(i) << 16) | r.below(0x10000);
        op.null_ptr = r.chance(3);
        break;
      }
      case Kind::Wait:
        op.a = pick_ep(r, g);
        op.n = 1 + static_cast<int>(r.below(8));
        if (r.chance(3)) op.n = r.chance(50) ? 0 : -1;
        op.wait_variant = r.chance(70) ? 0 : (r.chance(50) ? 1 : 2);
        op.null_ptr = r.chance(2);
        break;
      case Kind::Read: {
        op.a = pick_obj(r, g);
        static const int sizes[] = {1, 3, 8, 8, 16};
        op.n = sizes[r.below(5)];
        if (type_of(g, op.a) == OT::Efd && r.chance(80)) op.n = 8;
        break;
      }
      case Kind::Write: {
        op.a = pick_typed(r, g, OT::PipeW, 20);
        if (type_of(g, op.a) == OT::Efd || r.chance(10)) {
          op.n = r.chance(90) ? 8 : 4;
          static const uint64_t vals[] = {1, 1, 2, 7, 0};
          op.val = vals[r.below(5)];
          if (r.chance(3)) op.val = 0xfffffffffffffffeULL;
          if (r.chance(3)) op.val = ~0ULL;
        } else {
          op.n = 1 + static_cast<int>(r.below(16));
          op.val = r.next();
        }
        // Exploration past a known divergence: UEPOLL_RANDOM_MAX_WRITE=8
        // keeps every write at <= 8 bytes.
        static const long max_write = rel::env_long("UEPOLL_RANDOM_MAX_WRITE", 16);
        if (op.n > max_write) op.n = static_cast<int>(max_write);
        break;
      }
      case Kind::Close:
        op.a = pick_obj(r, g);
        if (op.a >= 0) g.closed.insert(op.a);
        break;
      case Kind::Dup: {
        op.a = pick_obj(r, g);
        OT t = op.a >= 0 ? type_of(g, op.a) : OT::Efd;
        g.objs.push_back({2 * i, t});
        if (t == OT::Ep) g.eps.push_back(2 * i);
        break;
      }
      case Kind::Shutdown:
        op.a = pick_typed(r, g, OT::Sock, 80);
        op.flags = static_cast<int>(r.below(3));
        if (r.chance(5)) op.flags = r.chance(50) ? 3 : -1;
        break;
      case Kind::Poll:
        op.n = 1 + static_cast<int>(r.below(3));
        for (int j = 0; j < op.n; ++j) {
          op.prefs[j] = pick_obj(r, g);
          op.pev[j] = random_poll_events(r);
        }
        op.null_ptr = r.chance(2);
        break;
    }
    p.push_back(op);
  }
  return p;
}

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

namespace {

std::string ref_name(int ref, const std::map<int, const Op*>& by_id) {
  if (ref == kRefMinusOne) return "-1";
  if (ref == kRefNeverOpen) return "NEVER_OPEN_FD";
  auto it = by_id.find(ref / 2);
  std::string idx = std::to_string(ref / 2);
  if (it == by_id.end()) return "obj" + idx;
  switch (it->second->kind) {
    case Kind::EpCreate1:
    case Kind::EpCreate:
      return "ep" + idx;
    case Kind::Eventfd:
      return "efd" + idx;
    case Kind::Pipe2:
      return "p" + idx + "[" + std::to_string(ref % 2) + "]";
    case Kind::Socketpair:
      return "sv" + idx + "[" + std::to_string(ref % 2) + "]";
    case Kind::Timerfd:
      return "tfd" + idx;
    case Kind::Dup:
      return "d" + idx;
    default:
      return "obj" + idx;
  }
}

const char* ctl_op_name(int op) {
  switch (op) {
    case EPOLL_CTL_ADD:
      return "EPOLL_CTL_ADD";
    case EPOLL_CTL_MOD:
      return "EPOLL_CTL_MOD";
    case EPOLL_CTL_DEL:
      return "EPOLL_CTL_DEL";
    default:
      return nullptr;
  }
}

std::string fmt(const Op& op, const std::map<int, const Op*>& by_id) {
  auto N = [&](int ref) { return ref_name(ref, by_id); };
  char b[512];
  std::string idx = std::to_string(op.id);
  switch (op.kind) {
    case Kind::EpCreate1:
      std::snprintf(b, sizeof b, "int ep%s = epoll_create1(%s);", idx.c_str(),
                    op.flags == 0 ? "0" : op.flags == EPOLL_CLOEXEC ? "EPOLL_CLOEXEC" : "1");
      break;
    case Kind::EpCreate:
      std::snprintf(b, sizeof b, "int ep%s = epoll_create(%d);", idx.c_str(), op.n);
      break;
    case Kind::Eventfd:
      std::snprintf(b, sizeof b, "int efd%s = eventfd(%llu, %s%s%s%s);", idx.c_str(),
                    static_cast<unsigned long long>(op.val), "EFD_NONBLOCK",
                    (op.flags & EFD_SEMAPHORE) ? "|EFD_SEMAPHORE" : "",
                    (op.flags & EFD_CLOEXEC) ? "|EFD_CLOEXEC" : "", (op.flags & 2) ? "|2" : "");
      break;
    case Kind::Pipe2:
      std::snprintf(b, sizeof b, "int p%s[2]; pipe2(%s, O_NONBLOCK%s%s);", idx.c_str(),
                    op.null_ptr ? "NULL" : ("p" + idx).c_str(), (op.flags & O_CLOEXEC) ? "|O_CLOEXEC" : "",
                    (op.flags & O_RDWR) ? "|O_RDWR" : "");
      break;
    case Kind::Socketpair:
      std::snprintf(b, sizeof b, "int sv%s[2]; socketpair(AF_UNIX, SOCK_STREAM|SOCK_NONBLOCK%s, 0, sv%s);",
                    idx.c_str(), (op.flags & SOCK_CLOEXEC) ? "|SOCK_CLOEXEC" : "", idx.c_str());
      break;
    case Kind::Timerfd:
      std::snprintf(b, sizeof b, "int tfd%s = timerfd_create(%s, TFD_NONBLOCK);", idx.c_str(),
                    op.flags == CLOCK_MONOTONIC ? "CLOCK_MONOTONIC" : "12345");
      break;
    case Kind::TimerSet:
      std::snprintf(b, sizeof b, "timerfd_settime(%s, 0, &(struct itimerspec){.it_value = %s}, NULL);",
                    N(op.a).c_str(),
                    op.flags == 0 ? "{0, 0}" : op.flags == 1 ? "{1000, 0}" : "{0, 2000000000}");
      break;
    case Kind::TimerGet:
      std::snprintf(b, sizeof b, "timerfd_gettime(%s, &its);", N(op.a).c_str());
      break;
    case Kind::Ctl: {
      const char* o = ctl_op_name(op.flags);
      std::string ops = o ? o : std::to_string(op.flags);
      std::string ev = op.null_ptr ? "NULL"
                                   : "&(struct epoll_event){" + rel::mask_name(op.mask) + ", 0x" +
                                         [&] {
                                           char h[24];
                                           std::snprintf(h, sizeof h, "%llx",
                                                         static_cast<unsigned long long>(op.val));
                                           return std::string(h);
                                         }() +
                                         "}";
      std::snprintf(b, sizeof b, "epoll_ctl(%s, %s, %s, %s);", N(op.a).c_str(), ops.c_str(),
                    N(op.b).c_str(), ev.c_str());
      break;
    }
    case Kind::Wait: {
      const char* evs = op.null_ptr ? "NULL" : "evs";
      if (op.wait_variant == 0)
        std::snprintf(b, sizeof b, "epoll_wait(%s, %s, %d, 0);", N(op.a).c_str(), evs, op.n);
      else if (op.wait_variant == 1)
        std::snprintf(b, sizeof b, "epoll_pwait(%s, %s, %d, 0, NULL);", N(op.a).c_str(), evs, op.n);
      else
        std::snprintf(b, sizeof b, "epoll_pwait2(%s, %s, %d, &(struct timespec){0, 0}, NULL);",
                      N(op.a).c_str(), evs, op.n);
      break;
    }
    case Kind::Read:
      std::snprintf(b, sizeof b, "read(%s, buf, %d);", N(op.a).c_str(), op.n);
      break;
    case Kind::Write:
      if (op.n <= 8)
        std::snprintf(b, sizeof b, "write(%s, &(uint64_t){0x%llx}, %d);", N(op.a).c_str(),
                      static_cast<unsigned long long>(op.val), op.n);
      else
        std::snprintf(b, sizeof b, "write(%s, bytes, %d);", N(op.a).c_str(), op.n);
      break;
    case Kind::Close:
      std::snprintf(b, sizeof b, "close(%s);", N(op.a).c_str());
      break;
    case Kind::Dup:
      std::snprintf(b, sizeof b, "int d%s = dup(%s);", idx.c_str(), N(op.a).c_str());
      break;
    case Kind::Shutdown:
      std::snprintf(b, sizeof b, "shutdown(%s, %d);", N(op.a).c_str(), op.flags);
      break;
    case Kind::Poll: {
      std::string s = "poll(";
      if (op.null_ptr) {
        s += "NULL";
      } else {
        s += "(struct pollfd[]){";
        for (int j = 0; j < op.n; ++j) {
          char h[16];
          std::snprintf(h, sizeof h, "0x%x", static_cast<unsigned short>(op.pev[j]));
          s += (j ? ", {" : "{") + N(op.prefs[j]) + ", " + h + "}";
        }
        s += "}";
      }
      s += ", " + std::to_string(op.n) + ", 0);";
      std::snprintf(b, sizeof b, "%s", s.c_str());
      break;
    }
  }
  return b;
}

}  // namespace

std::string format_op(const Op& op) {
  std::map<int, const Op*> by_id;
  by_id[op.id] = &op;
  return fmt(op, by_id);
}

std::string format_program(const Program& prog) {
  std::map<int, const Op*> by_id;
  for (const Op& op : prog) by_id[op.id] = &op;
  std::vector<std::string> l, u;
  int d = first_divergence(prog, &l, &u);
  std::string out;
  for (size_t i = 0; i < prog.size(); ++i) {
    std::string line = fmt(prog[i], by_id);
    if (line.size() < 60) line.resize(60, ' ');
    out += "  " + line + " // linux: " + l[i];
    if (u[i] != l[i]) out += "   uepoll: " + u[i];
    if (static_cast<int>(i) == d) out += "   <<<< FIRST DIVERGENCE";
    out += "\n";
  }
  return out;
}

}  // namespace uepoll_test::rdiff
