#!/usr/bin/env bash
# tests/realprograms/run.sh - unmodified Debian binaries on uepoll.
#
# For each program: the same bounded workload against a plain run and
# against a run under uepoll-run, on 127.0.0.1.  A program passes when both
# runs answer every request, the results are equal, the uepoll run printed
# no "uepoll:" warning, and its UEPOLL_STATS show that uepoll served its
# epoll instances.  One line per program, then a throughput table
# (requests/s, plain vs uepoll-run, one run each: a report, not a check;
# tools/realprograms_throughput.sh measures it properly).
#
#   nginx      (nginx-light): master + 1 worker, static file; wrk, and curl
#              for the content (nginx.sh).
#   redis      (redis-server, redis-tools): redis-benchmark -n N per
#              command, redis-cli SET/GET/BGSAVE (a forked child) (redis.sh).
#   memcached  (memcached, libmemcached-tools): a threaded server; exact
#              get/set/cas/... answers, memcaslap load (memcached.sh).
#   lighttpd   (lighttpd): a forking server, mod_cgi forks a CGI per
#              request with pipes made before the fork (lighttpd.sh).
#   nodejs     (nodejs): an HTTP server on libuv; thread-pool file reads,
#              timers, POST bodies (nodejs.sh, http_server.js).
#   haproxy    (haproxy): a threaded proxy in master-worker mode; splice
#              through F_SETPIPE_SZ pipes, a reload on SIGUSR2 (haproxy.sh).
#
# Usage: tests/realprograms/run.sh [UEPOLL_RUN]   (default: build/src/preload/uepoll-run)
# Environment: REQUESTS (redis-benchmark -n, default 20000), SECONDS_LOAD
# (wrk and memcaslap duration, default 3), PROGRAMS (default: all six),
# KEEP=1 keeps the work directory, KINDS (uepoll-run --kinds; default: all
# kinds.  nginx, Redis, lighttpd and HAProxy talk to their forked children
# over pipes or socket pairs made before fork -- nginx's master/worker
# channel, Redis's BGSAVE child-info pipe, a CGI's stdin and stdout,
# HAProxy's master/worker socket pair -- which the
# preload turns into kernel ones at fork, see src/preload/fork_convert.c;
# UEPOLL_STATS counts them as converted_at_fork, and the test requires one
# for those four).  Needs the packages scripts/setup.sh installs; a program
# whose binary is missing is reported as SKIP; exit 0 when none failed and
# one ran, 77 (ctest: skipped) when none could run, 1 when one failed.
#
# The servers' listening and client sockets stay kernel sockets inside
# uepoll instances; memcached's and node's own pipes and eventfds (a
# listener handing connections to worker threads, libuv's thread pool
# completing to its loop) are uepoll objects.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
RUN=${1:-$root/build/src/preload/uepoll-run}
REQUESTS=${REQUESTS:-20000}
SECONDS_LOAD=${SECONDS_LOAD:-3}
PROGRAMS=${PROGRAMS:-nginx redis memcached lighttpd nodejs haproxy}
KINDS=${KINDS-}
work=$(mktemp -d /tmp/uepoll-real.XXXXXX)
chmod 755 "$work"  # nginx's worker and memcached run as nobody when started as root
[[ ${KEEP:-0} == 1 ]] || trap 'rm -rf "$work"' EXIT
failed=0
ran=0
table=()

. "$here/common.sh"
for prog in nginx redis memcached lighttpd nodejs haproxy; do . "$here/$prog.sh"; done
[[ -x $RUN ]] || { say "uepoll-run not found at $RUN (build first)"; exit 1; }

# once NAME MODE -> OK, RESULT, RPS: start, check, load, stop.
once() {
  local name=$1 mode=$2 dir=$work/$1-$2 forks
  OK=1 RESULT= RPS=
  mkdir -p -m 755 "$dir"
  if "${name}_start" "$mode" "$dir"; then
    "${name}_check" "$mode" "$dir" || OK=0
    "${name}_load" "$dir" "$SECONDS_LOAD" 1 || OK=0
    "${name}_stop" || OK=0
  else
    OK=0
    kill -KILL "$PID" 2>/dev/null
  fi
  forks=${name^^}_FORKS
  if [[ $mode == uepoll ]]; then check_uepoll_run "$name" "$dir/stderr" "$dir/stats" "${!forks}" || OK=0; fi
}

run_program() {  # run_program NAME
  local name=$1 needs=${1^^}_NEEDS p pok pres u uok ures
  "${name}_have" || { say "SKIP $name (${!needs} not installed)"; return; }
  ran=1
  once "$name" plain; p=$RPS pok=$OK pres=$RESULT
  once "$name" uepoll; u=$RPS uok=$OK ures=$RESULT
  if [[ $pres != "$ures" ]]; then
    say "$name: results differ (plain <, uepoll-run >):"
    diff <(echo "$pres") <(echo "$ures") | head -20
    uok=0
  fi
  table+=("$("${name}_label" "$SECONDS_LOAD")|$p|$u")
  if ((pok && uok)); then say "PASS $name (plain $p req/s, uepoll-run $u req/s)"; else say "FAIL $name"; failed=1; fi
}

for prog in $PROGRAMS; do
  if [[ $(type -t "${prog}_start") != function ]]; then say "unknown program $prog"; failed=1; continue; fi
  run_program "$prog"
done

if ((${#table[@]})); then
  echo
  echo "| workload | plain (req/s) | uepoll-run (req/s) | uepoll/plain |"
  echo "|---|---:|---:|---:|"
  for row in "${table[@]}"; do
    IFS='|' read -r name p u <<<"$row"
    ratio=$(awk -v p="${p:-0}" -v u="${u:-0}" 'BEGIN { if (p > 0) printf "%.2f", u / p; else print "-" }')
    echo "| $name | ${p:--} | ${u:--} | $ratio |"
  done
fi
((failed || ran)) || { say "SKIP: none of the programs ($PROGRAMS) is installed (scripts/setup.sh)"; exit 77; }
exit $failed
