#!/bin/sh
# syscalls.sh BUILD_DIR - system calls per round trip of a blocking
# ping-pong (uepoll-pingpong) through kernel epoll and through uepoll, for a
# kernel eventfd and loopback TCP, and per round of an instance embedded in
# a kernel event loop (kernel-loop), and for uepoll's own eventfds against
# kernel ones (own-eventfd: uepoll-bench's busy-pingpong with no busy
# poll; strace slows every call, which changes how often a thread finds its
# event before it sleeps: uepoll's row says what its waits pay (the
# rt_sigprocmask pair of every wait that gets ready to sleep, one
# epoll_pwait2 per sleep), not the bench's mix): strace -c -f counts
# of a run of N2 and one of N1 rounds, difference divided by N2 - N1
# (set-up cancels out).
# KINDS picks the kinds (default all four).
set -eu
bin="${1:-build}/bench/uepoll-pingpong"
[ -x "$bin" ] || { echo "syscalls.sh: no $bin (build the uepoll-pingpong target)" >&2; exit 1; }
N1=${N1:-2000}
N2=${N2:-12000}
count() {  # backend kind rounds -> "syscall calls" lines
  strace -f -c -o /tmp/syscalls.$$ "$bin" "$1" "$2" "$3" > /dev/null
  awk 'NF >= 5 && $4 ~ /^[0-9]+$/ && $NF != "total" { print $NF, $4 }' /tmp/syscalls.$$
  rm -f /tmp/syscalls.$$
}
for kind in ${KINDS:-eventfd tcp kernel-loop own-eventfd}; do
  for be in linux uepoll; do
    count "$be" "$kind" "$N1" | sort > /tmp/syscalls.a.$$
    count "$be" "$kind" "$N2" | sort > /tmp/syscalls.b.$$
    join -a 2 -e 0 -o 0,1.2,2.2 /tmp/syscalls.a.$$ /tmp/syscalls.b.$$ |
      awk -v n=$((N2 - N1)) -v k="$kind" -v b="$be" '
        { d = ($3 - $2) / n; if (d >= 0.05) { printf "%s %s %-16s %6.2f\n", k, b, $1, d; t += d } }
        END { printf "%s %s %-16s %6.2f\n", k, b, "all", t }'
    rm -f /tmp/syscalls.a.$$ /tmp/syscalls.b.$$
  done
done
