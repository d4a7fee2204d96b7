// asio_embed.cpp - a uepoll instance inside a Boost.Asio io_context.
//
// The instance watches a uepoll eventfd; Asio watches the instance through
// uep_epoll_kernel_fd() with a posix::stream_descriptor and async_wait
// (Asio's reactor registers it edge-triggered).  A producer thread writes
// the eventfd kRounds times, each time after the previous value was
// consumed; the handler drains the instance and re-arms.  Exits 0 on
// success, 1 on a failure or after 10 s.
//
// The pattern to copy: in the handler, call wait(..., 0) until it returns
// fewer events than asked for, then async_wait again.  The descriptor
// belongs to the instance: release() it from the stream_descriptor rather
// than letting Asio close it.
#include <uepoll/uepoll.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>

#include <array>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <thread>

namespace asio = boost::asio;
using namespace std::chrono_literals;

namespace {

constexpr std::uint64_t kRounds = 1000;

struct Shared {
  std::mutex mu;
  std::condition_variable cv;
  std::uint64_t consumed = 0;  // guarded by mu
};

}  // namespace

int main() {
  uepoll::Epoll ep = uepoll::Epoll::create(EPOLL_CLOEXEC);
  uepoll::EventFd efd = uepoll::EventFd::create(0, EFD_NONBLOCK);
  ep.add(efd, EPOLLIN, std::uint64_t{1});

  asio::io_context io;
  asio::posix::stream_descriptor sd(io, ep.kernel_fd());  // owned by ep: released below
  asio::steady_timer guard(io, 10s);
  Shared sh;
  bool done = false;

  std::function<void(const boost::system::error_code&)> on_ready = [&](const boost::system::error_code& ec) {
    if (ec) {
      std::fprintf(stderr, "async_wait: %s\n", ec.message().c_str());
      std::exit(1);
    }
    std::array<epoll_event, 8> buf;
    std::size_t n;
    do {
      n = ep.wait(buf, 0ms).size();
      for (std::size_t i = 0; i < n; ++i) {
        auto v = efd.try_read();
        if (v) {
          std::lock_guard<std::mutex> g(sh.mu);
          sh.consumed += *v;
          sh.cv.notify_one();
        }
      }
    } while (n == buf.size());
    std::lock_guard<std::mutex> g(sh.mu);
    if (sh.consumed == kRounds) {
      done = true;
      guard.cancel();
      return;
    }
    sd.async_wait(asio::posix::stream_descriptor::wait_read, on_ready);
  };
  sd.async_wait(asio::posix::stream_descriptor::wait_read, on_ready);
  guard.async_wait([&](const boost::system::error_code& ec) {
    if (ec) return;  // cancelled: finished in time
    std::fprintf(stderr, "asio_embed: timed out\n");
    std::exit(1);
  });

  std::thread producer([&] {
    for (std::uint64_t i = 1; i <= kRounds; ++i) {
      efd.write(1);
      std::unique_lock<std::mutex> l(sh.mu);
      sh.cv.wait(l, [&] { return sh.consumed >= i; });  // one wakeup per round
    }
  });
  io.run();
  producer.join();
  sd.release();  // never close the instance's kernel descriptor
  if (!done) return 1;
  std::printf("asio_embed: %llu wakeups through async_wait on uep_epoll_kernel_fd\n",
              static_cast<unsigned long long>(kRounds));
  return 0;
}
