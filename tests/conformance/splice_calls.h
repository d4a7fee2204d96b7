// splice_calls.h - what the splice scenarios share (splice_test.cpp,
// splice_out_test.cpp): the calls on Linux or uepoll, a temporary file,
// a writer and a reader racing a splice into a pipe, and logs of what a
// kernel descriptor holds and of a read's bytes.  Owned by the conformance suite.
#pragma once

#include "harness.h"

#include <sys/ioctl.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <atomic>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace splice_conf {

inline const bool sigpipe_ignored = [] {
  signal(SIGPIPE, SIG_IGN);
  return true;
}();

// A file of n bytes ('a' + i % 26), unlinked, opened O_RDWR | extra.
inline int temp_file(size_t n, int extra = 0) {
  char path[] = "/tmp/uepoll-splice-XXXXXX";
  const int fd = mkostemp(path, extra);
  if (fd < 0) return -1;
  unlink(path);
  std::string data(n, 0);
  for (size_t i = 0; i < n; ++i) data[i] = static_cast<char>('a' + i % 26);
  if (n && ::write(fd, data.data(), n) != static_cast<ssize_t>(n)) return -1;
  ::lseek(fd, 0, SEEK_SET);
  return fd;
}

struct Calls {
  bool linux;
  ssize_t splice(int a, int64_t* oa, int b, int64_t* ob, size_t n, unsigned f) const {
    return linux ? ::splice(a, oa, b, ob, n, f) : ::uep_splice(a, oa, b, ob, n, f);
  }
  ssize_t tee(int a, int b, size_t n, unsigned f) const { return linux ? ::tee(a, b, n, f) : ::uep_tee(a, b, n, f); }
  ssize_t vmsplice(int fd, const struct iovec* iov, size_t n, unsigned f) const {
    return linux ? ::vmsplice(fd, iov, n, f) : ::uep_vmsplice(fd, iov, n, f);
  }
  ssize_t sendfile(int o, int i, off_t* off, size_t n) const {
    return linux ? ::sendfile(o, i, off, n) : ::uep_sendfile(o, i, off, n);
  }
  ssize_t copy_file_range(int a, int64_t* oa, int b, int64_t* ob, size_t n, unsigned f) const {
    return linux ? ::copy_file_range(a, oa, b, ob, n, f) : ::uep_copy_file_range(a, oa, b, ob, n, f);
  }
};

// Writes `total` bytes of `fill` to fd, `chunk` at a time, through
// `write` (the scenario's API, or the kernel's), until done or a write
// fails.  Returns the bytes written.
inline size_t write_total(ssize_t (*write)(int, const void*, size_t), int fd, size_t total, size_t chunk,
                          char fill) {
  std::vector<char> buf(chunk, fill);
  size_t sent = 0;
  while (sent < total) {
    const size_t n = total - sent < chunk ? total - sent : chunk;
    const ssize_t w = write(fd, buf.data(), n);
    if (w <= 0) break;
    sent += static_cast<size_t>(w);
  }
  return sent;
}

// Traffic around a splice into a pipe: another writer of `total` bytes
// into the pipe's write end wr (5000 at a time), and a reader that counts
// what comes out of rd until end of file, each on its own thread, through
// the given calls (the scenario's API, or the kernel's).
class PipeTraffic {
 public:
  using WriteFn = ssize_t (*)(int, const void*, size_t);
  using ReadFn = ssize_t (*)(int, void*, size_t);
  PipeTraffic(WriteFn write, ReadFn read, int rd, int wr, size_t total)
      : writer_([write, wr, total] { (void)write_total(write, wr, total, 5000, 'w'); }),
        reader_([this, read, rd] {
          std::vector<char> buf(3000);
          for (ssize_t n; (n = read(rd, buf.data(), buf.size())) > 0;) arrived_ += static_cast<size_t>(n);
        }) {}
  PipeTraffic(const PipeTraffic&) = delete;
  PipeTraffic& operator=(const PipeTraffic&) = delete;
  void join_writer() { writer_.join(); }
  // Once every write end is closed: the bytes that came out.
  size_t join_reader() {
    reader_.join();
    return arrived_;
  }

 private:
  std::atomic<size_t> arrived_{0};  // before the threads that use it
  std::thread writer_, reader_;
};

// Logs "<what> holds N": the bytes queued in kernel pipe or socket fd
// (FIONREAD).
inline void log_queued(conf::T& t, int fd, const std::string& what) {
  int n = -1;
  (void)::ioctl(fd, FIONREAD, &n);
  t.log(what + " holds " + std::to_string(n));
}

// Reads up to n bytes from fd through the scenario's API (a uepoll or a
// kernel descriptor) and logs the count and the bytes.
inline void read_logged(conf::T& t, int fd, size_t n, const std::string& what) {
  std::string buf(n, 0);
  errno = 0;
  const ssize_t r = t.api.read(fd, buf.data(), n);
  t.log("read " + what + " = " + t.res(r) + (r > 0 ? " \"" + buf.substr(0, static_cast<size_t>(r)) + "\"" : ""));
}

}  // namespace splice_conf
