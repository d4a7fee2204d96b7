#!/bin/sh
# nginx_idle.sh UEPOLL_RUN - an unmodified Debian nginx on the virtual
# clock: with keepalive_timeout 3600s, under uepoll-run --virtual-time
# (auto), it closes a kept-alive client an hour of virtual time after its
# response, read through the control channel (`now` before the request and
# after the close: nginx's timers have millisecond resolution, so 3600.000
# to 3600.002 s), in well under a second of real time (reported; the test
# allows 20 s for a loaded machine).  The listener is `deferred`
# (TCP_DEFER_ACCEPT), so that nginx accepts a connection with its request
# already there and no header timeout is pending while the request is on
# its way.  Skips (77) without nginx or python3.
set -u
run=$1
command -v nginx >/dev/null 2>&1 || { echo "SKIP: no nginx"; exit 77; }
command -v python3 >/dev/null 2>&1 || { echo "SKIP: no python3"; exit 77; }
tmp=$(mktemp -d) || exit 1  # mode 0700: the control socket's directory
. "$(dirname "$0")/../support/ports.sh"
port=$(free_port)
cat >"$tmp/nginx.conf" <<END
daemon off;
master_process off;
worker_processes 1;
error_log $tmp/error.log info;
pid $tmp/nginx.pid;
events { worker_connections 64; }
http {
  access_log off;
  client_body_temp_path $tmp/body;
  proxy_temp_path $tmp/proxy;
  fastcgi_temp_path $tmp/fastcgi;
  uwsgi_temp_path $tmp/uwsgi;
  scgi_temp_path $tmp/scgi;
  keepalive_timeout 3600s;
  server {
    listen 127.0.0.1:$port deferred;
    location / { return 200 "hello\n"; }
  }
}
END
"$run" --virtual-time --control "$tmp/ctl" nginx -p "$tmp" -c "$tmp/nginx.conf" -e "$tmp/error.log" &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$tmp"' EXIT
out=$(timeout 60 python3 - "$port" "$tmp/ctl" <<'END'
import socket, sys, time
def connect(make):
    for _ in range(400):  # until nginx listens
        try:
            return make()
        except OSError:
            time.sleep(0.05)
    raise SystemExit("no nginx")
def unix():
    c = socket.socket(socket.AF_UNIX)
    c.connect(sys.argv[2])
    return c
ctl = connect(unix)
ctl.settimeout(20)
def now():
    ctl.sendall(b"now\n")
    r = b""
    while not r.endswith(b"\n"):
        r += ctl.recv(100)
    return int(r.split()[1])
s = connect(lambda: socket.create_connection(("127.0.0.1", int(sys.argv[1]))))
s.settimeout(50)
t0, real0 = now(), time.time()
s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
reply = b""
while not reply.endswith(b"hello\n"):
    chunk = s.recv(1000)
    if not chunk:
        break
    reply += chunk
rest = s.recv(100)  # the close
t1, real1 = now(), time.time()
print(reply.split(b"\r\n")[0].decode().replace(" ", "_"), rest, "%.6f" % ((t1 - t0) / 1e9), "%.0f" % ((real1 - real0) * 1000))
END
) || { echo "FAIL: client: $out"; cat "$tmp/error.log"; exit 1; }
echo "client: $out"
set -- $out
fail=0
[ "${1:-}" = "HTTP/1.1_200_OK" ] && [ "${2:-}" = "b''" ] || { echo "FAIL: no response, then no close"; fail=1; }
awk -v d="${3:-0}" 'BEGIN { exit !(d >= 3600 && d <= 3600.002) }' || { echo "FAIL: closed after ${3:-?} virtual s"; fail=1; }
[ "${4:-999999}" -lt 20000 ] || { echo "FAIL: the idle hour took ${4:-?} ms of real time"; fail=1; }
echo "nginx closed the kept-alive client after ${3:-?} virtual s, ${4:-?} ms real"
exit $fail
