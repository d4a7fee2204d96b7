// unix_gc.h - garbage collection of in-flight uepoll AF_UNIX sockets and
// the in-flight file limit (Linux net/unix/garbage.c: unix_inflight,
// unix_notinflight, unix_gc; net/unix/af_unix.c: too_many_unix_fds).
//
// What it owns.  Each uepoll unix socket (stream pair or datagram/seqpacket
// pair) carries a UnixGcNode: how many of its File references are held by
// control payloads (objects/unix_scm.h: ScmPayload::add counts one, the
// release of that file uncounts it), its link in the list of sockets with
// in-flight references (Linux gc_inflight_list), and the GC's scratch.
// A payload counts from the pin at send to the release at receive or purge,
// so the count never exceeds the references payloads hold: a socket whose
// refcount equals its in-flight count is referenced by payloads only.
//
// The collection (unix_gc), Linux's classic algorithm: candidates are the
// listed sockets whose every reference is in flight; each candidate's queue
// is scanned and every in-flight reference to a candidate found there is
// subtracted from that candidate's count; a candidate with something left
// is referenced from outside the candidates (a queue of a live socket, a
// payload still being sent or received) and so is every candidate in its
// queue, transitively.  The rest is garbage: the payloads of its queues'
// messages that carry garbage sockets are detached under the queue's lock
// and released after every lock is dropped; the garbage sockets' last
// references go with them, and their release purges what else they held.
//
// Locks.  The unix GC mutex (lock_order.h level 10, never held with an
// iolock_: a MSG_PEEK's copies, made under one, are not counted) guards every node's count,
// links and scratch, and serializes collections.  A collection takes the
// candidates' queue SpinLocks (UnixConn::mu_, UnixDgramConn::mu_, 14)
// inside it; nothing is released, allocated or woken under either.
#pragma once

#include "core/file.h"

#include <cstdint>

namespace uepoll::objects {

class ScmPayload;

inline constexpr long kUnixInflightTriggerGc = 16000;  // Linux: UNIX_INFLIGHT_TRIGGER_GC

class UnixGcNode {
 public:
  // What the collection asks of a socket's receive queue; both called with
  // the GC mutex held, each taking the queue's SpinLock.
  // Calls visit(node, arg) for each in-flight reference to a uepoll unix
  // socket queued in this socket's receive queue.
  virtual void gc_scan(void (*visit)(UnixGcNode*, void*), void* arg) noexcept = 0;
  // Detaches, into out[0..room), the payloads of queued messages that
  // carry a socket for which is_garbage() is true; returns how many.
  virtual int gc_detach(bool (*is_garbage)(UnixGcNode*), ScmPayload** out, int room) noexcept = 0;
  virtual core::File* gc_file() noexcept = 0;

 protected:
  ~UnixGcNode() = default;

 private:
  friend struct UnixGc;
  long inflight_ = 0;  // GC mutex: references held by payloads
  UnixGcNode* prev_ = nullptr;  // GC mutex: the in-flight list (inflight_ > 0)
  UnixGcNode* next_ = nullptr;
  UnixGcNode* cand_next_ = nullptr;  // GC mutex: a collection's candidate list
  long gc_refs_ = 0;                 // GC mutex: in-flight references not found in candidates' queues
  uint8_t gc_state_ = 0;             // GC mutex: 0 none, candidate, reachable, scanned
};

// Helpers for a queue of messages linked by `next` with an `ScmPayload*
// scm` member (UnixConn::Skb, UnixDgramConn::Msg); the caller holds the
// queue's lock.
void unix_gc_visit_payload(const ScmPayload* p, void (*visit)(UnixGcNode*, void*), void* arg) noexcept;
bool unix_gc_payload_hit(const ScmPayload* p, bool (*is_garbage)(UnixGcNode*)) noexcept;
template <class M>
void unix_gc_scan_queue(M* head, void (*visit)(UnixGcNode*, void*), void* arg) noexcept {
  for (M* m = head; m; m = m->next) unix_gc_visit_payload(m->scm, visit, arg);
}
template <class M>
int unix_gc_detach_queue(M* head, bool (*is_garbage)(UnixGcNode*), ScmPayload** out, int room) noexcept {
  int n = 0;
  for (M* m = head; m && n < room; m = m->next) {
    if (m->scm && unix_gc_payload_hit(m->scm, is_garbage)) {
      out[n++] = m->scm;
      m->scm = nullptr;  // the message keeps its bytes; nobody can read them
    }
  }
  return n;
}

// The accounting of ScmPayload: a file enters flight (after its pin) or
// leaves it (before its put).  Take the GC mutex for a unix socket: no
// SpinLock held.
void unix_inflight(core::File* f) noexcept;
void unix_notinflight(core::File* f) noexcept;
// Files of every kind in flight in this process (Linux counts them per
// user: user->unix_inflight).
long unix_files_inflight() noexcept;
// too_many_unix_fds: more files in flight than RLIMIT_NOFILE, and neither
// CAP_SYS_RESOURCE nor CAP_SYS_ADMIN.  A system call or two; no lock.
// `own`: files of the message being sent, already counted by its payload
// (Linux checks before it counts them).
bool unix_too_many_fds(long own) noexcept;

// unix_gc after the release of a unix socket (unix_release_sock), and
// before a send of files past kUnixInflightTriggerGc (wait_for_unix_gc):
// runs a collection when sockets are in flight.  Synchronous: what it
// collects is released before it returns.  No lock held; may release
// files; a collection started by a release inside a collection on the
// same thread is left to the outer one, which runs again.
void unix_gc_maybe() noexcept;
void unix_gc_before_send() noexcept;

}  // namespace uepoll::objects
