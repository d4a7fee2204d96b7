// control_client.h - a test driver's side of the virtual clock's control
// channel (uep_vclock_control_start): connect, send a command line, read
// its reply line.  Used by tests/vclock/vclock_control_test.cpp and
// tests/reliability/vclock_control_move_test.cpp.  No locks.
#pragma once

#include <cstdio>
#include <string>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

namespace control_client {

// A client connected to the channel at path, or -1.  Its sends and
// receives are bounded: a missing reply fails, it does not hang.
inline int connect_to(const std::string& path) {
  int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::snprintf(a.sun_path, sizeof a.sun_path, "%s", path.c_str());
  timeval tv{20, 0};
  setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  if (connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    close(s);
    return -1;
  }
  return s;
}

// The next reply line without its newline; "<closed>" appended when the
// server closed (or the wait timed out) first.
inline std::string reply(int s) {
  std::string r;
  char c;
  while (recv(s, &c, 1, 0) == 1) {
    if (c == '\n') return r;
    r += c;
  }
  return r + "<closed>";
}

inline std::string cmd(int s, const std::string& line) {
  const std::string l = line + "\n";
  (void)send(s, l.data(), l.size(), MSG_NOSIGNAL);  // a refused client was told before: EPIPE
  return reply(s);
}

}  // namespace control_client
