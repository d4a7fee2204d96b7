# tests/realprograms/nodejs.sh - an HTTP server on Debian's nodejs (libuv's
# event loop on epoll; file reads in libuv's thread pool, completed to the
# loop through its eventfd; timers; a POST body hashed); loaded by wrk.
# Variant "file": every request reads a 64 KB file through the thread pool.
# Sourced by run.sh and tools/realprograms_throughput.sh (common.sh first).

nodejs_have() { command -v node >/dev/null && command -v wrk >/dev/null && command -v curl >/dev/null; }
NODEJS_NEEDS="nodejs, wrk, curl"
NODEJS_FORKS=""

nodejs_start() {  # nodejs_start MODE DIR [file] -> PID, PORT
  PORT=$(free_port)
  mkdir -p "$2"
  pattern_file "$2/page" 65536 3
  LOAD_PATH=/
  [[ ${3-} == file ]] && LOAD_PATH=/file
  launch "$1" "$2" node "$here/http_server.js" "$PORT" "$2/page"
  wait_port "$PORT" "$PID" || { say "nodejs ($1) did not start:"; tail -5 "$2/stderr"; return 1; }
}
nodejs_check() {  # nodejs_check MODE DIR -> RESULT
  local u="http://127.0.0.1:$PORT"
  pattern_file "$2/body" 300000
  RESULT=$(curl -sS --max-time 10 "$u/" | md5sum && curl -sS --max-time 10 "$u/file" | md5sum && md5sum <"$2/page" &&
    for i in 1 2 3; do curl -sS --max-time 10 "$u/timer"; done &&
    curl -sS --max-time 10 --data-binary @"$2/body" "$u/post" && md5sum <"$2/body") ||
    { say "nodejs ($1): a request failed"; return 1; }
}
nodejs_load() { wrk_load "$1" "$2" "$3" "http://127.0.0.1:$PORT$LOAD_PATH"; }  # nodejs_load DIR SECONDS NGEN -> RPS
nodejs_stop() { stop "$PID" TERM || { say "nodejs did not stop on SIGTERM within 10 s"; return 1; }; }
nodejs_label() { echo "node HTTP server + wrk (GET 64 KB, 16 conns, ${1}s)"; }
