// table.cpp - descriptor table (see table.h).
// Locks: the table mutex (a leaf, 15) for install/remove; lookups are
// lock-free, and so is remove_slot() (a signal handler's close).
#include "fd/table.h"

#include <uepoll/uepoll.h>

#include "core/fork.h"
#include "core/mutex.h"
#include "core/reclaim.h"

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <vector>

namespace uepoll::fd {

// Zero until a chunk is published (slot_locked): a lookup before the table
// exists finds nothing, without making it.
constinit std::atomic<std::atomic<core::File*>*> detail::g_chunks[detail::kChunks] = {};

namespace {

using detail::g_chunks;
using detail::kChunk;

struct Table {
  core::Mutex mutex{core::lock_class::kFdTable};  // install / remove / bitmap (a leaf, 15)
  std::vector<uint64_t> used UEP_GUARDED_BY(mutex);     // bit i: index i allocated
  std::vector<uint64_t> full UEP_GUARDED_BY(mutex);     // bit j: used[j] == ~0
  std::vector<uint64_t> cloexec UEP_GUARDED_BY(mutex);  // bit i: index i has FD_CLOEXEC
  std::atomic<long> max{1L << 20};  // "max_fds" knob
  std::atomic<long> open{0};
};

std::atomic<Table*> g_table{nullptr};  // set once table() has made it (release)

Table& table() {
  static Table* t = [] {
    core::install_fork_handlers();  // first use of the library (core/fork.cpp)
    // The kernel never allocates at or past nr_open; our range must stay
    // above it, or a kernel descriptor could carry a uepoll number.  If
    // fs.nr_open was raised to UEP_FD_BASE or more, uepoll creates no
    // descriptor: the limit starts at 0, so every call that would create one
    // fails with EMFILE (documented in uepoll.h and README.md), and one line
    // on stderr says why.  Lookups still work (they find nothing: EBADF).
    long nr = 0;
    if (FILE* f = std::fopen("/proc/sys/fs/nr_open", "r")) {
      if (std::fscanf(f, "%ld", &nr) != 1) nr = 0;
      std::fclose(f);
    }
    // Static storage, never destroyed: making the table cannot fail for
    // want of memory (its bitmaps start empty).
    alignas(Table) static unsigned char storage[sizeof(Table)];
    auto* made = new (storage) Table();
    if (nr >= UEP_FD_BASE) {
      std::fprintf(stderr,
                   "uepoll: fs.nr_open (%ld) reaches UEP_FD_BASE (%ld): no uepoll descriptor can be created "
                   "(EMFILE)\n",
                   nr, static_cast<long>(UEP_FD_BASE));
      made->max.store(0, std::memory_order_relaxed);
    }
    g_table.store(made, std::memory_order_release);
    return made;
  }();
  return *t;
}

// Preconditions: t.mutex held.  Lowest index not in use, or -1.
long find_free_locked(Table& t, long limit) UEP_REQUIRES(t.mutex) {
  for (size_t j = 0; j < t.full.size(); ++j) {
    if (t.full[j] == ~0ULL) continue;
    for (size_t k = 0; k < 64; ++k) {
      size_t w = j * 64 + k;
      if (w >= t.used.size()) break;
      if (t.used[w] != ~0ULL) {
        long idx = static_cast<long>(w * 64 + __builtin_ctzll(~t.used[w]));
        return idx < limit ? idx : -1;
      }
    }
  }
  long idx = static_cast<long>(t.used.size() * 64);
  return idx < limit ? idx : -1;
}

void mark_locked(Table& t, long idx, bool on) UEP_REQUIRES(t.mutex) {
  size_t w = static_cast<size_t>(idx / 64);
  if (w >= t.used.size()) {
    t.used.resize(w + 1, 0);
    t.full.resize(t.used.size() / 64 + 1, 0);
    t.cloexec.resize(w + 1, 0);
  }
  t.cloexec[w] &= ~(1ULL << (idx % 64));  // a slot's flag starts (and ends) clear
  if (on)
    t.used[w] |= 1ULL << (idx % 64);
  else
    t.used[w] &= ~(1ULL << (idx % 64));
  uint64_t fullbit = 1ULL << (w % 64);
  if (t.used[w] == ~0ULL)
    t.full[w / 64] |= fullbit;
  else
    t.full[w / 64] &= ~fullbit;
}

// Preconditions: t.mutex held (it serializes the chunk's allocation).  The
// slot for idx, allocating its chunk.
std::atomic<core::File*>* slot_locked([[maybe_unused]] Table& t, long idx) UEP_REQUIRES(t.mutex) {
  auto& c = g_chunks[idx / kChunk];
  std::atomic<core::File*>* chunk = c.load(std::memory_order_relaxed);
  if (!chunk) {
    chunk = new (std::nothrow) std::atomic<core::File*>[kChunk];
    if (!chunk) return nullptr;
    for (long i = 0; i < kChunk; ++i) chunk[i].store(nullptr, std::memory_order_relaxed);
    // release: pairs with the acquire in lookup(); the nulls are visible.
    c.store(chunk, std::memory_order_release);
  }
  return &chunk[idx % kChunk];
}

// Preconditions: t.mutex held.  Grows the bitmaps so that mark_locked(idx)
// needs no memory; false (nothing changed but capacity) when out of memory.
bool reserve_bits_locked(Table& t, long idx) noexcept UEP_REQUIRES(t.mutex) {
  const size_t w = static_cast<size_t>(idx / 64);
  try {
    if (w >= t.used.size()) {
      t.used.reserve(w + 1);
      t.full.reserve((w + 1) / 64 + 1);
      t.cloexec.reserve(w + 1);
    }
  } catch (const std::bad_alloc&) {
    return false;
  }
  return true;
}

// Preconditions: t.mutex held.  Lowest free index >= from, or -1.
long find_free_from_locked(Table& t, long from, long limit) UEP_REQUIRES(t.mutex) {
  if (from == 0) return find_free_locked(t, limit);
  for (long idx = from; idx < limit; ++idx) {
    size_t w = static_cast<size_t>(idx / 64);
    if (w >= t.used.size()) return idx;
    if (t.used[w] == ~0ULL) {
      idx = static_cast<long>(w * 64 + 63);
      continue;
    }
    if (!(t.used[w] & (1ULL << (idx % 64)))) return idx;
  }
  return -1;
}

// Preconditions: t.mutex held.
int install_locked(Table& t, core::File* f, long from = 0) UEP_REQUIRES(t.mutex) {
  long idx = find_free_from_locked(t, from, t.max.load(std::memory_order_relaxed));
  if (idx < 0) return -EMFILE;
  if (!reserve_bits_locked(t, idx)) return -ENOMEM;
  std::atomic<core::File*>* s = slot_locked(t, idx);
  if (!s) return -ENOMEM;
  mark_locked(t, idx, true);
  // seq_cst: one total order with the epoch-guarded loads in lookup().
  s->store(f, std::memory_order_seq_cst);
  t.open.fetch_add(1, std::memory_order_relaxed);
  return static_cast<int>(UEP_FD_BASE + idx);
}

}  // namespace

// The fork hooks (core/fork.h): the table's bitmaps are whole in the child.
// A table not made yet is not made by a fork (only the forking thread
// reads g_fork_locked, between its prepare and parent/child hooks).
namespace {
Table* g_fork_locked = nullptr;
}
void table_fork_prepare() noexcept UEP_NO_THREAD_SAFETY_ANALYSIS {
  g_fork_locked = g_table.load(std::memory_order_acquire);
  if (g_fork_locked) g_fork_locked->mutex.lock();
}
void table_fork_parent() noexcept UEP_NO_THREAD_SAFETY_ANALYSIS {
  if (g_fork_locked) g_fork_locked->mutex.unlock();
}
void table_fork_child() noexcept UEP_NO_THREAD_SAFETY_ANALYSIS { table_fork_parent(); }

int install(core::File* f) noexcept {
  Table& t = table();
  core::MutexLock g(t.mutex);
  return install_locked(t, f);
}

int install_pair(core::File* a, core::File* b, int out[2]) noexcept {
  Table& t = table();
  core::MutexLock g(t.mutex);
  int fa = install_locked(t, a);
  if (fa < 0) return fa;
  int fb = install_locked(t, b);
  if (fb < 0) {
    long idx = fa - UEP_FD_BASE;
    g_chunks[idx / kChunk].load(std::memory_order_relaxed)[idx % kChunk].store(nullptr, std::memory_order_seq_cst);
    mark_locked(t, idx, false);
    t.open.fetch_sub(1, std::memory_order_relaxed);
    return fb;
  }
  out[0] = fa;
  out[1] = fb;
  return 0;
}

int install_from(core::File* f, long min_index) noexcept {
  Table& t = table();
  core::MutexLock g(t.mutex);
  return install_locked(t, f, min_index);
}

int install_at(int fd, core::File* f, bool cloexec, core::File** old) noexcept {
  const long idx = fd - UEP_FD_BASE;
  Table& t = table();
  core::MutexLock g(t.mutex);
  if (!reserve_bits_locked(t, idx)) return -ENOMEM;
  std::atomic<core::File*>* s = slot_locked(t, idx);
  if (!s) return -ENOMEM;
  const bool was_used = static_cast<size_t>(idx / 64) < t.used.size() && (t.used[idx / 64] & (1ULL << (idx % 64)));
  // seq_cst: as install_locked; one store replaces the file (Linux
  // do_dup2: rcu_assign_pointer of the slot, then filp_close of the old).
  // An index in use with an empty slot is a signal handler's close whose
  // index release is still deferred (remove_slot, lock-free): EBUSY, as
  // Linux's do_dup2 for a descriptor allocated but not installed yet.
  core::File* cur = s->load(std::memory_order_seq_cst);
  do {
    if (was_used && !cur) return -EBUSY;
  } while (!s->compare_exchange_weak(cur, f, std::memory_order_seq_cst));
  *old = cur;
  mark_locked(t, idx, true);
  if (cloexec) t.cloexec[idx / 64] |= 1ULL << (idx % 64);
  if (!was_used) t.open.fetch_add(1, std::memory_order_relaxed);
  return 0;
}

int set_cloexec(int fd, bool on) noexcept {
  if (!in_range(fd)) return -EBADF;
  const long idx = fd - UEP_FD_BASE;
  Table& t = table();
  core::MutexLock g(t.mutex);
  const size_t w = static_cast<size_t>(idx / 64);
  if (w >= t.used.size() || !(t.used[w] & (1ULL << (idx % 64)))) return -EBADF;
  if (on)
    t.cloexec[w] |= 1ULL << (idx % 64);
  else
    t.cloexec[w] &= ~(1ULL << (idx % 64));
  return 0;
}

bool get_cloexec(int fd) noexcept {
  if (!in_range(fd)) return false;
  const long idx = fd - UEP_FD_BASE;
  Table& t = table();
  core::MutexLock g(t.mutex);
  const size_t w = static_cast<size_t>(idx / 64);
  return w < t.cloexec.size() && (t.cloexec[w] & (1ULL << (idx % 64)));
}

core::File* lookup(int fd) noexcept {
  if (!in_range(fd)) return nullptr;
  core::reclaim::ReadGuard guard;
  return lookup_guarded(fd);
}

core::File* remove(int fd) noexcept {
  if (!in_range(fd)) return nullptr;
  long idx = fd - UEP_FD_BASE;
  Table& t = table();
  core::MutexLock g(t.mutex);
  std::atomic<core::File*>* chunk = g_chunks[idx / kChunk].load(std::memory_order_relaxed);
  if (!chunk) return nullptr;
  core::File* f = chunk[idx % kChunk].exchange(nullptr, std::memory_order_seq_cst);
  if (!f) return nullptr;
  mark_locked(t, idx, false);
  t.open.fetch_sub(1, std::memory_order_relaxed);
  return f;
}

core::File* remove_slot(int fd) noexcept {
  if (!in_range(fd)) return nullptr;
  long idx = fd - UEP_FD_BASE;
  std::atomic<core::File*>* chunk = g_chunks[idx / kChunk].load(std::memory_order_acquire);
  if (!chunk) return nullptr;
  return chunk[idx % kChunk].exchange(nullptr, std::memory_order_seq_cst);
}

void release_index(int fd) noexcept {
  Table& t = table();
  core::MutexLock g(t.mutex);
  mark_locked(t, fd - UEP_FD_BASE, false);
  t.open.fetch_sub(1, std::memory_order_relaxed);
}

long max_fds() noexcept { return table().max.load(std::memory_order_relaxed); }

int set_max_fds(long n) noexcept {
  if (n < 1 || n > kHardMax) return -EINVAL;
  table().max.store(n, std::memory_order_relaxed);
  return 0;
}

long open_count() noexcept { return table().open.load(std::memory_order_relaxed); }

}  // namespace uepoll::fd
