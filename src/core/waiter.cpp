// waiter.cpp - ThreadWaiter: eventfd + ppoll sleeping, Dekker-style kick.
// Locks: the waiter pool mutex (a leaf, 15), when a thread takes or returns
// its waiter.
#include "core/waiter.h"

#include "core/fork.h"
#include "core/lock_state.h"
#include "core/mutex.h"
#include "core/own_fds.h"
#include "core/sig_restart.h"
#include "core/thread_exit.h"
#include "core/vclock.h"

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <optional>
#include <poll.h>
#include <sched.h>
#include <sys/epoll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace uepoll::core {

// This thread's waits that reached a sleeping system call (thread_sleeps).
constinit thread_local uint64_t tls_sleeps UEP_TLS_INITIAL_EXEC = 0;

namespace {

// Waiters are never freed: a kick deferred past a lock release (see
// deferred_kicks below) may reach a waiter whose thread has since returned
// or exited, and must find a live eventfd (at worst one now owned by
// another thread, which then wakes spuriously and re-checks).  A thread's
// waiter goes back to this pool when the thread exits.
Mutex g_pool_mutex(lock_class::kWaiterPool);
ThreadWaiter* g_pool UEP_GUARDED_BY(g_pool_mutex) = nullptr;  // linked by pool_next_
ThreadWaiter* g_all UEP_GUARDED_BY(g_pool_mutex) = nullptr;   // linked by all_next_

thread_local ThreadWaiter* tls_waiter = nullptr;

// Kicks that found their sleeper asleep while this thread held a SpinLock:
// the eventfd write (a system call) waits until the thread's last SpinLock
// is released, so that no spin lock is held across a system call.  The
// count is ThreadLockState::kicks (core/lock_state.h), so that the release
// checks it inline.  Touched while a SpinLock is held or being released
// (held > 0), where a signal handler calling uepoll takes no lock, with one
// exception: PipeWriter::write_from_handler takes the pipe's SpinLock
// (deferring no kick under it), and its release flushes this list when the
// interrupted code had released its last SpinLock and was flushing it.  So
// the flush re-reads the count for each entry and lowers it before the
// write: an entry interrupted that way is written twice (a spurious
// wakeup), never skipped and never read past the list's start.
struct DeferredKicks {
  static constexpr int kMax = 32;
  ThreadWaiter* w[kMax];
};
thread_local DeferredKicks tls_kicks;

}  // namespace

// Thread exit (core/thread_exit.h): the waiter goes back to the pool.
void waiter_thread_exit() noexcept {
  if (!tls_waiter) return;
  MutexLock g(g_pool_mutex);
  ThreadWaiter::push_pool(tls_waiter, &g_pool);
  tls_waiter = nullptr;
}

void ThreadWaiter::push_pool(ThreadWaiter* w, ThreadWaiter** head) noexcept {
  w->pool_next_ = *head;
  *head = w;
}

void flush_deferred_kicks() noexcept {
  DeferredKicks& k = tls_kicks;
  ThreadLockState& t = tls_lock_state;
  for (int n; (n = t.kicks) > 0;) {
    ThreadWaiter* w = k.w[n - 1];
    t.kicks = n - 1;
    std::atomic_signal_fence(std::memory_order_seq_cst);  // the count lowered before the write
    w->write_kick();
  }
}

ThreadWaiter* ThreadWaiter::take_pooled() noexcept {
  MutexLock g(g_pool_mutex);
  ThreadWaiter* w = g_pool;
  if (w) {
    g_pool = w->pool_next_;
    w->pool_next_ = nullptr;
  }
  return w;
}

ThreadWaiter* ThreadWaiter::make(int* errno_out) noexcept {
  // High numbers, not the program's next ones (core/own_fds.h).
  int fd = park_high(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (fd < 0) {
    if (errno_out) *errno_out = errno;
    return nullptr;
  }
  auto* w = new (std::nothrow) ThreadWaiter();
  if (!w) {
    close_own(fd);
    if (errno_out) *errno_out = ENOMEM;
    return nullptr;
  }
  // A kernel epoll watching the eventfd edge-triggered: sleeping in
  // epoll_pwait2 on it needs no read to drain the eventfd afterwards (each
  // kick is a new edge), one system call less per wakeup than ppoll+read.
  // Without it (EMFILE), sleeping falls back to ppoll.
  int kep = park_high(::epoll_create1(EPOLL_CLOEXEC));
  if (kep >= 0) {
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLET;
    if (::epoll_ctl(kep, EPOLL_CTL_ADD, fd, &ev) < 0) {
      close_own(kep);
      kep = -1;
    }
  }
  w->efd_.open(fd, &OwnSlot::write_one, &w->efd_);
  w->kep_.open(kep, &OwnSlot::write_one, &w->efd_);
  {
    MutexLock g(g_pool_mutex);
    w->all_next_ = g_all;
    g_all = w;
  }
  return w;
}

ThreadWaiter* ThreadWaiter::self(int* errno_out) noexcept {
  if (tls_waiter) return tls_waiter;
  ThreadWaiter* w = take_pooled();
  if (!w) w = make(errno_out);
  if (!w) return nullptr;
  tls_waiter = w;
  thread_exit_arm();  // waiter_thread_exit() returns it
  return w;
}

ThreadWaiter* ThreadWaiter::acquire_signal(int* errno_out) noexcept {
  ThreadWaiter* w = take_pooled();
  if (!w) w = make(errno_out);
  if (!w) return nullptr;
  // Permanently "asleep": every kick writes the eventfd.
  w->sleeping_.store(true, std::memory_order_seq_cst);
  w->efd_.pin();  // registered in kernel epolls by number (event_fd())
  return w;
}

void ThreadWaiter::follow_moves(OwnSlot::Moved moved, void* ctx) noexcept {
  efd_.set_moved(moved, ctx);  // under acquire_signal's pin
  follows_moves_ = true;
  efd_.unpin();
}

void ThreadWaiter::release_signal() noexcept {
  if (follows_moves_) {
    efd_.pin();  // waits for a move in progress, whose hook may still run
    efd_.set_moved(nullptr, nullptr);
    follows_moves_ = false;
  }
  efd_.unpin();
  sleeping_.store(false, std::memory_order_seq_cst);
  MutexLock g(g_pool_mutex);
  push_pool(this, &g_pool);
}

void ThreadWaiter::kick() noexcept {
  woken_.store(true, std::memory_order_seq_cst);
  if (dead_) return;  // a parent's thread, in a forked child (fork_child)
  if (!sleeping_.load(std::memory_order_seq_cst)) return;
  ThreadLockState& t = tls_lock_state;
  if (t.spin > 0 && t.kicks < DeferredKicks::kMax) {
    tls_kicks.w[t.kicks++] = this;
    return;
  }
  write_kick();
}

void ThreadWaiter::give_back(bool was_sleeping) noexcept {
  given_back_.store(true, std::memory_order_relaxed);
  woken_.store(true, std::memory_order_seq_cst);
  sleeping_.store(was_sleeping, std::memory_order_relaxed);  // the nested sleep cleared it
  if (was_sleeping && !dead_) write_kick();
}

void ThreadWaiter::drain_event_fd() noexcept {
  OwnSlot::Use u(efd_);
  uint64_t v;
  ssize_t unused = ::read(u.fd(), &v, sizeof v);
  (void)unused;  // EAGAIN when already empty
}

void ThreadWaiter::await_writes(uint64_t target) const noexcept {
  while (writes() < target && !dead_) sched_yield();
}

void ThreadWaiter::write_kick() noexcept {
  OwnSlot::write_one(&efd_);
  writes_.fetch_add(1, std::memory_order_release);  // pairs with writes()
}

// The fork hooks (core/fork.h), not analysed (-Wthread-safety): a lock taken
// in prepare is released in parent or child.  prepare/parent hold g_pool_mutex across
// fork() so that the child never sees the lists mid-update.
void waiters_fork_prepare() noexcept UEP_NO_THREAD_SAFETY_ANALYSIS { g_pool_mutex.lock(); }
void waiters_fork_parent() noexcept UEP_NO_THREAD_SAFETY_ANALYSIS { g_pool_mutex.unlock(); }
void waiters_fork_child() noexcept UEP_NO_THREAD_SAFETY_ANALYSIS {
  ThreadWaiter::fork_child();
  g_pool_mutex.unlock();
}

// Preconditions: in the child after fork, g_pool_mutex held (by prepare).
void ThreadWaiter::fork_child() noexcept UEP_NO_THREAD_SAFETY_ANALYSIS {
  for (ThreadWaiter* w = g_all; w; w = w->all_next_) {
    w->dead_ = true;
    // The child's copies of the parent's descriptions: closing them here
    // leaves the parent's untouched.
    for (OwnSlot* fd : {&w->kep_, &w->efd_, &w->rkep_, &w->sfd_}) fd->close();
  }
  g_all = nullptr;   // the dead ones are never freed (see the pool above)
  g_pool = nullptr;  // ... nor reused
  tls_waiter = nullptr;
  tls_lock_state.kicks = 0;
}

namespace {

// The relative time to an absolute deadline, capped (a deadline near the
// end of time must not overflow): a capped sleep that ends early just goes
// round again.  Preconditions: the deadline has not passed.
timespec rel_capped(const timespec& deadline) noexcept {
  constexpr time_t kCap = 1000000;  // seconds
  const timespec now = monotonic_now();
  time_t sec = deadline.tv_sec - now.tv_sec;
  long nsec = deadline.tv_nsec - now.tv_nsec;
  if (nsec < 0) {
    --sec;
    nsec += 1000000000L;
  }
  if (sec >= kCap) return timespec{kCap, 0};
  return timespec{sec, nsec};
}

// Delivers the pending signals of `run` (their handlers run, the ignored
// ones are discarded): ppoll with a mask that lets through exactly `run`.
void deliver_only(const sigset_t& run) noexcept {
  sigset_t only;
  sigfillset(&only);
  for (int s = 1; s < NSIG; ++s)
    if (sigismember(&run, s)) sigdelset(&only, s);
  (void)deliver_unblocked(&only);
}

constexpr size_t kKernelSigset = 8;  // signals 1..64

bool main_thread() noexcept { return static_cast<pid_t>(::syscall(SYS_gettid)) == ::getpid(); }

}  // namespace

bool ThreadWaiter::watch_signals(const sigset_t* mask, sigset_t* let) noexcept {
  if (!restart_setup()) return false;
  // A handler's call nested in a sleep may have set sfd_ for its own mask:
  // checked before every sleep.
  // The kernel's 8 bytes of `mask` only: an epoll_pwait caller's may be no
  // longer (a raw system call's).
  if (watched_ && std::memcmp(mask, &watched_for_, kKernelSigset) == 0) {
    *let = sfd_mask_;
    return true;
  }
  *let = let_through(mask);
  if (std::memcmp(let, &sfd_mask_, sizeof *let) != 0) {  // both built from sigemptyset
    bool set;
    {
      OwnSlot::Use u(sfd_);
      set = ::signalfd(u.fd(), let, 0) >= 0;
    }
    if (!set) return false;
    sfd_mask_ = *let;
  }
  std::memcpy(&watched_for_, mask, kKernelSigset);
  watched_ = true;
  return true;
}

int ThreadWaiter::take_signals(const sigset_t& let) noexcept {
  sigset_t pending;
  sigpending(&pending);
  sigset_t run;  // the pending signals that the caller's mask lets through
  sigandset(&run, &pending, &let);
  if (sigisemptyset(&run)) {
    // Taken by another thread as this sleep ended (see sleep_restartable):
    // a main thread takes it as its own unless no signal it lets through
    // has a handler (then it was one Linux discards, or none at all).
    return main_thread() && any_handler(&let, true) ? -EINTR : 0;
  }
  const bool discarded = discarded_at_send(&run);
  deliver_only(run);
  return discarded ? 0 : -EINTR;
}

int ThreadWaiter::sleep_with(struct pollfd* extra, unsigned long n_extra, const timespec* deadline,
                             const sigset_t* mask) noexcept {
  // p[0] the eventfd, then `extra`, then the signalfd when signals are watched.
  pollfd small[8];
  pollfd* p = small;
  std::unique_ptr<pollfd[]> big;
  if (n_extra + 2 > 8) {
    big.reset(new (std::nothrow) pollfd[n_extra + 2]);
    if (!big) return -ENOMEM;
    p = big.get();
  }
  for (unsigned long i = 0; i < n_extra; ++i) p[i + 1] = extra[i];
  vclock::SleepScope vsleep(this, deadline);  // the virtual clock's sleeper while it is on
  for (bool slept = false;; slept = true) {
    // The caller blocks every signal and sleeps with `mask`: a signal that
    // Linux discards (sig_task_ignored) is kept pending meanwhile, and
    // would end the sleep with EINTR.  The signalfd shows it first (on a
    // kernel with epoll_pwait2, as sleep_restartable: qemu-user and older
    // kernels keep the EINTR).
    sigset_t let;
    const bool watch = mask && have_epoll_pwait2() && watch_signals(mask, &let);
    sleeping_.store(true, std::memory_order_seq_cst);
    if (woken_.load(std::memory_order_seq_cst)) {
      sleeping_.store(false, std::memory_order_relaxed);
      return 1;
    }
    timespec rel{};
    const timespec* relp = nullptr;
    if (deadline) {
      if (deadline_passed(*deadline)) {
        sleeping_.store(false, std::memory_order_relaxed);
        // Not slept yet: Linux has not timed out either, and checks for a
        // signal before it would sleep (ep_poll, do_poll).
        if (!slept && !woken() && mask && deliver_unblocked(mask) < 0) return -EINTR;
        return woken() ? 1 : 0;
      }
      rel = rel_capped(*deadline);
      relp = vsleep.active() ? nullptr : &rel;  // virtual time: the clock kicks at the deadline
    }
    note_sleep();
    int r;
    int saved_errno;
    bool sig = false;    // the signalfd is readable
    bool kready = false;  // a descriptor of `extra` is ready
    if (n_extra == 0 && (watch || !kep_.empty()) && have_epoll_pwait2()) {
      epoll_event evs[2];
      {
        OwnSlot::Use u(watch ? rkep_ : kep_);
        r = ::epoll_pwait2(u.fd(), evs, 2, relp, mask);
        saved_errno = errno;
      }
      sleeping_.store(false, std::memory_order_relaxed);
      for (int i = 0; i < r; ++i) sig |= evs[i].data.fd == 1;  // rkep_'s signalfd
    } else {
      OwnSlot::Use u(efd_);
      std::optional<OwnSlot::Use> s;
      if (watch) {
        s.emplace(sfd_);
        p[n_extra + 1] = pollfd{s->fd(), POLLIN, 0};
      }
      p[0] = pollfd{u.fd(), POLLIN, 0};
      r = ::ppoll(p, n_extra + 1 + (watch ? 1 : 0), relp, mask);
      saved_errno = errno;
      sleeping_.store(false, std::memory_order_relaxed);
      if (r > 0 && (p[0].revents & POLLIN)) {
        uint64_t v;
        ssize_t n = ::read(u.fd(), &v, sizeof v);  // drain; stale counts are harmless
        (void)n;
      }
      for (unsigned long i = 1; r > 0 && i <= n_extra; ++i) kready |= p[i].revents != 0;
      sig = watch && r > 0 && (p[n_extra + 1].revents & POLLIN);
    }
    // A handler ran inside the sleep and made a blocking call of its own,
    // whose end set the woken flag (Hold): the signal ends the sleep, and
    // the caller's harvest finds any event that call's sleep took.
    if (r < 0 && saved_errno == EINTR && given_back_.load(std::memory_order_relaxed)) return -EINTR;
    // Kicked or a descriptor ready: the call finishes, and a signal that
    // came meanwhile is delivered as it returns (the caller's mask comes
    // back), as on Linux.
    if (woken() || kready) return 1;
    // EINTR in the kernel: a signal that came between ep_poll's (or
    // do_poll's) look at the signalfd and its check of signal_pending():
    // one the caller's mask let through, never a discarded one; or a stop.
    if (r < 0 && saved_errno == EINTR) return -EINTR;
    if (sig) {
      if (take_signals(let) < 0) return -EINTR;
      continue;  // only signals that Linux discards
    }
    if (r == 0 && (!deadline || deadline_passed(*deadline))) return 0;
    // Spurious: a capped sleep, or an edge or eventfd count left from a
    // kick that raced a timeout.
  }
}

bool ThreadWaiter::restart_setup() noexcept {
  if (!rkep_.empty()) return true;
  sigemptyset(&sfd_mask_);
  const int sfd = park_high(::signalfd(-1, &sfd_mask_, SFD_NONBLOCK | SFD_CLOEXEC));
  if (sfd < 0) return false;
  const int ep = park_high(::epoll_create1(EPOLL_CLOEXEC));
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLET;
  bool ok = false;
  if (ep >= 0) {
    OwnSlot::Use u(efd_);
    ok = ::epoll_ctl(ep, EPOLL_CTL_ADD, u.fd(), &ev) == 0;
  }
  ev.events = EPOLLIN;  // level-triggered: readable while a signal is pending
  ev.data.fd = 1;
  ok = ok && ::epoll_ctl(ep, EPOLL_CTL_ADD, sfd, &ev) == 0;
  if (!ok || !rkep_.empty()) {  // rkep_: made meanwhile by a handler's call nested in this one
    close_own(ep);
    close_own(sfd);
    return !rkep_.empty();
  }
  sfd_.open(sfd, &OwnSlot::write_one, &efd_);
  rkep_.open(ep, &OwnSlot::write_one, &efd_);
  return true;
}

int ThreadWaiter::sleep_restartable(const sigset_t* mask) noexcept {
  // The signals the caller's mask lets through: those end the sleep.
  sigset_t let;
  if (!have_epoll_pwait2() || !watch_signals(mask, &let)) return sleep(nullptr, mask);
  vclock::SleepScope vsleep(this, nullptr);  // the virtual clock's sleeper while it is on
  for (;;) {
    sleeping_.store(true, std::memory_order_seq_cst);
    if (woken_.load(std::memory_order_seq_cst)) {
      sleeping_.store(false, std::memory_order_relaxed);
      return 1;
    }
    epoll_event evs[2];
    // With the caller's mask, so that this thread is one a signal sent to
    // the process may be given to, as on Linux.  A signal that arrives
    // while it sleeps makes sfd_ readable before it could be delivered
    // (signalfd_notify runs before the sender wakes the thread), so
    // epoll_pwait2 returns the event and puts every signal back to blocked:
    // the signal is still pending when we look at it below.
    note_sleep();
    int r;
    int saved_errno;
    {
      OwnSlot::Use u(rkep_);
      r = ::epoll_pwait2(u.fd(), evs, 2, nullptr, mask);
      saved_errno = errno;
    }
    sleeping_.store(false, std::memory_order_relaxed);
    bool sig = false;
    for (int i = 0; i < r; ++i) sig |= evs[i].data.fd == 1;
    // Kicked with no signal seen: the call finishes; a signal that came
    // meanwhile is delivered as it returns (Linux wait_event_interruptible
    // tests its condition before signal_pending()).
    if (!sig && woken()) return 1;
    if (r < 0 && saved_errno == EINTR) {
      // The one case where a handler ran inside the kernel: a signal that
      // came as ep_poll went from its check of the ready list to its
      // check of signal_pending() (or a stop).  Which one is unknown:
      // EINTR if any handler the mask lets through lacks SA_RESTART.
      return handlers_restart(&let, true) ? -kErestartSys : -EINTR;
    }
    if (!sig) continue;  // an edge left by a kick that raced a wakeup
    sigset_t pending;
    sigpending(&pending);
    sigset_t run;  // the pending signals that the caller's mask lets through
    sigandset(&run, &pending, &let);
    if (sigisemptyset(&run)) {
      // A signal sent to the process was pending, and another thread took
      // it as this sleep ended: putting every signal back to blocked hands
      // it to a thread that lets it through (retarget_shared_pending).
      // Linux would have given it to the main thread first (complete_signal
      // tries the group leader), so a main thread takes it as its own
      // (EINTR unless every handler the mask lets through has SA_RESTART,
      // even if the thief's handler has since made the call able to
      // finish); another thread goes on sleeping.
      if (!main_thread()) {
        if (woken()) return 1;
        continue;
      }
      if (!handlers_restart(&let, true)) return -EINTR;
      return woken() ? 1 : -kErestartSys;
    }
    // Kicked as well: the call finishes and the signals are delivered as
    // it returns (the caller's mask comes back), as on Linux.
    if (woken()) return 1;
    const bool restart = handlers_restart(&run);
    deliver_only(run);
    return restart ? -kErestartSys : -EINTR;
  }
}

int WaiterEntry::wake(WaitEntry* e, uint32_t key) noexcept {
  auto* we = reinterpret_cast<WaiterEntry*>(e);
  if (we->waiter->dead()) {
    // Left queued by a thread that does not exist in this (forked)
    // process: nobody will dequeue it, and it must not take an exclusive
    // wakeup from a live sleeper.
    WaitQueue::unlink_self(e);
    return 0;
  }
  if (key && we->mask && !(key & we->mask)) return 0;
  if (we->autoremove) {
    WaitQueue::unlink_self(e);
  } else if (we->waiter->woken()) {
    // Kicked already and not yet running its harvest: this wakeup is not
    // taken, so an exclusive walk moves on to the next sleeper, as Linux's
    // default_wake_function (try_to_wake_up on a task that is already
    // runnable returns 0) did before the 2020 autoremove change.  Returning
    // 1 here concentrated a burst's wakeups on one thread, which made
    // exclusive_autoremove=0 look faster than Linux ever was.
    return 0;
  }
  we->waiter->kick();
  return 1;
}

timespec monotonic_now() noexcept {
  timespec t;
  if (vclock::on()) return vclock::to_ts(vclock::now());
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t;
}

timespec deadline_after(const timespec& rel) noexcept {
  timespec t = monotonic_now();
  // Saturating add (Linux timespec64_add_safe).
  constexpr time_t kMax = static_cast<time_t>(INT64_MAX / 2);
  if (rel.tv_sec >= kMax - t.tv_sec) return timespec{kMax, 0};
  t.tv_sec += rel.tv_sec;
  t.tv_nsec += rel.tv_nsec;
  if (t.tv_nsec >= 1000000000L) {
    t.tv_sec++;
    t.tv_nsec -= 1000000000L;
  }
  return t;
}

timespec deadline_after_ms(long ms) noexcept {
  timespec rel{static_cast<time_t>(ms / 1000), static_cast<long>((ms % 1000) * 1000000L)};
  return deadline_after(rel);
}

bool deadline_passed(const timespec& d) noexcept {
  timespec now = monotonic_now();
  return now.tv_sec > d.tv_sec || (now.tv_sec == d.tv_sec && now.tv_nsec >= d.tv_nsec);
}

timespec time_left(const timespec& d) noexcept {
  return vclock::to_ts(vclock::to_ns(d) - vclock::to_ns(monotonic_now()));  // to_ts: 0 when negative
}

bool have_epoll_pwait2() noexcept {
  // An invalid descriptor: EBADF where the call exists, ENOSYS where not.
  static const bool have = [] {
    static const timespec zero{0, 0};
    const int saved = errno;  // the caller's errno stays as it was
    const bool enosys = ::epoll_pwait2(-1, nullptr, 0, &zero, nullptr) < 0 && errno == ENOSYS;
    errno = saved;
    return !enosys;
  }();
  return have;
}


int deliver_unblocked(const sigset_t* mask) noexcept {
  static const timespec zero{0, 0};
  // Linux ppoll: nfds 0, nothing to wait for; only the signal check runs.
  if (::ppoll(nullptr, 0, &zero, mask) < 0 && errno == EINTR) return -EINTR;
  return 0;
}

namespace {
// True if `mask` already holds every signal pthread_sigmask(SIG_BLOCK) of a
// full set adds: all but SIGKILL, SIGSTOP (never blocked) and the ones libc
// keeps for itself (from 32 up to SIGRTMIN).  Blocking then left the mask
// as it was, and restoring it would change nothing.
bool blocks_everything(const sigset_t& mask) noexcept {
  for (int sig = 1; sig <= SIGRTMAX; ++sig) {
    if (sig == SIGKILL || sig == SIGSTOP || (sig >= 32 && sig < SIGRTMIN)) continue;
    if (sigismember(&mask, sig) != 1) return false;
  }
  return true;
}
}  // namespace

SignalBlock::SignalBlock() noexcept {
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &saved_);
  restore_ = !blocks_everything(saved_);
}

SignalBlock::SignalBlock(const sigset_t* set) noexcept : all_(false) {
  sigset_t block;
  sigemptyset(&block);
  std::memcpy(&block, set, kKernelSigset);  // the kernel's sigset
  pthread_sigmask(SIG_BLOCK, &block, &saved_);
  restore_ = false;
  for (int sig = 1; sig <= SIGRTMAX && !restore_; ++sig) {
    if (sig == SIGKILL || sig == SIGSTOP || (sig >= 32 && sig < SIGRTMIN)) continue;
    restore_ = sigismember(&block, sig) == 1 && sigismember(&saved_, sig) != 1;
  }
}

void SignalBlock::block_all() noexcept {
  if (all_) return;
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);
  restore_ = !blocks_everything(saved_);
  all_ = true;
}

SignalBlock::~SignalBlock() {
  if (restore_) pthread_sigmask(SIG_SETMASK, &saved_, nullptr);
}

}  // namespace uepoll::core
