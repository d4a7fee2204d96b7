// timerfd.cpp - TimerFd and the timer service thread (see timerfd.h).
// Locks: the service registry mutex (level 2 of core/lock_order.h: taken
// with no uepoll lock held), TimerFd wq() (11) under it.  No kernel call under a wq lock; no lock held
// in epoll_wait.
#include "objects/timerfd.h"

#include "core/alloc.h"
#include "core/backoff.h"
#include "core/block.h"
#include "core/fork.h"
#include "core/internal_call.h"
#include "core/mutex.h"
#include "core/own_fds.h"
#include "fd/table.h"
#include "objects/user_ptr.h"

#include <cerrno>
#include <cstdint>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/timerfd.h>
#include <unistd.h>

namespace uepoll::objects {

namespace {

class TimerService;
std::atomic<TimerService*> g_service{nullptr};  // set once by TimerService::get()

// The process-wide timer service.  Never destroyed (the thread may still be
// running during static destruction).
class TimerService {
 public:
  static TimerService& get() noexcept {
    // Constructed in static storage (no allocation that could fail) and
    // never destroyed.
    alignas(TimerService) static unsigned char storage[sizeof(TimerService)];
    static TimerService* s = [] {
      auto* t = new (storage) TimerService();
      g_service.store(t, std::memory_order_release);
      return t;
    }();
    return *s;
  }
  // The service if it was ever used, else nullptr (the fork hooks).
  // acquire: pairs with the release in get().
  static TimerService* existing() noexcept { return g_service.load(std::memory_order_acquire); }

  // The fork hooks: the registry is held across fork(); in the child every
  // registered timer is rebuilt on a kernel timer of its own, and the
  // service (its thread does not exist there, its kernel epoll is the
  // parent's) is started afresh if any timer exists.
  void fork_prepare() noexcept UEP_NO_THREAD_SAFETY_ANALYSIS { mu_.lock(); }
  void fork_parent() noexcept UEP_NO_THREAD_SAFETY_ANALYSIS { mu_.unlock(); }
  void fork_child() noexcept UEP_NO_THREAD_SAFETY_ANALYSIS {
    epfd_.close();  // the child's copies of the parent's epoll and doorbell
    bell_.close();
    started_ = false;
    bool any = false;
    for (int i = 0; i < cap_; ++i) {
      if (!table_[i]) continue;
      (void)table_[i]->fork_rebuild();
      any = true;
    }
    if (any && start_locked() == 0) {
      for (int i = 0; i < cap_; ++i)
        if (table_[i]) (void)ctl_locked(table_[i], EPOLL_CTL_ADD, static_cast<uint32_t>(i));
    }
    mu_.unlock();
  }

  // Registers t (its kernel timer in the service's epoll, keyed by an index
  // of the table); starts the thread on first use.
  int add(TimerFd* t) noexcept {
    core::MutexLock l(mu_);
    if (int err = start_locked(); err < 0) return err;
    const int key = free_key_locked();
    if (key < 0) return -ENOMEM;
    if (int err = ctl_locked(t, EPOLL_CTL_ADD, static_cast<uint32_t>(key)); err < 0) return err;
    table_[key] = t;
    t->set_service_key(key);
    return 0;
  }

  void remove(int key, TimerFd* t) noexcept {
    core::MutexLock l(mu_);
    // The kernel removes the registration at the timer's last close, which
    // follows; a DEL keeps an event from being harvested meanwhile.
    if (!epfd_.empty()) (void)ctl_locked(t, EPOLL_CTL_DEL, 0);
    if (key >= 0 && key < cap_ && table_[key] == t) table_[key] = nullptr;
    if (key >= 0 && key < hint_) hint_ = key;
  }

 private:
  // op for t's kernel timer on the service's epoll, keyed by `key`.
  int ctl_locked(TimerFd* t, int op, uint32_t key) noexcept UEP_REQUIRES(mu_) {
    core::OwnSlot::Use e(epfd_);
    return t->service_ctl(e.fd(), op, key);
  }

  // The kernel epoll and its doorbell (0 or -errno).  Preconditions: mu_
  // held, or the forked child's single thread.
  int make_epoll() noexcept {
    const int ep = core::park_high(::epoll_create1(EPOLL_CLOEXEC));
    if (ep < 0) return -errno;
    const int bell = core::park_high(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u32 = kBell;
    if (bell < 0 || ::epoll_ctl(ep, EPOLL_CTL_ADD, bell, &ev) < 0) {
      const int e = errno;
      core::close_own(bell);
      core::close_own(ep);
      return -e;
    }
    bell_.open(bell);
    epfd_.open(ep, &core::OwnSlot::write_one, &bell_);
    return 0;
  }

  // A free index of the table (grown when full), or -1 without memory.
  int free_key_locked() noexcept UEP_REQUIRES(mu_) {
    for (int i = hint_; i < cap_; ++i) {
      if (!table_[i]) {
        hint_ = i + 1;
        return i;
      }
    }
    const int ncap = cap_ ? cap_ * 2 : 64;
    auto* nt = static_cast<TimerFd**>(core::raw_alloc(sizeof(TimerFd*) * static_cast<size_t>(ncap)));
    if (!nt) return -1;
    for (int i = 0; i < ncap; ++i) nt[i] = i < cap_ ? table_[i] : nullptr;
    if (table_) core::raw_free(table_);
    table_ = nt;
    const int key = cap_;
    cap_ = ncap;
    hint_ = key + 1;
    return key;
  }

  TimerService() = default;

  // Preconditions: mu_ held.
  int start_locked() noexcept UEP_REQUIRES(mu_) {
    if (started_) return 0;
    if (epfd_.empty()) {
      if (int err = make_epoll(); err < 0) return err;
    }
    // The thread must never take a signal meant for the application.
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    Start start{this, {}};
    sem_init(&start.up, 0, 0);
    pthread_t th;
    const int rc = pthread_create(&th, nullptr, &TimerService::thread_main, &start);
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    if (rc != 0) {
      sem_destroy(&start.up);
      return -rc;  // EAGAIN (or ENOMEM)
    }
    // Wait until the thread runs our code: its start-up (the C library's and
    // a sanitizer runtime's per-thread set-up, which allocate) is over, so a
    // fork() right after this call does not copy an allocator lock that a
    // half-started thread holds.  (glibc's malloc is safe across fork; ASan's
    // allocator in GCC 12 is not: such a child hung at its first malloc.)
    while (sem_wait(&start.up) != 0) {
    }
    sem_destroy(&start.up);
    pthread_detach(th);
    started_ = true;
    return 0;
  }

  struct Start {
    TimerService* service;
    sem_t up;  // posted by the new thread once it runs thread_main
  };

  static void* thread_main(void* arg) {
    core::InternalCalls internal;  // its libc calls are uepoll's own (core/internal_call.h)
    auto* start = static_cast<Start*>(arg);
    TimerService* service = start->service;
    sem_post(&start->up);  // `start` lives on the starter's stack: not used after this
    service->run();
    return nullptr;
  }

  void run() noexcept {
    epoll_event evs[64];
    for (;;) {
      // No lock held while waiting.
      int n;
      {
        core::OwnSlot::Use e(epfd_);
        n = ::epoll_wait(e.fd(), evs, 64, -1);
      }
      if (n <= 0) continue;  // EINTR cannot happen (signals blocked); be safe
      core::MutexLock l(mu_);
      for (int i = 0; i < n; ++i) {
        const uint32_t key = evs[i].data.u32;
        if (key == kBell) {
          core::OwnSlot::Use b(bell_);
          uint64_t v;
          ssize_t unused = ::read(b.fd(), &v, sizeof v);  // the mover's kick: go round
          (void)unused;
          continue;
        }
        // A stale event for a closed timer finds nullptr, or (if its key
        // was given out again) a spurious wakeup that a re-poll drops.
        if (key < static_cast<uint32_t>(cap_) && table_[key]) table_[key]->kernel_fired();
      }
    }
  }

  // Level 2 of core/lock_order.h: taken with no uepoll lock held.
  core::Mutex mu_{core::lock_class::kTimerRegistry};  // guards everything below
  // The kernel epoll of all kernel timers, and an eventfd in it that ends
  // the thread's wait (the kick of a move, core/own_slot.h); made once
  // under mu_ (again in a forked child).
  core::OwnSlot epfd_;
  core::OwnSlot bell_;
  static constexpr uint32_t kBell = UINT32_MAX;
  bool started_ UEP_GUARDED_BY(mu_) = false;
  TimerFd** table_ UEP_GUARDED_BY(mu_) = nullptr;  // key -> TimerFd (registered ones)
  int cap_ UEP_GUARDED_BY(mu_) = 0;
  int hint_ UEP_GUARDED_BY(mu_) = 0;  // no free key below it
};

}  // namespace

TimerFd::TimerFd(int kfd, int status_flags, int clockid, bool on_vclock) noexcept
    : core::File(core::FileKind::kTimer, status_flags), clockid_(clockid), virtual_(on_vclock) {
  kfd_.open(kfd);
  vt_.owner = this;
  vt_.fire = &TimerFd::v_fire;
  vt_.clock_was_set = &TimerFd::v_clock_was_set;
  vt_.realtime = clockid == CLOCK_REALTIME || clockid == CLOCK_REALTIME_ALARM;
  if (on_vclock) vmoffs_ = core::vclock::rt_offset();  // timerfd_create: ctx->moffs
}

uint32_t TimerFd::poll(int) noexcept {
  if (carried_.load(std::memory_order_relaxed)) return EPOLLIN;  // inherited across fork()
  if (virtual_) return vticks_.load(std::memory_order_acquire) ? static_cast<uint32_t>(EPOLLIN) : 0u;
  // Linux timerfd_poll: EPOLLIN iff ctx->ticks; the kernel timerfd knows.
  return kernel_readable() ? static_cast<uint32_t>(EPOLLIN) : 0u;
}

bool TimerFd::kernel_readable() noexcept {
  core::OwnSlot::Use k(kfd_);
  pollfd p{k.fd(), POLLIN, 0};
  return ::poll(&p, 1, 0) > 0 && (p.revents & POLLIN);
}

int TimerFd::service_ctl(int epfd, int op, uint32_t key) noexcept {
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLET;
  ev.data.u32 = key;
  core::OwnSlot::Use k(kfd_);
  return ::epoll_ctl(epfd, op, k.fd(), &ev) < 0 ? -errno : 0;
}

// rearm_'s two increments around a read, settime or gettime (timerfd.h).
// seq_cst: the RMWs order the kernel call between them against the loads
// on both sides of kernel_fired()'s poll.
class TimerFd::Rearm {
 public:
  explicit Rearm(std::atomic<uint64_t>& n) noexcept : n_(&n) { n_->fetch_add(1, std::memory_order_seq_cst); }
  ~Rearm() { end(); }
  void end() noexcept {
    if (n_) n_->fetch_add(1, std::memory_order_seq_cst);
    n_ = nullptr;
  }
  Rearm(const Rearm&) = delete;
  Rearm& operator=(const Rearm&) = delete;

 private:
  std::atomic<uint64_t>* n_;
};

ssize_t TimerFd::read(void* buf, size_t count) noexcept {
  uint64_t ticks = 0;
  if (count < sizeof ticks) return -EINVAL;
  for (;;) {
    const uint64_t seen = seq_.load(std::memory_order_acquire);
    ssize_t n;
    {
      Rearm cycle(rearm_);  // the read re-arms an expired timer
      n = virtual_ ? v_read_ticks(&ticks, nonblocking()) : kernel_read(&ticks);
    }
    if (n == static_cast<ssize_t>(sizeof ticks)) {
      if (armed_.load(std::memory_order_relaxed) == kOneShot) armed_.store(kDisarmed, std::memory_order_relaxed);
      ticks += take_carried();
      break;
    }
    const int e = n < 0 ? errno : EIO;
    if (e == EAGAIN && (ticks = take_carried()) != 0) break;
    if (e != EAGAIN) return -e;  // ECANCELED
    if (nonblocking()) return -EAGAIN;
    // Sleep until the service reports another expiry (seq_ moves under the
    // wq lock, so the check and the queueing cannot miss it).
    const long r = core::block_on(wq(), false, EPOLLIN, [&]() -> long {
      return seq_.load(std::memory_order_relaxed) != seen ? 0 : -EAGAIN;
    });
    if (r < 0) return r;
  }
  if (faulting_ptr(buf)) return -EFAULT;  // Linux: put_user fails after the ticks were taken
  std::memcpy(buf, &ticks, sizeof ticks);
  return static_cast<ssize_t>(sizeof ticks);
}

int TimerFd::settime(int flags, const struct itimerspec* new_value, struct itimerspec* old_value) noexcept {
  Rearm cycle(rearm_);
  if (virtual_) return v_settime(flags, new_value, old_value);
  {
    core::OwnSlot::Use k(kfd_);
    if (::timerfd_settime(k.fd(), flags, new_value, old_value) < 0) return -errno;
  }
  set_flags_.store(flags, std::memory_order_relaxed);
  const bool arms = new_value->it_value.tv_sec != 0 || new_value->it_value.tv_nsec != 0;
  const bool interval = new_value->it_interval.tv_sec != 0 || new_value->it_interval.tv_nsec != 0;
  armed_.store(!arms ? kDisarmed : interval ? kPeriodic : kOneShot, std::memory_order_relaxed);
  carried_.store(0, std::memory_order_relaxed);  // Linux timerfd_setup: ctx->ticks = 0
  cycle.end();
  // A timer set in the past (or a few ns ahead) has expired by the time the
  // kernel returns, and Linux's wakeup has already happened: deliver ours
  // now instead of waiting for the service thread.  The service's own
  // event for the same expiry follows and is dropped (same cycle).
  kernel_fired();
  return 0;
}

int TimerFd::gettime(struct itimerspec* curr) noexcept {
  // Linux's gettime re-arms an expired interval timer (hrtimer_restart), and
  // so does the kernel timer's: its next expiry wakes again.
  Rearm cycle(rearm_);
  if (virtual_) return v_gettime(curr);
  core::OwnSlot::Use k(kfd_);
  return ::timerfd_gettime(k.fd(), curr) < 0 ? -errno : 0;
}

namespace {
// TFD_IOC_SET_TICKS (Linux include/uapi/linux/timerfd.h; glibc's header
// leaves it out).
constexpr unsigned long kSetTicks = _IOW('T', 0, uint64_t);
}  // namespace

int TimerFd::kernel_form() noexcept {
  if (virtual_) return -EOPNOTSUPP;
  int d;
  {
    core::OwnSlot::Use k(kfd_);
    d = ::fcntl(k.fd(), F_DUPFD_CLOEXEC, 0);
  }
  if (d < 0) return -errno;
  uint64_t ticks = take_carried();
  if (ticks == 0) return d;
  // The kernel's own count joins the carried ones (TFD_IOC_SET_TICKS sets
  // the count, it does not add to it).
  uint64_t now = 0;
  {
    Rearm cycle(rearm_);  // the read re-arms an expired timer
    if (::read(d, &now, sizeof now) == static_cast<ssize_t>(sizeof now)) ticks += now;
  }
  if (::ioctl(d, kSetTicks, &ticks) < 0) {
    const int e = errno;
    carried_.fetch_add(ticks, std::memory_order_relaxed);
    ::close(d);
    return -e;
  }
  return d;
}

ssize_t TimerFd::kernel_read(uint64_t* ticks) noexcept {
  core::OwnSlot::Use k(kfd_);
  return ::read(k.fd(), ticks, sizeof *ticks);
}

void TimerFd::kernel_fired() noexcept {
  // The expiry's cycle: rearm_ even and the same on both sides of the poll.
  // A read, settime or gettime in its kernel call meanwhile is brief; after
  // kTries rounds the wakeup goes out whatever the cycle (a spurious wakeup
  // is harmless, a lost one is not).
  constexpr unsigned kTries = 64;
  core::Backoff backoff;
  for (unsigned round = 0;; ++round) {
    const uint64_t cycle = rearm_.load(std::memory_order_seq_cst);
    if ((cycle & 1) && round < kTries) {
      backoff.pause();
      continue;
    }
    // Unreadable: a read took the expiry since the kernel signalled it (it
    // was woken for then, or it is the read's own), or settime disarmed it.
    if (!kernel_readable()) return;
    if (rearm_.load(std::memory_order_seq_cst) == cycle && !(cycle & 1)) return deliver(cycle, false);
    if (round >= kTries) return deliver(cycle, true);
    backoff.pause();
  }
}

void TimerFd::deliver(uint64_t cycle, bool always) noexcept {
  wq().lock();
  if (woke_cycle_ == cycle && !always) {
    // This cycle's wakeup was delivered already: Linux would not wake again
    // before a read, settime or gettime re-armed the timer.
    wq().unlock();
    return;
  }
  woke_cycle_ = cycle;
  seq_.store(seq_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
  wq().wake_locked(EPOLLIN);  // Linux timerfd_triggered: wake_up_locked_poll(EPOLLIN)
  wq().unlock();
}

namespace {

// Unread expirations of kernel timer kfd, without reading them (a read in
// the child would take them from the parent too): /proc's fdinfo "ticks:"
// line, else 1 if it polls readable.
uint64_t pending_ticks(int kfd) noexcept {
  char buf[512];
  if (core::read_own_fdinfo(kfd, buf, sizeof buf) > 0)
    if (const char* t = std::strstr(buf, "\nticks:")) return std::strtoull(t + 7, nullptr, 10);
  pollfd p{kfd, POLLIN, 0};
  return ::poll(&p, 1, 0) > 0 && (p.revents & POLLIN) ? 1 : 0;
}

}  // namespace

int TimerFd::fork_rebuild() noexcept {
  // In the child, single-threaded: the slot's number is still.
  const int old_kfd = kfd_.peek();
  itimerspec cur{};
  if (::timerfd_gettime(old_kfd, &cur) < 0) return -errno;
  const uint64_t ticks = pending_ticks(old_kfd);
  const int nk = ::timerfd_create(clockid_, TFD_NONBLOCK | TFD_CLOEXEC);
  if (nk < 0) return -errno;
  const int armed = armed_.load(std::memory_order_relaxed);
  if (cur.it_value.tv_sec == 0 && cur.it_value.tv_nsec == 0 && armed != kDisarmed) {
    // An armed timer that reports no remaining time: its expiry has passed
    // and the kernel has not counted it yet (Linux timerfd_get_remaining
    // clamps a passed hrtimer expiry to 0 until timerfd_tmrproc runs).  The
    // child's timer is due now: an interval timer always, a one-shot when
    // the count does not hold its expiry already.
    if (armed == kPeriodic || ticks == 0) {
      cur.it_value.tv_nsec = 1;
    } else {
      armed_.store(kDisarmed, std::memory_order_relaxed);  // its expiry is carried
    }
  }
  const bool value = cur.it_value.tv_sec != 0 || cur.it_value.tv_nsec != 0;
  if (value || cur.it_interval.tv_sec != 0 || cur.it_interval.tv_nsec != 0) {
    // A disarmed timer keeps its interval too (gettime shows it, as Linux's).
    int flags = set_flags_.load(std::memory_order_relaxed);
    if (value && (flags & TFD_TIMER_ABSTIME)) {
      // Same absolute expiry (and CANCEL_ON_SET still meaningful).
      timespec now{};
      clock_gettime(clockid_, &now);
      cur.it_value.tv_sec += now.tv_sec;
      cur.it_value.tv_nsec += now.tv_nsec;
      if (cur.it_value.tv_nsec >= 1000000000L) {
        cur.it_value.tv_sec++;
        cur.it_value.tv_nsec -= 1000000000L;
      }
    } else {
      flags = 0;
    }
    if (::timerfd_settime(nk, flags, &cur, nullptr) < 0) {
      const int e = errno;
      ::close(nk);
      return -e;
    }
  }
  // The new timer takes the slot (the service re-registers it by key).
  kfd_.close();
  kfd_.open(core::park_high(nk));
  carried_.store(ticks, std::memory_order_relaxed);
  woke_cycle_ = UINT64_MAX;  // a new kernel timer: its expiries are new
  return 0;
}

// The service the prepare hook locked (nullptr: none existed yet); only the
// forking thread touches it, between its prepare and parent/child hooks.
static TimerService* g_fork_locked = nullptr;

void timers_fork_prepare() noexcept UEP_NO_THREAD_SAFETY_ANALYSIS {
  g_fork_locked = TimerService::existing();
  if (g_fork_locked) g_fork_locked->fork_prepare();
}
void timers_fork_parent() noexcept UEP_NO_THREAD_SAFETY_ANALYSIS {
  if (g_fork_locked) g_fork_locked->fork_parent();
}
void timers_fork_child() noexcept UEP_NO_THREAD_SAFETY_ANALYSIS {
  if (g_fork_locked) g_fork_locked->fork_child();
}

void TimerFd::on_release() noexcept {
  if (virtual_) {
    v_release();
    kfd_.close();
    return;
  }
  TimerService::get().remove(key_, this);
  kfd_.close();
}

int make_timerfd(int clockid, int flags) noexcept {
  // A high number, not the program's next one (core/own_fds.h).
  const int kfd = core::park_high(::timerfd_create(clockid, TFD_NONBLOCK | TFD_CLOEXEC));
  if (kfd < 0) return -errno;
  const bool on_vclock = core::vclock::on();
  auto* t = core::create<TimerFd>(kfd, O_RDWR | (flags & O_NONBLOCK), clockid, on_vclock);
  if (!t) {
    core::close_own(kfd);
    return -ENOMEM;
  }
  // A virtual timer is not the service's: the virtual clock delivers its expiries.
  const int err = on_vclock ? 0 : TimerService::get().add(t);
  if (err < 0) {
    core::destroy(t);  // closes kfd (the slot's)
    return err;
  }
  const int fd = fd::install(t);
  if (fd < 0) t->put();  // on_release unregisters and closes kfd
  return fd;
}

void TimerFd::show_fdinfo(std::string& out) noexcept {
  // Everything after the kernel timerfd's four common lines.
  char path[64];
  core::OwnSlot::Use k(kfd_);
  std::snprintf(path, sizeof path, "/proc/self/fdinfo/%d", k.fd());
  FILE* f = std::fopen(path, "re");
  if (!f) return;
  char line[256];
  int n = 0;
  while (std::fgets(line, sizeof line, f))
    if (++n > 4) out += line;
  std::fclose(f);
}

}  // namespace uepoll::objects
