// kernel_watch.cpp - the kernel side of an epoll instance (see
// kernel_watch.h for what it owns, the wakeup paths and the locks).
#include "epoll/kernel_watch.h"

#include "core/mutex.h"
#include "core/own_fds.h"
#include "core/own_slot.h"

#include "core/waiter.h"
#include "epoll/instance.h"
#include "epoll/item.h"
#include "epoll/topology.h"

#include <cerrno>
#include <climits>
#include <fcntl.h>
#include <new>
#include <poll.h>
#include <unistd.h>
#include <unordered_map>
#include <vector>

namespace uepoll::epoll {

namespace {

// Tags of hub_ entries: the instance's own shadow, or a child's hub
// (the child's File::id() with the top bit set).
constexpr uint64_t kTagShadow = 0;
constexpr uint64_t kChildBit = 1ull << 63;

// id -> instance, for the children's tags read from a hub.  An instance is
// in it from its KernelWatch's creation to its release, while its struct
// count is live, so a lookup can pin it.  Never destroyed (a static
// destructor could race a late thread).
core::Mutex& registry_mutex() {
  static core::Mutex m(core::lock_class::kKernelRegistry);  // constant-initialized
  return m;
}
std::unordered_map<uint64_t, Instance*>& registry() {  // guarded by registry_mutex()
  static auto* r = new std::unordered_map<uint64_t, Instance*>;
  return *r;
}

// False when the map cannot grow (out of memory): nothing changed.
bool registry_add(uint64_t id, Instance* ep) noexcept {
  core::MutexLock g(registry_mutex());
  try {
    registry()[id] = ep;
  } catch (const std::bad_alloc&) {
    return false;
  }
  return true;
}

void registry_remove(uint64_t id) {
  core::MutexLock g(registry_mutex());
  registry().erase(id);
}

// The instance with this id, pinned (struct_get), or nullptr.
Instance* registry_pin(uint64_t id) {
  core::MutexLock g(registry_mutex());
  auto it = registry().find(id);
  if (it == registry().end()) return nullptr;
  it->second->struct_get();
  return it->second;
}

// Linux's answer for ctl on kernel descriptor kfd, asked of an empty kernel
// epoll: EBADF, EPERM (no ->poll), EINVAL (EPOLLEXCLUSIVE misuse), ENOENT
// (MOD, DEL), or 0 for an ADD that would succeed (undone at once).  Used
// before an instance has a shadow, so that a refused ADD creates nothing.
core::Mutex& probe_mutex() {
  static core::Mutex m(core::lock_class::kKernelProbe);  // constant-initialized
  return m;
}
// Preconditions: probe_mutex() held.  An empty kernel epoll, never closed,
// in a slot (a program's dup2 may take its number: core/own_slot.h); each
// use is one epoll_ctl.  nullptr (errno set) when it cannot be made.
core::OwnSlot* probe_slot_locked() {
  static core::OwnSlot slot;  // constant-initialized
  if (slot.empty()) {
    const int fd = core::park_high(::epoll_create1(EPOLL_CLOEXEC));
    if (fd < 0) return nullptr;
    slot.open(fd);
  }
  return &slot;
}

int probe(int op, int kfd, struct epoll_event* ev) {
  // A closed number first: the probe's own creation may take that number.
  if (::fcntl(kfd, F_GETFD) < 0) return -EBADF;
  core::MutexLock g(probe_mutex());
  core::OwnSlot* slot = probe_slot_locked();
  if (!slot) return -errno;
  core::OwnSlot::Use probe_fd(*slot);
  if (::epoll_ctl(probe_fd.fd(), op, kfd, ev) < 0) return -errno;
  if (op == EPOLL_CTL_ADD) ::epoll_ctl(probe_fd.fd(), EPOLL_CTL_DEL, kfd, nullptr);
  return 0;
}

int add_edge(int hub, int top, uint64_t tag) {
  struct epoll_event e{};
  e.events = EPOLLIN | EPOLLET;
  e.data.u64 = tag;
  if (::epoll_ctl(hub, EPOLL_CTL_ADD, top, &e) < 0 && errno != EEXIST) return -errno;
  return 0;
}

}  // namespace

KernelWatch::KernelWatch(Instance* ep, int shadow) noexcept : ep_(ep) {
  sig_.kw = this;
  sig_.ring = false;
  ring_.kw = this;
  ring_.ring = true;
  // Without a doorbell (EMFILE), every sleep is a classic one.  Registered
  // under its number while it is pinned (acquire_signal).
  kick_ = make_kick(shadow, kick_tag());
  if (kick_) {
    kick_writes0_ = kick_->writes();
    core::MutexLock k(kick_mu_);
    kick_key_ = kick_->event_fd();
  }
  direct_.store(kick_ != nullptr, std::memory_order_relaxed);
  kick_in_shadow_.store(kick_ != nullptr, std::memory_order_relaxed);
  // From here on a program's dup2 may move either descriptor.
  shadow_.open(shadow, &KernelWatch::shadow_moving, this);
  if (kick_) kick_->follow_moves(&KernelWatch::kick_moved, this);
}

int KernelWatch::sleep_fds(struct pollfd out[2]) const noexcept {
  out[0] = pollfd{shadow_.peek(), POLLIN, 0};  // a poll only: see shadow_
  const int h = hub_.peek();  // a poll only, as shadow_
  if (h < 0) return 1;
  out[1] = pollfd{h, POLLIN, 0};
  return 2;
}

// ---------------------------------------------------------------------------
// Creation and topology

KernelWatch* KernelWatch::get_or_create(Instance* ep, bool* created, int* err) noexcept {
  *created = false;
  if (KernelWatch* kw = ep->kernel_watch()) return kw;
  // Every kernel descriptor of this file lives high (core/own_fds.h).
  const int sh = core::park_high(::epoll_create1(EPOLL_CLOEXEC));
  if (sh < 0) {
    *err = errno;
    return nullptr;
  }
  auto* kw = new (std::nothrow) KernelWatch(ep, sh);
  if (!kw) {
    core::close_own(sh);
    *err = ENOMEM;
    return nullptr;
  }
  if (!registry_add(ep->id() | kChildBit, ep)) {
    destroy(kw);
    *err = ENOMEM;
    return nullptr;
  }
  KernelWatch* expected = nullptr;
  // seq_cst: a Dekker pair with on_release (stores dead_, then loads
  // kernel_): either it sees us and releases, or we see dead_ below.
  if (!ep->kernel_.compare_exchange_strong(expected, kw, std::memory_order_seq_cst)) {
    destroy(kw);
    return expected;  // another thread won; it registered the same id
  }
  if (ep->dead_.load(std::memory_order_seq_cst)) registry_remove(ep->id() | kChildBit);
  *created = true;
  kick_sleepers(ep);
  return kw;
}

// Sleepers that went to sleep before this instance had a kernel side (or
// a hub) must re-loop and sleep on it: wake them all.  Their reload of
// kernel_/hub_ comes after queueing under ready_lock_, which we take after
// publishing, so each either sees the new state or is in the queue.  The
// same for uep_poll() callers polling the instance: their entries on its
// poll queue (WaiterEntry, beside the parents' items, which are left
// alone) are kicked under wq()'s lock, which they queue under before
// reloading kernel_ (capi/fd_api.cpp do_poll).
// Direct sleepers (the ring entry) are left alone: they watch shadow_
// itself; end_direct() rings them when they must move.
void KernelWatch::kick_sleepers(Instance* ep) noexcept {
  ep->ready_lock_.lock();
  if (ep->waiters_.active_hint()) {
    ep->waiters_.lock();
    ep->waiters_.find_locked([](core::WaitEntry* e) {
      if (e->flags & core::WaitEntry::kWaiter) reinterpret_cast<core::WaiterEntry*>(e)->waiter->kick();
      return false;
    });
    ep->waiters_.unlock();
  }
  ep->ready_lock_.unlock();
  ep->wq().lock();
  ep->wq().find_locked([](core::WaitEntry* e) {
    if (e->flags & core::WaitEntry::kWaiter) reinterpret_cast<core::WaiterEntry*>(e)->waiter->kick();
    return false;
  });
  ep->wq().unlock();
}

// shadow_ joins the hub in finish_direct(), once no direct sleeper is left
// (at once when there is none), so that the hub never sees kick_.  A kernel
// fd made before the hub watches it from now on (its parents' and
// children's edges).
int KernelWatch::ensure_hub(Instance* ep) noexcept {
  bool made = false;
  int rc = 0;
  {
    core::MutexLock g(mu_);
    if (hub_.empty()) {
      const int h = core::park_high(::epoll_create1(EPOLL_CLOEXEC));
      if (h < 0) return -errno;
      hub_.open(h, &KernelWatch::hub_moving, this);
      made = true;
    }
    if (const int k = kfd_.load(std::memory_order_relaxed); k >= 0) rc = kfd_add_hub_locked(k);
  }
  if (made) kick_sleepers(ep);
  if (rc < 0) return rc;
  const int r = end_direct(ep, false);
  return r < 0 ? r : 0;
}

int KernelWatch::kfd_add_hub_locked(int k) noexcept {
  if (hub_.empty() || kfd_has_hub_) return 0;
  core::OwnSlot::Use hub(hub_);
  struct epoll_event e{};
  e.events = EPOLLIN;  // level-triggered, as the rest of kfd_
  if (::epoll_ctl(k, EPOLL_CTL_ADD, hub.fd(), &e) < 0 && errno != EEXIST) return -errno;
  kfd_has_hub_ = true;
  return 0;
}

// A child's hub into p's hub: p's direct sleepers do not watch p's hub, so
// direct sleeping ends and they are rung to go round.
int KernelWatch::add_child_edge(Instance* p, KernelWatch* child, uint64_t tag) noexcept {
  KernelWatch* pk = p->kernel_watch();
  int r;
  {
    core::OwnSlot::Use hub(pk->hub_);
    core::OwnSlot::Use top(child->hub_);
    r = add_edge(hub.fd(), top.fd(), tag);
  }
  if (r == 0) pk->end_direct(p, true);
  return r;
}

int KernelWatch::parent_hub(Instance* p) noexcept {
  bool created = false;
  int err = 0;
  KernelWatch* pk = get_or_create(p, &created, &err);
  if (!pk) return -err;
  const int r = pk->ensure_hub(p);
  if (r < 0 || pk->linked_.load(std::memory_order_acquire)) return r;
  // p's own parents must see its hub (again after a failed attempt:
  // add_edge accepts an edge that is already there).
  if (const int a = attach(p)) return a;
  pk->linked_.store(true, std::memory_order_release);
  return 0;
}

int KernelWatch::attach(Instance* x) noexcept {
  KernelWatch* xk = x->kernel_watch();
  std::vector<Instance*> parents;
  if (topology::parents_of(x, &parents) < 0) return -ENOMEM;
  int rc = 0;
  for (Instance* p : parents) {
    if (rc == 0) {
      rc = parent_hub(p);
      if (rc == 0) rc = add_child_edge(p, xk, x->id() | kChildBit);
    }
    p->struct_put();
  }
  return rc;
}

int KernelWatch::on_nest(Instance* parent, Instance* child) noexcept {
  KernelWatch* ck = child->kernel_watch();
  if (!ck) return 0;  // no kernel side below: nothing to do (the common case)
  if (const int r = ck->ensure_hub(child); r < 0) return r;
  if (const int r = parent_hub(parent); r < 0) return r;
  return add_child_edge(parent, ck, child->id() | kChildBit);
}

// ---------------------------------------------------------------------------
// The C API's entry points

int KernelWatch::ctl(Instance* ep, int op, int kfd, struct epoll_event* ev) noexcept {
  KernelWatch* kw = ep->kernel_watch();
  if (!kw || (op == EPOLL_CTL_ADD && !kw->linked_.load(std::memory_order_acquire))) [[unlikely]]
    return ctl_first(ep, op, kfd, ev);
  core::OwnSlot::Use sh(kw->shadow_);
  return ::epoll_ctl(sh.fd(), op, kfd, ev) < 0 ? -errno : 0;
}

// ctl before ep has a KernelWatch, or an ADD before it is linked to ep's
// parents: out of line, so that every other call keeps a small frame.
[[gnu::noinline]] int KernelWatch::ctl_first(Instance* ep, int op, int kfd, struct epoll_event* ev) noexcept {
  KernelWatch* kw = ep->kernel_watch();
  if (!kw) {
    // Refused calls and MOD/DEL of a descriptor never added create nothing.
    const int r = probe(op, kfd, ev);
    if (r != 0 || op != EPOLL_CTL_ADD) return r;
  }
  // An ADD: the first kernel descriptor (or the first since linking
  // failed): parents of ep must wake on it.  On failure the descriptor is
  // not added, and the next ADD links again.
  {
    topology::Guard tg(topology::Mode::kExclusive, nullptr);
    bool created = false;
    int err = 0;
    kw = get_or_create(ep, &created, &err);
    if (!kw) return -err;
    if (ep->parent_count() > 0) {
      if (const int r = parent_hub(ep); r < 0) return r;
    } else {
      kw->linked_.store(true, std::memory_order_release);  // a later parent links in on_nest
    }
  }
  core::OwnSlot::Use sh(kw->shadow_);
  return ::epoll_ctl(sh.fd(), op, kfd, ev) < 0 ? -errno : 0;
}

bool KernelWatch::is_kernel_epoll(int kfd) noexcept {
  core::MutexLock g(probe_mutex());
  core::OwnSlot* slot = probe_slot_locked();
  if (!slot) return false;
  core::OwnSlot::Use probe_fd(*slot);
  // Linux checks "is an epoll" before looking the target up: ENOENT means
  // it got that far.
  return ::epoll_ctl(kfd, EPOLL_CTL_DEL, probe_fd.fd(), nullptr) < 0 && errno == ENOENT;
}

int KernelWatch::refuse(int op, int kfd, struct epoll_event* ev) noexcept {
  const int r = probe(op, kfd, ev);
  return r == -EBADF || r == -EPERM ? r : -EINVAL;
}

int KernelWatch::kernel_fd(Instance* ep) noexcept {
  if (KernelWatch* kw = ep->kernel_watch()) {
    const int k = kw->kfd_.load(std::memory_order_acquire);
    if (k >= 0 && kw->kfd_given_.load(std::memory_order_acquire)) return k;
  }
  topology::Guard tg(topology::Mode::kExclusive, nullptr);
  KernelWatch* kw;
  if (ep->parent_count() > 0) {
    if (const int r = parent_hub(ep); r < 0) return r;
    kw = ep->kernel_watch();
  } else {
    // No parent: no hub, which each harvest would read for nothing.  One
    // is made, and joins kfd_, when a parent or a child with a kernel side
    // comes (ensure_hub); a later parent links in on_nest, as after ctl.
    bool created = false;
    int err = 0;
    kw = get_or_create(ep, &created, &err);
    if (!kw) return -err;
    kw->linked_.store(true, std::memory_order_release);
  }
  const int k = kw->make_kernel_fd(ep);
  if (k < 0) return k;
  // shadow_ joins kfd_ (now or when direct sleepers leave).  Where the
  // kernel refuses that (ELOOP or EINVAL past its nesting and path limits,
  // ENOMEM, ENOSPC), the call fails and the next one tries again: kfd_ is
  // given out only once it holds shadow_.
  const int r = kw->end_direct(ep, false);
  if (r < 0) return r;
  kw->kfd_given_.store(true, std::memory_order_release);
  return k;
}

int KernelWatch::make_kernel_fd(Instance* ep) noexcept {
  core::MutexLock g(mu_);
  if (const int k = kfd_.load(std::memory_order_relaxed); k >= 0) return k;
  KernelWatch* kw = this;
  int err = 0;
  core::ThreadWaiter* w = core::ThreadWaiter::acquire_signal(&err);
  if (!w) return -err;
  w->drain_event_fd();  // a pooled eventfd may hold a count
  // Level-triggered: readable while the shadow has a ready descriptor, the
  // hub (if any) an untranslated edge, or the signal a count (the shadow
  // is added by finish_direct).
  const int k = core::park_high(::epoll_create1(EPOLL_CLOEXEC));
  int r = k < 0 ? -errno : 0;
  if (r == 0) {
    struct epoll_event e{};
    e.events = EPOLLIN;
    if (::epoll_ctl(k, EPOLL_CTL_ADD, w->event_fd(), &e) < 0) r = -errno;
  }
  if (r == 0) r = kfd_add_hub_locked(k);
  if (r < 0) {
    core::close_own(k);
    w->release_signal();
    return r;
  }
  kw->signal_writes0_ = w->writes();
  kw->signal_.store(w, std::memory_order_release);
  ep->wq().lock();
  ep->wq().add_locked(&kw->sig_.entry);
  ep->wq().unlock();
  // Items queued before the entry was: signal them now.
  ep->ready_lock_.lock();
  const bool avail = ep->events_available_locked();
  ep->ready_lock_.unlock();
  if (avail && kw->request_signal()) w->kick();
  kw->kfd_.store(k, std::memory_order_release);
  return k;
}

// ---------------------------------------------------------------------------
// Signal

// The signal entry runs under Instance::wq()'s lock whenever the instance
// wakes its poll queue (an item was queued); the ring entry under
// waiters_' lock, inside ready_lock_, taking the exclusive wakeup for every
// direct sleeper (the kernel picks one).  kick() defers the eventfd write
// past the SpinLock.
int KernelWatch::signal_wake(core::WaitEntry* e, uint32_t) noexcept {
  auto* se = reinterpret_cast<SignalEntry*>(e);
  KernelWatch* kw = se->kw;
  if (se->ring) {
    // ring_ idle between direct sleeps takes nothing: the walk goes on to
    // the next sleeper.  Every wakeup of waiters_ holds ready_lock_, which
    // guards shadow_sleepers_.
    if (kw->shadow_sleepers_ == 0) return 0;
    kw->ring_locked();
    return 1;
  }
  if (kw->self_wake_) return 0;
  if (kw->request_signal())
    kw->signal_.load(std::memory_order_relaxed)->kick();  // stored before the entry was queued
  return 0;
}

// The signal entry's kind's wake function (core/waitqueue.h).
int kernel_signal_wake(core::WaitEntry* e, uint32_t key) noexcept { return KernelWatch::signal_wake(e, key); }

bool KernelWatch::request_signal(bool always) noexcept {
  uint64_t s = signal_state_.load(std::memory_order_seq_cst);
  do {
    if ((s & kSignalPending) && !always) return false;
  } while (!signal_state_.compare_exchange_weak(s, (s | kSignalPending) + kSignalKick, std::memory_order_seq_cst,
                                                std::memory_order_seq_cst));
  return true;
}

uint64_t KernelWatch::signal_writes() const noexcept {
  const core::ThreadWaiter* w = signal_.load(std::memory_order_acquire);  // pairs with make_kernel_fd's store
  return w ? w->writes() - signal_writes0_ : 0;
}

// Drains the signal when the ready list is empty and no harvest runs (a
// running one may put level-triggered items back).  The pending bit must
// never stay set over an empty eventfd: a request would then write
// nothing, and the kernel loop would sleep through the item.
// - The writes asked for before the bit is cleared may not have landed:
//   kick() defers its write past the requester's SpinLock.  A read before
//   such a write would leave the eventfd readable with the bit clear, and
//   the kernel loop would find it ready, harvest nothing and spin until
//   the next request.  So the drain waits until as many writes have landed
//   as the state had counted, and the read takes them all.
// - A request after the clear sets the bit again, and our read may take
//   its write; an item queued while we drain is linked before its wake
//   runs, so the re-check after the read sees it.  Either way we ask for
//   one more write (at worst one spurious wakeup of the kernel loop).
void KernelWatch::maybe_drain(Instance* ep) noexcept {
  uint64_t s = signal_state_.load(std::memory_order_seq_cst);
  if (!(s & kSignalPending)) return;
  ep->ready_lock_.lock();
  bool avail = ep->events_available_locked();
  ep->ready_lock_.unlock();
  if (avail) return;
  core::ThreadWaiter* w = signal_.load(std::memory_order_acquire);
  // Only a drain clears the bit: a failed CAS means another drain cleared
  // it (that one takes the writes counted in s), and maybe a request set it
  // again since, whose write wakes the kernel loop to drain it.
  if (!signal_state_.compare_exchange_strong(s, s - kSignalPending, std::memory_order_seq_cst)) return;
  const uint64_t asked = s / kSignalKick;
  w->await_writes(signal_writes0_ + asked);
  w->drain_event_fd();
  const bool requested = signal_state_.load(std::memory_order_seq_cst) / kSignalKick != asked;
  ep->ready_lock_.lock();
  avail = ep->events_available_locked();
  ep->ready_lock_.unlock();
  if (avail || requested) {
    request_signal(true);
    w->kick();
  }
}

// ---------------------------------------------------------------------------
// Harvest, poll, sleep

int KernelWatch::kernel_events(Instance* ep, struct epoll_event* evs, int maxevents) noexcept {
  int r;
  {
    core::OwnSlot::Use sh(shadow_);
    r = ::epoll_wait(sh.fd(), evs, maxevents, 0);
  }
  if (r <= 0) return r < 0 ? -errno : r;
  bool saw = false;
  const int n = filter_kick(evs, r, &saw);
  if (saw) kick_consumed(ep, false);
  return n;
}

int KernelWatch::harvest(Instance* ep, struct epoll_event* evs, int maxevents, bool will_sleep) noexcept {
  if (will_sleep) {
    // Before a blocking wait's first sleep: if user space has nothing, ask
    // the kernel side through the sleep itself (epoll_pwait2 returns its
    // events, ppoll returns at once when it is ready).
    ep->ready_lock_.lock();
    const bool avail = ep->events_available_locked();
    ep->ready_lock_.unlock();
    if (!avail) return 0;
  }
  if (!hub_.empty()) process_hub(ep, 0);
  const bool kfirst = kernel_first_.load(std::memory_order_relaxed);
  int n = kfirst ? kernel_events(ep, evs, maxevents) : ep->send_events(evs, maxevents);
  if (n < 0) return n;  // EFAULT with nothing copied
  if (n < maxevents) {
    const int more = kfirst ? ep->send_events(evs + n, maxevents - n) : kernel_events(ep, evs + n, maxevents - n);
    if (more > 0) n += more;
    else if (more < 0 && n == 0) return more;
  }
  if (n == maxevents) kernel_first_.store(!kfirst, std::memory_order_relaxed);
  if (signal_.load(std::memory_order_acquire)) maybe_drain(ep);
  return n;
}

bool KernelWatch::ready(Instance* ep) noexcept {
  if (!hub_.empty()) process_hub(ep, 0);
  return shadow_ready(ep);
}

int KernelWatch::sleep(core::ThreadWaiter* w, const timespec* deadline, const sigset_t* mask) noexcept {
  struct pollfd p[2];
  const int n = sleep_fds(p);
  return w->sleep_with(p, static_cast<unsigned long>(n), deadline, mask);
}

// Reads the hub's edges.  The shadow's: an event of ep's own kernel
// descriptors, which Linux would announce on ep's poll queue
// (ep_poll_safewake): wake it, once, for all of ep's parents.  A child's:
// translate the child's hub the same way (its wakeups reach ep's items
// through the child's wait queue).  Each edge is read by one harvester
// only, so each event wakes each parent once, as in Linux.
void KernelWatch::process_hub(Instance* ep, int depth) noexcept {
  constexpr int kBatch = 32;
  struct epoll_event buf[kBatch];
  int r;
  do {
    {
      core::OwnSlot::Use hub(hub_);
      r = ::epoll_wait(hub.fd(), buf, kBatch, 0);
    }
    bool self = false;
    for (int i = 0; i < r; ++i) {
      if (buf[i].data.u64 == kTagShadow)
        self = true;
      else if (depth <= kMaxNests)
        wake_child(ep, buf[i].data.u64, depth);
    }
    if (self) wake_self(ep);
  } while (r == kBatch);
}

// The shadow's edge: Linux's ep_poll_safewake, for ep's parents and its
// pollers.  A kernel loop on kfd_ is not signalled: kfd_ holds shadow_
// level-triggered, so it is readable for these events already, and the
// signal would cost it an eventfd write and read per kernel event.
void KernelWatch::wake_self(Instance* ep) noexcept {
  const bool quiet = kfd_has_shadow_.load(std::memory_order_relaxed);
  ep->wq().lock();
  self_wake_ = quiet;
  ep->wq().wake_locked(EPOLLIN);
  self_wake_ = false;
  ep->wq().unlock();
}

// An edge of child `tag` in ep's hub: translate the child's hub.  An edge
// of a child that ep no longer watches is unlinked (lazily: DEL of the item
// does not touch the hub).
void KernelWatch::wake_child(Instance* ep, uint64_t tag, int depth) noexcept {
  Instance* c = registry_pin(tag);
  if (!c) return;  // released; its hub leaves ours when it is freed
  KernelWatch* ck = c->kernel_watch();
  bool watched = false;
  c->wq().lock();
  c->wq().find_locked([&](core::WaitEntry* e) {
    watched = (e->flags & core::WaitEntry::kItem) && Item::from_wait(e)->ep == ep;
    return watched;
  });
  c->wq().unlock();
  if (!ck->hub_.empty()) {
    if (watched) {
      ck->process_hub(c, depth + 1);
    } else {
      // Found by the number it was added under: after a move of the
      // child's hub that is another number, and the edge stays (each of
      // its edges is then dropped here, unwatched).
      core::OwnSlot::Use hub(hub_);
      core::OwnSlot::Use ch(ck->hub_);
      ::epoll_ctl(hub.fd(), EPOLL_CTL_DEL, ch.fd(), nullptr);
    }
  }
  c->struct_put();
}

// ---------------------------------------------------------------------------
// Teardown

void KernelWatch::release(Instance* ep) noexcept {
  registry_remove(ep->id() | kChildBit);
  ep->ready_lock_.lock();
  disarm_ring_locked(ep);  // no sleeper is left: each held a reference
  ep->ready_lock_.unlock();
  core::MutexLock g(mu_);
  if (signal_.load(std::memory_order_relaxed)) {
    ep->wq().lock();
    if (sig_.entry.queued()) ep->wq().remove_locked(&sig_.entry);
    ep->wq().unlock();
  }
}

void KernelWatch::destroy(KernelWatch* kw) noexcept {
  if (!kw) return;
  {
    core::MutexLock k(kw->kick_mu_);
    kw->kick_in_shadow_.store(false, std::memory_order_relaxed);  // kick_moved does nothing now
  }
  core::close_own(kw->kfd_.load(std::memory_order_acquire));
  kw->hub_.close();
  kw->shadow_.close();  // after a move in progress, whose kick still uses ep_
  if (core::ThreadWaiter* w = kw->signal_.load(std::memory_order_acquire)) w->release_signal();
  if (kw->kick_) kw->kick_->release_signal();
  delete kw;
}

}  // namespace uepoll::epoll
