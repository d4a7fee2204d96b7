#!/usr/bin/env bash
# tools/loop_handoff.sh - event loops handing work to each other through
# their own descriptors, plainly, under uepoll-run, and under uepoll-run with
# a busy-poll window (by hand, minutes; not in CI; figures in the README's
# throughput section).  Two workloads, unmodified Debian interpreters:
#   node    worker_threads: the main thread and one worker bounce a message
#           ROUNDS times; each postMessage wakes the other loop through
#           libuv's async eventfd (a uepoll eventfd under uepoll-run)
#   python  asyncio: ROUNDS calls of loop.run_in_executor on a pool of 4
#           threads, 16 at a time; each completion wakes the loop through
#           call_soon_threadsafe's self-pipe (a socket pair, a uepoll one
#           under uepoll-run)
# Each run prints its rate and its CPU time per round trip (or call), the
# process's user+system time over the rounds; RUNS rounds of the three modes,
# their order rotated every round, then the median [min-max] of each.
#
# Usage: tools/loop_handoff.sh [UEPOLL_RUN]   (default: build/src/preload/uepoll-run)
# Environment: RUNS (5), ROUNDS (node 40000, python 40000), WORKLOADS
# ("node python"), TUNE (the third mode's uepoll-run --tune, default
# busy_poll_usecs=50).  The figures depend on what else the machine runs.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
RUN=${1:-$root/build/src/preload/uepoll-run}
RUNS=${RUNS:-5}
ROUNDS=${ROUNDS:-40000}
WORKLOADS=${WORKLOADS:-node python}
TUNE=${TUNE:-busy_poll_usecs=50}
[[ -x $RUN ]] || { echo "loop_handoff: uepoll-run not found at $RUN (build first)" >&2; exit 1; }
work=$(mktemp -d /tmp/uepoll-handoff.XXXXXX)
trap 'rm -rf "$work"' EXIT

cat >"$work/handoff.js" <<'JS'
const { Worker, isMainThread, parentPort } = require('worker_threads');
if (isMainThread) {
  const n = +process.argv[2];
  const w = new Worker(__filename);
  let i = 0;
  const t0 = process.hrtime.bigint(), c0 = process.cpuUsage();
  w.on('message', (m) => {
    if (m !== i) throw new Error(`got ${m}, want ${i}`);
    if (++i < n) return w.postMessage(i);
    const s = Number(process.hrtime.bigint() - t0) / 1e9, c = process.cpuUsage(c0);
    console.log(`${(n / s).toFixed(0)} ${((c.user + c.system) / n).toFixed(2)}`);
    w.terminate();
  });
  w.postMessage(0);
} else {
  parentPort.on('message', (m) => parentPort.postMessage(m));
}
JS
cat >"$work/handoff.py" <<'PY'
import asyncio, concurrent.futures, resource, sys, time

def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime

async def main(n):
    loop = asyncio.get_running_loop()
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=4)
    sem = asyncio.Semaphore(16)
    async def one(i):
        async with sem:
            return await loop.run_in_executor(pool, abs, -i)
    t0, c0 = time.perf_counter(), cpu()
    got = await asyncio.gather(*(one(i) for i in range(n)))
    s, c = time.perf_counter() - t0, cpu() - c0
    assert got == list(range(n)), "wrong results"
    print(f"{n / s:.0f} {c * 1e6 / n:.2f}")
    pool.shutdown()

asyncio.run(main(int(sys.argv[1])))
PY

# one WORKLOAD MODE -> "rate cpu_us" appended to $work/WORKLOAD.MODE
one() {
  local cmd
  case $1 in
    node) cmd=(node "$work/handoff.js" "$ROUNDS") ;;
    python) cmd=(python3 "$work/handoff.py" "$ROUNDS") ;;
  esac
  case $2 in
    plain) "${cmd[@]}" ;;
    uepoll) "$RUN" "${cmd[@]}" ;;
    tuned) "$RUN" --tune "$TUNE" "${cmd[@]}" ;;
  esac >>"$work/$1.$2" || { echo "loop_handoff: $1 ($2) failed" >&2; exit 1; }
}
# stats FILE COLUMN -> "median [min-max]"
stats() {
  sort -g -k"$2" "$1" | awk -v c="$2" '{ v[NR] = $c } END { printf "%s [%s-%s]", v[int((NR + 1) / 2)], v[1], v[NR] }'
}
echo "RUNS=$RUNS ROUNDS=$ROUNDS TUNE=$TUNE at $(git -C "$root" rev-parse --short HEAD 2>/dev/null), load average $(cut -d' ' -f1-3 /proc/loadavg)"
modes=(plain uepoll tuned)
for w in $WORKLOADS; do
  for ((r = 0; r < RUNS; ++r)); do
    for ((k = 0; k < 3; ++k)); do one "$w" "${modes[(r + k) % 3]}"; done
  done
done
echo "| workload | plain: per s, median [min-max] | uepoll-run | uepoll-run --tune $TUNE | plain CPU us | uepoll-run CPU us | tuned CPU us |"
echo "|---|---:|---:|---:|---:|---:|---:|"
for w in $WORKLOADS; do
  printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$w" \
    "$(stats "$work/$w.plain" 1)" "$(stats "$work/$w.uepoll" 1)" "$(stats "$work/$w.tuned" 1)" \
    "$(stats "$work/$w.plain" 2)" "$(stats "$work/$w.uepoll" 2)" "$(stats "$work/$w.tuned" 2)"
done
