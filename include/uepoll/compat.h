/*
 * uepoll/compat.h - compile an unmodified epoll program against uepoll.
 *
 * Include it after the system headers (or force it in front of every source
 * file with `cc -include uepoll/compat.h`), and link with libuepoll: every
 * call below then goes to uepoll's function of the same name (uep_ + name),
 * which creates uepoll objects and passes kernel descriptors on to the
 * kernel, so a file compiles and runs on uepoll unchanged:
 *
 *   epoll_create epoll_create1 epoll_ctl epoll_wait epoll_pwait epoll_pwait2
 *   eventfd eventfd_read eventfd_write pipe pipe2 socketpair timerfd_create
 *   timerfd_settime timerfd_gettime read write readv writev pread pwrite
 *   lseek close dup dup2 dup3 fcntl flock ioctl fstat poll ppoll shutdown send
 *   recv sendto recvfrom sendmsg recvmsg getsockopt setsockopt getsockname
 *   getpeername bind listen accept accept4 connect
 *
 * How.  This header first includes every system header that declares these
 * names, then defines each name as an object-like macro (`#define read
 * uep_read`; flock a function-like one, so that `struct flock` keeps its
 * name).  The system declarations are therefore untouched, and in the
 * including file the name is replaced everywhere it appears as a token:
 *   - calls, and the function used as a value (`fp = close;`), go to uepoll;
 *   - a struct member or local variable of that name is renamed the same way
 *     at its declaration and at every use in the file, so it keeps working
 *     (a struct's layout does not depend on its member names, so files
 *     compiled without this header still agree with it).
 *
 * Limits (a file that hits one: include this header in fewer files, or
 * #undef the name after including it):
 *   - members of types declared BEFORE this header with one of these names
 *     are not renamed at declaration but are at use: glibc's
 *     cookie_io_functions_t (read, write, close), C++ library classes
 *     (std::fstream::close, std::istream::read, ...).  In C++, use it only
 *     in files that call no such member.
 *   - a function of the program's own with one of these names (e.g. a
 *     static `send`) collides with uepoll's declaration.
 *   - libc functions that call these internally (fdopen/stdio, popen,
 *     posix_spawn file actions, isatty, ...) still reach the kernel, which
 *     answers EBADF for a uepoll descriptor; eventfd_read/eventfd_write are
 *     provided here so that they work.
 *   - select/pselect are not mapped: an fd_set cannot hold a uepoll
 *     descriptor (they are above FD_SETSIZE).  Use poll.
 *   - uepoll's socket pairs are AF_UNIX (stream, datagram, seqpacket); other
 *     families fail (docs/linux-deviations.md).
 *   - sendto/recvfrom/getsockname/getpeername take `struct sockaddr *`: C
 *     code that relied on glibc's transparent union to pass a
 *     `struct sockaddr_un *` gets a pointer-type warning; add the cast.
 *   - with -include (the header comes first), _FORTIFY_SOURCE is switched
 *     off for the file, since glibc's fortified inline read() etc. would
 *     otherwise call the kernel directly.  Included last, the fortified
 *     wrappers are simply bypassed for these names.
 *   - bind is a macro too: in C++, std::bind in the same file becomes
 *     std::uep_bind (UEPOLL_COMPAT_NO_BIND leaves bind, listen, accept,
 *     accept4 and connect alone).
 *   - UEPOLL_COMPAT_NO_<NAME> (e.g. -DUEPOLL_COMPAT_NO_CLOSE) leaves that
 *     name alone.
 */
#ifndef UEPOLL_COMPAT_H
#define UEPOLL_COMPAT_H

#if !defined(_FEATURES_H) && defined(_FORTIFY_SOURCE)
#undef _FORTIFY_SOURCE
#endif

/* Every system declaration of the mapped names, before the macros exist. */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#include <uepoll/uepoll.h>

#ifdef __cplusplus
extern "C" {
#endif

/* glibc's eventfd_read/eventfd_write call read/write inside libc. */
static inline int uep_compat_eventfd_read(int fd, eventfd_t *value) {
  return uep_read(fd, value, sizeof *value) == (ssize_t)sizeof *value ? 0 : -1;
}
static inline int uep_compat_eventfd_write(int fd, eventfd_t value) {
  return uep_write(fd, &value, sizeof value) == (ssize_t)sizeof value ? 0 : -1;
}

#ifdef __cplusplus
}
#endif

#ifndef UEPOLL_COMPAT_NO_EPOLL
#define epoll_create uep_epoll_create
#define epoll_create1 uep_epoll_create1
#define epoll_ctl uep_epoll_ctl
#define epoll_wait uep_epoll_wait
#define epoll_pwait uep_epoll_pwait
#define epoll_pwait2 uep_epoll_pwait2
#endif
#ifndef UEPOLL_COMPAT_NO_EVENTFD
#define eventfd uep_eventfd
#define eventfd_read uep_compat_eventfd_read
#define eventfd_write uep_compat_eventfd_write
#endif
#ifndef UEPOLL_COMPAT_NO_PIPE
#define pipe uep_pipe
#define pipe2 uep_pipe2
#endif
#ifndef UEPOLL_COMPAT_NO_SOCKETPAIR
#define socketpair uep_socketpair
#endif
#ifndef UEPOLL_COMPAT_NO_TIMERFD
#define timerfd_create uep_timerfd_create
#define timerfd_settime uep_timerfd_settime
#define timerfd_gettime uep_timerfd_gettime
#endif
#ifndef UEPOLL_COMPAT_NO_READ
#define read uep_read
#define readv uep_readv
#define pread uep_pread
#endif
#ifndef UEPOLL_COMPAT_NO_WRITE
#define write uep_write
#define writev uep_writev
#define pwrite uep_pwrite
#endif
#ifndef UEPOLL_COMPAT_NO_LSEEK
#define lseek uep_lseek
#endif
#ifndef UEPOLL_COMPAT_NO_CLOSE
#define close uep_close
#endif
#ifndef UEPOLL_COMPAT_NO_DUP
#define dup uep_dup
#define dup2 uep_dup2
#define dup3 uep_dup3
#endif
#ifndef UEPOLL_COMPAT_NO_FCNTL
#define fcntl uep_fcntl
#endif
#ifndef UEPOLL_COMPAT_NO_FLOCK
/* Function-like: `struct flock` (fcntl's record locks) keeps its name. */
#define flock(fd, operation) uep_flock(fd, operation)
#endif
#ifndef UEPOLL_COMPAT_NO_IOCTL
#define ioctl uep_ioctl
#endif
#ifndef UEPOLL_COMPAT_NO_FSTAT
#define fstat uep_fstat
#endif
#ifndef UEPOLL_COMPAT_NO_POLL
#define poll uep_poll
#define ppoll uep_ppoll
#endif
#ifndef UEPOLL_COMPAT_NO_SHUTDOWN
#define shutdown uep_shutdown
#endif
#ifndef UEPOLL_COMPAT_NO_SEND
#define send uep_send
#define sendto uep_sendto
#define sendmsg uep_sendmsg
#endif
#ifndef UEPOLL_COMPAT_NO_RECV
#define recv uep_recv
#define recvfrom uep_recvfrom
#define recvmsg uep_recvmsg
#endif
#ifndef UEPOLL_COMPAT_NO_SOCKOPT
#define getsockopt uep_getsockopt
#define setsockopt uep_setsockopt
#define getsockname uep_getsockname
#define getpeername uep_getpeername
#endif
#ifndef UEPOLL_COMPAT_NO_BIND
#define bind uep_bind
#define listen uep_listen
#define accept uep_accept
#define accept4 uep_accept4
#define connect uep_connect
#endif

#endif /* UEPOLL_COMPAT_H */
