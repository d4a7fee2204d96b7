// tests/install/consumer.cpp - a C++ program built against an *installed*
// uepoll by tests/install/check.sh, once include/uepoll/uepoll.hpp exists.
//
// Checks: the installed C header works from C++ (extern "C" linkage), and the
// installed C++ header compiles with -std=c++20 and links against the
// installed library.  It uses only the C API at run time so that it does not
// depend on the shape of the C++ API, which lives in its own tests.
#include <uepoll/uepoll.h>
#include <uepoll/uepoll.hpp>

#include <cstdint>
#include <cstdio>

int main() {
  int ep = uep_epoll_create1(0);
  int efd = uep_eventfd(0, 0);
  if (ep < UEP_FD_BASE || efd < UEP_FD_BASE) {
    std::fprintf(stderr, "consumer.cpp: create failed\n");
    return 1;
  }
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLET;
  ev.data.fd = efd;
  std::uint64_t v = 3;
  epoll_event out[2];
  if (uep_epoll_ctl(ep, EPOLL_CTL_ADD, efd, &ev) != 0 ||
      uep_write(efd, &v, sizeof v) != static_cast<ssize_t>(sizeof v) ||
      uep_epoll_wait(ep, out, 2, 1000) != 1 || out[0].data.fd != efd ||
      out[0].events != EPOLLIN ||
      uep_epoll_wait(ep, out, 2, 0) != 0) {  // edge-triggered: reported once
    std::fprintf(stderr, "consumer.cpp: round trip failed\n");
    return 1;
  }
  uep_close(efd);
  uep_close(ep);
  std::puts("consumer (C++): ok");
  return 0;
}
