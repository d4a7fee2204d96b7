// unix_gc.cpp - in-flight accounting and the collection of unreachable
// uepoll unix sockets (see unix_gc.h).  Locks: the unix GC mutex, and
// under it each candidate's queue SpinLock (through gc_scan / gc_detach).
// Files are released only after both are dropped.
#include "objects/unix_gc.h"

#include "core/alloc.h"
#include "core/lock_order.h"
#include "core/mutex.h"
#include "objects/unix_scm.h"

#include <atomic>
#include <linux/capability.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace uepoll::objects {

namespace {
enum : uint8_t { kNone, kCandidate, kReachable, kScanned };
constexpr int kBatch = 64;  // payloads detached per pass (no allocation under the locks)

constinit core::Mutex g_gc_mu{core::lock_class::kUnixGc};
UnixGcNode* g_list UEP_GUARDED_BY(g_gc_mu) = nullptr;  // sockets with in-flight references
std::atomic<long> g_tot_inflight{0};    // unix_tot_inflight: written under g_gc_mu, read without
std::atomic<long> g_files_inflight{0};  // every in-flight file (user->unix_inflight)
thread_local bool t_collecting = false;  // this thread is inside unix_gc (releasing)
}  // namespace

struct UnixGc {
  static void link(UnixGcNode* n) UEP_REQUIRES(g_gc_mu) {
    n->prev_ = nullptr;
    n->next_ = g_list;
    if (g_list) g_list->prev_ = n;
    g_list = n;
  }
  static void unlink(UnixGcNode* n) UEP_REQUIRES(g_gc_mu) {
    if (n->prev_) n->prev_->next_ = n->next_;
    else g_list = n->next_;
    if (n->next_) n->next_->prev_ = n->prev_;
    n->prev_ = n->next_ = nullptr;
  }
  static void inflight(UnixGcNode* n, long d) noexcept {
    core::MutexLock l(g_gc_mu);
    if (n->inflight_ == 0) link(n);
    n->inflight_ += d;
    if (n->inflight_ == 0) unlink(n);
    g_tot_inflight.store(g_tot_inflight.load(std::memory_order_relaxed) + d, std::memory_order_relaxed);
  }
  // scan_children's callbacks: dec_inflight, then the mark of reachability.
  static void dec(UnixGcNode* n, void*) noexcept {
    if (n->gc_state_ == kCandidate) --n->gc_refs_;
  }
  static void mark(UnixGcNode* n, void* changed) noexcept {
    if (n->gc_state_ == kCandidate) {
      n->gc_state_ = kReachable;
      *static_cast<bool*>(changed) = true;
    }
  }
  static bool garbage(UnixGcNode* n) noexcept { return n->gc_state_ == kCandidate; }
  // One collection pass: detaches up to kBatch payloads into out; returns
  // their number (kBatch: there may be more).
  static int collect(ScmPayload** out) noexcept;
};

int UnixGc::collect(ScmPayload** out) noexcept {
  core::MutexLock l(g_gc_mu);
  UnixGcNode* cands = nullptr;
  for (UnixGcNode* n = g_list; n; n = n->next_) {
    if (n->gc_file()->refcount() != n->inflight_) continue;  // referenced from outside flight
    n->gc_state_ = kCandidate;
    n->gc_refs_ = n->inflight_;
    n->cand_next_ = cands;
    cands = n;
  }
  for (UnixGcNode* n = cands; n; n = n->cand_next_) n->gc_scan(dec, nullptr);
  for (UnixGcNode* n = cands; n; n = n->cand_next_)
    if (n->gc_refs_ > 0) n->gc_state_ = kReachable;
  for (bool changed = true; changed;) {  // everything a reachable candidate's queue holds is reachable
    changed = false;
    for (UnixGcNode* n = cands; n; n = n->cand_next_) {
      if (n->gc_state_ != kReachable) continue;
      n->gc_state_ = kScanned;
      n->gc_scan(mark, &changed);
    }
  }
  int got = 0;
  for (UnixGcNode* n = cands; n && got < kBatch; n = n->cand_next_)
    if (n->gc_state_ == kCandidate) got += n->gc_detach(garbage, out + got, kBatch - got);
  for (UnixGcNode* n = cands; n; n = n->cand_next_) n->gc_state_ = kNone;
  return got;
}

void unix_gc_visit_payload(const ScmPayload* p, void (*visit)(UnixGcNode*, void*), void* arg) noexcept {
  if (!p) return;
  for (int i = 0; i < p->nfiles(); ++i)
    if (core::File* f = p->file(i).file)
      if (UnixGcNode* n = f->unix_gc_node()) visit(n, arg);
}

bool unix_gc_payload_hit(const ScmPayload* p, bool (*is_garbage)(UnixGcNode*)) noexcept {
  for (int i = 0; i < p->nfiles(); ++i)
    if (core::File* f = p->file(i).file)
      if (UnixGcNode* n = f->unix_gc_node(); n && is_garbage(n)) return true;
  return false;
}

void unix_inflight(core::File* f) noexcept {
  g_files_inflight.fetch_add(1, std::memory_order_relaxed);
  if (f)
    if (UnixGcNode* n = f->unix_gc_node()) UnixGc::inflight(n, 1);
}

void unix_notinflight(core::File* f) noexcept {
  g_files_inflight.fetch_sub(1, std::memory_order_relaxed);
  if (f)
    if (UnixGcNode* n = f->unix_gc_node()) UnixGc::inflight(n, -1);
}

long unix_files_inflight() noexcept { return g_files_inflight.load(std::memory_order_relaxed); }

bool unix_too_many_fds(long own) noexcept {
  struct rlimit rl;
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0) return false;
  if (static_cast<rlim_t>(unix_files_inflight() - own) <= rl.rlim_cur) return false;
  __user_cap_header_struct hdr{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2]{};
  if (::syscall(SYS_capget, &hdr, data) != 0) return true;
  auto has = [&](int cap) { return (data[cap / 32].effective >> (cap % 32)) & 1; };
  return !has(CAP_SYS_RESOURCE) && !has(CAP_SYS_ADMIN);
}

void unix_gc_maybe() noexcept {
  if (g_tot_inflight.load(std::memory_order_relaxed) == 0 || t_collecting) return;
  t_collecting = true;
  ScmPayload* batch[kBatch];
  for (;;) {
    const int n = UnixGc::collect(batch);
    for (int i = 0; i < n; ++i) core::destroy(batch[i]);  // releases: no lock held
    if (n == 0) break;  // a pass that found nothing: the garbage is gone
  }
  t_collecting = false;
}

void unix_gc_before_send() noexcept {
  if (g_tot_inflight.load(std::memory_order_relaxed) > kUnixInflightTriggerGc) unix_gc_maybe();
}

}  // namespace uepoll::objects
