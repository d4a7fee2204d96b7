// random_diff_generate.cpp - the generator of the Linux-vs-uepoll
// differential random test (random_diff_engine.h): a random program of
// creates, ctl, waits, reads, writes, closes and dups over the objects made
// so far, deterministic for a given seed.  Single-threaded; no locks.
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

}  // namespace uepoll_test::rdiff
