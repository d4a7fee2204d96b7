// topology.cpp - topology lock, loop/depth check, reverse path check.
// Locks: see topology.h.  Walks collect what they need under one shard or
// wait-queue lock at a time, pinning instances with struct references.
#include "epoll/topology.h"

#include "core/backoff.h"
#include "core/file.h"
#include "core/lock_state.h"
#include "core/lockdep.h"
#include "core/mutex.h"
#include "core/reclaim.h"
#include "core/thread_exit.h"
#include "epoll/instance.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <new>
#include <thread>

namespace uepoll::epoll::topology {

namespace {

constexpr std::size_t kCacheLine = 64;
constexpr int kTargetMutexes = 64;

// The topology lock.  Readers (leaf ADDs into watched instances) each
// count themselves in a reader slot on a cache line of its own, so
// concurrent readers never write a shared line; a writer (an
// instance-into-instance ADD, rare) raises `writer` and waits for every slot
// to drain; a single reader counter (an rwsem) would bounce its line
// between readers.  It is one uepoll lock (level 3 of core/lock_order.h)
// for the thread's lock count and the checker; writer_mutex_ is its
// internal part, not a lock of its own.
//
// A thread owns one of the first kOwnedSlots slots while it lives (claimed
// on its first shared lock, given back by its exit hook): only it, and
// signal handlers on it, which leave the count as they found it, write
// that slot, so its unlock is a plain load and release store, not a locked
// RMW.  Threads beyond kOwnedSlots alive at once share the kSharedSlots
// slots after them, with RMWs both ways.  (A forked child keeps the
// parent's other threads' slots marked owned: its threads then use the
// remaining ones, or the shared ones; a cost, never a wrong count.)
class UEP_CAPABILITY("topology lock") TopologyLock {
 public:
  void lock_shared() noexcept UEP_ACQUIRE_SHARED() {
    core::lock_enter();
    core::lockdep_acquire(&core::lock_class::kTopology, this);
    std::atomic<long>& slot = *my_slot().readers;
    for (;;) {
      // seq_cst pair (Dekker) with lock(): the reader raises its slot then
      // reads `writer`; the writer raises `writer` then reads the slots.
      slot.fetch_add(1, std::memory_order_seq_cst);
      if (!writer_.v.load(std::memory_order_seq_cst)) return;
      slot.fetch_sub(1, std::memory_order_seq_cst);
      std::lock_guard<std::mutex> wait_for_writer(writer_mutex_.m);
    }
  }
  void unlock_shared() noexcept UEP_RELEASE_SHARED() {
    core::lockdep_release(&core::lock_class::kTopology, this);
    const ReaderSlot& me = tls_reader;  // set by the lock_shared() we end
    // release (both): the section's accesses happen before a writer whose
    // seq_cst load of the slot reads the lowered count.
    if (me.owned)
      me.readers->store(me.readers->load(std::memory_order_relaxed) - 1, std::memory_order_release);
    else
      me.readers->fetch_sub(1, std::memory_order_release);
    core::lock_exit();
  }
  void lock() noexcept UEP_ACQUIRE() {
    core::lock_enter();
    core::lockdep_acquire(&core::lock_class::kTopology, this);
    writer_mutex_.m.lock();
    writer_.v.store(true, std::memory_order_seq_cst);
    for (Slot& s : slots_) {
      core::Backoff b;
      while (s.readers.load(std::memory_order_seq_cst) != 0) b.pause();
    }
  }
  void unlock() noexcept UEP_RELEASE() {
    core::lockdep_release(&core::lock_class::kTopology, this);
    writer_.v.store(false, std::memory_order_seq_cst);
    writer_mutex_.m.unlock();
    core::lock_exit();
  }
  // Not analysed: which capability it takes depends on `exclusive`.
  void lock_shared_or_exclusive(bool exclusive) noexcept UEP_NO_THREAD_SAFETY_ANALYSIS {
    if (exclusive)
      lock();
    else
      lock_shared();
  }
  // seq_cst: one total order with the writer's stores (cached_add_ok).
  bool writer_active() const noexcept { return writer_.v.load(std::memory_order_seq_cst); }
  // The thread exit hook: the owned slot (count 0: no lock is held at exit)
  // becomes free for another thread.  release: pairs with the acquire of
  // the next owner's claim.
  void thread_exit() noexcept {
    ReaderSlot& me = tls_reader;
    if (me.owned) owner_flag(me.readers)->store(false, std::memory_order_release);
    me = ReaderSlot{};
  }

 private:
  static constexpr int kOwnedSlots = 64;
  static constexpr int kSharedSlots = 16;
  struct alignas(kCacheLine) Slot {
    std::atomic<long> readers{0};
    std::atomic<bool> owned{false};  // only for the first kOwnedSlots
  };
  static_assert(offsetof(Slot, readers) == 0, "owner_flag() finds the Slot from its count");
  struct alignas(kCacheLine) Flag {
    std::atomic<bool> v{false};
  };
  struct alignas(kCacheLine) WriterMutex {
    std::mutex m;
  };
  // The calling thread's slot (trivially destructible, core/thread_exit.h).
  struct ReaderSlot {
    std::atomic<long>* readers = nullptr;
    bool owned = false;  // readers is an owned slot: only this thread writes it
  };
  static thread_local ReaderSlot tls_reader;

  static std::atomic<bool>* owner_flag(std::atomic<long>* readers) noexcept {
    return &reinterpret_cast<Slot*>(readers)->owned;  // readers is a Slot's first member
  }
  const ReaderSlot& my_slot() noexcept {
    ReaderSlot& me = tls_reader;
    if (!me.readers) [[unlikely]]
      claim(me);
    return me;
  }
  void claim(ReaderSlot& me) noexcept {
    for (int i = 0; i < kOwnedSlots; ++i) {
      std::atomic<bool>& o = slots_[i].owned;
      // acquire: pairs with the release in a previous owner's thread_exit().
      if (!o.load(std::memory_order_relaxed) && !o.exchange(true, std::memory_order_acquire)) {
        core::thread_exit_arm();  // the slot goes back when the thread exits
        me.owned = true;  // before readers: a handler that finds readers set sees owned too
        std::atomic_signal_fence(std::memory_order_seq_cst);
        me.readers = &slots_[i].readers;
        return;
      }
    }
    static std::atomic<unsigned> next{0};
    me.readers = &slots_[kOwnedSlots + next.fetch_add(1, std::memory_order_relaxed) % kSharedSlots].readers;
  }
  Flag writer_;
  WriterMutex writer_mutex_;
  Slot slots_[kOwnedSlots + kSharedSlots];
};

thread_local TopologyLock::ReaderSlot TopologyLock::tls_reader;

// The topology lock, the generation stamp and each target mutex on cache
// lines of their own, so that their writers do not share a line.
struct alignas(kCacheLine) PaddedTopologyLock {
  TopologyLock m;
};
struct alignas(kCacheLine) PaddedMutex {
  core::Mutex m{core::lock_class::kTopologyTarget};
};
struct alignas(kCacheLine) PaddedNestedPollMutex {
  core::Mutex m{core::lock_class::kNestedPoll};
};
struct alignas(kCacheLine) PaddedGen {
  uint64_t value = 0;  // guarded by the topology lock held exclusively
};

// The edge generation (leaf_path_check's cache key).  Bumped with acq_rel
// after an edge is linked or unlinked (under the target's wait-queue lock);
// a check loads it with acquire before walking, so a walk that reads a
// generation sees every edge change counted before it.
struct alignas(kCacheLine) PaddedEdgeGen {
  std::atomic<uint64_t> value{1};  // 1: no instance's cache word (0) is valid
};

struct State {
  PaddedTopologyLock lock;
  PaddedGen gen;
  PaddedEdgeGen edge_gen;
  PaddedMutex targets[kTargetMutexes];
  PaddedNestedPollMutex nested_poll;  // only with lockless_nested_poll off
};
static_assert(alignof(PaddedTopologyLock) == kCacheLine && sizeof(PaddedTopologyLock) % kCacheLine == 0);
static_assert(alignof(PaddedGen) == kCacheLine && sizeof(PaddedGen) == kCacheLine);
static_assert(alignof(PaddedMutex) == kCacheLine && sizeof(PaddedMutex) % kCacheLine == 0);
static_assert(offsetof(State, gen) - offsetof(State, lock) >= kCacheLine);

State& state() {
  static State s;
  return s;
}

core::Mutex& target_mutex(const core::File* f) {
  auto h = reinterpret_cast<uintptr_t>(f);
  h ^= h >> 17;
  h *= 0x9E3779B97F4A7C15ULL;
  return state().targets[(h >> 58) % kTargetMutexes].m;
}

// Linux: static const int path_limits[PATH_ARR_SIZE] = { 1000, 500, 100, 50, 10 };
constexpr int kPathLimits[kMaxNests + 1] = {1000, 500, 100, 50, 10};

// Collects the instances that watch f (items of theirs queued on f's wait
// queue): the first small_cap into small[], the rest into *more, each pinned
// with a struct reference when `pin`.  No allocation under the queue's spin
// lock: the entries are counted under it, memory is reserved after dropping
// it, and the walk is retried until the reservation suffices.  Returns the
// number of instances, or -ENOMEM with nothing collected or pinned.
long collect_parents(core::File* f, Instance** small, long small_cap, std::vector<Instance*>* more, bool pin) {
  for (;;) {
    long n = 0;
    f->wq().lock();
    f->wq().find_locked([&](core::WaitEntry* e) {
      if (e->flags & core::WaitEntry::kItem) ++n;
      return false;
    });
    const long extra = n > small_cap ? n - small_cap : 0;
    if (static_cast<size_t>(extra) <= more->capacity()) {
      long i = 0;
      f->wq().find_locked([&](core::WaitEntry* e) {
        if (e->flags & core::WaitEntry::kItem) {
          Instance* p = Item::from_wait(e)->ep;
          if (pin) p->struct_get();
          if (i < small_cap)
            small[i] = p;
          else
            more->push_back(p);  // within capacity: no allocation
          ++i;
        }
        return false;
      });
      f->wq().unlock();
      return n;
    }
    f->wq().unlock();
    try {
      more->reserve(static_cast<size_t>(extra) + 4);
    } catch (const std::bad_alloc&) {
      return -ENOMEM;
    }
  }
}

void drop(std::vector<Instance*>& v) {
  for (Instance* p : v) p->struct_put();
  v.clear();
}

// Room for one more element without a throwing push_back; false when out
// of memory.
template <class T>
bool room_for_one(std::vector<T>& v) noexcept {
  if (v.size() < v.capacity()) return true;
  try {
    v.reserve(v.size() * 2 + 8);
  } catch (const std::bad_alloc&) {
    return false;
  }
  return true;
}

struct LoopCheck {
  uint64_t gen;
  Instance* inserting_into;
  std::vector<core::File*>* leaves;
  bool oom = false;  // an allocation failed: the check ends with -ENOMEM

  // Linux ep_loop_check_proc(): longest chain of instance edges below ep.
  int down(Instance* ep, int depth) {
    if (ep->topo_gen == gen) return ep->topo_depth;
    ep->topo_gen = gen;
    std::vector<Instance*> kids;
    ep->for_each_item([&](Item* it) {
      if (oom) return;
      core::File* f = it->file;
      if (f->is_epoll()) {
        if (!room_for_one(kids)) {
          oom = true;
          return;
        }
        auto* k = static_cast<Instance*>(f);
        k->struct_get();
        kids.push_back(k);
      } else if (std::find(leaves->begin(), leaves->end(), f) == leaves->end()) {
        if (!room_for_one(*leaves)) {
          oom = true;
          return;
        }
        if (f->tryget()) leaves->push_back(f);  // Linux list_file()
      }
    });
    int result = 0;
    for (Instance* k : kids) {
      if (oom) break;
      if (k == inserting_into || depth > kMaxNests)
        result = kMaxNests + 1;
      else
        result = std::max(result, down(k, depth + 1) + 1);
      if (result > kMaxNests) break;
    }
    drop(kids);
    ep->topo_depth = result;
    return result;
  }

  // Linux ep_get_upwards_depth_proc(): longest chain of watchers above ep.
  int up(Instance* ep, int depth) {
    if (ep->topo_gen == gen) return ep->topo_depth;
    std::vector<Instance*> parents;
    if (collect_parents(ep, nullptr, 0, &parents, true) < 0) {
      oom = true;
      return 0;
    }
    int result = 0;
    for (Instance* p : parents) {
      if (oom) break;
      result = std::max(result, up(p, depth + 1) + 1);
    }
    drop(parents);
    ep->topo_gen = gen;
    ep->topo_depth = result;
    return result;
  }
};

// Calls fn(parent) for each instance watching f, without pinning them:
// the caller is inside a reclaim::ReadGuard, so a parent closed meanwhile
// keeps its memory (its wait queue and counters stay readable) until the
// guard ends.  Collected under f's queue lock (collect_parents), visited
// after it is dropped.  1 when fn accepted every parent, 0 when it
// stopped, -ENOMEM.
template <class Fn>
int for_each_parent_guarded(core::File* f, Fn&& fn) {
  constexpr int kInline = 16;
  Instance* inline_buf[kInline];
  std::vector<Instance*> more;
  const long n = collect_parents(f, inline_buf, kInline, &more, false);
  if (n < 0) return static_cast<int>(n);
  for (long i = 0; i < n && i < kInline; ++i)
    if (!fn(inline_buf[i])) return 0;
  for (Instance* p : more)
    if (!fn(p)) return 0;
  return 1;
}

struct PathCheck {
  int count[kMaxNests + 1] = {};
  bool oom = false;  // an allocation failed: -ENOMEM rather than -EINVAL

  // Linux reverse_path_check_proc().
  bool ok(core::File* f, int depth) {
    if (depth > kMaxNests) return false;
    const int r = for_each_parent_guarded(f, [&](Instance* p) {
      if (p->parent_count() == 0) {
        // Linux path_count_inc(): "Allow an arbitrary number of depth 1 paths"
        return depth == 0 || ++count[depth] <= kPathLimits[depth];
      }
      return ok(p, depth + 1);
    });
    if (r < 0) oom = true;
    return r > 0;
  }
};

}  // namespace

long parents_of(core::File* f, std::vector<Instance*>* out) noexcept {
  return collect_parents(f, nullptr, 0, out, true);
}

// Not analysed: which locks are held depends on mode_ (a conditional
// capability), and they are held from the constructor to the destructor.
void Guard::take() noexcept UEP_NO_THREAD_SAFETY_ANALYSIS {
  state().lock.m.lock_shared_or_exclusive(mode_ == Mode::kExclusive);
  if (mode_ == Mode::kShared) target_mutex(tf_).lock();
}

void Guard::drop() noexcept UEP_NO_THREAD_SAFETY_ANALYSIS {
  if (mode_ == Mode::kShared) {
    target_mutex(tf_).unlock();
    state().lock.m.unlock_shared();
  } else {
    state().lock.m.unlock();
  }
}

int loop_check(Instance* ep, Instance* child, std::vector<core::File*>* leaves) noexcept {
  LoopCheck lc{++state().gen.value, ep, leaves};
  int depth = lc.down(child, 0);
  int result = 0;
  if (lc.oom) {
    result = -ENOMEM;
  } else if (depth > kMaxNests) {
    result = -ELOOP;
  } else {
    int upwards = lc.up(ep, 0);
    if (lc.oom)
      result = -ENOMEM;
    else if (depth + 1 + upwards > kMaxNests)
      result = -ELOOP;
  }
  ++state().gen.value;  // Linux bumps loop_check_gen again when done
  return result;
}

int reverse_path_check(core::File* f) noexcept {
  core::reclaim::ReadGuard guard;
  PathCheck pc;
  if (pc.ok(f, 0)) return 0;
  return pc.oom ? -ENOMEM : -EINVAL;
}

// Why kCached needs no lock.  What the shared topology lock would give is
// that no instance edge is linked during the ADD (links happen under the
// lock held exclusively, and bump the edge generation before its release).
// Instead the ADD, holding its shard lock with its item in the index, reads
// `writer` (seq_cst) and then the generation (acquire):
//  - `writer` true: a writer may be walking; fall back (kShared waits).
//  - the false a finished writer stored (seq_cst store, so a release):
//    the load synchronizes with it, so the generation read after it shows
//    that writer's bump, and a stale profile fails the comparison.
//  - a false older than a writer's `writer = true` store W: then W comes
//    after our load in the seq_cst order, and so does that writer's walk of
//    the instances below its new edge, which takes each shard lock: had it
//    taken ours before our section, W would happen-before our load, which
//    would then read W or later.  So its walk takes our shard lock after
//    us and sees our item, linked on its file (we link it before dropping
//    the lock), and its path checks count the new leaf.  A writer whose
//    edge is not above this instance changes none of its paths.
// Unlinks take no lock and may be seen or not, as for every ADD.  So the
// ADD linearizes at this check, as a shared holder would at its lock.
bool cached_add_ok(Instance* ep) noexcept {
  if (state().lock.m.writer_active()) return false;
  const uint64_t gen = state().edge_gen.value.load(std::memory_order_acquire);
  return ep->path_ok_cache.load(std::memory_order_relaxed) == ((gen << 1) | 1);
}

void edges_changed() noexcept { state().edge_gen.value.fetch_add(1, std::memory_order_acq_rel); }

// Why the cache is exact.  With tf watched only by ep (our item: watchers
// is written under tf's queue lock, where we just linked it), PathCheck::ok
// (tf, 0) visits ep alone: nothing if ep is watched by nobody (a path of
// length 1, always allowed), else ok(ep, 1), which reads only the edges
// above ep and their parent counts.  Those change only when an item whose
// target is an instance is linked or unlinked, and each such change bumps
// the edge generation (edges_changed).  Links happen under the topology
// lock held exclusively, which this caller holds shared (or exclusively):
// none is concurrent (a kCached ADD, which holds neither, only reads the
// profile, see cached_add_ok).  Unlinks (DEL, close) take no topology lock, as in
// Linux; one concurrent with this check may or may not be seen, as with the
// walk itself.  Another ADD of tf itself is either a kShared/kExclusive one,
// kept out by tf's target mutex or the topology lock, or a flat one into an
// unwatched instance, whose path (length 1) never counts.  A cache word
// stored late with an older generation only costs a recomputation.
int leaf_path_check(Instance* ep, core::File* tf) noexcept {
  if (tf->watchers.load(std::memory_order_acquire) != 1) return reverse_path_check(tf);
  if (ep->parent_count() == 0) return 0;
  const uint64_t gen = state().edge_gen.value.load(std::memory_order_acquire);
  const uint64_t cached = ep->path_ok_cache.load(std::memory_order_relaxed);
  if ((cached >> 1) == gen) return (cached & 1) ? 0 : -EINVAL;
  core::reclaim::ReadGuard guard;
  PathCheck pc;
  const bool ok = pc.ok(ep, 1);
  if (pc.oom) return -ENOMEM;
  ep->path_ok_cache.store((gen << 1) | (ok ? 1 : 0), std::memory_order_relaxed);
  return ok ? 0 : -EINVAL;
}

// Not analysed: a conditional capability held across constructor/destructor.
}  // namespace uepoll::epoll::topology

namespace uepoll::epoll {
void topology_thread_exit() noexcept { topology::state().lock.m.thread_exit(); }
}  // namespace uepoll::epoll

namespace uepoll::epoll::topology {

// Not analysed: taken here, released in unlock(), of a lock topology.h cannot name.
void GlobalCtlGuard::lock() noexcept UEP_NO_THREAD_SAFETY_ANALYSIS { state().lock.m.lock(); }

void GlobalCtlGuard::unlock() noexcept UEP_NO_THREAD_SAFETY_ANALYSIS { state().lock.m.unlock(); }

// Taken by the outermost instance poll of a thread only: a poll of a
// nested instance inside it must not wait for itself.
namespace {
thread_local int tls_nested_poll_depth = 0;
}

// Not analysed: taken only by the outermost call (a per-thread count).
void nested_poll_lock() noexcept UEP_NO_THREAD_SAFETY_ANALYSIS {
  if (tls_nested_poll_depth++ == 0) state().nested_poll.m.lock();
}

void nested_poll_unlock() noexcept UEP_NO_THREAD_SAFETY_ANALYSIS {
  if (--tls_nested_poll_depth == 0) state().nested_poll.m.unlock();
}

}  // namespace uepoll::epoll::topology
