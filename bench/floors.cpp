// floors.cpp - measures the physical floors of uepoll's paths in the run
// itself (issue 11): a bare pointer-keyed hash insert + erase (the least a
// ctl pair can cost in user space), a bare ready-flag check plus one 12-byte
// copy (the least a zero-timeout wait that finds one event can cost), and a
// futex wake/wait handoff between two threads (the least a blocking wakeup can
// cost), beside the null system call every Linux call pays.  limit_for() maps
// a case onto its floor in the case's unit.  Takes no lock; the futex word is
// the only state two threads share.
#include "floors.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

namespace uepoll_bench {

namespace {

double thread_cpu_ns() { return thread_cpu_seconds() * 1e9; }

double wall_ns() {
  struct timespec ts {};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

// Keeps the compiler from folding a measured loop away.
inline void clobber() { asm volatile("" ::: "memory"); }

// Best (lowest) of `rounds` rounds: the floor, not the average under load.
template <class F>
double best_of(int rounds, F f) {
  double best = 0;
  for (int r = 0; r < rounds; ++r) {
    double v = f();
    if (r == 0 || v < best) best = v;
  }
  return best;
}

double syscall_floor() {
  const int n = 20000;
  return best_of(3, [&] {
    double t0 = thread_cpu_ns();
    for (int i = 0; i < n; ++i) syscall(SYS_getppid);
    return (thread_cpu_ns() - t0) / n;
  });
}

// Open addressing, linear probing, backward-shift erase, keyed by pointer:
// what a per-instance registration table needs at its simplest.  256 keys
// already present in 1024 slots (a quarter full), as in a small instance.
class PtrHash {
 public:
  PtrHash() : slot_(kCap, nullptr) {}
  static constexpr size_t kCap = 1024;
  size_t home(const void* p) const {
    return static_cast<size_t>((reinterpret_cast<uintptr_t>(p) >> 4) * 0x9E3779B97F4A7C15ull >> 54) & (kCap - 1);
  }
  bool insert(const void* p) {
    for (size_t i = home(p);; i = (i + 1) & (kCap - 1)) {
      if (slot_[i] == p) return false;
      if (slot_[i] == nullptr) {
        slot_[i] = p;
        return true;
      }
    }
  }
  bool erase(const void* p) {
    size_t i = home(p);
    while (slot_[i] != p) {
      if (slot_[i] == nullptr) return false;
      i = (i + 1) & (kCap - 1);
    }
    // Backward shift: move later members of the probe run into the hole.
    for (size_t j = (i + 1) & (kCap - 1); slot_[j] != nullptr; j = (j + 1) & (kCap - 1)) {
      size_t h = home(slot_[j]);
      bool movable = i <= j ? (h <= i || h > j) : (h <= i && h > j);
      if (movable) {
        slot_[i] = slot_[j];
        i = j;
      }
    }
    slot_[i] = nullptr;
    return true;
  }

 private:
  std::vector<const void*> slot_;
};

double hash_floor() {
  static char objects[4096][64];  // distinct addresses, like registrations
  PtrHash h;
  for (int i = 0; i < 256; ++i) h.insert(objects[i * 8]);
  const int n = 1000000;
  return best_of(3, [&] {
    size_t ok = 0;
    double t0 = thread_cpu_ns();
    for (int i = 0; i < n; ++i) {
      const void* p = objects[(i & 255) * 8 + 1];
      ok += h.insert(p);
      clobber();
      ok += h.erase(p);
      clobber();
    }
    double per = (thread_cpu_ns() - t0) / n;
    if (ok != 2u * n) return 1e9;  // impossible: a broken table is no floor
    return per;
  });
}

struct alignas(64) ReadyItem {
  std::atomic<uint32_t> ready{1};
  uint32_t events = 1;   // EPOLLIN
  uint64_t data = 42;    // epoll_data
};

double wait_floor() {
  static ReadyItem item;
  static unsigned char out[8][12];
  const int n = 4000000;
  return best_of(3, [&] {
    uint64_t got = 0;
    double t0 = thread_cpu_ns();
    for (int i = 0; i < n; ++i) {
      if (item.ready.load(std::memory_order_acquire)) {
        std::memcpy(out[i & 7], &item.events, 4);
        std::memcpy(out[i & 7] + 4, &item.data, 8);
        ++got;
      }
      clobber();
    }
    double per = (thread_cpu_ns() - t0) / n;
    return got == static_cast<uint64_t>(n) ? per : 1e9;
  });
}

long futex(std::atomic<int>* w, int op, int val) {
  return syscall(SYS_futex, reinterpret_cast<int*>(w), op | FUTEX_PRIVATE_FLAG, val, nullptr, nullptr, 0);
}

// A ping-pong on one futex word: the main thread sets 1 and wakes, the
// partner sees 1, sets 0 and wakes back.  Each side sleeps in FUTEX_WAIT
// until the word changes (no spinning), as a blocked epoll waiter would.
double futex_floor() {
  const int n = 4000;
  return best_of(7, [&] {
    std::atomic<int> word{0};
    std::thread partner([&] {
      for (int i = 0; i < n; ++i) {
        while (word.load(std::memory_order_acquire) != 1) futex(&word, FUTEX_WAIT, 0);
        word.store(0, std::memory_order_release);
        futex(&word, FUTEX_WAKE, 1);
      }
    });
    double t0 = wall_ns();
    for (int i = 0; i < n; ++i) {
      word.store(1, std::memory_order_release);
      futex(&word, FUTEX_WAKE, 1);
      while (word.load(std::memory_order_acquire) != 0) futex(&word, FUTEX_WAIT, 1);
    }
    double per = (wall_ns() - t0) / n;
    partner.join();
    return per;
  });
}

bool parallel_axis(const Case& c) { return c.x_name == "workers" || c.x_name == "threads"; }

}  // namespace

Limits measure_limits() {
  Limits l;
  l.cpus = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  l.syscall_ns = syscall_floor();
  l.hash_pair_ns = hash_floor();
  l.wait_ns = wait_floor();
  l.futex_rt_ns = futex_floor();
  return l;
}

// Throughput floors: one operation per floor cost per thread, with at most
// `cpus` threads running at once.  A round trip (kernel-fds wakeup, busy
// ping-pong) is one futex round trip; a herd round wakes each of W waiters
// once (half a round trip each: the firing thread sees the consumption
// without sleeping), `cpus` of them at a time.
double limit_for(const Case& c, const Limits& l) {
  const double par = parallel_axis(c) ? std::min(c.x, static_cast<double>(l.cpus)) : 1.0;
  if (c.unit == "pairs/s" || c.unit == "cmds/s") return l.hash_pair_ns > 0 ? par * 1e9 / l.hash_pair_ns : 0;
  if (c.unit == "waits/s") return l.wait_ns > 0 ? par * 1e9 / l.wait_ns : 0;
  if (c.unit == "round trips/s") return l.futex_rt_ns > 0 ? 1e9 / l.futex_rt_ns : 0;
  if (c.unit == "rounds/s" && l.futex_rt_ns > 0) {
    if (c.x_name != "waiters") return 1e9 / l.futex_rt_ns;  // one event bounced between two threads
    const double w = std::max(1.0, c.x);
    return 1e9 / (l.futex_rt_ns / 2 * w / std::min(w, static_cast<double>(l.cpus)));
  }
  return 0;
}

std::string limit_basis(const Case& c) {
  if (c.unit == "pairs/s" || c.unit == "cmds/s") return "hash insert+erase";
  if (c.unit == "waits/s") return "ready flag + 12-byte copy";
  if (c.unit == "round trips/s" || c.unit == "rounds/s") return "futex round trip";
  return "";
}

}  // namespace uepoll_bench
