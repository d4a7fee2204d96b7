// handover.h - calls that leave a file being handed over to the kernel,
// for their caller to make again on the kernel object (owned by core/).
//
// Under the preload, fork() first makes every uepoll pipe and socket pair
// a kernel one under the same descriptor numbers (src/preload/
// fork_convert.c).  A thread asleep in a read, write, poll... on such an
// object would keep sleeping on the uepoll one, which nobody reaches any
// more.  So the preload marks the object's wait queues handed over
// (WaitQueue::set_handed_over_locked, through uep__hand_over) and
// wakes their sleepers; a sleeper whose caller can make the call again
// (uep__movable > 0: the preload's interposers that do) leaves its sleep
// as if a signal handler had run (-EINTR, or the partial count of a call
// that already moved data) and sets uep__moved.  The interposer sees
// uep__moved, waits until the conversion is done and makes the call again
// on what the number shows now, or the rest of it.  A sleeper whose caller
// cannot (any other caller: uep__movable == 0) sleeps on; the preload
// then leaves the object as it is.  A movable call that does not sleep
// leaves a marked file too before it moves any data (leave_if_handed_over
// in core/block.h: a pipe's read, write, splice and tee, a pair's send and
// receive, a status flag change; an eventfd's read and write find its
// count taken for good instead), so that what the conversion moves is all
// there is.
//
// Locks: none (thread-local counters and the bytes kept for a moved call).
#pragma once

#include <uepoll/export.h>

#include <cstddef>
#include <ctime>

extern "C" {
// > 0 while the calling thread's uepoll call is one its caller can make
// again on the kernel object (the preload raises it around such calls).
UEP_EXPORT extern __thread int uep__movable;
// Set by a call that left its sleep because its file was handed over;
// cleared by the caller that reads it.
UEP_EXPORT extern __thread int uep__moved;
// A call that left: the time its deadline had left (a poll's on its own
// clock, the virtual one where that runs; a socket call's SO_RCVTIMEO /
// SO_SNDTIMEO on the real one), for the call made again; tv_sec -1: none.
UEP_EXPORT extern __thread struct timespec uep__moved_left;
}

namespace uepoll::core {

// A call of the calling thread on a file whose queue is handed over ends
// here: the caller returns -EINTR (or its partial count); `left` is the
// time its deadline had left (tv_sec -1: none).
inline void note_moved(const timespec& left) noexcept {
  uep__moved = 1;
  uep__moved_left = left;
}
inline bool movable_call() noexcept { return uep__movable > 0; }
// Whether the calling thread's call has left (note_moved) and not been
// seen by its caller yet.
inline bool call_moved() noexcept { return uep__moved != 0; }

// A movable call that had read bytes from a source that cannot take them
// back (a kernel pipe or socket spliced into a pipe or pair) and found its
// destination handed over keeps them here, buf[off, off + n) (buf from
// core::raw_alloc, now owned here), and counts them in its answer; its
// caller writes them to the kernel object once the conversion is done
// (uep__put_moved_bytes, capi/preload_support.h).  One set per thread: a
// set not yet put is replaced (freed).
void keep_moved_bytes(char* buf, size_t off, size_t n) noexcept;
// Hands over what keep_moved_bytes kept (*buf nullptr when nothing is);
// the caller frees *buf with core::raw_free.
void take_moved_bytes(char** buf, size_t* off, size_t* n) noexcept;

}  // namespace uepoll::core
