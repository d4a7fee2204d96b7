// topology.h - the nesting topology: which instances watch which, the
// process-wide topology lock, and the loop, depth and path checks of
// EPOLL_CTL_ADD (Linux: epnested_mutex, ep_loop_check, reverse_path_check).
//
// Modes an ADD runs in (decided by Instance::add):
//   kNone       target is an ordinary file and the instance is not watched
//               (flat topology): no process-wide lock at all (rcu_ctl).
//   kShared     target is an ordinary file, the instance is watched: the
//               topology lock shared + the hashed mutex of the target, then
//               the reverse path check for the target (parallel_nested_add).
//   kExclusive  target is an instance: the topology lock exclusive, the
//               loop/depth check and path checks of every leaf below.
//   kCached     as kShared, when the instance's cached path profile says a
//               leaf watched by it alone passes: no
//               topology lock, no target mutex and no walk.  The ADD checks
//               cached_add_ok() under its shard lock after inserting its
//               item (no writer active, profile current and passing) and
//               falls back to kShared when it fails or when the target turns
//               out to be watched by another instance already.
//
// Locks: Topology lock (level 3), target mutexes (level 4); the walks take
// shard locks (6) and wait-queue locks (11) one at a time, never two at once.
// The hot words (the lock, the generation stamp, each target mutex) sit on
// cache lines of their own, checked by static_assert in topology.cpp.
#pragma once

#include <vector>

namespace uepoll::core {
class File;
}

namespace uepoll::epoll {
class Instance;
}

namespace uepoll::epoll::topology {

enum class Mode { kNone, kShared, kExclusive, kCached };

// RAII: takes what `mode` requires for target `tf`.  kNone and kCached
// take nothing and are decided inline: no call at all.
class Guard {
 public:
  Guard(Mode mode, const core::File* tf) noexcept : mode_(mode), tf_(tf) {
    if (locks()) take();
  }
  ~Guard() {
    if (locks()) drop();
  }
  Guard(const Guard&) = delete;
  Guard& operator=(const Guard&) = delete;
  Mode mode() const noexcept { return mode_; }

 private:
  bool locks() const noexcept { return mode_ == Mode::kShared || mode_ == Mode::kExclusive; }
  void take() noexcept;
  void drop() noexcept;
  Mode mode_;
  const core::File* tf_;
};

// Preconditions: topology lock held exclusively.  ADD of instance `child`
// into `ep`: ELOOP on a cycle or when the longest chain through the new
// edge would exceed EP_MAX_NESTS edges (Linux ep_loop_check + upward
// depth).  On success fills *leaves with referenced ordinary files found
// below child (Linux list_file), for the path checks.
int loop_check(Instance* ep, Instance* child, std::vector<core::File*>* leaves) noexcept;

// Preconditions: topology lock held exclusively, or shared with the
// target mutex of f.  -EINVAL when f has more wakeup paths of some length
// than Linux allows (path_limits: 500, 100, 50, 10 for lengths 2..5) or a
// path longer than EP_MAX_NESTS + 1.
int reverse_path_check(core::File* f) noexcept;

// reverse_path_check(tf) for a leaf ADD into `ep` (the item already linked
// on tf's wait queue), from a cached per-instance path profile when tf's
// only watcher is that item: the result then depends only on the paths
// above ep, which change only with an instance-to-instance edge (counted by
// edges_changed()).  Same preconditions and results as reverse_path_check.
int leaf_path_check(Instance* ep, core::File* tf) noexcept;

// kCached's check (topology.cpp has the argument).  Preconditions: the
// ADD's item is in ep's index, not yet on its file's queue, and ep's shard
// lock for it is held.  True if no topology writer is active and ep's
// cached path profile is current and says that a leaf watched by ep alone
// passes the path limits.
bool cached_add_ok(Instance* ep) noexcept;

// Called under the target's wait-queue lock whenever an item whose target
// is an instance is linked to or unlinked from it (an edge of the topology
// appears or goes): invalidates every cached path profile.
void edges_changed() noexcept;

// Instances that watch `f` (items of theirs queued on f's wait queue),
// appended to *out, each pinned with a struct reference (struct_get) the
// caller must drop.  Takes f's wait-queue lock (11), allocates only outside
// it.  Returns their number, or -ENOMEM with nothing appended or pinned.
long parents_of(core::File* f, std::vector<Instance*>* out) noexcept;

// "exclusive everywhere" for the rcu_ctl knob off: every ctl takes the
// topology lock exclusively, as one Linux epmutex would serialize them.
class GlobalCtlGuard {
 public:
  explicit GlobalCtlGuard(bool take) noexcept : taken_(take) {
    if (taken_) lock();
  }
  ~GlobalCtlGuard() {
    if (taken_) unlock();
  }

 private:
  static void lock() noexcept;
  static void unlock() noexcept;
  bool taken_;
};

// The global mutex used only when the "lockless_nested_poll" knob is off:
// every nested poll serializes on it, as under a Linux ep_call_nested.
// Taken by a thread's outermost instance poll or harvest only (the same
// thread's nested polls inside it pass through), and always before any
// scan mutex.
void nested_poll_lock() noexcept;
void nested_poll_unlock() noexcept;

class NestedPollGuard {
 public:
  explicit NestedPollGuard(bool take) noexcept : taken_(take) {
    if (taken_) nested_poll_lock();
  }
  ~NestedPollGuard() {
    if (taken_) nested_poll_unlock();
  }
  NestedPollGuard(const NestedPollGuard&) = delete;
  NestedPollGuard& operator=(const NestedPollGuard&) = delete;

 private:
  bool taken_;
};

}  // namespace uepoll::epoll::topology
