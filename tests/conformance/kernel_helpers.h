// kernel_helpers.h - helpers of the kernel-descriptor scenarios
// (kernel_test.cpp, kernel_fd_test.cpp; owned by the kernel-descriptor
// tests).
#pragma once

#include "harness.h"

#include <functional>

namespace conf {

// A helper-thread action: one byte to kernel descriptor fd (a wakeup).
inline std::function<void()> write_byte(int fd, char c) {
  return [fd, c] {
    ssize_t n = ::write(fd, &c, 1);
    (void)n;
  };
}

// What a kernel loop watches to watch instance `ep`: the instance itself on
// Linux (a kernel epoll), uep_epoll_kernel_fd(ep) on uepoll.
inline int kernel_handle(int ep) { return uep_is_uepoll_fd(ep) ? uep_epoll_kernel_fd(ep) : ep; }

}  // namespace conf
