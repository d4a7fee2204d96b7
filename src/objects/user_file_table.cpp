// user_file_table.cpp - TableFile's mask, wakes, lifetime and the release
// thread (user_file_table.h); the operations are user_file_table_ops.cpp.
// Locks: wq() (11) to wake, never while provider code runs; the release
// thread's own std::mutex (a leaf: nothing is taken under it).
#include "objects/user_file_table.h"

#include "core/internal_call.h"

#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <pthread.h>
#include <sched.h>
#include <sys/epoll.h>
#include <unistd.h>

namespace uepoll::objects {

TableFile::TableFile(const uep_file_operations* ops_in, size_t copy, void* ctx, int status_flags,
                     uint32_t initial_mask) noexcept
    : core::File(core::FileKind::kUser, status_flags), table_(ops_in), ctx_(ctx), state_(initial_mask) {
  std::memcpy(&ops_, ops_in, copy);
  ops_.size = sizeof ops_;
  set_poll_unpinned();  // poll reads state_ and err_ only
}

uint32_t TableFile::poll(int) noexcept {
  // relaxed: a harvest that must see a notify is ordered after it by the
  // wq lock of the wakeup that followed it.
  uint32_t m = static_cast<uint32_t>(state_.load(std::memory_order_relaxed));
  if (err_.load(std::memory_order_relaxed)) m |= EPOLLERR;
  return m;
}

template <class F>
uint32_t TableFile::update_mask(F&& f) noexcept {
  uint64_t cur = state_.load(std::memory_order_relaxed);
  for (;;) {
    const uint64_t next = (((cur >> 32) + 1) << 32) | f(static_cast<uint32_t>(cur));
    // acq_rel: pairs with refresh()'s acquire load / CAS, so a refresh
    // that loaded an older word fails and polls again.
    if (state_.compare_exchange_weak(cur, next, std::memory_order_acq_rel, std::memory_order_relaxed))
      return static_cast<uint32_t>(cur);
  }
}

void TableFile::refresh() noexcept {
  if (!ops_.poll || (ops_.flags & UEP_FILE_PUSH)) return;
  uint64_t cur = state_.load(std::memory_order_acquire);  // pairs with update_mask's CAS
  for (;;) {
    const uint32_t mask = ops_.poll(ctx_);
    const uint64_t next = (((cur >> 32) + 1) << 32) | mask;
    if (state_.compare_exchange_strong(cur, next, std::memory_order_acq_rel, std::memory_order_acquire)) return;
  }
}

void TableFile::wake_queue(uint32_t key) noexcept {
  // Linux wake_up_poll(): one exclusive waiter; key 0 wakes every waiter
  // (wake_up_all).
  wq().wake(key, key ? 1 : 0);
}

namespace {
// The operations of pull files running on this thread: a notify of such a
// file from inside its own operation is deferred until the operation has
// returned and the file is refreshed (OpFrame), so that no harvest woken
// by it sees the mask from before the operation.
thread_local TableFile::OpFrame* t_frames = nullptr;
}  // namespace

TableFile::OpScope::OpScope(TableFile* f) noexcept : frame_{f, t_frames} { t_frames = &frame_; }
TableFile::OpScope::~OpScope() { t_frames = frame_.up; }

void TableFile::notify(uint32_t key) noexcept {
  for (OpFrame* f = t_frames; f; f = f->up) {
    if (f->file != this) continue;
    f->key = (f->pending && f->key == 0) || key == 0 ? 0 : f->key | key;
    f->pending = true;
    return;  // made by run() after the refresh; the operation's caller pins us
  }
  // seq_cst pair with on_release (user_file_table.h).
  notifying_.fetch_add(1, std::memory_order_seq_cst);
  if (!released_.load(std::memory_order_seq_cst)) {
    if (key) update_mask([key](uint32_t m) { return m | key; });
    wake_queue(key);
  }
  notifying_.fetch_sub(1, std::memory_order_release);  // pairs with on_release's acquire loads
}

void TableFile::set_mask(uint32_t mask) noexcept {
  notifying_.fetch_add(1, std::memory_order_seq_cst);
  if (!released_.load(std::memory_order_seq_cst)) {
    const uint32_t old = update_mask([mask](uint32_t) { return mask; });
    if (const uint32_t rose = mask & ~old) wake_queue(rose);
  }
  notifying_.fetch_sub(1, std::memory_order_release);
}

void TableFile::notify_mask(uint32_t mask, uint32_t key) noexcept {
  notifying_.fetch_add(1, std::memory_order_seq_cst);
  if (!released_.load(std::memory_order_seq_cst)) {
    update_mask([mask](uint32_t) { return mask; });
    wake_queue(key);
  }
  notifying_.fetch_sub(1, std::memory_order_release);
}

void TableFile::set_error(int err) noexcept {
  notifying_.fetch_add(1, std::memory_order_seq_cst);
  if (!released_.load(std::memory_order_seq_cst)) {
    err_.store(err > 0 ? err : 0, std::memory_order_relaxed);  // published by the wake's lock
    if (err > 0) wake_queue(EPOLLERR);
  }
  notifying_.fetch_sub(1, std::memory_order_release);
}

int TableFile::take_error() noexcept {
  if (!err_.load(std::memory_order_relaxed)) return 0;
  return err_.exchange(0, std::memory_order_relaxed);
}

void TableFile::on_release() noexcept {
  // Every item watching us is gone (File::put ran the epoll release) and
  // no call is in progress.  Wakes in flight return first (bounded: a wake
  // never blocks); later ones see released_ and do nothing.
  released_.store(true, std::memory_order_seq_cst);
  while (notifying_.load(std::memory_order_acquire) != 0) sched_yield();
  if (ops_.release && !skip_release_) ops_.release(ctx_);
}

void TableFile::discard() noexcept {
  skip_release_ = true;
  put();
  drop_hold();
}

void TableFile::drop_hold() noexcept {
  // acq_rel: the last drop sees every use made under the other hold.
  if (holds_.fetch_sub(1, std::memory_order_acq_rel) == 1) retire_memory();
}

// ---- the release thread ----------------------------------------------------
// One thread, started at the first last-pin put (again in a forked child),
// making the puts that would otherwise run a release inside uep_file_put.
// The queue is a list of File pointers under a std::mutex; the thread
// makes each put with no lock held.

namespace {

struct ReleaseQueue {
  std::mutex mu;
  std::condition_variable cv;
  struct Node {
    core::File* f;
    Node* next;
  };
  Node* head = nullptr;  // guarded by mu
  pid_t owner = 0;       // the process whose thread serves it; guarded by mu
};

ReleaseQueue& queue() {
  static ReleaseQueue* q = new ReleaseQueue();  // never destroyed: used at exit
  return *q;
}

void* serve(void*) {
  core::InternalCalls internal;  // its libc calls are uepoll's own (core/internal_call.h)
  ReleaseQueue& q = queue();
  for (;;) {
    ReleaseQueue::Node* n;
    {
      std::unique_lock<std::mutex> g(q.mu);
      q.cv.wait(g, [&] { return q.head != nullptr; });
      n = q.head;
      q.head = nullptr;
    }
    while (n) {
      ReleaseQueue::Node* next = n->next;
      n->f->put();  // the last reference: the release runs here
      delete n;
      n = next;
    }
  }
}

}  // namespace

void release_thread_put(core::File* f) noexcept {
  if (f->put_unless_last()) return;
  auto* n = new (std::nothrow) ReleaseQueue::Node{f, nullptr};
  ReleaseQueue& q = queue();
  if (!n) {
    // Out of memory: keep the file (never a release inside a put).
    return;
  }
  std::lock_guard<std::mutex> g(q.mu);
  if (q.owner != getpid()) {
    // pthread, not std::thread: its template instances would be exported
    // from a shared libuepoll.
    pthread_t th;
    if (pthread_create(&th, nullptr, &serve, nullptr) != 0) {
      delete n;
      return;  // no thread: the file stays (never a release inside a put)
    }
    pthread_detach(th);
    q.owner = getpid();
  }
  n->next = q.head;
  q.head = n;
  q.cv.notify_one();
}

}  // namespace uepoll::objects
