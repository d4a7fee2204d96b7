// topology.cpp - topology lock, loop/depth check, reverse path check.
// Locks: see topology.h.  Walks collect what they need under one shard or
// wait-queue lock at a time, pinning instances with struct references.
#include "epoll/topology.h"

#include "core/file.h"
#include "epoll/instance.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <mutex>
#include <shared_mutex>

namespace uepoll::epoll::topology {

namespace {

constexpr std::size_t kCacheLine = 64;
constexpr int kTargetMutexes = 64;

// 2026 seed, patch 2: the topology lock, the generation stamp and each
// target mutex on cache lines of their own.
struct alignas(kCacheLine) PaddedSharedMutex {
  std::shared_mutex m;
};
struct alignas(kCacheLine) PaddedMutex {
  std::mutex m;
};
struct alignas(kCacheLine) PaddedGen {
  uint64_t value = 0;  // guarded by the topology lock held exclusively
};

struct State {
  PaddedSharedMutex lock;
  PaddedGen gen;
  PaddedMutex targets[kTargetMutexes];
  PaddedMutex nested_poll;  // only with lockless_nested_poll off
};
static_assert(alignof(PaddedSharedMutex) == kCacheLine && sizeof(PaddedSharedMutex) % kCacheLine == 0);
static_assert(alignof(PaddedGen) == kCacheLine && sizeof(PaddedGen) == kCacheLine);
static_assert(alignof(PaddedMutex) == kCacheLine && sizeof(PaddedMutex) % kCacheLine == 0);
static_assert(offsetof(State, gen) - offsetof(State, lock) >= kCacheLine);

State& state() {
  static State s;
  return s;
}

std::mutex& target_mutex(const core::File* f) {
  auto h = reinterpret_cast<uintptr_t>(f);
  h ^= h >> 17;
  h *= 0x9E3779B97F4A7C15ULL;
  return state().targets[(h >> 58) % kTargetMutexes].m;
}

// Linux: static const int path_limits[PATH_ARR_SIZE] = { 1000, 500, 100, 50, 10 };
constexpr int kPathLimits[kMaxNests + 1] = {1000, 500, 100, 50, 10};

// Instances that watch `f` (items of theirs queued on f's wait queue),
// each pinned with a struct reference the caller must drop.
std::vector<Instance*> parents_of(core::File* f) {
  std::vector<Instance*> out;
  f->wq().lock();
  f->wq().find_locked([&](core::WaitEntry* e) {
    if (e->flags & core::WaitEntry::kItem) {
      Instance* p = Item::from_wait(e)->ep;
      p->struct_get();
      out.push_back(p);
    }
    return false;
  });
  f->wq().unlock();
  return out;
}

void drop(std::vector<Instance*>& v) {
  for (Instance* p : v) p->struct_put();
  v.clear();
}

struct LoopCheck {
  uint64_t gen;
  Instance* inserting_into;
  std::vector<core::File*>* leaves;

  // Linux ep_loop_check_proc(): longest chain of instance edges below ep.
  int down(Instance* ep, int depth) {
    if (ep->topo_gen == gen) return ep->topo_depth;
    ep->topo_gen = gen;
    std::vector<Instance*> kids;
    ep->for_each_item([&](Item* it) {
      core::File* f = it->file;
      if (f->is_epoll()) {
        auto* k = static_cast<Instance*>(f);
        k->struct_get();
        kids.push_back(k);
      } else if (f->tryget()) {
        if (std::find(leaves->begin(), leaves->end(), f) == leaves->end())
          leaves->push_back(f);  // Linux list_file()
        else
          f->put_unless_last();  // cannot be the last: leaves holds one
      }
    });
    int result = 0;
    for (Instance* k : kids) {
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
    std::vector<Instance*> parents = parents_of(ep);
    int result = 0;
    for (Instance* p : parents) result = std::max(result, up(p, depth + 1) + 1);
    drop(parents);
    ep->topo_gen = gen;
    ep->topo_depth = result;
    return result;
  }
};

struct PathCheck {
  int count[kMaxNests + 1] = {};

  // Linux reverse_path_check_proc().
  bool ok(core::File* f, int depth) {
    if (depth > kMaxNests) return false;
    std::vector<Instance*> parents = parents_of(f);
    bool good = true;
    for (Instance* p : parents) {
      if (p->parent_count() == 0) {
        // Linux path_count_inc(): "Allow an arbitrary number of depth 1 paths"
        if (depth != 0 && ++count[depth] > kPathLimits[depth]) good = false;
      } else {
        good = ok(p, depth + 1);
      }
      if (!good) break;
    }
    drop(parents);
    return good;
  }
};

}  // namespace

Guard::Guard(Mode mode, const core::File* tf) noexcept : mode_(mode), tf_(tf) {
  switch (mode_) {
    case Mode::kNone:
      break;
    case Mode::kShared:
      state().lock.m.lock_shared();
      target_mutex(tf_).lock();
      break;
    case Mode::kExclusive:
      state().lock.m.lock();
      break;
  }
}

Guard::~Guard() {
  switch (mode_) {
    case Mode::kNone:
      break;
    case Mode::kShared:
      target_mutex(tf_).unlock();
      state().lock.m.unlock_shared();
      break;
    case Mode::kExclusive:
      state().lock.m.unlock();
      break;
  }
}

int loop_check(Instance* ep, Instance* child, std::vector<core::File*>* leaves) noexcept {
  LoopCheck lc{++state().gen.value, ep, leaves};
  int depth = lc.down(child, 0);
  int result = 0;
  if (depth > kMaxNests) {
    result = -ELOOP;
  } else {
    int upwards = lc.up(ep, 0);
    if (depth + 1 + upwards > kMaxNests) result = -ELOOP;
  }
  ++state().gen.value;  // Linux bumps loop_check_gen again when done
  return result;
}

int reverse_path_check(core::File* f) noexcept {
  PathCheck pc;
  return pc.ok(f, 0) ? 0 : -EINVAL;
}

GlobalCtlGuard::GlobalCtlGuard(bool take) noexcept : taken_(take) {
  if (taken_) state().lock.m.lock();
}

GlobalCtlGuard::~GlobalCtlGuard() {
  if (taken_) state().lock.m.unlock();
}

void nested_poll_lock() noexcept { state().nested_poll.m.lock(); }
void nested_poll_unlock() noexcept { state().nested_poll.m.unlock(); }

}  // namespace uepoll::epoll::topology
