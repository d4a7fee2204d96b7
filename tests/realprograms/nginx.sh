# tests/realprograms/nginx.sh - nginx (nginx-light), master + 1 worker, a
# static page; loaded by wrk.  Variant "aio": the page is a 256 KB file
# served with `aio threads` (every read done by a thread of nginx's pool
# and completed to the worker through its eventfd) and `sendfile off`.
# Sourced by run.sh and tools/realprograms_throughput.sh (common.sh first).

nginx_have() { command -v nginx >/dev/null && command -v wrk >/dev/null && command -v curl >/dev/null; }
NGINX_NEEDS="nginx-light, wrk, curl"
NGINX_FORKS=fork  # the master's channel to its worker is a socket pair made before fork

nginx_start() {  # nginx_start MODE DIR [aio] -> PID, PORT
  local mode=$1 dir=$2 variant=${3-} extra=""
  PORT=$(free_port)
  mkdir -p -m 755 "$dir" "$dir/html" "$dir/logs" "$dir/tmp"
  chmod 755 "$dir"  # the worker runs as nobody when started as root, and reads files here
  if [[ $variant == aio ]]; then
    head -c $((192 * 1024)) /dev/urandom | base64 -w 0 >"$dir/html/index.html"
    extra="aio threads; sendfile off; output_buffers 2 64k;"
  else
    head -c 4096 /dev/urandom | base64 >"$dir/html/index.html"
  fi
  chmod 644 "$dir/html/index.html"
  cat >"$dir/nginx.conf" <<CONF
daemon off;
master_process on;
worker_processes 1;
pid $dir/nginx.pid;
error_log $dir/logs/error.log warn;
events { worker_connections 1024; use epoll; }
http {
  access_log off; $extra
  client_body_temp_path $dir/tmp; proxy_temp_path $dir/tmp; fastcgi_temp_path $dir/tmp;
  uwsgi_temp_path $dir/tmp; scgi_temp_path $dir/tmp;
  server { listen 127.0.0.1:$PORT; root $dir/html; }
}
CONF
  launch "$1" "$dir" nginx -p "$dir" -c "$dir/nginx.conf"
  wait_port "$PORT" "$PID" || { say "nginx ($mode) did not start:"; cat "$dir/stderr" "$dir/logs/error.log" 2>/dev/null | tail -5; return 1; }
}
nginx_check() {  # nginx_check MODE DIR -> RESULT (what must be equal), 1 on a failure
  curl -s --max-time 10 "http://127.0.0.1:$PORT/index.html" >"$2/got" || return 1
  cmp -s "$2/got" "$2/html/index.html" || { say "nginx ($1): wrong content"; return 1; }
  RESULT="content equal"
}
nginx_load() {  # nginx_load DIR SECONDS NGEN -> RPS: NGEN wrk, one thread and 16 connections each
  wrk_load "$1" "$2" "$3" "http://127.0.0.1:$PORT/index.html"
}
nginx_stop() {  # the master tells its worker to quit over the channel made before fork
  stop "$PID" QUIT || { say "nginx did not stop on SIGQUIT within 10 s"; return 1; }
}
nginx_label() { echo "nginx + wrk (GET 5.5 KB, 16 conns, ${1}s)"; }
