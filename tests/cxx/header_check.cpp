// tests/cxx/header_check.cpp - compiles <uepoll/uepoll.hpp> with every
// member and template instantiated (never run), so -Wall -Wextra -Werror
// -pedantic cover all of it with both g++ and clang++ (see CMakeLists.txt).
// Also pins the API's shape with static_asserts: noexcept on every try_
// call, const on the I/O members, Result's value types.
#include <uepoll/uepoll.hpp>

#include <array>
#include <chrono>
#include <optional>
#include <type_traits>

namespace uepoll_header_check {

using namespace std::chrono_literals;
using namespace uepoll;

static_assert(noexcept(Epoll::try_create()));
static_assert(noexcept(std::declval<const Epoll&>().try_add(0, 0u)));
static_assert(noexcept(std::declval<const Epoll&>().try_add(0, 0u, nullptr)));
static_assert(noexcept(std::declval<const Epoll&>().try_mod(0, 0u, 1)));
static_assert(noexcept(std::declval<const Epoll&>().try_del(0)));
static_assert(noexcept(std::declval<const Epoll&>().try_wait(std::span<epoll_event>(), std::declval<std::chrono::milliseconds>())));
static_assert(noexcept(EventFd::try_create()) && noexcept(std::declval<const EventFd&>().try_read()));
static_assert(noexcept(Pipe::try_create()) && noexcept(SocketPair::try_create()));
static_assert(noexcept(TimerFd::try_create()) && noexcept(std::declval<const TimerFd&>().try_gettime()));
static_assert(noexcept(try_read(0, std::span<std::byte>())) && noexcept(try_poll({}, forever)));
static_assert(std::is_same_v<decltype(Epoll::try_create()), Result<Epoll>>);
static_assert(std::is_same_v<decltype(Epoll::create()), Epoll>);
static_assert(std::is_same_v<decltype(std::declval<const Epoll&>().try_wait(std::span<epoll_event>())),
                             Result<std::span<epoll_event>>>);
static_assert(std::is_same_v<decltype(Pipe::try_create()), Result<Pipe>>);
static_assert(std::is_same_v<decltype(std::declval<const TimerFd&>().try_read()), Result<std::uint64_t>>);
static_assert(std::is_convertible_v<std::chrono::seconds, Timeout>);
static_assert(std::is_convertible_v<std::optional<std::chrono::milliseconds>, Timeout>);
static_assert(std::is_convertible_v<Forever, Timeout>);
static_assert(!std::is_convertible_v<int, Timeout>);  // a bare int is not a timeout

[[maybe_unused]] void instantiate_everything() {
  Result<Epoll> re = Epoll::try_create(EPOLL_CLOEXEC);
  Epoll ep = std::move(re).value();
  const Epoll& cep = ep;
  EventFd ev = EventFd::create(0, EFD_NONBLOCK);
  int object = 0;
  (void)cep.try_add(ev, EPOLLIN | EPOLLET, std::uint64_t{1});
  (void)cep.try_add(ev, EPOLLIN, &object);
  (void)cep.try_add(ev, EPOLLIN, 'c');
  (void)cep.try_add(ev.fd(), EPOLLIN, 0L);
  cep.add(ev.get(), EPOLLIN);
  cep.add(ev, EPOLLIN, nullptr);
  cep.add(ev, EPOLLIN, 3u);
  (void)cep.try_mod(ev, EPOLLOUT);
  (void)cep.try_mod(ev, EPOLLOUT, &object);
  (void)cep.try_mod(ev, EPOLLOUT, 5);
  cep.mod(ev, EPOLLOUT);
  cep.mod(ev, EPOLLOUT, &object);
  cep.mod(ev, EPOLLOUT, short{5});
  (void)cep.try_del(ev);
  cep.del(ev);
  std::array<epoll_event, 4> buf;
  sigset_t mask;
  sigemptyset(&mask);
  for (epoll_event& e : cep.wait(buf)) (void)e;
  (void)cep.wait(buf, 1s, &mask);
  (void)cep.wait(buf, std::chrono::duration<float, std::milli>(1.5f));
  (void)cep.wait(buf, std::optional<std::chrono::microseconds>());
  (void)cep.wait(buf, std::nullopt);
  auto rw = cep.try_wait(buf, forever, &mask);
  if (rw) (void)rw->size();
  (void)rw.value_or(std::span<epoll_event>());

  (void)ev.try_write(1);
  ev.write(1);
  (void)ev.try_read();
  (void)ev.read();

  Pipe p = Pipe::create(O_NONBLOCK);
  std::array<std::byte, 8> bytes{};
  (void)try_write(p.write_end, std::span<const std::byte>(bytes));
  (void)write(p.write_end, std::span<const std::byte>(bytes));
  (void)try_read(p.read_end, bytes);
  (void)read(p.read_end, bytes);
  std::array<struct pollfd, 1> fds{};
  (void)try_poll(fds, 0ms);
  (void)poll(fds, forever);

  SocketPair sp = SocketPair::create(SOCK_STREAM | SOCK_NONBLOCK);
  SocketPair sp2 = std::move(SocketPair::try_create(AF_UNIX, SOCK_STREAM, 0)).value();
  (void)sp.first.try_shutdown(SHUT_WR);
  sp.second.shutdown(SHUT_RD);
  (void)try_shutdown(sp2.first, SHUT_RDWR);
  shutdown(sp2.second, SHUT_RDWR);

  TimerFd t = TimerFd::create(CLOCK_MONOTONIC, TFD_NONBLOCK);
  TimerFd::Setting s = t.settime(1s, 10ms);
  s = t.settime(std::chrono::seconds(5), {}, TFD_TIMER_ABSTIME);
  (void)t.try_settime(1ms);
  (void)t.gettime();
  (void)t.try_gettime();
  (void)t.disarm();
  (void)t.try_disarm();
  (void)t.try_read();
  (void)t.read();
  (void)(s == TimerFd::Setting{});

  Fd f = ep.fd().dup();
  Result<Fd> rf = f.try_dup();
  Fd g = std::move(rf).value();
  g.reset(f.release());
  (void)g.try_close();
  Fd h = ev.take();
  h.close();
  Epoll adopted{Fd(-1)};
  adopted.reset();
  (void)adopted.try_close();
  Result<void> rv = Result<void>();
  rv.value();
  Result<int> ri = 3;
  (void)ri.value_or(4);
  (void)*ri;
  (void)static_cast<bool>(ri);
}

}  // namespace uepoll_header_check

// The example in uepoll.hpp's top comment, verbatim.
#include <cstdio>
#include <thread>

namespace uepoll_header_example {
using namespace std::chrono_literals;

[[maybe_unused]] void example() {
  uepoll::Epoll ep = uepoll::Epoll::create();          // throws on error
  uepoll::EventFd ev = uepoll::EventFd::create(0, EFD_NONBLOCK);
  ep.add(ev, EPOLLIN, 42);                             // data.u64 = 42
  std::thread t([&] { ev.write(1); });                 // wakes the wait
  std::array<epoll_event, 8> buf;
  for (const epoll_event& e : ep.wait(buf, 1s))        // the filled prefix
    if (e.data.u64 == 42) std::printf("%lu\n", (unsigned long)ev.read());
  t.join();

  // The same without exceptions:
  uepoll::Result<std::span<epoll_event>> w = ep.try_wait(buf, 0ms);
  if (!w && w.error() == std::errc::interrupted) { /* retry */ }
  else if (!w) std::fprintf(stderr, "%s\n", w.error().message().c_str());
  else for (const epoll_event& e : *w) (void)e;
}

}  // namespace uepoll_header_example
