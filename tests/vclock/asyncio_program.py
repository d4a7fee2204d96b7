# asyncio_program.py - an asyncio program with an hour of timers
# (tests/vclock/preload_run.sh): loop.call_later(3600, ...), chains of
# asyncio.sleep, a blocking time.sleep in a callback, wait_for timeouts, and
# a time.sleep in the default thread pool (run_in_executor: a second thread,
# idle in a semaphore wait afterwards).
# It prints each event with the simulated time it was due at and whether it
# came on time, so a real run (argument: real seconds per simulated second,
# e.g. 1/1800) and a run under uepoll-run --virtual-time (argument 1) print
# the same lines.
import asyncio
import sys
import time

SCALE = float(sys.argv[1]) if len(sys.argv) > 1 else 1.0
# Lateness allowed in simulated seconds (a loaded machine in the real run);
# events are at least 300 simulated seconds apart, so their order is fixed.
SLACK = 250.0


def main():
    loop = asyncio.new_event_loop()
    t0 = loop.time()
    wall0 = time.time()

    def log(due, what):
        el = (loop.time() - t0) / SCALE
        ok = due - 1e-3 <= el <= due + SLACK
        print(f"{due:6.0f} {what}: {'on time' if ok else 'OFF: at %.3f' % el}", flush=True)

    async def chain(name, first, period, steps):
        # Each sleep to the step's due time (lateness of a loaded real run
        # does not add up).
        for i in range(steps):
            due = first + i * period
            await asyncio.sleep(max(0.0, t0 + due * SCALE - loop.time()))
            log(due, f"{name} step {i}")

    async def waiter():
        never = loop.create_future()
        try:
            await asyncio.wait_for(never, 2100 * SCALE)
        except asyncio.TimeoutError:
            log(2100, "wait_for timed out")

    async def executor():
        await loop.run_in_executor(None, time.sleep, 1500 * SCALE)
        log(1500, "run_in_executor(time.sleep(1500)) done")

    done = loop.create_future()

    def hour():
        log(3600, "call_later(3600) fired")
        time.sleep(300 * SCALE)  # blocks the loop: clock_nanosleep
        log(3900, "after time.sleep(300)")
        loop.call_later(600 * SCALE, lambda: (log(4500, "last callback"), done.set_result(None)))

    async def run():
        loop.call_later(3600 * SCALE, hour)
        await asyncio.gather(chain("a", 600, 600, 5), chain("b", 900, 1800, 2), waiter(), executor())
        await done
        wall = (time.time() - wall0) / SCALE
        print(f"wall clock moved {'with' if abs(wall - 4500) < SLACK else 'apart from'} the loop's clock",
              flush=True)

    loop.run_until_complete(run())
    loop.close()


main()
