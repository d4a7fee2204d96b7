// kernel_watch.cpp - the kernel side of an epoll instance (see
// kernel_watch.h for what it owns, the wakeup paths and the locks).
#include "epoll/kernel_watch.h"

#include "core/waiter.h"
#include "epoll/instance.h"
#include "epoll/item.h"
#include "epoll/topology.h"

#include <cerrno>
#include <climits>
#include <new>
#include <poll.h>
#include <unistd.h>
#include <unordered_map>
#include <vector>

namespace uepoll::epoll {

namespace {

// Tags of hub_ entries.  Children are tagged with their File::id() with
// the top bit set, so the three kinds never collide.
constexpr uint64_t kTagShadow = 0;
constexpr uint64_t kTagSignal = 1;
constexpr uint64_t kChildBit = 1ull << 63;

// id -> instance, for the children's tags read from a hub.  An instance is
// in it from its KernelWatch's creation to its release, while its struct
// count is live, so a lookup can pin it.  Never destroyed (a static
// destructor could race a late thread).
std::mutex& registry_mutex() {
  static std::mutex* m = new std::mutex;
  return *m;
}
std::unordered_map<uint64_t, Instance*>& registry() {  // guarded by registry_mutex()
  static auto* r = new std::unordered_map<uint64_t, Instance*>;
  return *r;
}

void registry_remove(uint64_t id) {
  std::lock_guard<std::mutex> g(registry_mutex());
  registry().erase(id);
}

// The instance with this id, pinned (struct_get), or nullptr.
Instance* registry_pin(uint64_t id) {
  std::lock_guard<std::mutex> g(registry_mutex());
  auto it = registry().find(id);
  if (it == registry().end()) return nullptr;
  it->second->struct_get();
  return it->second;
}

// Linux's answer for ctl on kernel descriptor kfd, asked of an empty kernel
// epoll: EBADF, EPERM (no ->poll), EINVAL (EPOLLEXCLUSIVE misuse), ENOENT
// (MOD, DEL), or 0 for an ADD that would succeed (undone at once).  Used
// before an instance has a shadow, so that a refused ADD creates nothing.
int probe(int op, int kfd, struct epoll_event* ev) {
  static std::mutex* m = new std::mutex;
  static int probe_fd = -1;  // guarded by *m; never closed
  std::lock_guard<std::mutex> g(*m);
  if (probe_fd < 0) {
    probe_fd = ::epoll_create1(EPOLL_CLOEXEC);
    if (probe_fd < 0) return -errno;
  }
  if (::epoll_ctl(probe_fd, op, kfd, ev) < 0) return -errno;
  if (op == EPOLL_CTL_ADD) ::epoll_ctl(probe_fd, EPOLL_CTL_DEL, kfd, nullptr);
  return 0;
}

// Instances watching x (items of theirs on x's wait queue), pinned.
std::vector<Instance*> parents_pinned(Instance* x) {
  std::vector<Instance*> out;
  x->wq().lock();
  x->wq().find_locked([&](core::WaitEntry* e) {
    if (e->flags & core::WaitEntry::kItem) {
      Instance* p = Item::from_wait(e)->ep;
      p->struct_get();
      out.push_back(p);
    }
    return false;
  });
  x->wq().unlock();
  return out;
}

int add_edge(int hub, int top, uint64_t tag) {
  struct epoll_event e{};
  e.events = EPOLLIN | EPOLLET;
  e.data.u64 = tag;
  if (::epoll_ctl(hub, EPOLL_CTL_ADD, top, &e) < 0 && errno != EEXIST) return -errno;
  return 0;
}

}  // namespace

KernelWatch::KernelWatch(int shadow) noexcept : shadow_(shadow) {
  sig_.entry.fn = &KernelWatch::signal_wake;
  sig_.kw = this;
}

int KernelWatch::sleep_fd() const noexcept {
  const int h = hub_.load(std::memory_order_acquire);
  return h >= 0 ? h : shadow_;
}

// ---------------------------------------------------------------------------
// Creation and topology

KernelWatch* KernelWatch::get_or_create(Instance* ep, bool* created, int* err) noexcept {
  *created = false;
  if (KernelWatch* kw = ep->kernel_watch()) return kw;
  const int sh = ::epoll_create1(EPOLL_CLOEXEC);
  if (sh < 0) {
    *err = errno;
    return nullptr;
  }
  auto* kw = new (std::nothrow) KernelWatch(sh);
  if (!kw) {
    ::close(sh);
    *err = ENOMEM;
    return nullptr;
  }
  {
    std::lock_guard<std::mutex> g(registry_mutex());
    registry()[ep->id() | kChildBit] = ep;
  }
  KernelWatch* expected = nullptr;
  // seq_cst: a Dekker pair with on_release (stores dead_, then loads
  // kernel_): either it sees us and releases, or we see dead_ below.
  if (!ep->kernel_.compare_exchange_strong(expected, kw, std::memory_order_seq_cst)) {
    ::close(sh);
    delete kw;
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
// publishing, so each either sees the new state or is in the queue.
void KernelWatch::kick_sleepers(Instance* ep) noexcept {
  ep->ready_lock_.lock();
  if (ep->waiters_.active_hint()) {
    ep->waiters_.lock();
    ep->waiters_.wake_locked(0, INT_MAX);
    ep->waiters_.unlock();
  }
  ep->ready_lock_.unlock();
}

int KernelWatch::ensure_hub(Instance* ep, bool* created) noexcept {
  *created = false;
  int h = hub_.load(std::memory_order_acquire);
  if (h >= 0) return h;
  {
    std::lock_guard<std::mutex> g(mu_);
    h = hub_.load(std::memory_order_relaxed);
    if (h >= 0) return h;
    h = ::epoll_create1(EPOLL_CLOEXEC);
    if (h < 0) return -errno;
    struct epoll_event e{};
    e.events = EPOLLIN;
    e.data.u64 = kTagShadow;
    if (::epoll_ctl(h, EPOLL_CTL_ADD, shadow_, &e) < 0) {
      const int err = errno;
      ::close(h);
      return -err;
    }
    hub_.store(h, std::memory_order_release);
  }
  *created = true;
  kick_sleepers(ep);
  return h;
}

int KernelWatch::link_up(Instance* x, int top, uint64_t tag) noexcept {
  std::vector<Instance*> parents = parents_pinned(x);
  int rc = 0;
  for (Instance* p : parents) {
    if (rc == 0) {
      bool pc = false;
      int err = 0;
      KernelWatch* pk = get_or_create(p, &pc, &err);
      if (!pk) {
        rc = -err;
      } else {
        bool hc = false;
        const int hub = pk->ensure_hub(p, &hc);
        if (hub < 0) rc = hub;
        if (rc == 0 && hc) rc = link_up(p, hub, p->id() | kChildBit);  // p's parents see p
        if (rc == 0) rc = add_edge(hub, top, tag);
      }
    }
    p->struct_put();
  }
  return rc;
}

int KernelWatch::on_nest(Instance* parent, Instance* child) noexcept {
  KernelWatch* ck = child->kernel_watch();
  if (!ck) return 0;  // no kernel side below: nothing to do (the common case)
  bool pc = false;
  int err = 0;
  KernelWatch* pk = get_or_create(parent, &pc, &err);
  if (!pk) return -err;
  bool hc = false;
  const int hub = pk->ensure_hub(parent, &hc);
  if (hub < 0) return hub;
  if (hc) {
    if (const int r = link_up(parent, hub, parent->id() | kChildBit)) return r;
  }
  return add_edge(hub, ck->sleep_fd(), child->id() | kChildBit);
}

// ---------------------------------------------------------------------------
// The C API's entry points

int KernelWatch::ctl(Instance* ep, int op, int kfd, struct epoll_event* ev) noexcept {
  KernelWatch* kw = ep->kernel_watch();
  if (!kw) {
    // Refused calls and MOD/DEL of a descriptor never added create nothing.
    const int r = probe(op, kfd, ev);
    if (r != 0 || op != EPOLL_CTL_ADD) return r;
    // The first kernel descriptor: parents of ep must wake on it.
    topology::Guard tg(topology::Mode::kExclusive, nullptr);
    bool created = false;
    int err = 0;
    kw = get_or_create(ep, &created, &err);
    if (!kw) return -err;
    if (created && ep->parent_count() > 0) {
      if (const int r2 = link_up(ep, kw->sleep_fd(), ep->id() | kChildBit)) return r2;
    }
  }
  return ::epoll_ctl(kw->shadow_, op, kfd, ev) < 0 ? -errno : 0;
}

int KernelWatch::refuse(int op, int kfd, struct epoll_event* ev) noexcept {
  const int r = probe(op, kfd, ev);
  return r == -EBADF || r == -EPERM ? r : -EINVAL;
}

int KernelWatch::kernel_fd(Instance* ep) noexcept {
  if (KernelWatch* kw = ep->kernel_watch())
    if (kw->signal_.load(std::memory_order_acquire)) return kw->hub_.load(std::memory_order_acquire);
  topology::Guard tg(topology::Mode::kExclusive, nullptr);
  bool created = false;
  int err = 0;
  KernelWatch* kw = get_or_create(ep, &created, &err);
  if (!kw) return -err;
  bool hc = false;
  const int hub = kw->ensure_hub(ep, &hc);
  if (hub < 0) return hub;
  if (hc) {
    if (const int r = link_up(ep, hub, ep->id() | kChildBit)) return r;
  }
  std::lock_guard<std::mutex> g(kw->mu_);
  if (kw->signal_.load(std::memory_order_relaxed)) return hub;
  core::ThreadWaiter* w = core::ThreadWaiter::acquire_signal(&err);
  if (!w) return -err;
  uint64_t stale;
  ssize_t unused = ::read(w->event_fd(), &stale, sizeof stale);  // a pooled eventfd may hold a count
  (void)unused;
  struct epoll_event e{};
  e.events = EPOLLIN;
  e.data.u64 = kTagSignal;
  if (::epoll_ctl(hub, EPOLL_CTL_ADD, w->event_fd(), &e) < 0) {
    err = errno;
    w->release_signal();
    return -err;
  }
  kw->signal_.store(w, std::memory_order_release);
  ep->wq().lock();
  ep->wq().add_locked(&kw->sig_.entry);
  ep->wq().unlock();
  // Items queued before the entry was: signal them now.
  ep->ready_lock_.lock();
  const bool avail = ep->events_available_locked();
  ep->ready_lock_.unlock();
  if (avail && !kw->pending_.exchange(true, std::memory_order_seq_cst)) w->kick();
  return hub;
}

// ---------------------------------------------------------------------------
// Signal

// Runs under Instance::wq()'s lock whenever the instance wakes its poll
// queue (an item was queued).  kick() defers the eventfd write past the
// SpinLock.
int KernelWatch::signal_wake(core::WaitEntry* e, uint32_t) noexcept {
  KernelWatch* kw = reinterpret_cast<SignalEntry*>(e)->kw;
  if (!kw->pending_.exchange(true, std::memory_order_seq_cst))
    kw->signal_.load(std::memory_order_relaxed)->kick();  // stored before the entry was queued
  return 0;
}

// Drains the signal when the ready list is empty and no harvest runs (a
// running one may put level-triggered items back).  An item queued while
// we drain: its wake either found pending_ still true, so it was linked
// before our store and the re-check sees it, or wrote after our store and
// the re-check (or the count, if our read came first) keeps the signal.
void KernelWatch::maybe_drain(Instance* ep) noexcept {
  if (!pending_.load(std::memory_order_seq_cst)) return;
  ep->ready_lock_.lock();
  bool avail = ep->events_available_locked();
  ep->ready_lock_.unlock();
  if (avail) return;
  core::ThreadWaiter* w = signal_.load(std::memory_order_acquire);
  pending_.store(false, std::memory_order_seq_cst);
  uint64_t v;
  ssize_t unused = ::read(w->event_fd(), &v, sizeof v);
  (void)unused;
  ep->ready_lock_.lock();
  avail = ep->events_available_locked();
  ep->ready_lock_.unlock();
  if (avail && !pending_.exchange(true, std::memory_order_seq_cst)) w->kick();
}

// ---------------------------------------------------------------------------
// Harvest, poll, sleep

int KernelWatch::kernel_events(struct epoll_event* evs, int maxevents) noexcept {
  const int r = ::epoll_wait(shadow_, evs, maxevents, 0);
  return r < 0 ? -errno : r;
}

int KernelWatch::harvest(Instance* ep, struct epoll_event* evs, int maxevents) noexcept {
  const int hub = hub_.load(std::memory_order_acquire);
  if (hub >= 0) process_hub(ep, hub);
  const bool kfirst = kernel_first_.load(std::memory_order_relaxed);
  int n = kfirst ? kernel_events(evs, maxevents) : ep->send_events(evs, maxevents);
  if (n < 0) return n;  // EFAULT with nothing copied
  if (n < maxevents) {
    const int more = kfirst ? ep->send_events(evs + n, maxevents - n) : kernel_events(evs + n, maxevents - n);
    if (more > 0) n += more;
    else if (more < 0 && n == 0) return more;
  }
  if (n == maxevents) kernel_first_.store(!kfirst, std::memory_order_relaxed);
  if (signal_.load(std::memory_order_acquire)) maybe_drain(ep);
  return n;
}

bool KernelWatch::ready(Instance* ep) noexcept {
  const int hub = hub_.load(std::memory_order_acquire);
  if (hub >= 0) process_hub(ep, hub);
  struct pollfd p{shadow_, POLLIN, 0};
  return ::poll(&p, 1, 0) > 0 && (p.revents & POLLIN) != 0;
}

int KernelWatch::sleep(core::ThreadWaiter* w, const timespec* deadline, const sigset_t* mask) noexcept {
  struct pollfd p{sleep_fd(), POLLIN, 0};
  return w->sleep_with(&p, 1, deadline, mask);
}

// Reads the hub's pending entries: children's edges become callbacks; the
// shadow's and the signal's level entries are only there for sleepers and
// kernel loops.
void KernelWatch::process_hub(Instance* ep, int hub) noexcept {
  constexpr int kBatch = 32;
  struct epoll_event buf[kBatch];
  int r;
  do {
    r = ::epoll_wait(hub, buf, kBatch, 0);
    for (int i = 0; i < r; ++i)
      if (buf[i].data.u64 & kChildBit) wake_child(ep, hub, buf[i].data.u64);
  } while (r == kBatch);
}

// A kernel event reached child `tag`: run ep's callbacks on the child's
// wait queue with key EPOLLIN, as Linux's ep_poll_safewake on the child's
// poll_wait would (only ep's: other parents read their own hubs).  An
// edge from a child that ep no longer watches is unlinked (lazily: DEL of
// the item does not touch the hub).
void KernelWatch::wake_child(Instance* ep, int hub, uint64_t tag) noexcept {
  Instance* c = registry_pin(tag);
  if (!c) return;  // released; its descriptors leave the hub when it is freed
  bool watched = false;
  c->wq().lock();
  c->wq().find_locked([&](core::WaitEntry* e) {
    if ((e->flags & core::WaitEntry::kItem) && Item::from_wait(e)->ep == ep) {
      watched = true;
      e->fn(e, EPOLLIN);
    }
    return false;
  });
  c->wq().unlock();
  if (!watched) {
    if (KernelWatch* ck = c->kernel_watch()) {
      ::epoll_ctl(hub, EPOLL_CTL_DEL, ck->shadow_, nullptr);
      const int ch = ck->hub_.load(std::memory_order_acquire);
      if (ch >= 0) ::epoll_ctl(hub, EPOLL_CTL_DEL, ch, nullptr);
    }
  }
  c->struct_put();
}

// ---------------------------------------------------------------------------
// Teardown

void KernelWatch::release(Instance* ep) noexcept {
  registry_remove(ep->id() | kChildBit);
  std::lock_guard<std::mutex> g(mu_);
  if (signal_.load(std::memory_order_relaxed)) {
    ep->wq().lock();
    if (sig_.entry.queued()) ep->wq().remove_locked(&sig_.entry);
    ep->wq().unlock();
  }
}

void KernelWatch::destroy(KernelWatch* kw) noexcept {
  if (!kw) return;
  const int h = kw->hub_.load(std::memory_order_acquire);
  if (h >= 0) ::close(h);
  ::close(kw->shadow_);
  if (core::ThreadWaiter* w = kw->signal_.load(std::memory_order_acquire)) w->release_signal();
  delete kw;
}

}  // namespace uepoll::epoll
