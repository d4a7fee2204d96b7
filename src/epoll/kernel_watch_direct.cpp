// kernel_watch_direct.cpp - the direct sleep of an instance with kernel
// descriptors: one epoll_pwait2 (epoll_pwait with no deadline) on the shadow epoll per sleep, woken by
// kernel events (the kernel's own exclusive wakeup of shadow_'s sleepers)
// and by user-space events through the doorbell kick_ (see kernel_watch.h
// for the protocol; docs/design.md section 8 for why no wakeup is lost).
//
// Locks: the instance's ready_lock_ (12) for the sleepers' bookkeeping,
// and waiters_' lock (13) inside it to queue and dequeue ring_ (when direct
// sleeping starts and ends, or to move it ahead of classic sleepers); mu_ (7) then kick_mu_ (a leaf) to take kick_ out
// of shadow_; kick_mu_ alone to mask kick_ while poll() reads shadow_.
// System calls only with no lock or core::Mutexes held.
#include "epoll/instance.h"
#include "epoll/kernel_watch.h"

#include "core/internal_call.h"
#include "core/waiter.h"

#include <cerrno>
#include <poll.h>
#include <unistd.h>

namespace uepoll::epoll {

namespace {

constexpr uint32_t kKickOn = EPOLLIN | EPOLLET;
constexpr uint32_t kKickMasked = EPOLLET;  // no event of an eventfd passes

bool poll_readable(int fd) noexcept {
  struct pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, 0) > 0 && (p.revents & POLLIN) != 0;
}

int kick_ctl(int shadow, int op, int fd, uint32_t events, uint64_t tag) noexcept {
  struct epoll_event e{};
  e.events = events;
  e.data.u64 = tag;
  return ::epoll_ctl(shadow, op, fd, &e);
}

}  // namespace

core::ThreadWaiter* KernelWatch::make_kick(int shadow, uint64_t tag) noexcept {
  int err = 0;
  core::ThreadWaiter* w = core::ThreadWaiter::acquire_signal(&err);
  if (!w) return nullptr;
  w->drain_event_fd();  // a pooled eventfd may hold a count
  if (kick_ctl(shadow, EPOLL_CTL_ADD, w->event_fd(), kKickOn, tag) < 0) {
    w->release_signal();
    return nullptr;
  }
  return w;
}

namespace {

// filter_kick's body, inlined into sleep_direct (no call per sleep).
// `kick` is whether a doorbell exists.
[[gnu::always_inline]] inline int drop_kick(struct epoll_event* evs, int n, uint64_t tag, bool kick,
                                            bool* saw) noexcept {
  int k = 0;
  for (int i = 0; i < n; ++i) {
    if (evs[i].data.u64 == tag && evs[i].events == EPOLLIN && kick) {
      *saw = true;
      continue;
    }
    if (k != i) evs[k] = evs[i];
    ++k;
  }
  return k;
}

}  // namespace

// A program's dup2 moves shadow_ (core/own_slot.h), called by the mover
// until no use holds the old number.  A direct sleeper is counted before
// it reads the number, so a ring reaches it (one per call while a ring is
// pending: the mover calls again); classic sleepers and uep_poll callers
// are queued before they read it, so a kick reaches them.  Each goes round
// and reads the slot again.
void KernelWatch::shadow_moving(void* p) noexcept {
  auto* kw = static_cast<KernelWatch*>(p);
  Instance* ep = kw->ep_;
  ep->ready_lock_.lock();
  if (kw->shadow_sleepers_ > 0) kw->ring_locked();
  ep->ready_lock_.unlock();
  kick_sleepers(ep);
}

// hub_ moves: only classic sleepers and uep_poll callers watch it.
void KernelWatch::hub_moving(void* p) noexcept { kick_sleepers(static_cast<KernelWatch*>(p)->ep_); }

// kick_'s eventfd moved from `from` to `to` (both open now): its
// registration in shadow_ moves with it, so that the MOD of shadow_ready and
// the DEL of finish_direct find it.  Two registrations for a moment: a
// ring between the ADD and the DEL may be seen twice, which a second
// consumer takes as a ring with nothing behind it.
void KernelWatch::kick_moved(void* p, int from, int to) noexcept {
  auto* kw = static_cast<KernelWatch*>(p);
  core::MutexLock k(kw->kick_mu_);
  if (!kw->kick_in_shadow_.load(std::memory_order_relaxed)) return;
  core::OwnSlot::Use sh(kw->shadow_);
  if (kick_ctl(sh.fd(), EPOLL_CTL_ADD, to, kKickOn, kw->kick_tag()) < 0) return;  // ENOMEM: stays keyed by from
  ::epoll_ctl(sh.fd(), EPOLL_CTL_DEL, from, nullptr);
  kw->kick_key_ = to;
}

int KernelWatch::filter_kick(struct epoll_event* evs, int n, bool* saw) const noexcept {
  return drop_kick(evs, n, kick_tag(), kick_ != nullptr, saw);
}

void KernelWatch::ring_locked() noexcept {
  if (ring_pending_) return;
  ring_pending_ = true;
  ++ring_gen_;
  kick_->kick();  // always writes (acquire_signal); deferred past the SpinLock
}

void KernelWatch::kick_consumed(Instance* ep, bool harvests) noexcept {
  // Read first, then clear: kick_ is readable only while ring_pending_ (no
  // ring writes while it is set), so nobody sees a doorbell left behind.
  // The pending ring's write may still wait for its waker's SpinLock
  // release (the last sleeper can get here first): wait for it, so that
  // the read takes it.  Another reader may have cleared the ring and a
  // new one started meanwhile: then read that one too before clearing.
  for (;;) {
    ep->ready_lock_.lock();
    const uint64_t rings = ring_gen_;
    ep->ready_lock_.unlock();
    kick_->await_writes(kick_writes0_ + rings);
    kick_->drain_event_fd();
    ep->ready_lock_.lock();
    if (ring_gen_ == rings) break;
    ep->ready_lock_.unlock();
  }
  ring_pending_ = false;
  if (!direct_.load(std::memory_order_relaxed) && shadow_sleepers_ > 0)
    ring_locked();  // direct sleeping ends: every direct sleeper must go round
  else if (!harvests && ep->events_available_locked())
    ep->wake_one_waiter_locked();  // what the doorbell announced is still there
  ep->ready_lock_.unlock();
}

// poll(shadow_) without kick_: exact when no ring was in flight during the
// poll (kick_ is then unreadable, and an unreadable item is no readiness);
// else kick_ is masked for the poll, under kick_mu_.  Unmasking re-arms it
// if it is still readable, which wakes one direct sleeper: the ring is
// still pending, and that sleeper consumes it.
bool KernelWatch::shadow_ready(Instance* ep) noexcept {
  core::OwnSlot::Use sh(shadow_);
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (!kick_in_shadow_.load(std::memory_order_acquire)) return poll_readable(sh.fd());
    ep->ready_lock_.lock();
    const bool pending = ring_pending_;
    const uint64_t gen = ring_gen_;
    ep->ready_lock_.unlock();
    if (pending) break;
    const bool r = poll_readable(sh.fd());
    ep->ready_lock_.lock();
    const bool quiet = ring_gen_ == gen;
    ep->ready_lock_.unlock();
    if (quiet) return r;
  }
  core::MutexLock g(kick_mu_);
  if (!kick_in_shadow_.load(std::memory_order_relaxed)) return poll_readable(sh.fd());
  kick_ctl(sh.fd(), EPOLL_CTL_MOD, kick_key_, kKickMasked, kick_tag());
  const bool r = poll_readable(sh.fd());
  kick_ctl(sh.fd(), EPOLL_CTL_MOD, kick_key_, kKickOn, kick_tag());
  return r;
}

// ring_ stays on waiters_ between direct sleeps (idle: signal_wake takes
// no wakeup through it while shadow_sleepers_ is 0), so that a direct
// sleep takes waiters_' lock only when classic sleepers share the queue.
// A first direct sleeper puts it at the head (Linux: newest sleeper
// first), where it already is when it is alone on the queue.  Every change
// of waiters_ is made under ready_lock_, so its size is exact here.
void KernelWatch::arm_ring_locked(Instance* ep) noexcept {
  ep->ready_lock_.assert_held();
  if (ring_.entry.queued() && ep->waiters_.size_hint() == 1) return;
  ep->waiters_.lock_nested(ep->ready_lock_);
  if (ring_.entry.queued()) ep->waiters_.remove_locked(&ring_.entry);
  ep->waiters_.add_exclusive_head_locked(&ring_.entry);
  ep->waiters_.unlock_nested(ep->ready_lock_);
}

void KernelWatch::disarm_ring_locked(Instance* ep) noexcept {
  ep->ready_lock_.assert_held();
  if (!ring_.entry.queued()) return;
  ep->waiters_.lock_nested(ep->ready_lock_);
  ep->waiters_.remove_locked(&ring_.entry);
  ep->waiters_.unlock_nested(ep->ready_lock_);
}

int KernelWatch::end_direct(Instance* ep, bool wake) noexcept {
  ep->ready_lock_.lock();
  direct_.store(false, std::memory_order_relaxed);
  const int left = shadow_sleepers_;
  if (wake && left > 0) ring_locked();
  if (left == 0) disarm_ring_locked(ep);  // else the last sleeper to leave does
  ep->ready_lock_.unlock();
  return left == 0 ? finish_direct(ep) : 0;
}

int KernelWatch::finish_direct(Instance* ep) noexcept {
  core::MutexLock g(mu_);
  core::OwnSlot::Use sh(shadow_);
  if (kick_in_shadow_.load(std::memory_order_relaxed)) {
    {
      core::MutexLock k(kick_mu_);
      ::epoll_ctl(sh.fd(), EPOLL_CTL_DEL, kick_key_, nullptr);
      kick_in_shadow_.store(false, std::memory_order_release);
    }
    // A ring nobody consumed: its wakeup goes to the classic sleepers.
    ep->ready_lock_.lock();
    if (ring_pending_) {
      ring_pending_ = false;
      if (ep->events_available_locked()) ep->wake_one_waiter_locked();
    }
    ep->ready_lock_.unlock();
  }
  int rc = 0;
  if (!hub_.empty() && !hub_has_shadow_) {
    core::OwnSlot::Use hub(hub_);
    struct epoll_event e{};
    e.events = EPOLLIN | EPOLLET;
    e.data.u64 = 0;  // kTagShadow (kernel_watch.cpp)
    if (::epoll_ctl(hub.fd(), EPOLL_CTL_ADD, sh.fd(), &e) < 0 && errno != EEXIST)
      rc = -errno;
    else
      hub_has_shadow_ = true;
  }
  const int k = kfd_.load(std::memory_order_relaxed);
  if (rc == 0 && k >= 0 && !kfd_has_shadow_.load(std::memory_order_relaxed)) {
    struct epoll_event e{};
    e.events = EPOLLIN;  // level-triggered, as the rest of kfd_
    if (::epoll_ctl(k, EPOLL_CTL_ADD, sh.fd(), &e) < 0 && errno != EEXIST)
      rc = -errno;
    else
      kfd_has_shadow_.store(true, std::memory_order_relaxed);
  }
  return rc;
}

int KernelWatch::sleep_direct(Instance* ep, struct epoll_event* evs, int maxevents, const timespec* deadline,
                              const sigset_t* mask) noexcept {
  ep->ready_lock_.lock();
  if (kick_->dead()) {
    // A forked child's copy of the parent's instance: its doorbell is the
    // parent's, so this process sleeps the classic way from now on.
    direct_.store(false, std::memory_order_relaxed);
  }
  if (!direct_.load(std::memory_order_relaxed)) {
    if (shadow_sleepers_ == 0) disarm_ring_locked(ep);  // (the forked child's copy)
    ep->ready_lock_.unlock();
    return kNotDirect;
  }
  if (ep->events_available_locked()) {
    ep->ready_lock_.unlock();
    return kAgain;
  }
  // From here until this sleeper is uncounted below, a user-space wakeup
  // (made under ready_lock_) finds ring_ queued and counted, and rings.
  if (shadow_sleepers_++ == 0) arm_ring_locked(ep);
  ep->ready_lock_.unlock();

  timespec rel{};
  const timespec* relp = nullptr;
  if (deadline) {
    const timespec now = core::monotonic_now();
    time_t sec = deadline->tv_sec - now.tv_sec;
    long nsec = deadline->tv_nsec - now.tv_nsec;
    if (nsec < 0) {
      --sec;
      nsec += 1000000000L;
    }
    if (sec >= 0) rel = timespec{sec, nsec};
    relp = &rel;
  }
  core::note_sleep();
  int r;
  {
    // A move meanwhile rings (shadow_moving): this sleeper is counted.
    core::OwnSlot::Use sh(shadow_);
    r = relp ? core::kernel_epoll_pwait2(sh.fd(), evs, maxevents, relp, mask)
             : core::kernel_epoll_pwait(sh.fd(), evs, maxevents, -1, mask);
  }
  // Linux ep_poll checks signal_pending() (after the ready list) before
  // every sleep, also one whose time is already up; epoll_pwait2 with a
  // zero timeout does not.
  if (r == 0 && relp && rel.tv_sec == 0 && rel.tv_nsec == 0 && mask && core::deliver_unblocked(mask) < 0) {
    r = -1;
    errno = EINTR;
  }
  const int err = r < 0 ? errno : 0;  // read before the calls below
  bool saw = false;
  const int k = r > 0 ? drop_kick(evs, r, kick_tag(), kick_ != nullptr, &saw) : 0;  // filter_kick

  ep->ready_lock_.lock();
  // The last sleeper leaves ring_ queued, idle, while direct sleeping goes on.
  const bool last = --shadow_sleepers_ == 0;
  // A ring left for nobody: read it back, as a consumer would.
  const bool consume = saw || (last && ring_pending_);
  const bool finish = last && !direct_.load(std::memory_order_relaxed);
  if (finish) disarm_ring_locked(ep);
  ep->ready_lock_.unlock();
  const bool harvests = saw && k < maxevents;
  if (consume) kick_consumed(ep, harvests);
  if (finish) finish_direct(ep);

  int n = k;
  if (harvests) {
    const int m = ep->send_events(evs + k, maxevents - k);
    if (m > 0) n += m;
    else if (m < 0 && n == 0) return m;
  }
  if (n > 0) return n;
  if (r < 0) return err == EINTR ? -EINTR : -err;
  if (r == 0 && deadline && core::deadline_passed(*deadline)) return kTimedOut;
  return 0;
}

}  // namespace uepoll::epoll
