// sigio.cpp - File::kill_fasync: the SIGIO (or F_SETSIG signal) that
// Linux's kill_fasync -> send_sigio sends a file's owner when its
// readiness changes; File::send_sigurg, the SIGURG of out-of-band data.
//
// Linux (fs/fcntl.c send_sigio_to_task): with no F_SETSIG signal, SIGIO
// with SEND_SIG_PRIV (si_code SI_KERNEL); with one, that signal with
// si_code = the reason (POLL_IN ...), si_band = band_table[reason -
// POLL_IN] and si_fd = the fasync entry's descriptor, falling back to a
// plain SIGIO when a real-time signal cannot be queued.  From user space a
// siginfo with si_code >= 0 may be queued only to the calling process
// (rt_sigqueueinfo) or the calling thread (rt_tgsigqueueinfo): an owner
// that is the process itself (the usual F_SETOWN(getpid())) or the calling
// thread gets exactly Linux's siginfo.  Another thread of the process gets
// the signal by tgkill, another process by kill, a process group by
// killpg: the signal and its target are Linux's, the siginfo is SI_TKILL /
// SI_USER's (docs/linux-deviations.md).
//
// Locks: none; makes system calls, so callers hold no uepoll lock.
#include "core/file.h"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace uepoll::core {

namespace {

// Linux fs/fcntl.c band_table, indexed by reason - POLL_IN.
constexpr long kBand[6] = {
    EPOLLIN | EPOLLRDNORM,                // POLL_IN
    EPOLLOUT | EPOLLWRNORM | EPOLLWRBAND,  // POLL_OUT
    EPOLLIN | EPOLLRDNORM | EPOLLMSG,      // POLL_MSG
    EPOLLERR,                              // POLL_ERR
    EPOLLPRI | EPOLLRDBAND,                // POLL_PRI
    EPOLLHUP | EPOLLERR                    // POLL_HUP
};

long queue_to_self(int tid, int sig, siginfo_t* si) noexcept {
  const pid_t self = ::getpid();
  if (tid) return ::syscall(SYS_rt_tgsigqueueinfo, self, tid, sig, si);
  return ::syscall(SYS_rt_sigqueueinfo, self, sig, si);
}

// `sig` (SIGIO, SIGURG) as SEND_SIG_PRIV sends it, to the owner.
void plain_signal(int sig, int owner, bool thread) noexcept {
  const pid_t self = ::getpid();
  const pid_t me = static_cast<pid_t>(::syscall(SYS_gettid));
  siginfo_t si;
  std::memset(&si, 0, sizeof si);
  si.si_signo = sig;
  si.si_code = SI_KERNEL;
  if (thread) {
    if (owner == me) (void)queue_to_self(me, sig, &si);
    else (void)::syscall(SYS_tgkill, self, owner, sig);
  } else if (owner == self) {
    (void)queue_to_self(0, sig, &si);
  } else {
    (void)::kill(owner, sig);  // another process, or (negative) a process group
  }
}

void plain_sigio(int owner, bool thread) noexcept { plain_signal(SIGIO, owner, thread); }

}  // namespace

void File::kill_fasync(int reason) noexcept {
  if (!(status_flags() & O_ASYNC) || fasync_fd_.load(std::memory_order_relaxed) < 0) return;
  const int owner = owner_.load(std::memory_order_relaxed);
  if (!owner) return;
  const bool thread = owner_tid_.load(std::memory_order_relaxed);
  const int sig = sigio_sig_.load(std::memory_order_relaxed);
  const int saved = errno;
  if (sig == 0 || reason < POLL_IN || reason > POLL_HUP) {
    plain_sigio(owner, thread);
    errno = saved;
    return;
  }
  siginfo_t si;
  std::memset(&si, 0, sizeof si);
  si.si_signo = sig;
  si.si_code = reason;
  si.si_band = kBand[reason - POLL_IN];
  si.si_fd = fasync_fd_.load(std::memory_order_relaxed);
  const pid_t self = ::getpid();
  const pid_t me = static_cast<pid_t>(::syscall(SYS_gettid));
  long r;
  if (thread) {
    r = owner == me ? queue_to_self(me, sig, &si) : ::syscall(SYS_tgkill, self, owner, sig);
  } else if (owner == self) {
    r = queue_to_self(0, sig, &si);
  } else {
    r = ::kill(owner, sig);  // another process (or, negative, a group)
  }
  // Linux: a real-time signal that cannot be queued falls back to SIGIO.
  if (r < 0 && errno == EAGAIN) plain_sigio(owner, thread);
  errno = saved;
}

void File::send_sigurg() noexcept {
  const int owner = owner_.load(std::memory_order_relaxed);
  if (!owner) return;
  const int saved = errno;
  plain_signal(SIGURG, owner, owner_tid_.load(std::memory_order_relaxed));
  errno = saved;
  if (sigio_sig_.load(std::memory_order_relaxed) != 0) kill_fasync(POLL_PRI);
}

}  // namespace uepoll::core
