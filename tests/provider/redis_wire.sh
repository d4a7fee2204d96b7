#!/bin/bash
# redis_wire.sh UEPOLL_RUN - Debian's unmodified redis-server and its own
# clients (redis-cli, redis-benchmark) on kernel TCP over 127.0.0.1, then
# all of them under `uepoll-run --provider lwip`, each process with its own
# lwIP stack, joined by the provider's datagram wire (server 10.7.0.1,
# clients 10.7.0.2; README, "Socket providers").  Checks: the same answers
# to the same commands (a BGSAVE among them: the server forks with live
# provider sockets), every benchmark request answered, nothing on stderr
# from uepoll, UEPOLL_STATS showing the provider served the sockets.
# Prints both throughputs (not compared: one run each).  Exit 77 when Redis
# is not installed.  Bounded: each program runs under timeout.
set -euo pipefail
run=$1
source "$(dirname "$0")/wire_common.sh"
wire_require redis-server redis-cli redis-benchmark python3
wire_setup
port=$(free_port)

commands() {
  printf '%s\n' "SET a 1" "INCR a" "INCRBY a 41" "GET a" "RPUSH l x y z" "LRANGE l 0 -1" "LPOP l" \
    "SET big $(head -c 100000 /dev/zero | tr '\0' b)" "STRLEN big" "DEL l big" "DBSIZE" "BGSAVE"
}

# one_run MODE: MODE plain (kernel TCP, 127.0.0.1) or lwip (the wire).
one_run() {
  local mode=$1 host pre_srv=() pre_cli=()
  wire_mode "$mode"
  mkdir -p "$tmp/$mode"
  timeout 120 "${pre_srv[@]}" redis-server --port "$port" --bind "$host" --protected-mode no --save '' \
    --appendonly no --dir "$tmp/$mode" > "$tmp/$mode-srv.log" 2> "$tmp/$mode-srv.err" &
  srv_pid=$!
  local i
  for i in $(seq 50); do
    [[ "$(timeout 5 "${pre_cli[@]}" redis-cli -h "$host" -p "$port" ping 2>/dev/null)" == PONG ]] && break
    sleep 0.2
  done
  commands | timeout 30 "${pre_cli[@]}" redis-cli -h "$host" -p "$port" > "$tmp/$mode.out" 2> "$tmp/$mode-cli.err" ||
    fail "$mode: redis-cli"
  for i in $(seq 100); do  # the BGSAVE child's end
    timeout 5 "${pre_cli[@]}" redis-cli -h "$host" -p "$port" info persistence 2>/dev/null |
      grep -q '^rdb_bgsave_in_progress:0' && break
    sleep 0.1
  done
  timeout 5 "${pre_cli[@]}" redis-cli -h "$host" -p "$port" info persistence | grep -q '^rdb_last_bgsave_status:ok' ||
    fail "$mode: BGSAVE did not complete"
  timeout 60 "${pre_cli[@]}" redis-benchmark -h "$host" -p "$port" -n 10000 -c 16 -t set,get -q \
    > "$tmp/$mode.bench" 2> "$tmp/$mode-bench.err" || fail "$mode: redis-benchmark"
  timeout 5 "${pre_cli[@]}" redis-cli -h "$host" -p "$port" shutdown nosave >/dev/null 2>&1 || true
  wait "$srv_pid" || true
  srv_pid=
}

one_run plain
one_run lwip
wire_check 17 16
rps() { tr '\r' '\n' < "$1" | awk -v t="$2:" '$1 == t && $3 == "requests" { print $2 }' | tail -1; }
for m in plain lwip; do
  [[ -n "$(rps "$tmp/$m.bench" SET)" && -n "$(rps "$tmp/$m.bench" GET)" ]] || fail "$m: no benchmark result"
done
echo "ok redis over lwIP: $(wc -l < "$tmp/lwip.out") answers equal, BGSAVE done;" \
  "provider sockets: server $(get provider_sockets "$tmp/srv.stats"), clients $(get provider_sockets "$tmp/cli.stats")"
echo "redis-benchmark -n 10000 -c 16 (requests/s): kernel TCP SET $(rps "$tmp/plain.bench" SET) GET $(rps "$tmp/plain.bench" GET);" \
  "lwIP under uepoll SET $(rps "$tmp/lwip.bench" SET) GET $(rps "$tmp/lwip.bench" GET)"
