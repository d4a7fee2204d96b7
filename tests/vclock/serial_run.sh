#!/bin/sh
# serial_run.sh UEPOLL_RUN SERIAL_PROGRAM THREAD_PROGRAM COND_PROGRAM -
# serialized mode (uepoll-run --virtual-time --serialize SEED):
#   1. serial_program.c (four threads that wake together at every step)
#      prints byte-identical output in two runs with seed 7, and again with
#      seed 8 (each seed's order may differ from the other's: reported, not
#      asserted); every run has all 24 steps and ends with counter 24;
#   2. thread_program.c and cond_program.c print what they print unserialized.
# Exit 0, or 1 on a failure.  Every run bounded (timeout 30).
set -u
run=$1 sp=$2 th=$3 cv=$4
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
for s in 7 7 8 8; do
  n=$((${n:-0} + 1))
  timeout 30 "$run" --virtual-time --serialize "$s" "$sp" >"$tmp/s$n" 2>&1 || { echo "FAIL: seed $s run exited $?"; fail=1; }
  [ "$(grep -c '^thread ' "$tmp/s$n")" -eq 24 ] && tail -1 "$tmp/s$n" | grep -q '^main: joined, counter 24$' ||
    { echo "FAIL: seed $s output:"; cat "$tmp/s$n"; fail=1; }
done
cmp -s "$tmp/s1" "$tmp/s2" || { echo "FAIL: two runs with seed 7 differ:"; diff "$tmp/s1" "$tmp/s2"; fail=1; }
cmp -s "$tmp/s3" "$tmp/s4" || { echo "FAIL: two runs with seed 8 differ:"; diff "$tmp/s3" "$tmp/s4"; fail=1; }
if cmp -s "$tmp/s1" "$tmp/s3"; then same="the same order"; else same="another order"; fi
echo "serial program: seed 7 twice and seed 8 twice byte-identical ($(wc -l <"$tmp/s1") lines; seed 8 gives $same)"

timeout 30 "$run" --virtual-time --serialize 1 "$th" >"$tmp/th" 2>&1 || { echo "FAIL: thread program exited $?"; fail=1; }
printf 'wait = 1 after 0.000 s\nwait = 1 (y) after 10.000 s\njoined after 10.000 s\n' >"$tmp/th_want"
diff "$tmp/th_want" "$tmp/th" || { echo "FAIL: thread program serialized (< wanted, > got)"; fail=1; }
timeout 30 "$run" --virtual-time --serialize 1 "$cv" >"$tmp/cv" 2>&1 || { echo "FAIL: cond program exited $?"; fail=1; }
printf '%s\n' 'consumer: signalled at 10.000' 'consumer: Connection timed out at 40.000' \
  'main: consumer joined at 40.000' 'main: 3 pooled threads exited at 100.000' \
  'sem_timedwait = -1 Connection timed out at 105.000' \
  'value 1, trywait 0, then -1 Resource temporarily unavailable' >"$tmp/cv_want"
diff "$tmp/cv_want" "$tmp/cv" || { echo "FAIL: cond program serialized (< wanted, > got)"; fail=1; }
echo "thread and cond programs: as unserialized"
exit $fail
