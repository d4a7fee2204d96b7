# tests/realprograms/lighttpd.sh - lighttpd with mod_cgi, a forking server:
# every request to echo.cgi forks a CGI (/bin/sh) whose stdin and stdout
# are pipes made just before the fork (the preload makes them kernel ones
# there), a POST body through the CGI's stdin, 256 KB of output through its
# stdout; loaded by wrk.
# Sourced by run.sh and tools/realprograms_throughput.sh (common.sh first).

lighttpd_have() { command -v lighttpd >/dev/null && command -v wrk >/dev/null && command -v curl >/dev/null; }
LIGHTTPD_NEEDS="lighttpd, wrk, curl"
LIGHTTPD_FORKS=fork

lighttpd_start() {  # lighttpd_start MODE DIR -> PID, PORT
  local dir=$2
  PORT=$(free_port)
  mkdir -p "$dir/html"
  cat >"$dir/html/echo.cgi" <<'CGI'
#!/bin/sh
printf 'Content-Type: text/plain\r\n\r\n'
echo "query=$QUERY_STRING method=$REQUEST_METHOD length=${CONTENT_LENGTH:-none}"
case $QUERY_STRING in
  post) head -c "$CONTENT_LENGTH" | md5sum ;;
  big) head -c 262144 /dev/zero | tr '\0' 'x' | md5sum; head -c 262144 /dev/zero ;;
esac
CGI
  chmod 755 "$dir/html/echo.cgi"
  cat >"$dir/lighttpd.conf" <<CONF
server.bind = "127.0.0.1"
server.port = $PORT
server.document-root = "$dir/html"
server.errorlog = "$dir/error.log"
server.modules = ("mod_setenv", "mod_cgi")
server.event-handler = "linux-sysepoll"
cgi.assign = (".cgi" => "")
CONF
  # A CGI's environment keeps the server's LD_PRELOAD (so the preload, and
  # the ASan runtime the asan stage's uepoll-run preloads before it) but no
  # other variable of the server's: ASan's options for that order go in by
  # hand (no ASan runtime, no effect).
  [[ $1 == uepoll ]] && echo "setenv.add-environment = (\"ASAN_OPTIONS\" => \"${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0:detect_leaks=0\")" >>"$dir/lighttpd.conf"
  launch "$1" "$dir" lighttpd -D -f "$dir/lighttpd.conf"
  wait_port "$PORT" "$PID" || { say "lighttpd ($1) did not start:"; tail -5 "$dir/stderr" "$dir/error.log" 2>/dev/null; return 1; }
}
lighttpd_check() {  # lighttpd_check MODE DIR -> RESULT
  local u="http://127.0.0.1:$PORT/echo.cgi" i
  pattern_file "$2/body" 200000
  RESULT=$(curl -sS --max-time 20 "$u?get" && curl -sS --max-time 20 --data-binary @"$2/body" "$u?post" &&
    md5sum <"$2/body" && curl -sS --max-time 20 "$u?big" | md5sum &&
    for i in 1 2 3 4 5; do curl -sS --max-time 20 "$u?n$i"; done) || { say "lighttpd ($1): a request failed"; return 1; }
}
lighttpd_load() {  # lighttpd_load DIR SECONDS NGEN -> RPS, REQS (a fork and exec per request, 4 at once per generator)
  wrk_load "$1" "$2" "$3" "http://127.0.0.1:$PORT/echo.cgi?load" 4
}
lighttpd_stop() { stop "$PID" TERM || { say "lighttpd did not stop on SIGTERM within 10 s"; return 1; }; }
lighttpd_label() { echo "lighttpd + mod_cgi + wrk (a CGI forked per request, 4 conns, ${1}s)"; }
