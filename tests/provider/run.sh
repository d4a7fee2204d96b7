#!/bin/sh
# run.sh UEPOLL_RUN PROVIDER COMMAND... - a program over 127.0.0.1, run
# plainly and under `uepoll-run --provider PROVIDER`: the same output line
# for line, nothing on stderr, and UEPOLL_STATS showing that the provider
# served its sockets (provider_sockets > 0) and no call was refused.
set -eu
run=$1 provider=$2; shift 2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$@" > "$tmp/plain.out"
"$run" --provider "$provider" --stats "$tmp/stats" "$@" > "$tmp/pre.out" 2> "$tmp/pre.err" || {
  echo "FAIL $*: exit status $? under the provider"; cat "$tmp/pre.out" "$tmp/pre.err"; exit 1; }
if ! cmp -s "$tmp/plain.out" "$tmp/pre.out"; then
  echo "FAIL $*: outputs differ"; diff "$tmp/plain.out" "$tmp/pre.out" || true; exit 1
fi
if [ -s "$tmp/pre.err" ]; then echo "FAIL $*: printed on stderr:"; cat "$tmp/pre.err"; exit 1; fi
get() { awk -v k="$1" '$1 == k { s += $2 } END { print s + 0 }' "$tmp/stats"; }
if [ "$(get provider_sockets)" -lt 1 ]; then echo "FAIL $*: UEPOLL_STATS provider_sockets is 0"; cat "$tmp/stats"; exit 1; fi
if [ "$(get refused)" -ne 0 ]; then echo "FAIL $*: refused calls"; cat "$tmp/stats"; exit 1; fi
echo "ok $* ($(wc -l < "$tmp/pre.out") lines equal; $(get provider_sockets) provider sockets, $(get registrations_provider) epoll registrations of them)"
