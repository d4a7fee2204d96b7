#!/bin/sh
# wakecount.sh BUILD_DIR [N] - user-space instructions per round trip of the
# blocking ping-pong of bench/syscalls.sh (uepoll-pingpong: two threads, two
# instances, each blocked in epoll_wait(-1) on one kernel descriptor), through
# kernel epoll and through uepoll, under callgrind: (Ir(N2) - Ir(N1)) /
# (N2 - N1), both threads together.  Callgrind counts user-space
# instructions only (the system calls' kernel work is not in it), so the
# uepoll - Linux difference is what uepoll adds per round trip.  Valgrind
# 3.19 does not know epoll_pwait2; a wait with no deadline sleeps in
# epoll_pwait, which it knows.  Release build.
set -eu
bin="${1:-build}/bench/uepoll-pingpong"
[ -x "$bin" ] || { echo "wakecount.sh: no $bin (build the uepoll-pingpong target)" >&2; exit 1; }
N1=${N1:-1000}
N2=${N2:-6000}
ir() {
  valgrind --tool=callgrind --callgrind-out-file=/dev/null "$bin" "$1" "$2" "$3" 2>&1 |
    sed -n 's/.*Collected : *\([0-9]*\).*/\1/p'
}
printf '| per round trip | instructions (user space) |\n|---|---:|\n'
for kind in eventfd tcp; do
  for be in linux uepoll; do
    a=$(ir "$be" "$kind" "$N1")
    b=$(ir "$be" "$kind" "$N2")
    printf '| %s %s | %s |\n' "$be" "$kind" "$(( (b - a) / (N2 - N1) ))"
  done
done
