// file_ops.cpp - the default operations of core::File (file.h): what Linux
// answers for a file without the operation, the two vector helpers, and
// fstat's templates.  Locks: none (the templates are built once under
// std::call_once).
#include "core/file.h"

#include "core/user_memory.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <mutex>
#include <sys/eventfd.h>
#include <unistd.h>
#include <vector>

namespace uepoll::core {

namespace {

struct StatTemplates {
  struct stat anon {}, fifo{}, sock{};
  int err = 0;
};

const StatTemplates& templates() {
  static StatTemplates t;
  static std::once_flag once;
  std::call_once(once, [] {
    int e = ::eventfd(0, EFD_CLOEXEC);
    int p[2] = {-1, -1}, s[2] = {-1, -1};
    if (e < 0 || ::pipe2(p, O_CLOEXEC) < 0 || ::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, s) < 0 ||
        ::fstat(e, &t.anon) < 0 || ::fstat(p[0], &t.fifo) < 0 || ::fstat(s[0], &t.sock) < 0)
      t.err = errno;
    for (int fd : {e, p[0], p[1], s[0], s[1]})
      if (fd >= 0) ::close(fd);
  });
  return t;
}

// Bytes moved per call through the bounce buffer: a pipe's atomic unit
// (PIPE_BUF) always fits in one call; larger totals go in chunks.
constexpr size_t kChunk = 1 << 20;

}  // namespace

long stat_template(StatKind kind, struct stat* st) noexcept {
  const StatTemplates& t = templates();
  if (t.err) return -t.err;
  *st = kind == StatKind::kFifo ? t.fifo : kind == StatKind::kSock ? t.sock : t.anon;
  return 0;
}

ssize_t File::read(void*, size_t) noexcept { return -EINVAL; }
ssize_t File::write(const void*, size_t) noexcept { return -EINVAL; }
long File::ioctl(unsigned long, void*) noexcept { return -ENOTTY; }
long File::fstat(struct stat* st) noexcept { return stat_template(StatKind::kAnon, st); }
long File::pipe_size(int, unsigned long) noexcept { return -EBADF; }
long File::splice_read(SpliceSink&, size_t, bool) noexcept { return -EINVAL; }
long File::splice_from_kernel(int, long long*, size_t, bool) noexcept { return -EINVAL; }
long File::tee(SpliceSink&, size_t, bool) noexcept { return -EINVAL; }
long File::vmsplice(const struct iovec*, int, size_t, bool) noexcept { return -EBADF; }
int File::shutdown(int) noexcept { return -ENOTSOCK; }
long File::bind(const struct sockaddr*, socklen_t) noexcept { return -ENOTSOCK; }
long File::listen(int) noexcept { return -ENOTSOCK; }
long File::accept4(struct sockaddr*, socklen_t*, int) noexcept { return -ENOTSOCK; }
long File::connect(const struct sockaddr*, socklen_t) noexcept { return -ENOTSOCK; }
long File::sendmsg(const struct msghdr*, int) noexcept { return -ENOTSOCK; }
long File::recvmsg(struct msghdr*, int) noexcept { return -ENOTSOCK; }
long File::getsockopt(int, int, void*, socklen_t*) noexcept { return -ENOTSOCK; }
long File::setsockopt(int, int, const void*, socklen_t) noexcept { return -ENOTSOCK; }
long File::getsockname(struct sockaddr*, socklen_t*) noexcept { return -ENOTSOCK; }
long File::getpeername(struct sockaddr*, socklen_t*) noexcept { return -ENOTSOCK; }

ssize_t File::read_iter(const struct iovec* iov, int iovcnt, size_t total) noexcept {
  std::vector<char> buf;
  try {
    buf.resize(total < kChunk ? total : kChunk);
  } catch (...) {
    return -ENOMEM;
  }
  const ssize_t r = read(buf.data(), buf.size());
  if (r <= 0) return r;
  size_t done = 0;
  for (int i = 0; i < iovcnt && done < static_cast<size_t>(r); ++i) {
    size_t n = iov[i].iov_len;
    if (n > static_cast<size_t>(r) - done) n = static_cast<size_t>(r) - done;
    if (n && faulting_ptr(iov[i].iov_base)) return done ? static_cast<ssize_t>(done) : -EFAULT;
    std::memcpy(iov[i].iov_base, buf.data() + done, n);
    done += n;
  }
  return r;
}

ssize_t File::write_iter(const struct iovec* iov, int iovcnt, size_t) noexcept {
  ssize_t done = 0;
  for (int i = 0; i < iovcnt; ++i) {
    if (!iov[i].iov_len) continue;
    const ssize_t r = write(iov[i].iov_base, iov[i].iov_len);
    if (r < 0) return done ? done : r;
    done += r;
    if (static_cast<size_t>(r) != iov[i].iov_len) break;
  }
  return done;
}

ssize_t File::write_gathered(const struct iovec* iov, int iovcnt, size_t total) noexcept {
  std::vector<char> buf;
  try {
    buf.resize(total < kChunk ? total : kChunk);
  } catch (...) {
    return -ENOMEM;
  }
  ssize_t done = 0;
  int seg = 0;
  size_t off = 0;
  while (static_cast<size_t>(done) < total) {
    size_t n = 0;
    while (n < buf.size() && seg < iovcnt) {
      size_t take = iov[seg].iov_len - off;
      if (take > buf.size() - n) take = buf.size() - n;
      if (take && faulting_ptr(iov[seg].iov_base)) break;
      std::memcpy(buf.data() + n, static_cast<const char*>(iov[seg].iov_base) + off, take);
      n += take;
      off += take;
      if (off == iov[seg].iov_len) {
        ++seg;
        off = 0;
      }
    }
    if (n == 0) return done ? done : -EFAULT;
    const ssize_t r = write(buf.data(), n);
    if (r < 0) return done ? done : r;
    done += r;
    if (static_cast<size_t>(r) < n) break;
  }
  return done;
}

}  // namespace uepoll::core
