#!/usr/bin/env bash
# tools/reliability_long.sh - runs the long tiers of the reliability suite and
# prints the figures quoted in docs/reliability.md.
#
#   tools/reliability_long.sh [-b BUILD_DIR] [-f FUZZ_BUILD_DIR] [-s SECONDS] [-l LOST_WAKEUP_SCALE]
#
# BUILD_DIR (default build-rel) must hold rel_*_test and random_diff;
# FUZZ_BUILD_DIR (default build-fuzz) capi_fuzz (skipped when absent).
# SECONDS (default 60) is the budget of each time-boxed part: random_diff,
# every torture scenario (per implementation), the fuzzer.
set -u
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
B="$ROOT/build-rel"; F="$ROOT/build-fuzz"; S=60; L=10
while getopts "b:f:s:l:" o; do
  case $o in b) B="$OPTARG";; f) F="$OPTARG";; s) S="$OPTARG";; l) L="$OPTARG";; *) exit 2;; esac
done
R="$B/tests/reliability"
rc=0
echo "== reliability long tiers: $(date -u +%FT%TZ), build $B, ${S}s per part, lost-wakeup x$L"

echo "-- random_diff --seconds $S"
"$R/random_diff" --seconds "$S" || rc=1

echo "-- torture: UEPOLL_TORTURE_SECONDS=$S"
UEPOLL_TORTURE_SECONDS="$S" "$R/rel_torture_test" 2>&1 | grep -E '^\[torture|FAILED|Failure|OK \]|PASSED' || true
[[ ${PIPESTATUS[0]} -eq 0 ]] || rc=1

echo "-- lost wakeup: UEPOLL_LOST_WAKEUP_SCALE=$L"
UEPOLL_LOST_WAKEUP_SCALE="$L" "$R/rel_lost_wakeup_test" 2>&1 | grep -E '^\[lost_wakeup|FAILED|Failure|PASSED' || true
[[ ${PIPESTATUS[0]} -eq 0 ]] || rc=1

echo "-- limits and fault injection"
"$R/rel_limits_test" 2>&1 | grep -E '^\[faults|FAILED|PASSED' || true

echo "-- bad input"
"$R/rel_bad_input_test" 2>&1 | grep -E '^\[bad_input|FAILED|PASSED' || true

if [[ -x "$F/fuzz/capi_fuzz" ]]; then
  echo "-- capi_fuzz -max_total_time=$S"
  mkdir -p "$F/fuzz/corpus_long"
  "$F/fuzz/capi_fuzz" -max_total_time="$S" -max_len=1024 -print_final_stats=1 \
      "$F/fuzz/corpus_long" "$ROOT/fuzz/corpus" 2>&1 | grep -E 'stat::number_of_executed_units|stat::peak_rss|Done|ERROR|SUMMARY|cov:' | tail -6
  [[ ${PIPESTATUS[0]} -eq 0 ]] || rc=1
else
  echo "-- capi_fuzz: $F/fuzz/capi_fuzz not built (clang, -DUEPOLL_BUILD_FUZZ=ON): skipped"
fi
echo "== done, status $rc"
exit $rc
