#!/bin/bash
# memcached_wire.sh UEPOLL_RUN SRCDIR - Debian's unmodified memcached (4
# worker threads, libevent) with a protocol client (memcached_check.py:
# exact answers to set/get/add/replace/append/prepend/cas/incr/decr/touch/
# delete, a 512 KiB value, pipelining) and its own load tools from
# libmemcached-tools (memcslap: set and get, 4 threads; memcaslap: 2
# threads, 16 connections, 10% of gets verified), first on kernel TCP over
# 127.0.0.1, then all of them under `uepoll-run --provider lwip`, each
# process with its own lwIP stack, joined by the provider's datagram wire
# (server 10.7.0.1, clients 10.7.0.2).  Checks: the same answers, every
# load request answered and verified, nothing from uepoll on stderr,
# UEPOLL_STATS showing the provider served the sockets.  Prints both runs'
# figures (not compared: one run each, on a shared machine).  Exit 77 when
# memcached or the tools are not installed.  Bounded: every program runs
# under timeout.
set -euo pipefail
run=$1 src=$2
source "$(dirname "$0")/wire_common.sh"
wire_require memcached memcslap memcaslap memcping python3
wire_setup
port=$(free_port)
user=()
[[ $(id -u) == 0 ]] && user=(-u root)  # memcached refuses root without -u

# one_run MODE: MODE plain (kernel TCP, 127.0.0.1) or lwip (the wire).
one_run() {
  local mode=$1 host pre_srv=() pre_cli=()
  wire_mode "$mode"
  timeout 150 "${pre_srv[@]}" memcached "${user[@]}" -p "$port" -l "$host" -U 0 -t 4 -m 64 \
    > "$tmp/$mode-srv.log" 2> "$tmp/$mode-srv.err" &
  srv_pid=$!
  local i
  for i in $(seq 50); do
    timeout 5 "${pre_cli[@]}" memcping --servers="$host:$port" 2>/dev/null && break
    sleep 0.2
  done
  timeout 30 "${pre_cli[@]}" python3 "$src/memcached_check.py" "$host" "$port" > "$tmp/$mode.out" \
    2> "$tmp/$mode-check.err" || fail "$mode: memcached_check.py"
  local t0 t1 t2
  t0=$(date +%s.%N)
  timeout 60 "${pre_cli[@]}" memcslap --servers="$host:$port" --concurrency=4 --execute-number=5000 --test=set \
    > "$tmp/$mode-set.load" 2> "$tmp/$mode-set.err" || fail "$mode: memcslap set"
  t1=$(date +%s.%N)
  timeout 60 "${pre_cli[@]}" memcslap --servers="$host:$port" --concurrency=4 --execute-number=5000 --test=get \
    > "$tmp/$mode-get.load" 2> "$tmp/$mode-get.err" || fail "$mode: memcslap get"
  t2=$(date +%s.%N)
  timeout 60 "${pre_cli[@]}" memcaslap --servers="$host:$port" --threads=2 --concurrency=16 \
    --execute_number=20000 --verify=0.1 > "$tmp/$mode.mixed" 2> "$tmp/$mode-mixed.err" ||
    fail "$mode: memcaslap exited $?: $(tail -n 12 "$tmp/$mode.mixed" | tr '\n' ' ')"
  grep -q '^cmd_get: 18000$' "$tmp/$mode.mixed" && grep -q '^cmd_set: 2000$' "$tmp/$mode.mixed" &&
    grep -q '^verify_failed: 0$' "$tmp/$mode.mixed" && grep -q '^get_misses: 0$' "$tmp/$mode.mixed" ||
    fail "$mode: memcaslap: $(tr '\n' ' ' < "$tmp/$mode.mixed")"
  grep -q 'Time to set *20000 keys' "$tmp/$mode-set.load" || fail "$mode: memcslap set: $(cat "$tmp/$mode-set.load")"
  grep -q 'Time to get *20000 keys' "$tmp/$mode-get.load" || fail "$mode: memcslap get: $(cat "$tmp/$mode-get.load")"
  eval "${mode}_set=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%d", 20000 / (b - a) }')"
  eval "${mode}_get=$(awk -v a="$t1" -v b="$t2" 'BEGIN { printf "%d", 20000 / (b - a) }')"
  eval "${mode}_mixed=$(awk '/^Run time/ { for (i = 1; i <= NF; ++i) if ($i == "TPS:") print $(i + 1) }' "$tmp/$mode.mixed")"
  kill "$srv_pid"
  wait "$srv_pid" || true
  srv_pid=
}

one_run plain
one_run lwip
wire_check 25 25
echo "ok memcached over lwIP: $(wc -l < "$tmp/lwip.out") answers equal, memcaslap verified;" \
  "provider sockets: server $(get provider_sockets "$tmp/srv.stats"), clients $(get provider_sockets "$tmp/cli.stats")"
echo "requests/s (memcslap 4 threads x 5000 set / get; memcaslap 2 threads 16 conns 20000 mixed):" \
  "kernel TCP set $plain_set get $plain_get mixed $plain_mixed;" \
  "lwIP under uepoll set $lwip_set get $lwip_get mixed $lwip_mixed"
