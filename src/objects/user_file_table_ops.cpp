// user_file_table_ops.cpp - TableFile's operations (user_file_table.h):
// each calls the provider's table with no uepoll lock held, owns the
// blocking (wait, write_all), the pending error, SO_ERROR/SO_TYPE/
// SO_DOMAIN/SO_PROTOCOL/SO_RCVTIMEO/SO_SNDTIMEO, and refreshes a pull
// file's mask after every operation.
// Locks: wq() (11) only, to queue and dequeue a blocked call's entry; never
// while provider code runs.
#include "core/block.h"
#include "core/sock_timeo.h"
#include "core/sockopt.h"
#include "core/user_memory.h"
#include "objects/user_file_table.h"

#include <cerrno>
#include <cstring>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <vector>

namespace uepoll::objects {

namespace {

// What ends a blocked call (file.h): reads, receives and accepts wait for
// readable, writes, sends and connects for writable; both for hang-up and
// error.  Key 0 matches every entry.
constexpr uint32_t kReadWake = EPOLLIN | EPOLLRDNORM | EPOLLRDHUP | EPOLLHUP | EPOLLERR;
constexpr uint32_t kWriteWake = EPOLLOUT | EPOLLWRNORM | EPOLLHUP | EPOLLERR;

// Linux access_ok() on every segment (EFAULT): below TASK_SIZE.  NULL and
// the first page pass, as in Linux: the provider's copy fails there
// (file.h), after whatever the operation did first.
bool iov_ok(const struct iovec* iov, size_t n) noexcept {
  for (size_t i = 0; i < n; ++i)
    if (iov[i].iov_len && !core::user_range_ok(iov[i].iov_base, iov[i].iov_len)) return false;
  return true;
}

size_t iov_total(const struct iovec* iov, size_t n) noexcept {
  size_t t = 0;
  for (size_t i = 0; i < n; ++i) t += iov[i].iov_len;
  return t;
}

}  // namespace

template <class Fn>
auto TableFile::run(Fn&& fn) noexcept -> decltype(fn()) {
  if (ops_.flags & UEP_FILE_PUSH) return fn();
  bool pending;
  uint32_t key;
  decltype(fn()) r;
  {
    OpScope scope(this);  // the operation's own notifies wait for the refresh
    r = fn();
    pending = scope.frame().pending;
    key = scope.frame().key;
  }
  refresh();  // a pull file's readiness after the operation (no lock held)
  if (pending) notify(key);
  return r;
}

// Linux sk_wait_event() with the condition evaluated by the operation
// (core::block_on_unlocked): a signal handler ends the sleep with -EINTR,
// except that with no timeout set (dl null) the call goes on sleeping after
// handlers that all have SA_RESTART, unless `restart` is false (a call that
// has already moved data returns its count): signal(7).
template <class Op>
long TableFile::wait(uint32_t want, bool nonblock, const timespec* dl, Op&& op, bool restart) noexcept {
  return core::block_on_unlocked(wq(), nonblock, want, dl, restart, op);
}

template <class Op>
long TableFile::write_all(const struct iovec* iov, size_t n, bool nonblock, Op&& op) noexcept {
  timespec ts;
  const timespec* dl = deadline(false, &ts);
  if (!(ops_.flags & UEP_FILE_STREAM)) return wait(kWriteWake, nonblock, dl, [&] { return op(iov, n); });
  std::vector<struct iovec> cur;
  try {
    cur.assign(iov, iov + n);
  } catch (...) {
    return -ENOBUFS;
  }
  const size_t total = iov_total(iov, n);
  size_t seg = 0, done = 0;
  for (;;) {
    const long r = wait(kWriteWake, nonblock, dl, [&] { return op(cur.data() + seg, n - seg); }, done == 0);
    if (r < 0) return done ? static_cast<long>(done) : r;  // a signal or timeout: the partial count
    done += static_cast<size_t>(r);
    for (size_t left = static_cast<size_t>(r); left && seg < n;) {
      const size_t k = left < cur[seg].iov_len ? left : cur[seg].iov_len;
      cur[seg].iov_base = static_cast<char*>(cur[seg].iov_base) + k;
      cur[seg].iov_len -= k;
      left -= k;
      if (!cur[seg].iov_len) ++seg;
    }
    while (seg < n && !cur[seg].iov_len) ++seg;
    if (done >= total || seg >= n || r == 0 || nonblock) return static_cast<long>(done);
  }
}

const timespec* TableFile::deadline(bool rcv, timespec* out) const noexcept {
  return core::sock_timeo_deadline((rcv ? rcvtimeo_ns_ : sndtimeo_ns_).load(std::memory_order_relaxed), out);
}

// A zero-length read or write reaches the operation, as Linux's
// new_sync_read/new_sync_write hand it to ->read_iter / ->write_iter.
ssize_t TableFile::read(void* buf, size_t count) noexcept {
  struct iovec iov = {buf, count};
  return read_iter(&iov, 1, count);
}

ssize_t TableFile::write(const void* buf, size_t count) noexcept {
  struct iovec iov = {const_cast<void*>(buf), count};
  return write_iter(&iov, 1, count);
}

ssize_t TableFile::read_iter(const struct iovec* iov, int iovcnt, size_t total) noexcept {
  if (!ops_.read_iter) return -EINVAL;  // vfs_read: no ->read_iter
  if (!iov_ok(iov, static_cast<size_t>(iovcnt))) return -EFAULT;
  timespec ts;
  const timespec* dl = deadline(true, &ts);
  const uep_file_call c = call(0);
  const long r = wait(kReadWake, nonblocking(), dl, [&] {
    if (const int e = sock_error()) return static_cast<long>(-e);
    return run([&] { return static_cast<long>(ops_.read_iter(ctx_, iov, iovcnt, &c)); });
  });
  return r > static_cast<long>(total) ? -EIO : r;
}

ssize_t TableFile::write_iter(const struct iovec* iov, int iovcnt, size_t) noexcept {
  if (!ops_.write_iter) return -EINVAL;  // vfs_write: no ->write_iter
  if (!iov_ok(iov, static_cast<size_t>(iovcnt))) return -EFAULT;
  const uep_file_call c = call(0);
  return write_all(iov, static_cast<size_t>(iovcnt), nonblocking(), [&](const struct iovec* v, size_t n) {
    if (const int e = sock_error()) return static_cast<long>(-e);
    return run([&] { return static_cast<long>(ops_.write_iter(ctx_, v, static_cast<int>(n), &c)); });
  });
}

long TableFile::sendmsg(const struct msghdr* msg, int flags) noexcept {
  if (!ops_.sendmsg) return -EOPNOTSUPP;  // sock_no_sendmsg
  if (!iov_ok(msg->msg_iov, msg->msg_iovlen)) return -EFAULT;
  const uep_file_call c = call(flags);
  const bool nb = nonblocking() || (flags & MSG_DONTWAIT);
  return write_all(msg->msg_iov, msg->msg_iovlen, nb, [&](const struct iovec* v, size_t n) {
    if (const int e = sock_error()) return static_cast<long>(-e);
    struct msghdr m = *msg;
    m.msg_iov = const_cast<struct iovec*>(v);
    m.msg_iovlen = n;
    return run([&] { return static_cast<long>(ops_.sendmsg(ctx_, &m, &c)); });
  });
}

long TableFile::recvmsg(struct msghdr* msg, int flags) noexcept {
  if (!ops_.recvmsg) return -EOPNOTSUPP;  // sock_no_recvmsg
  if (!iov_ok(msg->msg_iov, msg->msg_iovlen)) return -EFAULT;
  timespec ts;
  const timespec* dl = deadline(true, &ts);
  const uep_file_call c = call(flags);
  const bool nb = nonblocking() || (flags & MSG_DONTWAIT);
  if ((flags & MSG_WAITALL) && (ops_.flags & UEP_FILE_STREAM) && !nb) {
    const size_t total = iov_total(msg->msg_iov, msg->msg_iovlen);
    if (total) return (flags & MSG_PEEK) ? recv_peek_all(msg, total, dl, c) : recv_all(msg, total, dl, c);
  }
  return wait(kReadWake, nb, dl, [&] {
    if (const int e = sock_error()) return static_cast<long>(-e);
    return run([&] { return static_cast<long>(ops_.recvmsg(ctx_, msg, &c)); });
  });
}

// MSG_WAITALL on a blocking stream socket (Linux tcp_recvmsg with target
// = len): receives until the whole count, the end of the stream, an error,
// a signal or SO_RCVTIMEO; once data has moved, each of those returns the
// count (a pending error stays for the next call, as sk_err).
long TableFile::recv_all(struct msghdr* msg, size_t total, const timespec* dl, const uep_file_call& c) noexcept {
  std::vector<struct iovec> cur;
  try {
    cur.assign(msg->msg_iov, msg->msg_iov + msg->msg_iovlen);
  } catch (...) {
    return -ENOBUFS;
  }
  const size_t n = cur.size();
  size_t seg = 0, done = 0;
  struct msghdr m = *msg;
  const size_t control_space = msg->msg_controllen;
  for (;;) {
    const long r = wait(kReadWake, false, dl, [&] {
      if (done && err_.load(std::memory_order_relaxed)) return static_cast<long>(-EIO);  // stop; the error stays
      if (const int e = sock_error()) return static_cast<long>(-e);
      m.msg_iov = cur.data() + seg;
      m.msg_iovlen = n - seg;
      m.msg_controllen = control_space;  // the caller's whole buffer: no control data came yet
      return run([&] { return static_cast<long>(ops_.recvmsg(ctx_, &m, &c)); });
    }, done == 0);
    if (r < 0) {
      if (!done) return r;
      break;
    }
    if (r > static_cast<long>(total - done)) return -EIO;
    done += static_cast<size_t>(r);
    msg->msg_flags = m.msg_flags;
    msg->msg_namelen = m.msg_namelen;
    msg->msg_controllen = m.msg_controllen;
    for (size_t left = static_cast<size_t>(r); left && seg < n;) {
      const size_t k = left < cur[seg].iov_len ? left : cur[seg].iov_len;
      cur[seg].iov_base = static_cast<char*>(cur[seg].iov_base) + k;
      cur[seg].iov_len -= k;
      left -= k;
      if (!cur[seg].iov_len) ++seg;
    }
    while (seg < n && !cur[seg].iov_len) ++seg;
    if (r == 0 || done >= total || seg >= n) break;  // the end of the stream, or full
    // A receive that brought control data ends here (Linux's AF_UNIX stream
    // read stops after bytes that carried files), so the buffer holds it.
    if (m.msg_controllen || (m.msg_flags & MSG_CTRUNC)) break;
    // So does out-of-band data: Linux's stream reads (AF_UNIX, TCP) stop
    // at the mark once they have taken bytes.
    if (at_oob_mark()) break;
  }
  return static_cast<long>(done);
}

bool TableFile::at_oob_mark() noexcept {
  int at = 0;
  return ioctl(SIOCATMARK, &at) == 0 && at;
}

// MSG_PEEK|MSG_WAITALL: peeks the whole buffer until it fills, or the
// stream ends (EPOLLRDHUP/EPOLLHUP/EPOLLERR in the mask), each sleep
// ending at the next wake for EPOLLIN: a provider that keeps Linux's
// answer notifies every arrival of data (sk_data_ready), not only the
// rise of EPOLLIN.
long TableFile::recv_peek_all(struct msghdr* msg, size_t total, const timespec* dl, const uep_file_call& c) noexcept {
  long seen = -1;  // the partial count of the previous peek
  bool last = false;
  for (;;) {
    const long base = seen;
    const long r = wait(kReadWake, false, dl, [&] {
      if (seen > 0 && err_.load(std::memory_order_relaxed)) return static_cast<long>(-EIO);
      if (const int e = sock_error()) return static_cast<long>(-e);
      const long k = run([&] { return static_cast<long>(ops_.recvmsg(ctx_, msg, &c)); });
      if (k < 0) return k;
      last = k == 0 || static_cast<size_t>(k) >= total || (poll(0) & (EPOLLRDHUP | EPOLLHUP | EPOLLERR));
      return !last && k == base ? -EAGAIN : k;
    }, seen <= 0);
    if (r < 0) return seen > 0 ? seen : r;
    if (last) return r;
    seen = r;  // more came, not enough: sleep again from here
  }
}

long TableFile::accept4(struct sockaddr* addr, socklen_t* len, int flags) noexcept {
  if (!ops_.accept4) return -EOPNOTSUPP;  // sock_no_accept
  timespec ts;
  const timespec* dl = deadline(true, &ts);  // Linux: accept waits sk_rcvtimeo
  const uep_file_call c = call(flags);
  return wait(kReadWake, nonblocking(), dl, [&] {
    if (const int e = sock_error()) return static_cast<long>(-e);
    return run([&] { return static_cast<long>(ops_.accept4(ctx_, addr, len, &c)); });
  });
}

long TableFile::connect(const struct sockaddr* addr, socklen_t len) noexcept {
  if (!ops_.connect) return -EOPNOTSUPP;  // sock_no_connect
  const uep_file_call c = call(0);
  const long r = run([&] { return static_cast<long>(ops_.connect(ctx_, addr, len, &c)); });
  if (r != -EINPROGRESS || nonblocking()) return r;
  // Linux inet_wait_for_connect (SO_SNDTIMEO), then sock_error().
  timespec ts;
  const timespec* dl = deadline(false, &ts);
  const long w = wait(EPOLLOUT | EPOLLERR | EPOLLHUP, false, dl, [&] {
    refresh();
    return (poll(0) & (EPOLLOUT | EPOLLERR | EPOLLHUP)) ? 0L : -EAGAIN;
  });
  if (w == -EAGAIN) return -EINPROGRESS;  // timed out: still in progress
  if (w < 0) return w;
  const int e = take_error();
  return e ? -e : 0;
}

int TableFile::shutdown(int how) noexcept {
  if (!is_socket()) return -ENOTSOCK;
  if (how < SHUT_RD || how > SHUT_RDWR) return -EINVAL;  // inet_shutdown
  if (!ops_.shutdown) return -EOPNOTSUPP;               // sock_no_shutdown
  return static_cast<int>(run([&] { return static_cast<long>(ops_.shutdown(ctx_, how)); }));
}

long TableFile::bind(const struct sockaddr* addr, socklen_t len) noexcept {
  if (!ops_.bind) return -EOPNOTSUPP;
  return run([&] { return static_cast<long>(ops_.bind(ctx_, addr, len)); });
}

long TableFile::listen(int backlog) noexcept {
  if (!ops_.listen) return -EOPNOTSUPP;
  return run([&] { return static_cast<long>(ops_.listen(ctx_, backlog)); });
}

long TableFile::getsockname(struct sockaddr* addr, socklen_t* len) noexcept {
  if (!ops_.getsockname) return -EOPNOTSUPP;
  if (!core::user_readable(len, sizeof *len)) return -EFAULT;
  return run([&] { return static_cast<long>(ops_.getsockname(ctx_, addr, len)); });
}

long TableFile::getpeername(struct sockaddr* addr, socklen_t* len) noexcept {
  if (!ops_.getpeername) return -EOPNOTSUPP;
  if (!core::user_readable(len, sizeof *len)) return -EFAULT;
  return run([&] { return static_cast<long>(ops_.getpeername(ctx_, addr, len)); });
}

long TableFile::getsockopt(int level, int name, void* val, socklen_t* len) noexcept {
  if (!core::user_readable(len, sizeof *len)) return -EFAULT;
  if (static_cast<int>(*len) < 0) return -EINVAL;
  bool rcv;
  if (level == SOL_SOCKET && core::is_sock_timeo(name, &rcv))  // sock_get_timeout: {0, 0} for none
    return core::sock_timeo_put((rcv ? rcvtimeo_ns_ : sndtimeo_ns_).load(std::memory_order_relaxed), val, len);
  if (level == SOL_SOCKET) {
    switch (name) {
      case SO_ERROR:
        if (const int e = take_error()) return core::put_int_opt(e, val, len);
        if (ops_.getsockopt) break;  // none pending here: the provider's own sk_err
        return core::put_int_opt(0, val, len);
      case SO_TYPE:
        return core::put_int_opt(ops_.sock_type, val, len);
      case SO_DOMAIN:
        return core::put_int_opt(ops_.sock_family, val, len);
      case SO_PROTOCOL:
        return core::put_int_opt(ops_.sock_protocol, val, len);
      default:
        break;
    }
  }
  if (!ops_.getsockopt) return -ENOPROTOOPT;
  if (*len && !core::user_readable(val, *len)) return -EFAULT;
  return run([&] { return static_cast<long>(ops_.getsockopt(ctx_, level, name, val, len)); });
}

long TableFile::setsockopt(int level, int name, const void* val, socklen_t len) noexcept {
  bool rcv;
  if (level == SOL_SOCKET && core::is_sock_timeo(name, &rcv)) {  // Linux sock_set_timeout
    int64_t ns;
    if (const long e = core::sock_timeo_parse(val, len, &ns)) return e;
    (rcv ? rcvtimeo_ns_ : sndtimeo_ns_).store(ns, std::memory_order_relaxed);
    return 0;
  }
  if (level == SOL_SOCKET) {
    switch (name) {
      case SO_ERROR:
      case SO_TYPE:
      case SO_DOMAIN:
      case SO_PROTOCOL:
        return -ENOPROTOOPT;  // read-only
      default:
        break;
    }
  }
  if (!ops_.setsockopt) return -ENOPROTOOPT;
  if (len && !core::user_readable(val, len)) return -EFAULT;
  return run([&] { return static_cast<long>(ops_.setsockopt(ctx_, level, name, val, len)); });
}

long TableFile::ioctl(unsigned long request, void* arg) noexcept {
  if (!ops_.ioctl) return -ENOTTY;
  const uep_file_call c = call(0);
  return run([&] { return static_cast<long>(ops_.ioctl(ctx_, request, arg, &c)); });
}

long TableFile::fstat(struct stat* st) noexcept {
  const core::StatKind k = is_socket() ? core::StatKind::kSock : fifo() ? core::StatKind::kFifo : core::StatKind::kAnon;
  if (long r = core::stat_template(k, st)) return r;
  if (k != core::StatKind::kAnon) st->st_ino = core::kInoBase + id();
  if (ops_.fstat) return ops_.fstat(ctx_, st);
  return 0;
}

long TableFile::pipe_size(int cmd, unsigned long arg) noexcept {
  if (!fifo()) return -EBADF;  // pipe_fcntl: not a pipe
  if (!ops_.ioctl) return -EINVAL;
  const uep_file_call c = call(0);
  return run([&] {
    return static_cast<long>(ops_.ioctl(ctx_, static_cast<unsigned long>(cmd), reinterpret_cast<void*>(arg), &c));
  });
}

long TableFile::setfl_hook(int old_flags, int new_flags) noexcept {
  return ops_.setfl ? ops_.setfl(ctx_, old_flags, new_flags) : 0;
}

void TableFile::show_fdinfo(std::string& out) noexcept {
  if (!ops_.show_fdinfo) return;
  char buf[4096];
  const ssize_t n = ops_.show_fdinfo(ctx_, buf, sizeof buf);
  if (n > 0) {
    try {
      out.append(buf, static_cast<size_t>(n) < sizeof buf ? static_cast<size_t>(n) : sizeof buf);
    } catch (...) {
    }
  }
}

}  // namespace uepoll::objects
