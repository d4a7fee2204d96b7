# wire_common.sh - sourced by the provider's datagram-wire tests
# (redis_wire.sh, memcached_wire.sh): each runs a server and its clients
# twice, on kernel TCP over 127.0.0.1 and under `uepoll-run --provider lwip`
# with one lwIP stack a process, joined by the wire (server 10.7.0.1,
# clients 10.7.0.2).  Owns the scratch folder $tmp and the server's pid
# $srv_pid (killed and removed at exit), fail (prints the logs, exits 1),
# the launch prefixes of each mode, and the checks after both runs.  The
# sourcing script sets run (the uepoll-run path) and set -euo pipefail.

. "$(dirname "${BASH_SOURCE[0]}")/../support/ports.sh"  # free_port

# wire_require PROGRAM...: exit 77 when one is not installed.
wire_require() {
  local p
  for p in "$@"; do
    command -v "$p" >/dev/null || { echo "SKIP: $p not installed (scripts/setup.sh)"; exit 77; }
  done
}

# wire_setup: the scratch folder and the exit trap that kills the server.
wire_setup() {
  tmp=$(mktemp -d)
  srv_pid=
  trap wire_cleanup EXIT
}
wire_cleanup() { [[ -n "$srv_pid" ]] && kill "$srv_pid" 2>/dev/null; rm -rf "$tmp"; }

fail() { echo "FAIL: $*"; for f in "$tmp"/*.log "$tmp"/*.err "$tmp"/*.load; do [[ -s $f ]] && { echo "== $f"; tail -20 "$f"; }; done; exit 1; }

# wire_mode MODE: sets the caller's host, pre_srv and pre_cli for MODE plain
# (kernel TCP, 127.0.0.1, no prefix) or lwip (the wire, stats in
# $tmp/srv.stats and $tmp/cli.stats).
wire_mode() {
  if [[ $1 == plain ]]; then
    host=127.0.0.1
  else
    host=10.7.0.1
    pre_srv=(env "UEPOLL_PROVIDER_CONFIG=addr=10.7.0.1/24,wire=$tmp/srv.wire,peer=$tmp/cli.wire"
             "$run" --provider lwip --stats "$tmp/srv.stats")
    pre_cli=(env "UEPOLL_PROVIDER_CONFIG=addr=10.7.0.2/24,wire=$tmp/cli.wire,peer=$tmp/srv.wire"
             "$run" --provider lwip --stats "$tmp/cli.stats")
  fi
}

# get KEY FILE: the sum of KEY's values in a UEPOLL_STATS file.
get() { awk -v k="$1" '$1 == k { s += $2 } END { print s + 0 }' "$2"; }

# wire_check MIN_SERVER MIN_CLIENTS: both modes gave the same answers
# ($tmp/MODE.out), nothing from uepoll on stderr, the provider served at
# least that many sockets on each side and refused no call.
wire_check() {
  cmp -s "$tmp/plain.out" "$tmp/lwip.out" || { diff "$tmp/plain.out" "$tmp/lwip.out" || true; fail "answers differ"; }
  if grep -h '^uepoll' "$tmp"/*.err; then fail "uepoll printed on stderr"; fi
  (( $(get provider_sockets "$tmp/srv.stats") >= $1 )) || fail "server: provider_sockets $(get provider_sockets "$tmp/srv.stats")"
  (( $(get provider_sockets "$tmp/cli.stats") >= $2 )) || fail "clients: provider_sockets $(get provider_sockets "$tmp/cli.stats")"
  (( $(get refused "$tmp/srv.stats") == 0 && $(get refused "$tmp/cli.stats") == 0 )) || fail "refused calls"
}
