// random_diff_engine.h - differential random testing of uepoll against Linux.
//
// A seeded generator produces a sequence of descriptor operations (create
// instances and objects, epoll_ctl with random masks, zero-timeout waits,
// read/write/close/dup/shutdown/poll, nesting and cycle attempts).  The same
// sequence is executed single-threaded against the Linux call table and the
// uepoll call table; each operation's outcome is rendered as a string with
// descriptors normalised (number minus the lowest free number at the start of
// the run, which also checks lowest-free allocation) and compared.  On a
// divergence, shrink() removes operations while the sequence still diverges
// (delta debugging) and format_program() prints the reproducer as C calls.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "../support/api.h"

namespace uepoll_test::rdiff {

enum class Kind : uint8_t {
  EpCreate1,
  EpCreate,
  Eventfd,
  Pipe2,
  Socketpair,
  Timerfd,
  TimerSet,
  TimerGet,
  Ctl,
  Wait,
  Read,
  Write,
  Close,
  Dup,
  Shutdown,
  Poll,
};

// Object references: ids >= 0 name objects created by earlier operations
// (2*op.id and 2*op.id+1 for the op with that id); negative values are
// special descriptors.
constexpr int kRefMinusOne = -1;  // the int -1
constexpr int kRefNeverOpen = -2; // base + 4000: in range, never opened

struct Op {
  Kind kind{};
  int id = 0;            // stable id (index in the original sequence)
  int a = kRefMinusOne;  // first object (epfd for Ctl/Wait)
  int b = kRefMinusOne;  // second object (target for Ctl)
  int flags = 0;         // create flags / ctl op / shutdown how / timer mode
  uint32_t mask = 0;     // ctl event mask
  uint64_t val = 0;      // ctl data / eventfd value / initval
  int n = 0;             // maxevents / byte count / poll count
  int wait_variant = 0;  // 0 epoll_wait, 1 epoll_pwait, 2 epoll_pwait2
  bool null_ptr = false; // pass NULL for the event / array pointer
  int prefs[3] = {0, 0, 0};  // poll: objects
  short pev[3] = {0, 0, 0};  // poll: requested events
};

using Program = std::vector<Op>;

// Generates `len` operations from `seed`.
Program generate(uint64_t seed, int len);

// Runs `prog` against `api`; returns one outcome string per operation.
// Closes every descriptor the program left open.  `ok_env` is set false when
// the descriptor table was not in a predictable state at the start.
std::vector<std::string> execute(const Api& api, const Program& prog, bool* ok_env = nullptr);

// Index of the first operation whose outcome differs, or -1.  On divergence
// fills *linux_out / *uep_out (optional) with both outcome lists.
int first_divergence(const Program& prog, std::vector<std::string>* linux_out = nullptr,
                     std::vector<std::string>* uep_out = nullptr);

// Delta debugging: the smallest sub-sequence (1-minimal w.r.t. single-op
// removal) that still diverges.  `max_rounds` bounds the work.
Program shrink(const Program& prog, int max_rounds = 64);

// The program as C-like calls, with both outcomes next to each operation and
// the first divergence marked.
std::string format_program(const Program& prog);

// One op as a C-like call.
std::string format_op(const Op& op);

}  // namespace uepoll_test::rdiff
