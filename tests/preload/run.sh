#!/bin/sh
# run.sh UEPOLL_RUN PROGRAM... - the preload test: each PROGRAM run plainly
# and under uepoll-run must print the same, with no warning on stderr, and
# UEPOLL_STATS must show that uepoll served its epoll instances.
set -eu
run=$1; shift
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
for prog in "$@"; do
  "$prog" > "$tmp/plain.out"
  "$run" --stats "$tmp/stats" "$prog" > "$tmp/pre.out" 2> "$tmp/pre.err"
  if ! cmp -s "$tmp/plain.out" "$tmp/pre.out"; then
    echo "FAIL $prog: outputs differ"; diff "$tmp/plain.out" "$tmp/pre.out" || true; exit 1
  fi
  if [ -s "$tmp/pre.err" ]; then echo "FAIL $prog: printed on stderr:"; cat "$tmp/pre.err"; exit 1; fi
  get() { awk -v k="$1" '$1 == k { s += $2 } END { print s + 0 }' "$tmp/stats"; }
  for k in epoll_instances waits events uepoll_calls; do
    if [ "$(get $k)" -lt 1 ]; then echo "FAIL $prog: UEPOLL_STATS $k is 0"; cat "$tmp/stats"; exit 1; fi
  done
  if [ "$(get refused)" -ne 0 ]; then echo "FAIL $prog: refused calls"; cat "$tmp/stats"; exit 1; fi
  # UEPOLL_EXPECT_CONVERTED=1: the program forks with uepoll pipes or pairs
  # open, which must have been made kernel ones (src/preload/fork_convert.c).
  if [ "${UEPOLL_EXPECT_CONVERTED:-0}" = 1 ] && [ "$(get converted_at_fork)" -lt 1 ]; then
    echo "FAIL $prog: UEPOLL_STATS converted_at_fork is 0"; cat "$tmp/stats"; exit 1
  fi
  echo "ok $prog ($(wc -l < "$tmp/pre.out") lines equal; $(get epoll_instances) instances, $(get waits) waits, $(get events) events, $(get converted_at_fork) converted at fork)"
  rm -f "$tmp/stats"
done
