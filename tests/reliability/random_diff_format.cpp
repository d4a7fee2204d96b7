// random_diff_format.cpp - the printer of the Linux-vs-uepoll differential
// random test (random_diff_engine.h): one line of C per op, with the objects
// named by the op that made them, and a whole program with the first
// divergence marked.  Single-threaded; no locks.
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
