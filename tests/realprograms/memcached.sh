# tests/realprograms/memcached.sh - memcached, a threaded server (a listener
# thread handing connections to 4 worker threads over their pipes, libevent
# on epoll in each); exact get/set/incr/cas/... answers from a client
# (memcached_client.py), loaded by memcaslap (libmemcached-tools' memaslap:
# 90% get, 10% set).
# Sourced by run.sh and tools/realprograms_throughput.sh (common.sh first).

memcached_have() { command -v memcached >/dev/null && command -v memcaslap >/dev/null; }
MEMCACHED_NEEDS="memcached, libmemcached-tools"
MEMCACHED_FORKS=""  # threads, no fork

memcached_start() {  # memcached_start MODE DIR -> PID, PORT
  PORT=$(free_port)
  mkdir -p "$2"
  # -u: when started as root it runs as nobody (it refuses root otherwise); -U 0: no UDP
  launch "$1" "$2" memcached -u nobody -l 127.0.0.1 -p "$PORT" -U 0 -t 4 -m 64 -c 256
  wait_port "$PORT" "$PID" || { say "memcached ($1) did not start:"; tail -5 "$2/stderr"; return 1; }
}
memcached_check() {  # memcached_check MODE DIR -> RESULT
  RESULT=$(timeout 30 python3 "$here/memcached_client.py" "$PORT") || { say "memcached ($1): client failed: $RESULT"; return 1; }
}
memcached_load() {  # memcached_load DIR SECONDS NGEN -> RPS, REQS: NGEN memcaslap, 16 concurrent connections each
  local i pids=() outs=() rc=0
  for ((i = 0; i < $3; i++)); do
    timeout $(($2 + 60)) memcaslap -s "127.0.0.1:$PORT" -T 1 -c 16 -t "$2s" >"$1/slap.$i" 2>&1 &
    pids+=($!) outs+=("$1/slap.$i")
  done
  wait "${pids[@]}" || rc=1
  for ((i = 0; i < $3; i++)); do
    grep -q 'TPS:' "$1/slap.$i" || { say "memcaslap did not finish:"; tail -3 "$1/slap.$i"; rc=1; }
    if grep -qiE 'fail|error' "$1/slap.$i"; then say "memcaslap errors:"; grep -iE 'fail|error' "$1/slap.$i" | head -3; rc=1; fi
  done
  RPS=$(awk '/TPS:/ { for (i = 1; i < NF; i++) if ($i == "TPS:") s += $(i + 1) } END { printf "%.0f", s }' "${outs[@]}")
  REQS=$(awk '/TPS:/ { for (i = 1; i < NF; i++) if ($i == "Ops:") s += $(i + 1) } END { print s + 0 }' "${outs[@]}")
  return $rc
}
memcached_stop() { stop "$PID" TERM; }
memcached_label() { echo "memcached (4 threads) + memcaslap (90% get, 16 conns, ${1}s)"; }
