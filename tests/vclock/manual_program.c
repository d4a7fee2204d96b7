/* manual_program.c - an event loop for a test driver (control_driver.py)
 * to run on the virtual clock in manual mode, through the control channel.
 * No uepoll in it.  It prints, each line with the monotonic time since its
 * start:
 *   1. a poll of a kernel UDP socket with a 5 s timeout (a wait with no
 *      uepoll descriptor: its timeout follows the virtual clock);
 *   2. an epoll loop over a 10 s interval CLOCK_MONOTONIC timerfd and a
 *      CLOCK_REALTIME timerfd armed TFD_TIMER_ABSTIME |
 *      TFD_TIMER_CANCEL_ON_SET an hour ahead: each expiry and its count, and
 *      the realtime timer's ECANCELED once the driver sets the clock (the
 *      timer is then re-armed 60 s after the new time); it ends when the
 *      realtime timer expires.
 * Under plain Linux it runs too (an hour and more, with no clock set). */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

static struct timespec t0;

static double since(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)(t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9;
}

static void arm_realtime(int fd, time_t ahead) {
  struct itimerspec its = {{0, 0}, {0, 0}};
  clock_gettime(CLOCK_REALTIME, &its.it_value);
  its.it_value.tv_sec += ahead;
  int r = timerfd_settime(fd, TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET, &its, NULL);
  printf("realtime timer armed %lld s ahead: %d at %.3f\n", (long long)ahead, r, since());
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  clock_gettime(CLOCK_MONOTONIC, &t0);
  int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof a) != 0) return 1;
  struct pollfd p = {s, POLLIN, 0};
  int r = poll(&p, 1, 5000);
  printf("poll(udp, 5000) = %d at %.3f\n", r, since());

  int ep = epoll_create1(EPOLL_CLOEXEC);
  int mono = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  int real = timerfd_create(CLOCK_REALTIME, TFD_NONBLOCK | TFD_CLOEXEC);
  struct itimerspec its = {{10, 0}, {10, 0}};
  timerfd_settime(mono, 0, &its, NULL);
  arm_realtime(real, 3600);
  struct epoll_event e = {EPOLLIN, {.fd = mono}};
  epoll_ctl(ep, EPOLL_CTL_ADD, mono, &e);
  e.data.fd = real;
  epoll_ctl(ep, EPOLL_CTL_ADD, real, &e);
  for (;;) {
    struct epoll_event out[2];
    int n = epoll_wait(ep, out, 2, -1);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return 1;
    for (int k = 0; k < n; ++k) {
      uint64_t v = 0;
      ssize_t got = read(out[k].data.fd, &v, sizeof v);
      int err = got < 0 ? errno : 0;
      if (out[k].data.fd == mono) {
        printf("monotonic timer: %llu at %.3f\n", (unsigned long long)v, since());
        continue;
      }
      if (got < 0) {
        printf("realtime timer: read -1 %s at %.3f\n", strerrorname_np(err), since());
        arm_realtime(real, 60);
        continue;
      }
      printf("realtime timer: %llu at %.3f\n", (unsigned long long)v, since());
      return 0;
    }
  }
}
