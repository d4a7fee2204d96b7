#!/usr/bin/env bash
# bench/layout_check.sh - checks what uepoll-bench shows a person (ctest
# bench.layout): with --table FILE the table goes to FILE and stdout holds
# only the summary; every line of both fits 80 columns; the legend explains
# "uepoll-off"; each target line carries its reason; the summary names the
# system-call cost, the projections to 0.1 us and 1 us and where the files
# are; the JSON has the projected ratios.  A tiny run (a few seconds).
# Usage: bench/layout_check.sh UEPOLL_BENCH   Exit status: 0 ok, 1 otherwise.
set -euo pipefail
bench="$1"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/uepoll-layout.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
fail() { printf 'bench-layout: FAIL: %s\n' "$*" >&2; exit 1; }

bench="$(cd "$(dirname "$bench")" && pwd)/$(basename "$bench")"
cd "$tmp"   # short relative output names: the summary prints them
"$bench" --reps 1 --count 500 --rounds 50 --threads 1 --scenario ctl-pairs,nested-wait,kernel-fds \
  --table table.txt --json run.json >summary.txt 2>progress.txt \
  || { cat progress.txt; fail "uepoll-bench exited non-zero"; }
for f in table.txt summary.txt; do
  long="$(awk 'length($0) > 80 { print FILENAME ":" FNR ": " length($0) " columns" }' "$tmp/$f")"
  [[ -z "$long" ]] || { cat "$tmp/$f"; fail "lines over 80 columns: $long"; }
done
grep -q 'uepoll-off' "$tmp/table.txt" || fail "the legend does not explain uepoll-off"
grep -q 'target: CPU/pair <= 64x hash floor (here [0-9]*x): ' "$tmp/table.txt" \
  || fail "a ctl-pairs target line lacks its floor multiple or reason"
grep -q '^===== summary' "$tmp/summary.txt" || fail "no summary on stdout"
grep -q '^uepoll-bench ' "$tmp/summary.txt" && fail "the table went to stdout despite --table"
grep -q 'A null system call costs [0-9]* ns' "$tmp/summary.txt" || fail "the summary does not give the system-call cost"
grep -q 'at 0.1 us system calls' "$tmp/summary.txt" || fail "the summary gives no projection"
grep -q "Full table.*: table.txt" "$tmp/summary.txt" || fail "the summary does not say where the table is"
grep -q '"ratio_at_1us": [0-9]' "$tmp/run.json" || fail "the JSON has no projected ratio"
echo "bench-layout: ok"
