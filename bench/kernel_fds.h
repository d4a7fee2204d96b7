// kernel_fds.h - the "kernel-fds" scenario of uepoll-bench (owned by the
// kernel-descriptor work): kernel descriptors inside a uepoll instance
// beside the same descriptors in a kernel epoll.  See kernel_fds.cpp.
#pragma once

#include "harness.h"

#include <vector>

namespace uepoll_bench {

std::vector<Case> kernel_fds_cases(const Options& o);

}  // namespace uepoll_bench
