#!/usr/bin/env bash
# tests/realprograms/run.sh - unmodified Debian binaries on uepoll.
#
# For each program: the same bounded workload against a plain run and
# against a run under uepoll-run, on 127.0.0.1.  A program passes when both
# runs answer every request, the results are equal, the uepoll run printed
# no "uepoll:" warning, and its UEPOLL_STATS show that uepoll served its
# epoll instances.  One line per program, then a throughput table
# (requests/s, plain vs uepoll-run; the target is within 10%).
#
#   nginx  (nginx-light): master + 1 worker, static file; wrk for a fixed
#          duration, and curl for the content.
#   redis  (redis-server, redis-tools): redis-benchmark -n N per command,
#          redis-cli SET/GET/BGSAVE (a forked child).
#
# Usage: tests/realprograms/run.sh [UEPOLL_RUN]   (default: build/src/preload/uepoll-run)
# Environment: REQUESTS (redis-benchmark -n, default 20000), SECONDS_LOAD
# (wrk -d, default 3), PROGRAMS (default "nginx redis"), KEEP=1 keeps the
# work directory, KINDS (uepoll-run --kinds; default: all kinds.  Both
# servers talk to their forked children over pipes or socket pairs made
# before fork -- nginx's master/worker channel, Redis's BGSAVE child-info
# pipe -- which the preload turns into kernel ones at fork, see
# src/preload/fork_convert.c; UEPOLL_STATS counts them as
# converted_at_fork).  Needs the packages scripts/setup.sh installs; a program
# whose binary is missing is reported as SKIP; exit 0 when none failed and
# one ran, 77 (ctest: skipped) when none could run, 1 when one failed.
#
# Kernel sockets inside uepoll instances are needed by both servers
# (their listening and client sockets stay kernel sockets).
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
RUN=${1:-$root/build/src/preload/uepoll-run}
REQUESTS=${REQUESTS:-20000}
SECONDS_LOAD=${SECONDS_LOAD:-3}
PROGRAMS=${PROGRAMS:-nginx redis}
KINDS=${KINDS-}
kinds_args=()
[[ -n $KINDS ]] && kinds_args=(--kinds "$KINDS")
work=$(mktemp -d /tmp/uepoll-real.XXXXXX)
chmod 755 "$work"  # nginx's worker runs as an unprivileged user and reads files here
[[ ${KEEP:-0} == 1 ]] || trap 'rm -rf "$work"' EXIT
failed=0
ran=0
table=()

say() { printf 'realprograms: %s\n' "$*"; }
[[ -x $RUN ]] || { say "uepoll-run not found at $RUN (build first)"; exit 1; }

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
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
stat_sum() { awk -v k="$1" '$1 == k { s += $2 } END { print s + 0 }' "$2" 2>/dev/null || echo 0; }
# check_uepoll_run NAME ERRFILE STATSFILE: no warning, uepoll served epoll.
check_uepoll_run() {
  local ok=1
  if grep -q '^uepoll:' "$2"; then say "$1: uepoll warnings:"; grep '^uepoll:' "$2" | sort -u | head; ok=0; fi
  if (($(stat_sum epoll_instances "$3") < 1 || $(stat_sum waits "$3") < 1)); then
    say "$1: UEPOLL_STATS shows no uepoll epoll instance or wait:"; cat "$3" 2>/dev/null; ok=0
  fi
  if [[ -z $KINDS ]] && (($(stat_sum converted_at_fork "$3") < 1)); then
    say "$1: UEPOLL_STATS shows no pipe/pair made a kernel one at fork (the servers fork with one open)"; ok=0
  fi
  say "$1: uepoll stats: $(stat_sum epoll_instances "$3") instances, $(stat_sum registrations_kernel "$3") kernel-fd registrations, $(stat_sum waits "$3") waits, $(stat_sum events "$3") events, $(stat_sum converted_at_fork "$3") pipes/pairs made kernel ones at fork"
  ((ok))
}

# ---- nginx ----------------------------------------------------------------------
nginx_once() {  # nginx_once MODE(plain|uepoll) -> sets RPS, OK
  local mode=$1 dir=$work/nginx-$1 port pid
  port=$(free_port)
  mkdir -p -m 755 "$dir" "$dir/html" "$dir/logs"
  head -c 4096 /dev/urandom | base64 >"$dir/html/index.html"
  chmod 644 "$dir/html/index.html"
  cat >"$dir/nginx.conf" <<EOF
daemon off;
master_process on;
worker_processes 1;
pid $dir/nginx.pid;
error_log $dir/logs/error.log warn;
events { worker_connections 1024; use epoll; }
http {
  access_log off;
  client_body_temp_path $dir/tmp; proxy_temp_path $dir/tmp; fastcgi_temp_path $dir/tmp;
  uwsgi_temp_path $dir/tmp; scgi_temp_path $dir/tmp;
  server { listen 127.0.0.1:$port; root $dir/html; }
}
EOF
  mkdir -p "$dir/tmp"
  if [[ $mode == uepoll ]]; then
    # The worker runs as an unprivileged user (nobody) when started as root:
    # it can append its stats block only to a file that exists and it may write.
    : >"$dir/stats" && chmod 666 "$dir/stats"
    "$RUN" --stats "$dir/stats" "${kinds_args[@]}" nginx -p "$dir" -c "$dir/nginx.conf" 2>"$dir/stderr" &
  else
    nginx -p "$dir" -c "$dir/nginx.conf" 2>"$dir/stderr" &
  fi
  pid=$!
  OK=1
  if ! wait_port "$port" "$pid"; then
    say "nginx ($mode) did not start:"; cat "$dir/stderr" "$dir/logs/error.log" 2>/dev/null | tail -5; OK=0
  else
    curl -s --max-time 10 "http://127.0.0.1:$port/index.html" >"$dir/got" || OK=0
    cmp -s "$dir/got" "$dir/html/index.html" || { say "nginx ($mode): wrong content"; OK=0; }
    timeout $((SECONDS_LOAD + 30)) wrk -t1 -c16 -d"${SECONDS_LOAD}s" --timeout 5s "http://127.0.0.1:$port/index.html" >"$dir/wrk" 2>&1 || OK=0
    RPS=$(awk '/Requests\/sec/ { print $2 }' "$dir/wrk")
    if grep -qE 'Non-2xx|Socket errors' "$dir/wrk"; then say "nginx ($mode): errors:"; grep -E 'Non-2xx|Socket errors' "$dir/wrk"; OK=0; fi
  fi
  # nginx's master tells its worker to quit over the channel made before fork.
  stop "$pid" QUIT || { say "nginx ($mode) did not stop on SIGQUIT within 10 s"; OK=0; }
  if [[ $mode == uepoll ]]; then check_uepoll_run nginx "$dir/stderr" "$dir/stats" || OK=0; fi
}

run_nginx() {
  command -v nginx >/dev/null && command -v wrk >/dev/null && command -v curl >/dev/null || { say "SKIP nginx (nginx-light, wrk, curl not installed)"; return; }
  ran=1
  nginx_once plain; local p=$RPS pok=$OK
  nginx_once uepoll; local u=$RPS uok=$OK
  table+=("nginx + wrk (GET 5.5 KB, 16 conns, ${SECONDS_LOAD}s)|$p|$u")
  if ((pok && uok)); then say "PASS nginx (plain $p req/s, uepoll-run $u req/s)"; else say "FAIL nginx"; failed=1; fi
}

# ---- redis ----------------------------------------------------------------------
redis_once() {  # redis_once MODE -> sets RPS (SET+GET average), OK, RESULT
  local mode=$1 dir=$work/redis-$1 port pid
  port=$(free_port)
  mkdir -p "$dir"
  local args=(--port "$port" --bind 127.0.0.1 --dir "$dir" --save "" --appendonly no --daemonize no --logfile "$dir/log")
  if [[ $mode == uepoll ]]; then
    "$RUN" --stats "$dir/stats" "${kinds_args[@]}" redis-server "${args[@]}" 2>"$dir/stderr" &
  else
    redis-server "${args[@]}" 2>"$dir/stderr" &
  fi
  pid=$!
  OK=1
  RESULT=
  if ! wait_port "$port" "$pid"; then
    say "redis ($mode) did not start:"; tail -5 "$dir/log" "$dir/stderr" 2>/dev/null; OK=0
  else
    local cli=(timeout 10 redis-cli -h 127.0.0.1 -p "$port")
    RESULT=$("${cli[@]}" SET k hello; "${cli[@]}" GET k; "${cli[@]}" INCR n; "${cli[@]}" INCR n; "${cli[@]}" LPUSH l a b c; "${cli[@]}" LRANGE l 0 -1)
    local before after
    before=$("${cli[@]}" LASTSAVE)
    sleep 1
    "${cli[@]}" BGSAVE >/dev/null  # a forked child writes the dump
    for _ in $(seq 50); do after=$("${cli[@]}" LASTSAVE); [[ $after != "$before" ]] && break; sleep 0.1; done
    [[ $after != "$before" ]] || { say "redis ($mode): BGSAVE did not complete"; OK=0; }
    timeout 300 redis-benchmark -h 127.0.0.1 -p "$port" -n "$REQUESTS" -c 16 -q -t set,get,incr,lpush,lpop >"$dir/bench" 2>&1 || OK=0
    tr '\r' '\n' <"$dir/bench" | grep 'requests per second' >"$dir/rps"
    RPS=$(awk -F'[: ]+' '{ s += $2; n++ } END { if (n) printf "%.0f", s / n }' "$dir/rps")
    [[ $(wc -l <"$dir/rps") == 5 ]] || { say "redis ($mode): benchmark incomplete:"; cat "$dir/bench"; OK=0; }
    "${cli[@]}" SHUTDOWN NOSAVE >/dev/null 2>&1
  fi
  stop "$pid" TERM
  if [[ $mode == uepoll ]]; then check_uepoll_run redis "$dir/stderr" "$dir/stats" || OK=0; fi
}

run_redis() {
  command -v redis-server >/dev/null && command -v redis-benchmark >/dev/null || { say "SKIP redis (redis-server, redis-tools not installed)"; return; }
  ran=1
  redis_once plain; local p=$RPS pok=$OK pres=$RESULT
  redis_once uepoll; local u=$RPS uok=$OK ures=$RESULT
  [[ $pres == "$ures" ]] || { say "redis: results differ: plain [$pres] uepoll [$ures]"; uok=0; }
  table+=("redis + redis-benchmark (-n $REQUESTS x 5 commands, 16 conns)|$p|$u")
  if ((pok && uok)); then say "PASS redis (plain $p req/s, uepoll-run $u req/s)"; else say "FAIL redis"; failed=1; fi
}

for prog in $PROGRAMS; do "run_$prog"; done

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
