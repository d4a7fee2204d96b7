# tests/realprograms/common.sh - helpers shared by the real-program test
# (run.sh) and the throughput tool (tools/realprograms_throughput.sh):
# ports, starting a server plainly or under uepoll-run, stopping it, the
# server's CPU time from /proc, and the checks of a uepoll-run's stderr and
# UEPOLL_STATS.  Sourced, not run; the caller sets RUN (the uepoll-run
# script), KINDS (uepoll-run --kinds, empty for the default), TUNE
# (uepoll-run --tune, empty for none) and work (a scratch directory).

LAUNCH_PREFIX=()
say() { printf 'realprograms: %s\n' "$*"; }
. "$(dirname "${BASH_SOURCE[0]}")/../support/ports.sh"  # free_port
wait_port() {  # wait_port PORT PID: until PORT accepts, or PID died, or 10 s
  for _ in $(seq 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
    kill -0 "$2" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}
stop() {  # stop PID SIGNAL: the signal, then SIGKILL after 10 s (its children too); 1 if SIGKILL was needed
  local kids rc=0
  kids=$(pgrep -P "$1" 2>/dev/null)  # e.g. nginx's worker, left behind if the master is killed
  kill -"$2" "$1" 2>/dev/null
  for _ in $(seq 100); do kill -0 "$1" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$1" 2>/dev/null && rc=1
  kill -KILL "$1" $kids 2>/dev/null
  wait "$1" 2>/dev/null
  return $rc
}
# launch MODE(plain|uepoll) DIR CMD...: starts CMD in the background, its
# stderr in DIR/stderr; under uepoll-run with --stats DIR/stats (made
# world-writable first: servers that drop root write their block as
# another user).  Sets PID (uepoll-run execs the program: PID is the server).
# LAUNCH_PREFIX (an array, e.g. strace and its options) goes before both.
launch() {
  local mode=$1 dir=$2; shift 2
  local kargs=()
  [[ -n ${KINDS-} ]] && kargs=(--kinds "$KINDS")
  [[ -n ${TUNE-} ]] && kargs+=(--tune "$TUNE")
  if [[ $mode == uepoll ]]; then
    : >"$dir/stats" && chmod 666 "$dir/stats"
    "${LAUNCH_PREFIX[@]}" "$RUN" --stats "$dir/stats" "${kargs[@]}" "$@" 2>"$dir/stderr" &
  else
    "${LAUNCH_PREFIX[@]}" "$@" 2>"$dir/stderr" &
  fi
  PID=$!
}
# cpu_ticks PID: utime+stime+cutime+cstime (clock ticks) of PID and its
# live descendants: a difference of two counts covers the children that ran
# and were waited for in between (a CGI per request) and the ones alive.
cpu_ticks() {
  local p t=0 list=$1 queue=$1 kids
  while [[ -n $queue ]]; do
    kids=$(pgrep -P "${queue// /,}" 2>/dev/null | tr '\n' ' ')
    queue=${kids% }
    list="$list $queue"
  done
  for p in $list; do
    # fields 14 to 17 of /proc/PID/stat, after the command name in parentheses
    t=$((t + $(awk '{ sub(/^.*\) /, ""); print $12 + $13 + $14 + $15 }' "/proc/$p/stat" 2>/dev/null || echo 0)))
  done
  echo "$t"
}
stat_sum() { awk -v k="$1" '$1 == k { s += $2 } END { print s + 0 }' "$2" 2>/dev/null || echo 0; }
# check_uepoll_run NAME ERRFILE STATSFILE [fork]: no warning, uepoll served
# epoll; with "fork" (a server that forks with a pipe or pair open) and the
# default kinds, at least one pipe/pair was made a kernel one at fork.
check_uepoll_run() {
  local ok=1
  if grep -q '^uepoll:' "$2"; then say "$1: uepoll warnings:"; grep '^uepoll:' "$2" | sort -u | head; ok=0; fi
  if (($(stat_sum epoll_instances "$3") < 1 || $(stat_sum waits "$3") < 1)); then
    say "$1: UEPOLL_STATS shows no uepoll epoll instance or wait:"; cat "$3" 2>/dev/null; ok=0
  fi
  if [[ ${4-} == fork && -z ${KINDS-} ]] && (($(stat_sum converted_at_fork "$3") < 1)); then
    say "$1: UEPOLL_STATS shows no pipe/pair made a kernel one at fork (the server forks with one open)"; ok=0
  fi
  say "$1: uepoll stats: $(stat_sum epoll_instances "$3") instances, $(stat_sum registrations_kernel "$3") kernel-fd registrations, $(stat_sum waits "$3") waits, $(stat_sum events "$3") events, $(stat_sum objects_eventfd "$3") eventfds, $(stat_sum objects_pipe "$3") pipes, $(stat_sum converted_at_fork "$3") pipes/pairs made kernel ones at fork"
  ((ok))
}
# wrk_rps WRKOUT... -> RPS, REQS: the sums of the requests/s and of the
# requests of wrk outputs; 1 (and a message) when one saw errors or is
# missing its figure.
wrk_rps() {
  local f bad=0
  for f in "$@"; do
    grep -q 'Requests/sec' "$f" || { say "wrk did not finish:"; tail -3 "$f"; bad=1; }
    if grep -qE 'Non-2xx|Socket errors' "$f"; then say "wrk errors:"; grep -E 'Non-2xx|Socket errors' "$f"; bad=1; fi
  done
  RPS=$(awk '/Requests\/sec/ { s += $2 } END { printf "%.0f", s }' "$@")
  REQS=$(awk '/ requests in / { s += $1 } END { print s + 0 }' "$@")
  ((!bad))
}
# wrk_load DIR SECONDS NGEN URL [CONNS] -> RPS, REQS: NGEN wrk at once (one
# thread, CONNS connections each, default 16), the sums of their figures.
wrk_load() {
  local i outs=() pids=()
  for ((i = 0; i < $3; i++)); do
    timeout $(($2 + 30)) wrk -t1 -c"${5:-16}" -d"$2s" --timeout 5s "$4" >"$1/wrk.$i" 2>&1 &
    pids+=($!) outs+=("$1/wrk.$i")
  done
  wait "${pids[@]}"
  wrk_rps "${outs[@]}"
}
# pattern_file FILE BYTES [SEED]: the same BYTES bytes on every run (the
# plain and uepoll-run results are compared).
pattern_file() {
  python3 -c 'import sys; n, s = int(sys.argv[2]), int(sys.argv[3]); open(sys.argv[1], "wb").write(bytes((i * 131 + s + (i >> 9)) % 256 for i in range(n)))' "$1" "$2" "${3:-7}"
}
