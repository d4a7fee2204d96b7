#!/bin/sh
# preload_run.sh UEPOLL_RUN TIMESTAMP_PROGRAM ASYNCIO_PROGRAM THREAD_PROGRAM ALARM_PROGRAM
# COND_PROGRAM - unmodified
# programs on the virtual clock (uepoll-run --virtual-time):
#   1. determinism: two runs of a single-threaded timestamp-logging program
#      (timestamp_program.c: a day of sleeps and hour-long timeouts) print
#      byte-identical output, starting at the clock's fixed start, in
#      seconds of real time;
#   2. threads (thread_program.c): a thread that computes holds the clock
#      (known from pthread_create), so the main thread's hour-long wait ends
#      with its event at virtual time 0, and a 10 s sleep at exactly 10 s;
#   3. SIGALRM (alarm_program.c): alarm(3600) interrupts an endless
#      epoll_wait an hour later, an ITIMER_REAL interval timer interrupts
#      nanosleep on schedule, alarm/getitimer report what is left, as Linux
#      computes them;
#   4. condition variables and joins (cond_program.c): a timed wait ends at
#      the signal (10 s) or its timeout (30 s later), idle threads in
#      pthread_cond_wait and a thread in pthread_join do not hold the clock;
#      a semaphore's timed wait ends on the virtual clock;
#   5. an asyncio program with call_later(3600), asyncio.sleep chains and a
#      thread-pool job
#      prints the same lines run in real time (scaled: 1 simulated second =
#      1/1800 s, so 2.5 s) and under --virtual-time (4500 simulated seconds).
# Exit 0, 1 on a failure, 77 (skip) only for the asyncio part when python3
# is missing.
set -u
run=$1 ts=$2 py=$3 th=$4 al=$5 cv=$6
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
now_ms() { date +%s%3N; }

t0=$(now_ms)
timeout 30 "$run" --virtual-time "$ts" >"$tmp/ts1" 2>"$tmp/err1" || { echo "FAIL: timestamp run 1 exited $?"; fail=1; }
timeout 30 "$run" --virtual-time auto "$ts" >"$tmp/ts2" 2>"$tmp/err2" || { echo "FAIL: timestamp run 2 exited $?"; fail=1; }
el=$(( $(now_ms) - t0 ))
if ! cmp -s "$tmp/ts1" "$tmp/ts2"; then
  echo "FAIL: two runs differ:"; diff "$tmp/ts1" "$tmp/ts2"; fail=1
fi
if [ -s "$tmp/err1" ] || [ -s "$tmp/err2" ]; then echo "FAIL: stderr:"; cat "$tmp/err1" "$tmp/err2"; fail=1; fi
head -1 "$tmp/ts1" | grep -q '^start  *mono 1000.000000000 real 1767225600.000000000 ' ||
  { echo "FAIL: not the virtual clock's start:"; head -1 "$tmp/ts1"; fail=1; }
tail -1 "$tmp/ts1" | grep -q '^after clock_nanosleep  *mono 101935.251500000 ' ||
  { echo "FAIL: not the simulated day:"; tail -1 "$tmp/ts1"; fail=1; }
lines=$(wc -l <"$tmp/ts1")
[ "$lines" -eq 22 ] || { echo "FAIL: $lines lines, not 22:"; cat "$tmp/ts1"; fail=1; }
echo "timestamp program: two runs of a simulated 28 h, $lines identical lines, ${el} ms real for both"

timeout 30 "$run" --virtual-time "$th" >"$tmp/th" 2>&1 || { echo "FAIL: thread program exited $?"; fail=1; }
printf 'wait = 1 after 0.000 s\nwait = 1 (y) after 10.000 s\njoined after 10.000 s\n' >"$tmp/th_want"
if ! diff "$tmp/th_want" "$tmp/th"; then echo "FAIL: thread program (< wanted, > got)"; fail=1; fi
echo "thread program: $(wc -l <"$tmp/th") lines as wanted"

timeout 30 "$run" --virtual-time "$al" >"$tmp/al" 2>&1 || { echo "FAIL: alarm program exited $?"; fail=1; }
cat >"$tmp/al_want" <<'END'
alarm(3600) = 0
epoll_wait = -1 Interrupted system call at 3600.000, alarms 1
nanosleep = -1 Interrupted system call at 3601.000, left 9.000, alarms 2
nanosleep = -1 Interrupted system call at 3601.500, left 9.500, alarms 3
nanosleep = -1 Interrupted system call at 3602.000, left 9.500, alarms 4
getitimer: value 0.500000 interval 0.500000
disarmed: old value 0.500000
alarm(0) = 3 at 3603.600
bad timeval: -1 Invalid argument
END
if ! diff "$tmp/al_want" "$tmp/al"; then echo "FAIL: alarm program (< wanted, > got)"; fail=1; fi
echo "alarm program: $(wc -l <"$tmp/al") lines as wanted"

timeout 30 "$run" --virtual-time "$cv" >"$tmp/cv" 2>&1 || { echo "FAIL: cond program exited $?"; fail=1; }
printf '%s\n' 'consumer: signalled at 10.000' 'consumer: Connection timed out at 40.000' \
  'main: consumer joined at 40.000' 'main: 3 pooled threads exited at 100.000' \
  'sem_timedwait = -1 Connection timed out at 105.000' \
  'value 1, trywait 0, then -1 Resource temporarily unavailable' >"$tmp/cv_want"
if ! diff "$tmp/cv_want" "$tmp/cv"; then echo "FAIL: cond program (< wanted, > got)"; fail=1; fi
echo "cond program: $(wc -l <"$tmp/cv") lines as wanted"

if ! command -v python3 >/dev/null 2>&1; then
  echo "SKIP asyncio: no python3"
  [ $fail -eq 0 ] && exit 77
  exit 1
fi
python3 "$py" 0.000555555555 >"$tmp/real" 2>&1 || { echo "FAIL: real asyncio run exited $?"; fail=1; }
t0=$(now_ms)
timeout 30 "$run" --virtual-time python3 "$py" 1 >"$tmp/virt" 2>&1 || { echo "FAIL: virtual asyncio run exited $?"; fail=1; }
el=$(( $(now_ms) - t0 ))
if ! diff "$tmp/real" "$tmp/virt"; then echo "FAIL: real (<) and virtual (>) runs differ"; fail=1; fi
grep -q '^  1500 run_in_executor(time.sleep(1500)) done: on time$' "$tmp/virt" && grep -q '^  4500 last callback: on time$' "$tmp/virt" || { echo "FAIL: asyncio output:"; cat "$tmp/virt"; fail=1; }
# An hour and a quarter simulated; Python's start-up is most of the real
# time (about 0.5 s on a loaded 2-core machine); 10 s leaves room for load.
[ "$el" -lt 10000 ] || { echo "FAIL: the virtual asyncio run took ${el} ms of real time"; fail=1; }
echo "asyncio program: $(wc -l <"$tmp/virt") lines as in the real run, 4500 simulated s in ${el} ms real"
exit $fail
