# tests/realprograms/redis.sh - Redis (redis-server), one event loop plus
# its background threads; redis-cli commands and a BGSAVE (a forked child
# reporting over a pipe made before fork), loaded by redis-benchmark.
# Sourced by run.sh and tools/realprograms_throughput.sh (common.sh first).

redis_have() { command -v redis-server >/dev/null && command -v redis-benchmark >/dev/null && command -v redis-cli >/dev/null; }
REDIS_NEEDS="redis-server, redis-tools"
REDIS_FORKS=fork  # BGSAVE's child-info pipe

redis_start() {  # redis_start MODE DIR -> PID, PORT
  PORT=$(free_port)
  mkdir -p "$2"
  launch "$1" "$2" redis-server --port "$PORT" --bind 127.0.0.1 --dir "$2" --save "" \
    --appendonly no --daemonize no --logfile "$2/log"
  wait_port "$PORT" "$PID" || { say "redis ($1) did not start:"; tail -5 "$2/log" "$2/stderr" 2>/dev/null; return 1; }
}
redis_check() {  # redis_check MODE DIR -> RESULT
  local cli=(timeout 10 redis-cli -h 127.0.0.1 -p "$PORT") before after
  RESULT=$("${cli[@]}" SET k hello; "${cli[@]}" GET k; "${cli[@]}" INCR n; "${cli[@]}" INCR n; "${cli[@]}" LPUSH l a b c; "${cli[@]}" LRANGE l 0 -1)
  before=$("${cli[@]}" LASTSAVE)
  sleep 1
  "${cli[@]}" BGSAVE >/dev/null  # a forked child writes the dump
  for _ in $(seq 50); do after=$("${cli[@]}" LASTSAVE); [[ $after != "$before" ]] && break; sleep 0.1; done
  [[ $after != "$before" ]] || { say "redis ($1): BGSAVE did not complete"; return 1; }
}
redis_load() {  # redis_load DIR SECONDS(unused: REQUESTS per command) NGEN -> RPS, REQS (RPS: mean over the 5 commands, summed over the generators)
  local i pids=() rc=0
  for ((i = 0; i < $3; i++)); do
    timeout 300 redis-benchmark -h 127.0.0.1 -p "$PORT" -n "$REQUESTS" -c 16 -q -t set,get,incr,lpush,lpop >"$1/bench.$i" 2>&1 &
    pids+=($!)
  done
  wait "${pids[@]}" || rc=1
  RPS=0
  for ((i = 0; i < $3; i++)); do
    tr '\r' '\n' <"$1/bench.$i" | grep 'requests per second' >"$1/rps.$i"
    [[ $(wc -l <"$1/rps.$i") == 5 ]] || { say "redis: benchmark incomplete:"; cat "$1/bench.$i"; rc=1; }
    RPS=$(awk -F'[: ]+' -v t="$RPS" '{ s += $2; n++ } END { printf "%.0f", t + (n ? s / n : 0) }' "$1/rps.$i")
  done
  REQS=$((5 * REQUESTS * $3))
  return $rc
}
redis_stop() {
  timeout 10 redis-cli -h 127.0.0.1 -p "$PORT" SHUTDOWN NOSAVE >/dev/null 2>&1
  stop "$PID" TERM
}
redis_label() { echo "redis + redis-benchmark (-n $REQUESTS x 5 commands, 16 conns)"; }
