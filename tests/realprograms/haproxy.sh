# tests/realprograms/haproxy.sh - HAProxy in master-worker mode, two
# threads: the master forks its worker with a socket pair open (the
# preload makes it a kernel one there), forwards bodies with splice()
# through pipes sized with F_SETPIPE_SZ (tune.pipesize; uepoll pipes
# between kernel TCP sockets), and reloads on SIGUSR2 (the master execs
# itself again and forks a new worker); loaded by wrk.  The origin is the
# same process (a frontend that answers itself) and, for a 2 MB file,
# Python's http.server.
# Sourced by run.sh and tools/realprograms_throughput.sh (common.sh first).

haproxy_have() { command -v haproxy >/dev/null && command -v wrk >/dev/null && command -v curl >/dev/null; }
HAPROXY_NEEDS="haproxy, wrk, curl"
HAPROXY_FORKS=fork

haproxy_start() {  # haproxy_start MODE DIR -> PID, PORT
  local dir=$2 origin files
  PORT=$(free_port) origin=$(free_port) files=$(free_port)
  while [[ $origin == "$PORT" ]]; do origin=$(free_port); done
  while [[ $files == "$PORT" || $files == "$origin" ]]; do files=$(free_port); done
  mkdir -p "$dir/files"
  pattern_file "$dir/files/big.bin" 2000000 11
  python3 -m http.server "$files" --bind 127.0.0.1 --directory "$dir/files" >"$dir/files.log" 2>&1 &
  HAPROXY_FILES_PID=$!
  cat >"$dir/haproxy.cfg" <<CONF
global
    nbthread 2
    maxconn 2000
    tune.pipesize 262144
defaults
    mode http
    timeout connect 5s
    timeout client 20s
    timeout server 20s
    option splice-auto
    option splice-request
    option splice-response
frontend fe
    bind 127.0.0.1:$PORT
    use_backend files if { path_beg /files/ }
    default_backend origin
frontend origin
    bind 127.0.0.1:$origin
    http-request return status 200 content-type text/plain string "origin answered %[path]"
backend origin
    server o 127.0.0.1:$origin
backend files
    http-request set-path %[path,regsub(^/files/,/)]
    server f 127.0.0.1:$files
CONF
  launch "$1" "$dir" haproxy -W -db -f "$dir/haproxy.cfg"
  wait_port "$PORT" "$PID" && wait_port "$files" "$HAPROXY_FILES_PID" ||
    { say "haproxy ($1) did not start:"; tail -5 "$dir/stderr" "$dir/files.log" 2>/dev/null; return 1; }
}
haproxy_check() {  # haproxy_check MODE DIR -> RESULT
  local u="http://127.0.0.1:$PORT" i
  haproxy_get() { curl -sS --max-time 20 "$u/a$1" && echo && curl -sS --max-time 20 "$u/files/big.bin" | md5sum; }
  RESULT=$(md5sum <"$2/files/big.bin" && haproxy_get 1 && haproxy_get 2) || { say "haproxy ($1): a request failed"; return 1; }
  # A reload: the master execs itself again and forks a new worker, which
  # says "Loading success" as the first did.
  kill -USR2 "$PID"
  for ((i = 0; i < 100; i++)); do
    (($(grep -c 'Loading success' "$2/stderr") >= 2)) && break
    sleep 0.1
  done
  RESULT+=$'\n'"reloads: $(($(grep -c 'Loading success' "$2/stderr") - 1))"$'\n'
  RESULT+=$(haproxy_get 3) || { say "haproxy ($1): a request after the reload failed"; return 1; }
}
haproxy_load() {  # haproxy_load DIR SECONDS NGEN -> RPS, REQS (through the proxy to its own origin frontend)
  wrk_load "$1" "$2" "$3" "http://127.0.0.1:$PORT/load"
}
haproxy_stop() {
  kill "$HAPROXY_FILES_PID" 2>/dev/null
  wait "$HAPROXY_FILES_PID" 2>/dev/null
  stop "$PID" TERM || { say "haproxy did not stop on SIGTERM within 10 s"; return 1; }
}
haproxy_label() { echo "HAProxy -W, 2 threads, splice + wrk (16 conns, ${1}s)"; }
