#!/usr/bin/env bash
# tools/realprograms_throughput.sh - throughput of unmodified servers,
# plain against uepoll-run, alternated; run by hand (minutes), not in CI.
#
# For each workload: RUNS rounds, each one plain run and one uepoll-run run
# (the order flips every round, so neither mode keeps the machine's fast or
# slow phase).  A run starts the server, checks it (the same checks as
# tests/realprograms/run.sh), warms it up for 1 s, then loads it for
# SECONDS_LOAD s with NGEN load generators at once (wrk, redis-benchmark or
# memcaslap) and reads the server's CPU time (utime+stime of the server and
# its children, /proc/PID/stat) before and after.  One row per workload:
# the median and [min-max] of requests/s of each mode, the ratio of the
# medians, and the median CPU microseconds per request of each mode (CPU
# ticks over the requests the generators counted).
#
# Workloads (WORKLOADS, default all): nginx, redis, nodejs, and the ones
# where the program's own descriptors carry each request:
#   nginx:aio   nginx with `aio threads`: each read of a 256 KB file is done
#               by nginx's thread pool and completed to the worker through
#               an eventfd (a uepoll eventfd under uepoll-run)
#   nodejs:file each request reads a 64 KB file in libuv's thread pool,
#               completed to the loop through its eventfd
#   memcached   the listener hands each new connection to a worker thread
#               over its pipe; requests then stay on the worker's sockets
#   lighttpd    a CGI forked and exec'd per request (pipes made before fork)
#
# Modes: NGEN=1 (default: quiet, one generator) or NGEN=2 (under load: two
# generators on the 2 cores, competing with the server).  STRACE=1 instead
# runs each workload once per mode under `strace -f -c` for SECONDS_LOAD s
# and prints the system calls per request that uepoll-run pays and plain
# does not (and those it saves), from the counts of the whole run.
#
# Usage: tools/realprograms_throughput.sh [UEPOLL_RUN]   (default: build/src/preload/uepoll-run)
# Environment: RUNS (5), SECONDS_LOAD (5), NGEN (1), REQUESTS (redis, per
# command and generator, 50000), WORKLOADS, KINDS (uepoll-run --kinds),
# TUNE (uepoll-run --tune, e.g. busy_poll_usecs=50), STRACE, KEEP=1 keeps
# the work directory.  The figures depend on what else
# the machine runs: say so beside them.
set -uo pipefail

here=$(cd "$(dirname "$0")/../tests/realprograms" && pwd)
root=$(cd "$here/../.." && pwd)
RUN=${1:-$root/build/src/preload/uepoll-run}
RUNS=${RUNS:-5}
SECONDS_LOAD=${SECONDS_LOAD:-5}
NGEN=${NGEN:-1}
REQUESTS=${REQUESTS:-50000}
WORKLOADS=${WORKLOADS:-nginx redis nodejs nginx:aio nodejs:file memcached lighttpd}
KINDS=${KINDS-}
STRACE=${STRACE:-0}
work=$(mktemp -d /tmp/uepoll-tput.XXXXXX)
chmod 755 "$work"
[[ ${KEEP:-0} == 1 ]] || trap 'rm -rf "$work"' EXIT
hz=$(getconf CLK_TCK)

. "$here/common.sh"
for prog in nginx redis memcached lighttpd nodejs haproxy; do . "$here/$prog.sh"; done
[[ -x $RUN ]] || { say "uepoll-run not found at $RUN (build first)"; exit 1; }
now() { date +%s.%N; }

# measure WORKLOAD MODE N -> appends "rps cpu_us_per_request" to $work/WORKLOAD.MODE
measure() {
  local prog=${1%%:*} variant= dir=$work/${1/:/-}-$2-$3 t0 t1
  [[ $1 == *:* ]] && variant=${1#*:}
  mkdir -p -m 755 "$dir"
  "${prog}_start" "$2" "$dir" $variant || { kill -KILL "$PID" 2>/dev/null; return 1; }
  local ok=1
  "${prog}_check" "$2" "$dir" || ok=0
  if [[ $prog != redis ]]; then "${prog}_load" "$dir" 1 "$NGEN" >/dev/null; fi  # warm-up
  t0=$(cpu_ticks "$PID")
  "${prog}_load" "$dir" "$SECONDS_LOAD" "$NGEN" || ok=0
  t1=$(cpu_ticks "$PID")
  "${prog}_stop" || ok=0
  if [[ $2 == uepoll ]] && grep -q '^uepoll:' "$dir/stderr"; then say "$1: uepoll warnings:"; grep '^uepoll:' "$dir/stderr" | sort -u | head -3; fi
  ((ok)) || { say "$1 ($2, run $3) failed: not counted"; return 1; }
  awk -v r="$RPS" -v n="$REQS" -v t=$((t1 - t0)) -v hz="$hz" \
    'BEGIN { printf "%s %.2f\n", r, (n > 0 ? t * 1e6 / hz / n : 0) }' >>"$work/${1/:/-}.$2"
  printf '  %-12s %-6s run %d: %8s req/s  %6.2f us CPU/req\n' "$1" "$2" "$3" "$RPS" \
    "$(tail -1 "$work/${1/:/-}.$2" | cut -d' ' -f2)"
}

median() { sort -n | awk '{ v[NR] = $1 } END { if (NR == 0) print 0; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
minmax() { sort -n | awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%s-%s", lo, hi }'; }
k() { awk -v v="$1" 'BEGIN { if (v >= 10000) printf "%.1fk", v / 1000; else printf "%.0f", v }'; }

throughput() {
  local w mode r rows=() p u pc uc
  for w in $WORKLOADS; do
    local prog=${w%%:*}
    "${prog}_have" || { say "SKIP $w (not installed)"; continue; }
    for ((r = 1; r <= RUNS; r++)); do
      if ((r % 2)); then mode="plain uepoll"; else mode="uepoll plain"; fi
      for m in $mode; do measure "$w" "$m" "$r"; done
    done
    local f=$work/${w/:/-}
    [[ -s $f.plain && -s $f.uepoll ]] || { say "$w: no complete run"; continue; }
    p=$(cut -d' ' -f1 "$f.plain" | median) u=$(cut -d' ' -f1 "$f.uepoll" | median)
    pc=$(cut -d' ' -f2 "$f.plain" | median) uc=$(cut -d' ' -f2 "$f.uepoll" | median)
    rows+=("| $w | $(k "$p") [$(cut -d' ' -f1 "$f.plain" | minmax)] | $(k "$u") [$(cut -d' ' -f1 "$f.uepoll" | minmax)] | $(awk -v p="$p" -v u="$u" 'BEGIN { printf "%.2f", (p > 0 ? u / p : 0) }') | $pc | $uc | $(awk -v p="$pc" -v u="$uc" 'BEGIN { printf "%.2f", (p > 0 ? u / p : 0) }') |")
  done
  echo
  echo "RUNS=$RUNS SECONDS_LOAD=$SECONDS_LOAD NGEN=$NGEN${KINDS:+ KINDS=$KINDS}${TUNE:+ TUNE=$TUNE} at $(git -C "$root" rev-parse --short HEAD 2>/dev/null), load average $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "| workload | plain req/s, median [min-max] | uepoll-run req/s, median [min-max] | ratio of medians | plain CPU us/req | uepoll-run CPU us/req | CPU ratio |"
  echo "|---|---:|---:|---:|---:|---:|---:|"
  printf '%s\n' "${rows[@]}"
}

# strace_counts WORKLOAD MODE -> $work/WORKLOAD.MODE.calls: "syscall calls-per-request"
strace_counts() {
  local prog=${1%%:*} variant= dir=$work/${1/:/-}-$2-strace tracer
  [[ $1 == *:* ]] && variant=${1#*:}
  mkdir -p -m 755 "$dir"
  LAUNCH_PREFIX=(strace -f -c -o "$dir/strace")
  "${prog}_start" "$2" "$dir" $variant || { LAUNCH_PREFIX=(); kill -KILL "$PID" 2>/dev/null; return 1; }
  LAUNCH_PREFIX=()
  tracer=$PID
  for _ in $(seq 50); do PID=$(pgrep -P "$tracer" | head -1); [[ -n $PID ]] && break; sleep 0.1; done
  "${prog}_load" "$dir" "$SECONDS_LOAD" "$NGEN"
  local reqs=$REQS
  "${prog}_stop"
  for _ in $(seq 100); do kill -0 "$tracer" 2>/dev/null || break; sleep 0.1; done
  wait "$tracer" 2>/dev/null
  # strace -c: "% time seconds usecs/call calls [errors] syscall"
  awk -v n="$reqs" 'NR > 2 && $NF != "total" && $1 ~ /^[0-9.]+$/ {
      if (n > 0) printf "%s %.3f\n", $NF, $4 / n }' "$dir/strace" | sort >"$work/${1/:/-}.$2.calls"
  say "$1 ($2): $reqs requests traced"
}

syscalls() {
  local w f
  for w in $WORKLOADS; do
    "${w%%:*}_have" || continue
    strace_counts "$w" plain && strace_counts "$w" uepoll || continue
    f=$work/${w/:/-}
    echo
    echo "$w: system calls per request, plain vs uepoll-run (strace -f -c, $SECONDS_LOAD s, NGEN=$NGEN; differences over 0.02)"
    join -a1 -a2 -e 0 -o 0,1.2,2.2 "$f.plain.calls" "$f.uepoll.calls" |
      awk '{ d = $3 - $2; if (d > 0.02 || d < -0.02) printf "%-22s %8.3f %8.3f %+8.3f\n", $1, $2, $3, d }' | sort -k4,4gr
    awk '{ s += $2 } END { printf "%-22s ", "all (plain)"; printf "%8.3f\n", s }' "$f.plain.calls"
    awk '{ s += $2 } END { printf "%-22s ", "all (uepoll-run)"; printf "%8.3f\n", s }' "$f.uepoll.calls"
  done
}

if [[ $STRACE == 1 ]]; then syscalls; else throughput; fi
