#!/bin/bash
# tap_netns.sh UEPOLL_RUN SRCDIR - the lwIP provider's TAP link: inside a
# network namespace made here (unshare -n: nothing leaves it), a TAP
# device uetap0 with the kernel's side at 10.8.0.1/24; Debian's memcached
# under `uepoll-run --provider lwip` with tap=uetap0,tap_addr=10.8.0.2/24
# serves plain kernel clients (memcached_check.py, memcslap).  The answers
# must equal those of the same memcached on kernel TCP in the namespace.
# Exit 77 without root, unshare, /dev/net/tun, ip or memcached.  Bounded:
# every program runs under timeout.
set -euo pipefail
run=$1 src=$2
if [[ "${UEPOLL_TAP_NETNS:-}" != inside ]]; then
  for p in memcached memcslap python3 ip unshare; do
    command -v "$p" >/dev/null || { echo "SKIP: $p not installed"; exit 77; }
  done
  [[ $(id -u) == 0 && -c /dev/net/tun ]] || { echo "SKIP: needs root and /dev/net/tun"; exit 77; }
  timeout 5 unshare -n true 2>/dev/null || { echo "SKIP: unshare -n is not allowed here"; exit 77; }
  UEPOLL_TAP_NETNS=inside exec timeout 150 unshare -n bash "$0" "$@"
fi

tmp=$(mktemp -d)
srv_pid=
cleanup() { [[ -n "$srv_pid" ]] && kill "$srv_pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; for f in "$tmp"/*.err "$tmp"/*.load; do [[ -s $f ]] && { echo "== $f"; tail -20 "$f"; }; done; exit 1; }
ip link set lo up
ip tuntap add dev uetap0 mode tap
ip addr add 10.8.0.1/24 dev uetap0
ip link set uetap0 up
port=11411

ping_server() {  # ping_server HOST: a "version" answered
  local i
  for i in $(seq 50); do
    timeout 5 python3 -c "import socket,sys; s=socket.create_connection((sys.argv[1], $port), timeout=2); \
s.sendall(b'version\r\n'); sys.exit(0 if s.recv(100).startswith(b'VERSION') else 1)" "$1" 2>/dev/null && return 0
    sleep 0.2
  done
  return 1
}

# one_run MODE HOST PREFIX...: memcached (PREFIX: how it is launched), then the kernel clients.
one_run() {
  local mode=$1 host=$2; shift 2
  timeout 100 "$@" memcached -u root -p "$port" -l "$host" -U 0 -t 4 -m 64 > "$tmp/$mode-srv.log" 2> "$tmp/$mode-srv.err" &
  srv_pid=$!
  ping_server "$host" || fail "$mode: memcached does not answer"
  timeout 30 python3 "$src/memcached_check.py" "$host" "$port" > "$tmp/$mode.out" 2> "$tmp/$mode-check.err" ||
    fail "$mode: memcached_check.py"
  local t0 t1
  t0=$(date +%s.%N)
  timeout 60 memcslap --servers="$host:$port" --concurrency=4 --execute-number=5000 --test=set \
    > "$tmp/$mode-set.load" 2> "$tmp/$mode-set.err" || fail "$mode: memcslap"
  t1=$(date +%s.%N)
  grep -q 'Time to set *20000 keys' "$tmp/$mode-set.load" || fail "$mode: memcslap: $(cat "$tmp/$mode-set.load")"
  eval "${mode}_set=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%d", 20000 / (b - a) }')"
  kill "$srv_pid"
  wait "$srv_pid" || true
  srv_pid=
}

one_run kernel 10.8.0.1 env
one_run tap 10.8.0.2 env UEPOLL_PROVIDER_CONFIG=tap=uetap0,tap_addr=10.8.0.2/24 "$run" --provider lwip --stats "$tmp/srv.stats"
cmp -s "$tmp/kernel.out" "$tmp/tap.out" || { diff "$tmp/kernel.out" "$tmp/tap.out" || true; fail "answers differ"; }
if grep -h '^uepoll' "$tmp"/*.err; then fail "uepoll printed on stderr"; fi
n=$(awk '$1 == "provider_sockets" { s += $2 } END { print s + 0 }' "$tmp/srv.stats")
(( n >= 6 )) || fail "provider_sockets $n"
echo "ok memcached on lwIP over a TAP device, kernel clients: $(wc -l < "$tmp/tap.out") answers equal; provider sockets $n"
echo "memcslap 4 threads x 5000 SET, requests/s: kernel TCP $kernel_set; lwIP over TAP under uepoll $tap_set"
