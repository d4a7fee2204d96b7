// capi_fuzz.cpp - libFuzzer target over uepoll's C API.  The input bytes are
// read as a sequence of calls with arbitrary arguments: uepoll descriptors
// (open, closed, never opened), the target's own kernel descriptors, random
// ints from ranges that can never name a kernel descriptor the fuzzer itself
// uses, arbitrary ops / flags / masks / maxevents / clock ids / how values,
// NULL or kernel-range pointers only where Linux validates the pointer and
// returns EFAULT (never wild read/write buffers), and timeouts that never
// block (0, or invalid).  Tuning knobs are fuzzed too (including
// fail_alloc_after) and restored after each input.  Checks: no crash / ASan /
// UBSan report, results are -1 with a plausible errno or in range, returned
// events carry no private bits, and every descriptor is closed at the end of
// each input (a leaked uepoll descriptor traps).
#include <fuzzer/FuzzedDataProvider.h>
#include <uepoll/testing.h>  // fail_alloc_after, uep_debug_*; includes tuning.h
#include <uepoll/uepoll.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>
#include <vector>

namespace {

#define CHECK(c)              \
  do {                        \
    if (!(c)) __builtin_trap(); \
  } while (0)

const char* const kKnobs[] = {"rcu_ctl",       "lockless_nested_poll", "exclusive_autoremove",
                              "alloc_reuse",   "parallel_nested_add",  "concurrent_ctl",
                              "max_user_watches", "max_fds",           "fail_alloc_after"};
constexpr int kNumKnobs = sizeof(kKnobs) / sizeof(kKnobs[0]);

void* const kKernelPtr = reinterpret_cast<void*>(0xffff800000001000ULL);

// Bad pointers go only to calls that uepoll must validate itself.  Calls it
// forwards to a kernel system call (kernel descriptors, and the
// kernel-delegated timerfd and poll paths) would hand the pointer to the
// sanitizer's syscall interceptor, which dereferences it and crashes where
// the real kernel returns EFAULT: an artefact of the sanitizer, not a bug.

bool plausible_errno(int e) {
  switch (e) {
    case EPERM: case ENOENT: case EBADF: case EAGAIN: case ENOMEM: case EFAULT: case EEXIST:
    case EINVAL: case ENFILE: case EMFILE: case ENOSPC: case EPIPE: case ELOOP: case ENOTSOCK:
    case EOPNOTSUPP: case EAFNOSUPPORT: case EPROTONOSUPPORT: case ESOCKTNOSUPPORT:
    case EPROTOTYPE: case ENOTCONN: case ENODEV: case ENOSYS: case EINTR: case ENOBUFS:
    case EACCES: case ESPIPE: case EISDIR: case ENOTTY: case ECONNRESET: case EISCONN:
      return true;
    default:
      return false;
  }
}

struct Session {
  FuzzedDataProvider& in;
  std::vector<int> made;  // uepoll descriptors ever returned (may be closed)
  int kfd[4];             // own kernel descriptors: eventfd, pipe r, pipe w, epoll

  explicit Session(FuzzedDataProvider& p) : in(p) {
    kfd[0] = eventfd(0, EFD_NONBLOCK);
    int p2[2];
    CHECK(pipe2(p2, O_NONBLOCK) == 0);
    kfd[1] = p2[0];
    kfd[2] = p2[1];
    kfd[3] = epoll_create1(0);
  }
  ~Session() {
    for (int f : kfd)
      if (f >= 0) close(f);
  }

  int fd() {
    switch (in.ConsumeIntegralInRange<int>(0, 9)) {
      case 0: case 1: case 2: case 3: case 4:
        if (!made.empty()) return made[in.ConsumeIntegralInRange<size_t>(0, made.size() - 1)];
        return UEP_FD_BASE;
      case 5: {
        int k = kfd[in.ConsumeIntegralInRange<int>(0, 3)];
        return k;
      }
      case 6:
        return UEP_FD_BASE + in.ConsumeIntegralInRange<int>(0, 300);
      case 7: {
        static const int odd[] = {-1, INT_MIN, INT_MAX, UEP_FD_MAX, UEP_FD_MAX + 1, UEP_FD_BASE - 1,
                                  -UEP_FD_BASE, 1 << 20, (1 << 20) + 7, 999999};
        return odd[in.ConsumeIntegralInRange<int>(0, 9)];
      }
      default:
        // Only numbers no kernel descriptor of ours can have.
        return in.ConsumeBool() ? in.ConsumeIntegralInRange<int>(INT_MIN, -1)
                                : in.ConsumeIntegralInRange<int>(UEP_FD_BASE, INT_MAX);
    }
  }
  void created(int r) {
    if (r >= 0) {
      CHECK(uep_is_uepoll_fd(r));
      made.push_back(r);
    }
  }
  void result(long r, int line = __builtin_LINE()) {
    if (r < 0 && (r != -1 || !plausible_errno(errno))) {
      std::fprintf(stderr, "capi_fuzz: call at capi_fuzz.cpp:%d returned %ld errno %d (%s)\n", line, r, errno,
                   std::strerror(errno));
      __builtin_trap();
    }
  }

  void step() {
    errno = 0;
    switch (in.ConsumeIntegralInRange<int>(0, 21)) {
      case 0: {
        int r = uep_epoll_create1(in.ConsumeBool() ? 0 : in.ConsumeIntegral<int>());
        result(r);
        created(r);
        break;
      }
      case 1: {
        int r = uep_epoll_create(in.ConsumeIntegral<int>());
        result(r);
        created(r);
        break;
      }
      case 2: {
        int r = uep_eventfd(in.ConsumeIntegral<unsigned>(), in.ConsumeIntegral<int>() | EFD_NONBLOCK);
        result(r);
        created(r);
        break;
      }
      case 3: {
        int p[2] = {-1, -1};
        bool null = in.ConsumeIntegralInRange<int>(0, 15) == 0;
        int r = uep_pipe2(null ? nullptr : p, in.ConsumeIntegral<int>() | O_NONBLOCK);
        result(r);
        if (r == 0 && !null) {
          created(p[0]);
          created(p[1]);
        }
        break;
      }
      case 4: {
        int sv[2] = {-1, -1};
        bool null = in.ConsumeIntegralInRange<int>(0, 15) == 0;
        int dom = in.ConsumeBool() ? AF_UNIX : in.ConsumeIntegral<int>();
        int type = (in.ConsumeBool() ? SOCK_STREAM : in.ConsumeIntegral<int>()) | SOCK_NONBLOCK;
        int proto = in.ConsumeBool() ? 0 : in.ConsumeIntegral<int>();
        int r = uep_socketpair(dom, type, proto, null ? nullptr : sv);
        result(r);
        if (r == 0 && !null) {
          created(sv[0]);
          created(sv[1]);
        }
        break;
      }
      case 5: {
        int clk = in.ConsumeBool() ? CLOCK_MONOTONIC : in.ConsumeIntegral<int>();
        int r = uep_timerfd_create(clk, in.ConsumeIntegral<int>() | TFD_NONBLOCK);
        result(r);
        created(r);
        break;
      }
      case 6: {
        struct itimerspec its, old;
        its.it_value.tv_sec = in.ConsumeIntegralInRange<long>(-2, 3);
        its.it_value.tv_nsec = in.ConsumeBool() ? in.ConsumeIntegralInRange<long>(0, 999999999)
                                                : in.ConsumeIntegral<long>();
        its.it_interval.tv_sec = in.ConsumeIntegralInRange<long>(-1, 2);
        its.it_interval.tv_nsec = in.ConsumeIntegralInRange<long>(-1, 1000000000);
        int how = in.ConsumeIntegralInRange<int>(0, 3);
        const struct itimerspec* nv = how == 0 ? nullptr : &its;
        result(uep_timerfd_settime(fd(), in.ConsumeIntegralInRange<int>(-1, 4), nv,
                                   in.ConsumeBool() ? &old : nullptr));
        break;
      }
      case 7: {
        struct itimerspec cur;
        result(uep_timerfd_gettime(fd(), in.ConsumeIntegralInRange<int>(0, 7) == 0 ? nullptr : &cur));
        break;
      }
      case 8:
      case 9:
      case 10: {
        // Mostly plausible ops on plausible fds, sometimes anything.
        int ep = fd(), target = fd();
        int op = in.ConsumeIntegralInRange<int>(0, 9);
        op = op < 4 ? EPOLL_CTL_ADD : op < 6 ? EPOLL_CTL_MOD : op < 8 ? EPOLL_CTL_DEL : in.ConsumeIntegral<int>();
        // Misaligned (but valid) event memory, NULL, or a kernel-range address.
        alignas(16) unsigned char raw[sizeof(struct epoll_event) + 3];
        struct epoll_event* ev = reinterpret_cast<struct epoll_event*>(raw + in.ConsumeIntegralInRange<int>(0, 3));
        uint32_t mask = in.ConsumeIntegral<uint32_t>();
        uint64_t data = in.ConsumeIntegral<uint64_t>();
        std::memcpy(&ev->events, &mask, sizeof mask);
        std::memcpy(reinterpret_cast<unsigned char*>(ev) + offsetof(struct epoll_event, data), &data, sizeof data);
        int p = in.ConsumeIntegralInRange<int>(0, 15);
        if (!uep_is_uepoll_fd(ep)) p = 2;  // forwarded to the kernel: valid pointer only
        struct epoll_event* arg = p == 0 ? nullptr : p == 1 ? (struct epoll_event*)kKernelPtr : ev;
        result(uep_epoll_ctl(ep, op, target, arg));
        break;
      }
      case 11:
      case 12: {
        static struct epoll_event evs[160];
        int ep = fd();
        int m = in.ConsumeIntegralInRange<int>(0, 5);
        int maxevents = m < 4 ? in.ConsumeIntegralInRange<int>(1, 16) : in.ConsumeIntegral<int>();
        int p = in.ConsumeIntegralInRange<int>(0, 15);
        if (!uep_is_uepoll_fd(ep)) p = 2;  // forwarded to the kernel: valid pointer only
        // NULL: access_ok passes, EFAULT only when an event is copied (Linux
        // does the same); kernel-range: EFAULT up front.
        struct epoll_event* buf = p == 0 ? nullptr : p == 1 ? (struct epoll_event*)kKernelPtr : evs;
        if (maxevents > 160 && buf == evs && maxevents <= static_cast<int>(INT_MAX / sizeof(struct epoll_event)))
          maxevents = 160;  // never let a valid call write past our buffer
        int r;
        int variant = in.ConsumeIntegralInRange<int>(0, 2);
        if (variant == 0) {
          r = uep_epoll_wait(ep, buf, maxevents, 0);
        } else if (variant == 1) {
          sigset_t s;
          sigemptyset(&s);
          r = uep_epoll_pwait(ep, buf, maxevents, 0, in.ConsumeBool() ? &s : nullptr);
        } else {
          struct timespec ts = {0, 0};
          int t = in.ConsumeIntegralInRange<int>(0, 3);
          if (t == 1) ts.tv_nsec = -1;
          if (t == 2) ts.tv_sec = -1;
          if (t == 3) ts.tv_nsec = 1000000000L;
          bool bad_ts = in.ConsumeIntegralInRange<int>(0, 15) == 0 && uep_is_uepoll_fd(ep);
          r = uep_epoll_pwait2(ep, buf, maxevents, bad_ts ? (const struct timespec*)kKernelPtr : &ts, nullptr);
        }
        result(r);
        if (r > 0) {
          CHECK(r <= maxevents);
          if (buf == evs)
            for (int i = 0; i < r; ++i)
              CHECK((evs[i].events & (EPOLLET | EPOLLONESHOT | EPOLLEXCLUSIVE | EPOLLWAKEUP)) == 0);
        }
        break;
      }
      case 13: {
        unsigned char b[64];
        size_t n = in.ConsumeIntegralInRange<size_t>(0, sizeof b);
        ssize_t r = uep_read(fd(), b, n);
        result(r);
        CHECK(r <= static_cast<ssize_t>(n));
        break;
      }
      case 14: {
        unsigned char b[64];
        size_t n = in.ConsumeIntegralInRange<size_t>(0, sizeof b);
        std::vector<uint8_t> bytes = in.ConsumeBytes<uint8_t>(n);
        std::memset(b, 1, sizeof b);
        if (!bytes.empty()) std::memcpy(b, bytes.data(), bytes.size());
        ssize_t r = uep_write(fd(), b, n);
        result(r);
        CHECK(r <= static_cast<ssize_t>(n));
        break;
      }
      case 15: {
        int f = fd();
        for (int k : kfd)
          if (f == k) return;  // keep our kernel descriptors for the session
        result(uep_close(f));
        break;
      }
      case 16: {
        int r = uep_dup(fd());
        result(r);
        if (r >= 0) {
          if (uep_is_uepoll_fd(r)) made.push_back(r);
          else close(r);  // dup of a kernel descriptor
        }
        break;
      }
      case 17: {
        struct pollfd pf[8];
        int n = in.ConsumeIntegralInRange<int>(0, 8);
        for (int i = 0; i < n; ++i) {
          pf[i].fd = fd();
          pf[i].events = in.ConsumeIntegral<short>();
          pf[i].revents = in.ConsumeIntegral<short>();
        }
        int p = in.ConsumeIntegralInRange<int>(0, 15);
        int r;
        if (p == 0) r = uep_poll(nullptr, 0, 0);
        else if (p == 1) r = uep_poll(nullptr, static_cast<nfds_t>(1) << 30, 0);  // EINVAL first
        else r = uep_poll(pf, static_cast<nfds_t>(n), 0);
        result(r);
        if (p >= 2) CHECK(r <= n);
        break;
      }
      case 18:
        result(uep_shutdown(fd(), in.ConsumeBool() ? in.ConsumeIntegralInRange<int>(0, 2) : in.ConsumeIntegral<int>()));
        break;
      case 19: {
        int f = fd();
        int r = uep_is_uepoll_fd(f);
        CHECK(r == 0 || r == 1);
        break;
      }
      case 20: {
        int k = in.ConsumeIntegralInRange<int>(0, kNumKnobs - 1);
        long v;
        if (k < 6) v = in.ConsumeIntegralInRange<long>(-1, 2);
        else if (k == 8) v = in.ConsumeIntegralInRange<long>(-2, 12);
        else v = in.ConsumeIntegralInRange<long>(-1, 40);
        result(uep_tuning_set(kKnobs[k], v));
        break;
      }
      case 21: {
        char b[256];
        int p = in.ConsumeIntegralInRange<int>(0, 3);
        long r = uep_debug_dump(fd(), p == 0 ? nullptr : b, p == 0 ? 0 : p == 1 ? 7 : sizeof b);
        if (r < 0) CHECK(r == -1);
        break;
      }
    }
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static long saved[kNumKnobs];
  static bool init = [] {
    std::signal(SIGPIPE, SIG_IGN);
    for (int i = 0; i < kNumKnobs; ++i) uep_tuning_get(kKnobs[i], &saved[i]);
    return true;
  }();
  (void)init;
  FuzzedDataProvider in(data, size);
  {
    Session s(in);
    for (int i = 0; i < 96 && in.remaining_bytes() > 0; ++i) s.step();
  }
  // Restore the knobs (fail_alloc_after first, so cleanup cannot fail).
  uep_tuning_set("fail_alloc_after", -1);
  for (int i = 0; i < kNumKnobs; ++i) uep_tuning_set(kKnobs[i], saved[i]);
  // Close every uepoll descriptor; none may survive.
  for (int f = UEP_FD_BASE; f < UEP_FD_BASE + 1024; ++f)
    if (uep_is_uepoll_fd(f)) CHECK(uep_close(f) == 0);
  for (int f = UEP_FD_BASE; f < UEP_FD_BASE + 1024; ++f) CHECK(!uep_is_uepoll_fd(f));
  return 0;
}
