// batch_test.cpp - uep_epoll_ctl_batch: order, per-command results, stop at
// the first failure, the call's own errors; a batch on a kernel instance and
// one on a uepoll instance give the same results (each command is Linux's
// epoll_ctl).
#include <uepoll/uepoll.h>
#include <uepoll/uepoll.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <thread>
#include <vector>

namespace {

uep_ctl_cmd cmd(int op, int fd, uint32_t events, uint64_t data) {
  uep_ctl_cmd c{};
  c.op = op;
  c.fd = fd;
  c.event.events = events;
  c.event.data.u64 = data;
  c.result = 12345;
  return c;
}

// The same batch against a kernel instance with kernel eventfds and a uepoll
// instance with uepoll eventfds.
std::vector<int> run(bool kernel, int* count) {
  const int ep = kernel ? ::epoll_create1(0) : uep_epoll_create1(0);
  int fds[3];
  for (int& f : fds) f = kernel ? ::eventfd(0, 0) : uep_eventfd(0, 0);
  std::vector<uep_ctl_cmd> cmds = {
      cmd(EPOLL_CTL_ADD, fds[0], EPOLLIN, 1), cmd(EPOLL_CTL_ADD, fds[1], EPOLLOUT, 2),
      cmd(EPOLL_CTL_MOD, fds[0], EPOLLIN | EPOLLET, 3), cmd(EPOLL_CTL_DEL, fds[1], 0, 0),
      cmd(EPOLL_CTL_ADD, fds[0], EPOLLIN, 4),  // EEXIST: stops here
      cmd(EPOLL_CTL_ADD, fds[2], EPOLLIN, 5),
  };
  *count = uep_epoll_ctl_batch(ep, cmds.data(), static_cast<int>(cmds.size()));
  std::vector<int> res;
  for (auto& c : cmds) res.push_back(c.result);
  struct epoll_event out[4];
  uint64_t one = 1;
  if (kernel) {
    ::write(fds[0], &one, 8);
    res.push_back(::epoll_wait(ep, out, 4, 0));
  } else {
    uep_write(fds[0], &one, 8);
    res.push_back(uep_epoll_wait(ep, out, 4, 0));
  }
  res.push_back(static_cast<int>(out[0].data.u64));
  for (int f : fds) kernel ? ::close(f) : uep_close(f);
  kernel ? ::close(ep) : uep_close(ep);
  return res;
}

TEST(CtlBatch, SameResultsAsLinuxCommandByCommand) {
  int kn = 0, un = 0;
  const auto k = run(true, &kn);
  const auto u = run(false, &un);
  EXPECT_EQ(kn, 5);
  EXPECT_EQ(un, 5);
  EXPECT_EQ(k, u);
  const std::vector<int> want = {0, 0, 0, 0, -EEXIST, 12345, 1, 3};
  EXPECT_EQ(u, want);
}

// Batches of MOD and DEL (the commands a batch runs together under shared
// locks) with ADDs between them, duplicate targets, more targets than one
// run takes (64) and errors in the middle of a run: a closed descriptor
// (EBADF), the instance itself (EINVAL), EPOLLEXCLUSIVE in a MOD or on the
// item (EINVAL), a target never added or already deleted (ENOENT).  Each
// script runs on Linux (kernel instance and eventfds) and on uepoll: the
// count, every result and what a wait reports afterwards must be equal.
struct Script {
  std::vector<int> op, target;  // target: index into the fds, -1 the instance, -2 the closed one
  std::vector<uint32_t> events;
};

std::vector<int> run_script(bool kernel, const Script& sc, int nfds) {
  const int ep = kernel ? ::epoll_create1(0) : uep_epoll_create1(0);
  std::vector<int> fds;
  for (int i = 0; i < nfds; ++i) fds.push_back(kernel ? ::eventfd(0, EFD_NONBLOCK) : uep_eventfd(0, EFD_NONBLOCK));
  const int closed = kernel ? ::eventfd(0, 0) : uep_eventfd(0, 0);
  kernel ? ::close(closed) : uep_close(closed);
  std::vector<uep_ctl_cmd> cmds;
  for (size_t k = 0; k < sc.op.size(); ++k) {
    const int t = sc.target[k];
    const int fd = t == -1 ? ep : t == -2 ? closed : fds[static_cast<size_t>(t)];
    cmds.push_back(cmd(sc.op[k], fd, sc.events[k], 1000 + k));
  }
  std::vector<int> res;
  res.push_back(uep_epoll_ctl_batch(ep, cmds.data(), static_cast<int>(cmds.size())));
  for (auto& c : cmds) res.push_back(c.result);
  uint64_t one = 1;
  for (int fd : fds) kernel ? ::write(fd, &one, 8) : uep_write(fd, &one, 8);
  std::vector<struct epoll_event> out(static_cast<size_t>(nfds) + 1);
  const int n = kernel ? ::epoll_wait(ep, out.data(), nfds + 1, 0) : uep_epoll_wait(ep, out.data(), nfds + 1, 0);
  std::vector<int> seen;
  for (int i = 0; i < n; ++i) seen.push_back(static_cast<int>(out[static_cast<size_t>(i)].data.u64));
  std::sort(seen.begin(), seen.end());
  res.push_back(n);
  res.insert(res.end(), seen.begin(), seen.end());
  for (int fd : fds) kernel ? ::close(fd) : uep_close(fd);
  kernel ? ::close(ep) : uep_close(ep);
  return res;
}

TEST(CtlBatch, RunsWithErrorsAndDuplicatesMatchLinux) {
  constexpr int kFds = 90;
  uint64_t rng = 0x9e3779b97f4a7c15ull;
  auto next = [&rng] {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
  };
  int stopped_early = 0;
  for (int seed = 0; seed < 60; ++seed) {
    Script sc;
    auto push = [&sc](int op, int t, uint32_t ev) {
      sc.op.push_back(op);
      sc.target.push_back(t);
      sc.events.push_back(ev);
    };
    // Most fds added first (some EXCLUSIVE), then a long mixed batch.
    for (int i = 0; i < kFds; ++i)
      if (next() % 8 != 0) push(EPOLL_CTL_ADD, i, EPOLLIN | (next() % 16 == 0 ? EPOLLEXCLUSIVE : 0u));
    const int len = 40 + static_cast<int>(next() % 120);
    for (int k = 0; k < len; ++k) {
      const uint64_t r = next();
      const int t = static_cast<int>(r % kFds);
      switch ((r >> 8) % 64) {
        case 0: push(EPOLL_CTL_MOD, -2, EPOLLIN); break;  // EBADF
        case 1: push(EPOLL_CTL_DEL, -1, 0); break;                                    // EINVAL (the instance)
        case 2: push(EPOLL_CTL_MOD, t, EPOLLIN | EPOLLEXCLUSIVE); break;              // EINVAL
        case 3: push(EPOLL_CTL_ADD, t, EPOLLIN); break;                               // 0 or EEXIST
        default:
          if ((r >> 16) % 3 == 0)
            push(EPOLL_CTL_DEL, t, 0);
          else
            push(EPOLL_CTL_MOD, t, EPOLLIN | ((r >> 20) % 2 ? EPOLLET : 0u));
      }
    }
    const auto k = run_script(true, sc, kFds);
    const auto u = run_script(false, sc, kFds);
    ASSERT_EQ(k, u) << "seed " << seed;
    if (k[0] < static_cast<int>(sc.op.size())) ++stopped_early;
  }
  EXPECT_GT(stopped_early, 10);  // the scripts do stop in the middle
}

// DISABLE (uepoll only) in runs: the same results as the same commands one
// call each on an identical instance.
TEST(CtlBatch, DisableInRunsAsSingleCalls) {
  auto go = [](bool batched) {
    const int ep = uep_epoll_create1(0);
    std::vector<int> fds;
    for (int i = 0; i < 20; ++i) {
      fds.push_back(uep_eventfd(i % 3 == 0 ? 1 : 0, EFD_NONBLOCK));
      struct epoll_event ev{};
      ev.events = EPOLLIN | (i % 2 ? EPOLLONESHOT : 0u);
      ev.data.u64 = static_cast<uint64_t>(i);
      uep_epoll_ctl(ep, EPOLL_CTL_ADD, fds.back(), &ev);
    }
    struct epoll_event out[20];
    uep_epoll_wait(ep, out, 3, 0);  // delivers (and disarms) some ONESHOT items
    std::vector<uep_ctl_cmd> cmds;
    for (int i = 0; i < 20; ++i) {
      cmds.push_back(cmd(UEP_EPOLL_CTL_DISABLE, fds[static_cast<size_t>(i)], 0, 0));
      if (i % 5 == 4) cmds.push_back(cmd(EPOLL_CTL_MOD, fds[static_cast<size_t>(i)], EPOLLIN | EPOLLONESHOT, 50 + i));
    }
    std::vector<int> res;
    if (batched) {
      // Restart after each failure, as a caller would.
      for (size_t at = 0; at < cmds.size();) {
        const int n = uep_epoll_ctl_batch(ep, cmds.data() + at, static_cast<int>(cmds.size() - at));
        at += static_cast<size_t>(n);
        res.push_back(n);
      }
    } else {
      for (auto& c : cmds) c.result = uep_epoll_ctl(ep, c.op, c.fd, &c.event) < 0 ? -errno : 0;
    }
    for (auto& c : cmds) res.push_back(c.result);
    res.push_back(uep_epoll_wait(ep, out, 20, 0));
    for (int fd : fds) uep_close(fd);
    uep_close(ep);
    return res;
  };
  const auto single = go(false), batch = go(true);
  // The batch's counts lead its vector; the results and the wait follow.
  ASSERT_GE(batch.size(), single.size());
  const std::vector<int> tail(batch.end() - static_cast<long>(single.size()), batch.end());
  EXPECT_EQ(tail, single);
  EXPECT_NE(std::find(single.begin(), single.end(), -EINVAL), single.end());  // some failed
}

TEST(CtlBatch, CallErrors) {
  const int ep = uep_epoll_create1(0), e = uep_eventfd(0, 0);
  uep_ctl_cmd c = cmd(EPOLL_CTL_ADD, e, EPOLLIN, 1);
  EXPECT_EQ(uep_epoll_ctl_batch(ep, &c, -1), -1);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(uep_epoll_ctl_batch(ep, &c, UEP_CTL_BATCH_MAX + 1), -1);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(uep_epoll_ctl_batch(ep, nullptr, 1), -1);
  EXPECT_EQ(errno, EFAULT);
  void* ro = ::mmap(nullptr, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  EXPECT_EQ(uep_epoll_ctl_batch(ep, static_cast<uep_ctl_cmd*>(ro), 1), -1);  // results not writable
  EXPECT_EQ(errno, EFAULT);
  ::munmap(ro, 4096);
  EXPECT_EQ(uep_epoll_ctl_batch(UEP_FD_BASE + 99999, &c, 1), -1);
  EXPECT_EQ(errno, EBADF);
  EXPECT_EQ(uep_epoll_ctl_batch(-1, &c, 1), -1);
  EXPECT_EQ(errno, EBADF);
  EXPECT_EQ(uep_epoll_ctl_batch(e, &c, 1), -1);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(c.result, 12345);  // untouched by a failed call
  EXPECT_EQ(uep_epoll_ctl_batch(ep, nullptr, 0), 0);
  // A failing first command: 1 executed, result -errno, the call succeeds.
  uep_ctl_cmd bad = cmd(EPOLL_CTL_DEL, e, 0, 0);
  EXPECT_EQ(uep_epoll_ctl_batch(ep, &bad, 1), 1);
  EXPECT_EQ(bad.result, -ENOENT);
  uep_ctl_cmd badfault = cmd(EPOLL_CTL_ADD, UEP_FD_BASE + 99999, EPOLLIN, 0);
  EXPECT_EQ(uep_epoll_ctl_batch(ep, &badfault, 1), 1);
  EXPECT_EQ(badfault.result, -EBADF);
  uep_close(e);
  uep_close(ep);
}

TEST(CtlBatch, CxxApi) {
  uepoll::Epoll ep = uepoll::Epoll::create();
  std::vector<uepoll::EventFd> evs;
  std::vector<uep_ctl_cmd> cmds;
  for (int i = 0; i < 64; ++i) {
    evs.push_back(uepoll::EventFd::create(0, 0));
    cmds.push_back(cmd(EPOLL_CTL_ADD, evs.back().get(), EPOLLIN, i));
  }
  EXPECT_EQ(ep.ctl_batch(cmds), 64U);
  const auto regs = ep.registrations();
  ASSERT_EQ(regs.size(), 64U);
  for (size_t i = 0; i < regs.size(); ++i) {
    EXPECT_EQ(regs[i].data, i);  // sorted by target id = creation order
    EXPECT_EQ(regs[i].events, static_cast<uint32_t>(EPOLLIN | EPOLLERR | EPOLLHUP));
    EXPECT_EQ(regs[i].fd, evs[i].get());
  }
}

// MOD and DEL in a batch use their targets without a reference (capi/ctl.h):
// run them while another thread closes those targets.  Every result must be
// 0, -ENOENT (the close removed the item first) or -EBADF (the descriptor
// was gone); ASan/TSan builds check the memory and the ordering.
TEST(CtlBatch, RacesWithCloseOfTargets) {
  const int ep = uep_epoll_create1(0);
  constexpr int kN = 16;
  for (int iter = 0; iter < 300; ++iter) {
    std::vector<uep_ctl_cmd> add, mod, del;
    for (int i = 0; i < kN; ++i) {
      const int fd = uep_eventfd(1, EFD_NONBLOCK);  // ready: MOD re-polls and queues it
      add.push_back(cmd(EPOLL_CTL_ADD, fd, EPOLLIN, i));
      mod.push_back(cmd(EPOLL_CTL_MOD, fd, EPOLLIN | EPOLLET, i));
      del.push_back(cmd(EPOLL_CTL_DEL, fd, 0, 0));
    }
    ASSERT_EQ(uep_epoll_ctl_batch(ep, add.data(), kN), kN);
    std::thread closer([&] {
      for (int i = kN - 1; i >= 0; --i) {
        uep_close(add[i].fd);
        if (i % 4 == 0) std::this_thread::yield();
      }
    });
    for (int i = 0; i < kN; ++i) {  // one command per batch: every one runs
      for (auto* c : {&mod[i], &del[i]}) {
        const int n = uep_epoll_ctl_batch(ep, c, 1);
        ASSERT_EQ(n, 1);
        EXPECT_TRUE(c->result == 0 || c->result == -ENOENT || c->result == -EBADF) << c->result;
      }
    }
    struct epoll_event out[kN];
    uep_epoll_wait(ep, out, kN, 0);  // harvest whatever MOD queued
    closer.join();
  }
  char buf[4096];
  const long len = uep_fdinfo(ep, buf, sizeof buf);
  EXPECT_EQ(len, static_cast<long>(std::string(buf).size()));
  EXPECT_EQ(std::string(buf).find("tfd:"), std::string::npos) << buf;  // every item went with its file
  uep_close(ep);
}

}  // namespace
