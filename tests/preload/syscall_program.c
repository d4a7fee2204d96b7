/*
 * syscall_program.c - every system call that takes a descriptor, made by
 * number through syscall(2) on a uepoll pipe end, eventfd, epoll instance,
 * timerfd and socket of a pair (the calls served by uepoll, those answered
 * for a kernel object of the type, and those whose answer comes from the
 * kernel on the template: src/preload/interpose_syscall.c).  Run plainly
 * and under uepoll-run (tests/preload/run.sh): the same output.  kcmp and
 * flock, which still differ, are in README.md's list and not here.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/openat2.h>
#include <linux/landlock.h>
#include <mqueue.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/mount.h>
static void r(const char *k, const char *c, long v) {
  /* "ok": a descriptor or a count, whose value may differ; 0 and errors exactly. */ printf("%-10s %-26s %s\n", k, c, v < 0 ? strerrorname_np(errno) : (v == 0 ? "0" : "ok")); }
/* The file type of descriptor v (closed after), if it is one. */
static void type_of(const char *k, const char *c, long v) {
  if (v < 0) return;
  struct stat st;
  printf("%-10s %-26s %o\n", k, c, fstat((int)v, &st) < 0 ? 1u : (unsigned)(st.st_mode & S_IFMT));
  close((int)v);
}
/* syscall() with one argument, from a frame that holds a buffer: syscall()
 * reads six whatever the caller passed (glibc's does too), the sixth from
 * the caller's frame, which under ASan (the asan stage builds this program
 * with it) begins with a redzone. */
__attribute__((noinline)) static long getpid_by_number(void) {
  char buf[64];
  memset(buf, 1, sizeof buf);
  __asm__ volatile("" ::"r"(buf) : "memory");
  return syscall(SYS_getpid);
}
int main(void) {
  setvbuf(stdout, NULL, _IONBF, 0);
  printf("getpid by number: %s\n", getpid_by_number() == getpid() ? "ok" : "differs");
  int p[2], sv[2];
  if (pipe(p) < 0 || socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0) return 1;
  int fds[5] = {p[0], eventfd(0,0), epoll_create1(0), timerfd_create(CLOCK_MONOTONIC,0), sv[0]};
  const char *kinds[5] = {"pipe", "eventfd", "epoll", "timerfd", "socketpair"};
  for (int i = 0; i < 5; ++i) {
    int fd = fds[i]; const char *k = kinds[i]; char buf[256]; long v;
#ifdef SYS_getdents /* not on every architecture (aarch64 has only the newer calls) */
    v = syscall(SYS_getdents, fd, buf, sizeof buf); r(k, "getdents", v);
#endif
    struct open_how how = {.flags = O_RDONLY};
    v = syscall(SYS_openat2, fd, "x", &how, sizeof how); r(k, "openat2 relative", v);
    v = mkdirat(fd, "x", 0700); r(k, "mkdirat relative", v);
    v = unlinkat(fd, "x", 0); r(k, "unlinkat relative", v);
    v = syscall(SYS_faccessat2, fd, "", R_OK, AT_EMPTY_PATH); r(k, "faccessat2 empty R_OK", v);
    v = syscall(SYS_faccessat2, fd, "", X_OK, AT_EMPTY_PATH); r(k, "faccessat2 empty X_OK", v);
    v = readlinkat(fd, "", buf, sizeof buf); r(k, "readlinkat empty", v);
    char *argv[] = {NULL}; v = syscall(SYS_execveat, fd, "", argv, argv, AT_EMPTY_PATH); r(k, "execveat empty", v);
    v = syscall(SYS_waitid, P_PIDFD, fd, NULL, WEXITED | WNOHANG, NULL); r(k, "waitid P_PIDFD", v);
    v = syscall(SYS_pidfd_send_signal, fd, 0, NULL, 0); r(k, "pidfd_send_signal", v);
    v = syscall(SYS_pidfd_getfd, fd, 0, 0); r(k, "pidfd_getfd", v);
    v = syscall(SYS_process_madvise, fd, NULL, 0, 0, 0); r(k, "process_madvise", v);
    struct perf_event_attr pa = {.type = PERF_TYPE_SOFTWARE, .size = sizeof pa, .config = PERF_COUNT_SW_DUMMY, .disabled = 1, .exclude_kernel = 1, .exclude_hv = 1};
    v = syscall(SYS_perf_event_open, &pa, 0, -1, fd, 0); r(k, "perf_event_open group", v); if (v >= 0) close(v);
    struct landlock_path_beneath_attr pb = {.allowed_access = 1, .parent_fd = fd};
    v = syscall(SYS_landlock_add_rule, fd, LANDLOCK_RULE_PATH_BENEATH, &pb, 0); r(k, "landlock_add_rule", v);
    v = syscall(SYS_landlock_restrict_self, fd, 0); r(k, "landlock_restrict_self", v);
    v = syscall(SYS_mq_notify, fd, NULL); r(k, "mq_notify", v);
    v = syscall(SYS_fsconfig, fd, 0, NULL, NULL, 0); r(k, "fsconfig", v);
    v = syscall(SYS_fsmount, fd, 0, 0); r(k, "fsmount", v);
    v = syscall(451, fd, 0L, 0L, 0L, 0L); r(k, "cachestat", v);
    v = syscall(SYS_open_tree, fd, "", AT_EMPTY_PATH | O_CLOEXEC); r(k, "open_tree empty", v); type_of(k, "open_tree empty type", v);
    v = open_tree(fd, "", AT_EMPTY_PATH | OPEN_TREE_CLOEXEC); r(k, "open_tree empty (name)", v); type_of(k, "open_tree (name) type", v);
    v = syscall(SYS_open_tree, fd, "", AT_EMPTY_PATH | OPEN_TREE_CLONE | O_CLOEXEC); r(k, "open_tree clone", v); if (v >= 0) close(v);
    v = syscall(SYS_fspick, fd, "", FSPICK_EMPTY_PATH | FSPICK_CLOEXEC); r(k, "fspick empty", v); if (v >= 0) close(v);
    v = syscall(SYS_move_mount, fd, "", AT_FDCWD, "/nonexistent-uepoll", MOVE_MOUNT_F_EMPTY_PATH); r(k, "move_mount from", v);
    v = syscall(SYS_move_mount, AT_FDCWD, "/nonexistent-uepoll", fd, "", MOVE_MOUNT_T_EMPTY_PATH); r(k, "move_mount to", v);
    struct { struct file_handle h; unsigned char b[16]; } fh = {.h = {.handle_bytes = 8, .handle_type = 1}};
    v = syscall(SYS_open_by_handle_at, fd, &fh.h, O_RDONLY); r(k, "open_by_handle_at", v); if (v >= 0) close(v);
    v = syscall(SYS_name_to_handle_at, fd, "x", NULL, NULL, 0); r(k, "name_to_handle_at rel", v);
    v = syscall(SYS_io_uring_register, fd, 0, NULL, 0); r(k, "io_uring_register as ring", v);
    v = syscall(SYS_fadvise64, fd, 0, 0, 0); r(k, "fadvise64 (syscall)", v);
    v = syscall(SYS_fstatfs, fd, buf); r(k, "fstatfs (syscall)", v);
    v = syscall(SYS_fsync, fd); r(k, "fsync (syscall)", v);
    v = syscall(SYS_lseek, fd, 0, SEEK_CUR); r(k, "lseek (syscall)", v);
    v = syscall(SYS_fcntl, fd, F_GETFL); r(k, "fcntl F_GETFL (syscall)", v);
    v = syscall(SYS_ioctl, fd, FIONREAD, buf); r(k, "ioctl FIONREAD (syscall)", v);
    v = syscall(SYS_fstat, fd, buf); r(k, "fstat (syscall)", v);
    v = syscall(SYS_mmap, NULL, 4096, 1, MAP_SHARED, fd, 0); r(k, "mmap (syscall)", v == -1 ? -1 : 0);
    v = syscall(SYS_getsockopt, fd, SOL_SOCKET, SO_TYPE, buf, &(socklen_t){4}); r(k, "getsockopt (syscall)", v);
    v = syscall(SYS_sendto, fd, "x", 0, MSG_DONTWAIT, NULL, 0); r(k, "sendto (syscall)", v);
    v = syscall(SYS_signalfd4, fd, buf, 8, 0); r(k, "signalfd4 (syscall)", v);
    v = syscall(SYS_timerfd_gettime, fd, buf); r(k, "timerfd_gettime (syscall)", v);
    v = syscall(SYS_epoll_ctl, fd, EPOLL_CTL_DEL, 0, NULL); r(k, "epoll_ctl (syscall)", v);
    v = syscall(SYS_readv, fd, NULL, 0); r(k, "readv (syscall)", v);
    v = syscall(SYS_pread64, fd, buf, 0, 0); r(k, "pread64 (syscall)", v);
    v = syscall(SYS_dup3, fd, 100, 0); r(k, "dup3 (syscall)", v); if (v >= 0) close(100);
    v = syscall(SYS_fchdir, fd); r(k, "fchdir (syscall)", v);
    v = syscall(SYS_fchmod, fd, 0600); r(k, "fchmod (syscall)", v);
    v = syscall(SYS_ftruncate, fd, 0); r(k, "ftruncate (syscall)", v);
    v = syscall(SYS_splice, fd, NULL, 1, NULL, 0, 0); r(k, "splice (syscall)", v);
    v = syscall(SYS_inotify_add_watch, fd, "/", 1); r(k, "inotify_add_watch (sysc)", v);
    v = syscall(SYS_shutdown, fd, 5); r(k, "shutdown bad how (sysc)", v);
    v = syscall(SYS_fgetxattr, fd, "user.x", buf, sizeof buf); r(k, "fgetxattr (syscall)", v);
    v = syscall(SYS_fallocate, fd, 0, 0, 1); r(k, "fallocate (syscall)", v);
    v = syscall(SYS_syncfs, fd); r(k, "syncfs (syscall)", v);
    v = syscall(SYS_setns, fd, 0); r(k, "setns (syscall)", v);
    v = syscall(SYS_readahead, fd, 0, 1); r(k, "readahead (syscall)", v);
  }
  /* An event through the epoll instance (and the preload's counters). */
  struct epoll_event ev = {.events = EPOLLIN, .data.u64 = 9};
  epoll_ctl(fds[2], EPOLL_CTL_ADD, fds[1], &ev);
  eventfd_write(fds[1], 1);
#ifdef SYS_epoll_wait /* not on every architecture (aarch64 has only the newer calls) */
  r("epoll", "epoll_wait (syscall)", syscall(SYS_epoll_wait, fds[2], &ev, 1, 1000));
#endif
  return 0;
}
