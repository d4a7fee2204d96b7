#!/bin/sh
# redis_idle.sh UEPOLL_RUN - an unmodified Debian server on the virtual
# clock: redis-server --timeout 3600 under uepoll-run --virtual-time closes
# an idle client an hour (of virtual time) after its last command (TIME,
# which gives the server's clock then) as its log's timestamp of the close
# shows (Redis compares whole seconds: 3600 < idle <= 3602), in seconds of
# real time (each of Redis's 10 cron runs a second is
# one jump of the clock).  Skips (77) without redis-server or python3.
set -u
run=$1
command -v redis-server >/dev/null 2>&1 || { echo "SKIP: no redis-server"; exit 77; }
command -v python3 >/dev/null 2>&1 || { echo "SKIP: no python3"; exit 77; }
tmp=$(mktemp -d) || exit 1
. "$(dirname "$0")/../support/ports.sh"
port=$(free_port)
TZ=UTC "$run" --virtual-time redis-server --port "$port" --bind 127.0.0.1 --timeout 3600 --save '' \
  --appendonly no --loglevel verbose --logfile "$tmp/log" --dir "$tmp" &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$tmp"' EXIT
fail=0
out=$(timeout 60 python3 - "$port" <<'END'
import socket, sys, time
for _ in range(200):  # until the server listens
    try:
        s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
        break
    except OSError:
        time.sleep(0.05)
s.sendall(b"TIME\r\n")  # the last command: *2 $10 seconds $6 microseconds
reply = b""
while reply.count(b"\r\n") < 5:
    reply += s.recv(100)
f = reply.split(b"\r\n")
t = time.time()
s.settimeout(50)
rest = s.recv(100)
print(f[0].decode(), "%s.%06d" % (f[2].decode(), int(f[4])), rest, "%.0f" % ((time.time() - t) * 1000))
END
) || { echo "FAIL: client: $out"; fail=1; }
echo "client: $out"
# The server's CPU time so far (utime + stime, in clock ticks): on a loaded
# machine the real time is mostly waiting for a core.
cpu_ms=$(awk -v hz="$(getconf CLK_TCK)" '{ printf "%d", ($14 + $15) * 1000 / hz }' "/proc/$pid/stat" 2>/dev/null)
set -- $out
last=${2:-0}
[ "${1:-}" = "*2" ] && [ "${3:-}" = "b''" ] || { echo "FAIL: no TIME reply, then no close"; fail=1; }
real_ms=${4:-999999}
[ "$real_ms" -lt 20000 ] || { echo "FAIL: the idle hour took $real_ms ms of real time"; fail=1; }
# "pid:M 01 Jan 2026 01:06:46.001 - Closing idle client" (UTC, the virtual
# clock's first day: 2026-01-01T00:00:00Z is 1767225600).
clo=$(awk '/Closing idle client/ { split($5, t, ":"); printf "%.3f", 1767225600 + t[1] * 3600 + t[2] * 60 + t[3]; exit }' "$tmp/log")
echo "last command at $last, closed at ${clo:-?} (virtual, from Redis), $real_ms ms real, server CPU ${cpu_ms:-?} ms since its start"
awk -v a="$last" -v c="${clo:-0}" 'BEGIN { d = c - a; exit !(a > 1767225600 && d > 3600 && d <= 3602) }' ||
  { echo "FAIL: idle from $last to $clo"; cat "$tmp/log"; fail=1; }
exit $fail
