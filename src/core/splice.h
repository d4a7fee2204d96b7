// splice.h - the two ends of a splice, tee or vmsplice (Linux fs/splice.c)
// as the file operations see them: SpliceSink, where bytes taken out of a
// file go (a uepoll pipe's write end or socket, or a kernel descriptor:
// KernelSink), and the bounded bounce buffer every move goes through.
//
// What it owns: KernelSink's system calls on a kernel descriptor.  Locks:
// none held across them (a KernelSink is called with no uepoll SpinLock
// held; a socket's splice_read holds its iolock_, level 10, across
// push()); a movable wait for room takes the source's wait queue lock
// (a leaf) to queue and dequeue its entry.
#pragma once

#include <cstddef>
#include <sys/types.h>

namespace uepoll::core {

class WaitQueue;

// The most one step of a move carries (one bounce buffer per call, freed
// before it returns): memory stays bounded whatever `len` asks.
inline constexpr size_t kSpliceChunk = 65536;

// A splice destination: ->splice_write of Linux's file (a pipe's write
// end, a socket), or a kernel descriptor.
class SpliceSink {
 public:
  // Linux opipe_prep / wait_for_space for a pipe: 0 when it has room,
  // -EAGAIN (nonblock), -EPIPE and SIGPIPE without readers, -EINTR; 0 at
  // once for a sink that is not a pipe.
  virtual long wait_room(bool nonblock) noexcept = 0;
  // Writes buf[0..n) (our memory, n > 0): the bytes taken, or -errno.  A
  // pipe takes what fits and never waits (Linux moves what fits after
  // opipe_prep); any other sink writes as its own write() does (blocking
  // unless O_NONBLOCK), so it may take fewer (O_NONBLOCK, a signal).
  virtual ssize_t push(const char* buf, size_t n) noexcept = 0;
  // The pipe this sink writes (get_pipe_info), nullptr for any other.
  virtual const void* pipe_id() const noexcept = 0;

 protected:
  ~SpliceSink() = default;
};

// A kernel descriptor as the destination: a kernel pipe (waited on with
// poll, written without waiting with RWF_NOWAIT or at most its free room),
// a regular file (at *pos when pos is set, advanced by what was written;
// else at its file position), a socket or anything else (write()).
class KernelSink final : public SpliceSink {
 public:
  // is_pipe: S_ISFIFO of the descriptor.  pos: nullptr or a position.
  // source: the wait queue of the uepoll file the bytes come from, or
  // nullptr (see wait_room).
  KernelSink(int fd, long long* pos, bool is_pipe, const void* id, WaitQueue* source = nullptr) noexcept
      : fd_(fd), pos_(pos), is_pipe_(is_pipe), id_(id), source_(source) {}
  // A movable call (core/handover.h) also waits on `source`, so that the
  // source handed over to the kernel ends the wait for room: -EINTR with
  // uep__moved set, nothing moved yet, for the caller to make again.
  long wait_room(bool nonblock) noexcept override;
  ssize_t push(const char* buf, size_t n) noexcept override;
  const void* pipe_id() const noexcept override { return is_pipe_ ? id_ : nullptr; }

 private:
  long wait_room_movable() noexcept;
  int fd_;
  long long* pos_;
  bool is_pipe_;
  const void* id_;
  WaitQueue* source_;
};

// Copies up to len bytes (at most kSpliceChunk) from the front of kernel
// pipe fd into buf (kSpliceChunk bytes) and leaves them in the pipe: the
// kernel's tee into a scratch kernel pipe, which waits for data unless
// nonblock (Linux ipipe_prep: -EAGAIN, -EINTR, 0 when empty without
// writers), then a read of the scratch.  Returns the bytes copied, 0, or
// -errno.
long peek_kernel_pipe(int fd, char* buf, size_t len, bool nonblock) noexcept;

// Takes n bytes that peek_kernel_pipe copied off the front of kernel pipe
// fd, with reads that never wait (another reader of the pipe may have
// taken them meanwhile: then fewer); buf is kSpliceChunk bytes of scratch.
void consume_kernel_pipe(int fd, size_t n, char* buf) noexcept;

// tee from a kernel pipe into `to` (a uepoll pipe's write end), in Linux's
// order: the source waited for (peek_kernel_pipe), then to.wait_room (also
// at the source's end of file: -EPIPE without readers, -EAGAIN when full),
// then what was copied is put; the kernel pipe keeps everything.  Returns
// the bytes put, 0, or -errno.
long tee_kernel_pipe(int fd, SpliceSink& to, size_t len, bool nonblock) noexcept;

// A tee's put after its wait for room (Linux link_pipe): a pipe that
// another writer filled in between ends the tee with 0, what link_pipe
// linked, not -EAGAIN.
long tee_push(SpliceSink& to, const char* buf, size_t n) noexcept;

// A bounce buffer of kSpliceChunk bytes from core::raw_alloc, freed by the
// destructor; data() is nullptr when out of memory.
class SpliceBounce {
 public:
  SpliceBounce() noexcept;
  ~SpliceBounce();
  SpliceBounce(const SpliceBounce&) = delete;
  SpliceBounce& operator=(const SpliceBounce&) = delete;
  char* data() const noexcept { return buf_; }
  // For a source that cannot give back what it gave (a datagram socket, a
  // device): when the write of the n bytes read into this buffer took only
  // `put` (< 0: none) because the destination was handed over to the
  // kernel meanwhile (core::call_moved), the buffer goes with the call,
  // the rest kept by core::keep_moved_bytes for the caller to put where
  // the number shows now.  Returns whether it kept them (data() is nullptr
  // after).
  bool keep_unwritten(ssize_t put, size_t n) noexcept;

 private:
  char* buf_;
};

}  // namespace uepoll::core
