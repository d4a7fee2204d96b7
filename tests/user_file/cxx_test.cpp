// cxx_test.cpp - uepoll::UserFile (include/uepoll/user_file.hpp): open,
// wake, read/write through the virtuals, the error convention, EBUSY on a
// second open, on_close once, and the object's lifetime (kept by the file
// until the close, destroyed when the program drops its last pointer).
#include <gtest/gtest.h>
#include <uepoll/user_file.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>

namespace {

using namespace std::chrono_literals;

// A bounded message queue: one message per read, EAGAIN when empty.
class Queue final : public uepoll::UserFile {
 public:
  explicit Queue(std::atomic<int>* destroyed) : destroyed_(destroyed) {}
  ~Queue() override { ++*destroyed_; }

  std::uint32_t poll() noexcept override {
    std::lock_guard<std::mutex> g(mu_);
    return (q_.empty() ? 0u : uint32_t{EPOLLIN}) | (q_.size() < 4 ? uint32_t{EPOLLOUT} : 0u);
  }
  uepoll::Result<std::size_t> read(std::span<std::byte> buf) noexcept override {
    std::string m;
    {
      std::lock_guard<std::mutex> g(mu_);
      if (q_.empty()) return std::make_error_code(std::errc::resource_unavailable_try_again);
      m = std::move(q_.front());
      q_.pop_front();
    }
    wake(EPOLLOUT);
    const std::size_t n = std::min(buf.size(), m.size());
    std::memcpy(buf.data(), m.data(), n);
    return n;
  }
  uepoll::Result<std::size_t> write(std::span<const std::byte> buf) noexcept override {
    {
      std::lock_guard<std::mutex> g(mu_);
      if (q_.size() >= 4) return std::make_error_code(std::errc::resource_unavailable_try_again);
      if (buf.empty()) return std::make_error_code(std::errc::message_size);
      q_.emplace_back(reinterpret_cast<const char*>(buf.data()), buf.size());
    }
    wake(EPOLLIN);
    return buf.size();
  }
  void on_close() noexcept override { ++closes; }

  std::atomic<int> closes{0};

 private:
  std::mutex mu_;
  std::deque<std::string> q_;
  std::atomic<int>* destroyed_;
};

std::span<const std::byte> bytes(const char* s) { return std::as_bytes(std::span<const char>(s, std::strlen(s))); }

TEST(UserFileCxx, EpollReadWriteAndLifetime) {
  std::atomic<int> destroyed{0};
  auto q = std::make_shared<Queue>(&destroyed);
  uepoll::Fd fd = uepoll::UserFile::open(q, O_NONBLOCK);
  EXPECT_GE(fd.get(), UEP_FD_BASE);
  EXPECT_EQ(uepoll::UserFile::try_open(q).error(), std::errc::device_or_resource_busy);

  uepoll::Epoll ep = uepoll::Epoll::create();
  ep.add(fd, EPOLLIN | EPOLLET, 7);
  std::array<epoll_event, 4> evs;
  EXPECT_TRUE(ep.wait(evs, 0ms).empty());
  EXPECT_EQ(uepoll::write(fd, bytes("hello")), 5u);
  auto got = ep.wait(evs, 0ms);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].events, uint32_t{EPOLLIN});
  EXPECT_EQ(got[0].data.u64, 7u);

  std::array<std::byte, 16> buf;
  EXPECT_EQ(uepoll::read(fd, buf), 5u);
  EXPECT_EQ(uepoll::try_read(fd, buf).error(), std::errc::resource_unavailable_try_again);
  EXPECT_EQ(uepoll::try_write(fd, std::span<const std::byte>()).error(), std::errc::message_size);

  // A blocking dup... is the same open description: O_NONBLOCK is shared.
  // A second owner keeps the file open after the first closes.
  uepoll::Fd other = fd.dup();
  fd.close();
  EXPECT_EQ(q->closes.load(), 0);
  other.close();
  EXPECT_EQ(q->closes.load(), 1);
  q->wake(EPOLLIN);  // after the close: nothing
  EXPECT_EQ(destroyed.load(), 0);
  q.reset();  // the file dropped its pointer at the close: this is the last
  EXPECT_EQ(destroyed.load(), 1);
}

TEST(UserFileCxx, BlockingReadWokenByWriter) {
  std::atomic<int> destroyed{0};
  auto q = std::make_shared<Queue>(&destroyed);
  uepoll::Fd fd = uepoll::UserFile::open(q);  // blocking
  std::thread writer([&] {
    std::this_thread::sleep_for(30ms);
    uepoll::write(fd, bytes("late"));
  });
  std::array<std::byte, 16> buf;
  EXPECT_EQ(uepoll::read(fd, buf), 4u);
  writer.join();
  fd.close();
  q.reset();
  EXPECT_EQ(destroyed.load(), 1);
}

struct ReadOnlyFlag final : uepoll::UserFile {
  std::atomic<bool> up{false};
  std::uint32_t poll() noexcept override { return up ? uint32_t{EPOLLIN} : 0u; }
};

TEST(UserFileCxx, DefaultsAndErrors) {
  EXPECT_EQ(uepoll::UserFile::try_open(nullptr).error(), std::errc::invalid_argument);
  auto f = std::make_shared<ReadOnlyFlag>();
  EXPECT_EQ(uepoll::UserFile::try_open(f, O_RDWR).error(), std::errc::invalid_argument);
  f->wake(EPOLLIN);  // before open: nothing
  uepoll::Fd fd = uepoll::UserFile::open(f, O_NONBLOCK);  // a failed open does not count
  std::array<std::byte, 4> buf;
  EXPECT_EQ(uepoll::try_read(fd, buf).error(), std::errc::invalid_argument);
  EXPECT_EQ(uepoll::try_write(fd, buf).error(), std::errc::invalid_argument);
  std::array<pollfd, 1> p{{{fd.get(), POLLIN, 0}}};
  EXPECT_EQ(uepoll::poll(p, 0ms), 0u);
  f->up = true;
  f->wake(EPOLLIN);
  EXPECT_EQ(uepoll::poll(p, 0ms), 1u);
  EXPECT_EQ(p[0].revents, POLLIN);
}

}  // namespace
