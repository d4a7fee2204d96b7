// sandbox_test.cpp - uepoll under a seccomp filter that refuses
// process_vm_readv/process_vm_writev (container runtimes and browser
// sandboxes do), as EPERM and as ENOSYS, and one that refuses pipes too.
//
// Each scenario runs in a forked child (the filter and uepoll's remembered
// probe mode are per process).  The child installs the filter, checks that
// it bites, then runs waits that return events, ctl, poll, read and write,
// and the bad-pointer cases, each against a kernel object (Linux, the
// oracle, under the same filter) and a uepoll object.  It reports the first
// mismatch on stdout and exits nonzero.
#include <uepoll/uepoll.h>

#include <gtest/gtest.h>

#include "support/forked_child.h"

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <string>
#include <vector>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

#if defined(__x86_64__)
constexpr uint32_t kArch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
constexpr uint32_t kArch = AUDIT_ARCH_AARCH64;
#else
#error "sandbox_test: add this architecture's AUDIT_ARCH value"
#endif

// NULL through a volatile, so that the compiler does not warn about the
// deliberate bad arguments.
void* volatile g_null = nullptr;
template <class T>
T* null_of() {
  return static_cast<T*>(g_null);
}

// Installs a filter returning `err` for process_vm_readv/writev (and for
// pipe2, and pipe where it exists, when refuse_pipes).  0 or -errno.
int install_filter(int err, bool refuse_pipes) {
  const uint32_t ret_err = SECCOMP_RET_ERRNO | (static_cast<uint32_t>(err) & SECCOMP_RET_DATA);
  std::vector<sock_filter> f = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, kArch, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),  // another ABI: leave it alone
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
  };
  std::vector<long> refused = {SYS_process_vm_readv, SYS_process_vm_writev};
  if (refuse_pipes) {
    refused.push_back(SYS_pipe2);
#ifdef SYS_pipe
    refused.push_back(SYS_pipe);
#endif
  }
  for (long nr : refused) {
    f.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, static_cast<uint32_t>(nr), 0, 1));
    f.push_back(BPF_STMT(BPF_RET | BPF_K, ret_err));
  }
  f.push_back(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
  sock_fprog prog{static_cast<unsigned short>(f.size()), f.data()};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) return -errno;
  if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0) return -errno;
  return 0;
}

// The child's checks.  Returns "" or the first failure.
struct Checker {
  std::string fail;
  void expect(bool ok, const std::string& what) {
    if (!ok && fail.empty()) fail = what;
  }
  // Linux and uepoll agree on return value and errno.
  void same(const char* what, long lin, int lin_errno, long uep, int uep_errno) {
    char buf[256];
    std::snprintf(buf, sizeof buf, "%s: linux %ld (errno %d), uepoll %ld (errno %d)", what, lin, lin < 0 ? lin_errno : 0,
                  uep, uep < 0 ? uep_errno : 0);
    expect(lin == uep && (lin >= 0 || lin_errno == uep_errno), buf);
  }
};

// Runs f(lin) then f(uep) and compares (value, errno).
template <class F>
void both(Checker& c, const char* what, F&& f) {
  errno = 0;
  long l = f(false);
  int le = errno;
  errno = 0;
  long u = f(true);
  int ue = errno;
  c.same(what, l, le, u, ue);
}

std::string run_checks(bool probing_expected) {
  Checker c;
  // One ready eventfd in one instance, on each side.
  int kep = epoll_create1(0), kefd = eventfd(1, EFD_NONBLOCK);
  int uep = uep_epoll_create1(0), uefd = uep_eventfd(1, EFD_NONBLOCK);
  c.expect(kep >= 0 && kefd >= 0 && uep >= 0 && uefd >= 0, "create");
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = 7;
  both(c, "ctl ADD", [&](bool u) { return u ? uep_epoll_ctl(uep, EPOLL_CTL_ADD, uefd, &ev)
                                            : epoll_ctl(kep, EPOLL_CTL_ADD, kefd, &ev); });
  both(c, "ctl ADD NULL event", [&](bool u) { return u ? uep_epoll_ctl(uep, EPOLL_CTL_MOD, uefd, nullptr)
                                                       : epoll_ctl(kep, EPOLL_CTL_MOD, kefd, nullptr); });
  // Waits that return events, into stack, heap and page-crossing buffers.
  epoll_event out[4];
  for (int round = 0; round < 3; ++round) {
    both(c, "epoll_wait (stack buffer)", [&](bool u) {
      std::memset(out, 0, sizeof out);
      int n = u ? uep_epoll_wait(uep, out, 4, 0) : epoll_wait(kep, out, 4, 0);
      return n == 1 && out[0].data.u64 == 7 && out[0].events == EPOLLIN ? 1L : -1000L - n;
    });
  }
  auto* page2 = static_cast<char*>(mmap(nullptr, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  c.expect(page2 != MAP_FAILED, "mmap");
  auto* straddle = reinterpret_cast<epoll_event*>(page2 + 4096 - sizeof(epoll_event) / 2 - 1);
  both(c, "epoll_pwait (buffer across two pages)", [&](bool u) {
    int n = u ? uep_epoll_pwait(uep, straddle, 2, 0, nullptr) : epoll_pwait(kep, straddle, 2, 0, nullptr);
    return n == 1 ? 1L : -1000L - n;
  });
  timespec ts{0, 1000000};
  both(c, "epoll_pwait2 (blocking, returns at once)", [&](bool u) {
    int n = u ? uep_epoll_pwait2(uep, out, 4, &ts, nullptr) : epoll_pwait2(kep, out, 4, &ts, nullptr);
    return n == 1 ? 1L : -1000L - n;
  });
  // Bad pointers: NULL and the first page give EFAULT in every mode.
  both(c, "epoll_wait NULL buffer", [&](bool u) { return u ? uep_epoll_wait(uep, null_of<epoll_event>(), 4, 0)
                                                           : epoll_wait(kep, null_of<epoll_event>(), 4, 0); });
  auto* low = reinterpret_cast<epoll_event*>(reinterpret_cast<uintptr_t>(g_null) + 64);
  both(c, "epoll_wait first page", [&](bool u) { return u ? uep_epoll_wait(uep, low, 4, 0) : epoll_wait(kep, low, 4, 0); });
  if (probing_expected) {
    // A read-only buffer: EFAULT from Linux, and from uepoll's fallback probe.
    char* ro = page2;
    c.expect(mprotect(ro, 4096, PROT_READ) == 0, "mprotect");
    both(c, "epoll_wait read-only buffer", [&](bool u) {
      return u ? uep_epoll_wait(uep, reinterpret_cast<epoll_event*>(ro), 4, 0)
               : epoll_wait(kep, reinterpret_cast<epoll_event*>(ro), 4, 0);
    });
    c.expect(mprotect(ro, 4096, PROT_READ | PROT_WRITE) == 0, "mprotect back");
    // An unmapped page after a good one: the events that fit are delivered.
    auto* tail = static_cast<char*>(mmap(nullptr, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    munmap(tail + 4096, 4096);
    auto* edge = reinterpret_cast<epoll_event*>(tail + 4096 - sizeof(epoll_event));
    both(c, "epoll_wait buffer running into an unmapped page", [&](bool u) {
      return u ? uep_epoll_wait(uep, edge, 4, 0) : epoll_wait(kep, edge, 4, 0);
    });
  }
  // poll, read, write with good and bad pointers.
  both(c, "poll", [&](bool u) {
    pollfd p{u ? uefd : kefd, POLLIN, 0};
    int n = u ? uep_poll(&p, 1, 0) : poll(&p, 1, 0);
    return n == 1 && p.revents == POLLIN ? 1L : -1000L - n;
  });
  both(c, "poll NULL", [&](bool u) { return u ? uep_poll(null_of<pollfd>(), 1, 0) : poll(null_of<pollfd>(), 1, 0); });
  uint64_t v = 0;
  both(c, "read", [&](bool u) { return u ? uep_read(uefd, &v, 8) : read(kefd, &v, 8); });
  both(c, "read NULL (nothing to read: EAGAIN first)", [&](bool u) { return u ? uep_read(uefd, null_of<char>(), 8) : read(kefd, null_of<char>(), 8); });
  uint64_t one = 1;
  both(c, "write", [&](bool u) { return u ? uep_write(uefd, &one, 8) : write(kefd, &one, 8); });
  both(c, "write NULL", [&](bool u) { return u ? uep_write(uefd, null_of<char>(), 8) : write(kefd, null_of<char>(), 8); });
  both(c, "read NULL (count consumed, EFAULT)", [&](bool u) { return u ? uep_read(uefd, null_of<char>(), 8) : read(kefd, null_of<char>(), 8); });
  // Blocking wait woken by another thread (the waiter is not the probe).
  both(c, "wait after write", [&](bool u) {
    if (u ? uep_write(uefd, &one, 8) : write(kefd, &one, 8)) {}
    int n = u ? uep_epoll_wait(uep, out, 4, -1) : epoll_wait(kep, out, 4, -1);
    return n == 1 ? 1L : -1000L - n;
  });
  uep_close(uefd);
  uep_close(uep);
  close(kefd);
  close(kep);
  return c.fail;
}

// Forks; the child installs the filter and runs the checks.  Returns what
// the child reported, "" on success.
std::string in_sandbox(int err, bool refuse_pipes) {
  return uepoll_support::in_child([&]() -> std::string {
    if (int r = install_filter(err, refuse_pipes); r < 0) return "seccomp: " + std::string(strerror(-r));
    // The filter bites.
    char a[8] = {}, b[8] = {};
    iovec l{a, 8}, r2{b, 8};
    errno = 0;
    if (process_vm_readv(getpid(), &l, 1, &r2, 1, 0) != -1 || errno != err) return "filter not in force";
    int pp[2];
    if (refuse_pipes && (pipe2(pp, 0) != -1 || errno != err)) return "pipe filter not in force";
    return run_checks(!refuse_pipes);
  });
}

TEST(Sandbox, ProcessVmRefusedWithEPERM) { EXPECT_EQ(in_sandbox(EPERM, false), ""); }
TEST(Sandbox, ProcessVmRefusedWithENOSYS) { EXPECT_EQ(in_sandbox(ENOSYS, false), ""); }
// A filter may answer with any errno, even EFAULT itself.
TEST(Sandbox, ProcessVmRefusedWithEFAULT) { EXPECT_EQ(in_sandbox(EFAULT, false), ""); }
// No pipes either: no probe; events are still delivered, NULL still EFAULT.
TEST(Sandbox, PipesRefusedToo) {
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(undefined_behavior_sanitizer)
#define UEP_SANDBOX_SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(UEP_SANDBOX_SANITIZED)
  // UBSan's vptr check tests memory with a pipe of its own (sanitizer_common
  // IsAccessibleMemoryRange), so under this filter it reports every
  // constructor: nothing to learn about uepoll there.
  GTEST_SKIP() << "the sanitizer runtime needs pipes";
#endif
  EXPECT_EQ(in_sandbox(EPERM, true), "");
}
// Without a filter, the same checks (the process_vm path).
TEST(Sandbox, NoFilter) {
  EXPECT_EQ(uepoll_support::in_child([] { return run_checks(true); }), "");
}

}  // namespace
