#!/usr/bin/env bash
# scripts/setup.sh - installs the Debian 12 packages uepoll needs to build and
# test (compilers, CMake, GoogleTest, Google Benchmark, clang's libFuzzer and
# sanitizer runtimes, valgrind, pkg-config, python3, the aarch64 cross
# compiler and qemu-user for the aarch64 stage, libuv and Boost for two
# examples, lwIP for the lwIP socket provider, and nginx-light, redis-server,
# redis-tools, memcached, libmemcached-tools, lighttpd, nodejs, haproxy, wrk, curl and
# procps for the real programs run under uepoll-run by
# tests/realprograms/run.sh, CPython's, GLib's and D-Bus's test suites for
# tests/realprograms/python_stdlib.sh and installed_tests.sh, strace for
# tools/realprograms_throughput.sh).
#
# This list is the one list of what uepoll's scripts and tests need.
#
# Checks: each package's install state with dpkg-query; installs only what is
# missing (one `apt-get update`, one `apt-get install`), and only as root.
# When another apt or dpkg holds the package manager's lock, it says so and
# waits for it (UEPOLL_SETUP_LOCK_WAIT seconds in all, default 600), then
# installs, or fails saying the lock was still held.
# Exit status: 0 when every package is installed; 1 when one is still
# missing afterwards (apt failed, the lock stayed held, no candidate, or not
# root: then it prints the apt-get command to run as root), with the names.
# scripts/demo.sh and scripts/test.sh stop on that status (UEPOLL_SKIP_SETUP=1
# skips this script there, to try a build with what is installed).
# Idempotent and quick (no apt call) when all is present.
#
# Usage: scripts/setup.sh
set -euo pipefail

packages=(
  build-essential     # gcc/g++ 12, make, libc headers
  cmake               # >= 3.25
  pkg-config          # tests/install/check.sh consumes uepoll.pc
  libgtest-dev        # GoogleTest 1.12 (find_package(GTest))
  libgmock-dev
  googletest
  libbenchmark-dev    # Google Benchmark 1.7 (bench/)
  clang               # clang 14: fuzz target (libFuzzer)
  libclang-rt-14-dev  # libFuzzer and clang's sanitizer runtimes
  valgrind
  python3
  g++-aarch64-linux-gnu  # test.sh aarch64: cross compiler and aarch64 libc
  qemu-user           # test.sh aarch64: runs the aarch64 tests (qemu-aarch64)
  libuv1-dev          # examples/libuv_embed.c
  libboost-dev        # examples/asio_embed.cpp (Boost.Asio, header-only)
  liblwip-dev         # providers/lwip: the lwIP socket provider (lwIP 2.1.3)
  liburing-dev        # tests/preload/uring_program.c: an eventfd registered with io_uring
  libaio-dev          # tests/preload/aio_program.c: Linux AIO with IOCB_FLAG_RESFD
  # tests/realprograms/run.sh: unmodified servers and load tools under uepoll-run
  nginx-light         # web server (master + worker processes, epoll)
  redis-server        # key-value store (epoll, fork for BGSAVE)
  redis-tools         # redis-benchmark, redis-cli
  wrk                 # HTTP load generator
  curl                # tests/realprograms: fetches nginx's page to compare
  procps              # tests/realprograms: pgrep finds nginx's worker to stop it
  memcached           # threaded server: tests/realprograms, and on the lwIP provider (tests/provider)
  libmemcached-tools  # memcaslap (memaslap) and memcslap, memcached's load generators
  iproute2            # tests/provider/tap_netns.sh: ip tuntap / addr / link
  lighttpd            # forking server (mod_cgi forks a CGI per request)
  nodejs              # event-loop runtime (libuv): an HTTP server
  haproxy             # threaded proxy: master-worker fork, splice through pipes, reload
  strace              # tools/realprograms_throughput.sh STRACE=1: system calls per request
  libpython3.11-testsuite  # tests/realprograms/python_stdlib.sh: CPython's own tests, plainly and under uepoll-run
  libglib2.0-tests  # tests/realprograms/installed_tests.sh glib: GLib's own tests, plainly and under uepoll-run
  dbus-tests  # tests/realprograms/installed_tests.sh dbus: D-Bus's own tests, plainly and under uepoll-run
)
log() { printf 'setup: %s\n' "$*"; }
LOCK_WAIT="${UEPOLL_SETUP_LOCK_WAIT:-600}"
lock_deadline=$((SECONDS + LOCK_WAIT))

# apt_locked ARGS...: runs apt-get ARGS, waiting while another process holds
# the dpkg/apt lock: apt's own DPkg::Lock::Timeout covers the dpkg locks of
# `apt-get install`; `apt-get update` does not wait for the package lists'
# lock, so it is retried every 5 s until the deadline.  apt's output is shown
# but for its lock errors, which are summed up once; the status is apt-get's.
lock_re='could not get lock|unable to acquire|unable to lock'
apt_locked() {
  local out rc left said=0
  out="$(mktemp)"
  while :; do
    left=$((lock_deadline - SECONDS)); ((left < 0)) && left=0
    set +e
    apt-get -o DPkg::Lock::Timeout="$left" "$@" </dev/null 2>&1 | tee "$out" \
      | { grep -viE "$lock_re" || true; }
    rc=${PIPESTATUS[0]}
    set -e
    ((rc)) && grep -qiE "$lock_re" "$out" || break
    if ((!said)); then
      log "another apt/dpkg process holds the package manager's lock:"
      grep -iE 'held by' "$out" | head -n 1 | sed 's/^/setup:   /'
      log "waiting for it (up to $LOCK_WAIT s in all; UEPOLL_SETUP_LOCK_WAIT sets that)"
      said=1
    fi
    if ((SECONDS >= lock_deadline)); then
      log "the package manager's lock was still held after $LOCK_WAIT s: giving up"
      break
    fi
    sleep 5
  done
  ((said && !rc)) && log "got the package manager's lock"
  rm -f "$out"
  return "$rc"
}

installed() {
  # "install ok installed" is the only state in which the files are there.
  [[ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null || true)" == "install ok installed" ]]
}

if ! command -v dpkg-query >/dev/null 2>&1; then
  log "dpkg-query not found: not a Debian system; install by hand: ${packages[*]}"
  log "(continuing: the build finds out what is missing)"
  exit 0
fi

missing=()
for p in "${packages[@]}"; do
  installed "$p" || missing+=("$p")
done

if ((${#missing[@]} == 0)); then
  log "all ${#packages[@]} packages present"
  exit 0
fi

log "missing: ${missing[*]}"
if ((EUID != 0)); then
  log "not root: cannot install them; as root run: apt-get install -y ${missing[*]}"
  log "(or set UEPOLL_SKIP_SETUP=1 to try the demo or the tests without them)"
  exit 1
fi

export DEBIAN_FRONTEND=noninteractive
apt_locked update -qq || log "apt-get update failed: trying the cached package lists"
# Keep only the packages this apt knows (apt-cache policy shows a candidate),
# so that one unknown name does not stop the rest from installing.
available=()
for p in "${missing[@]}"; do
  # (no grep -q: it would close the pipe early and pipefail would see SIGPIPE)
  if apt-cache policy "$p" 2>/dev/null | grep 'Candidate: [^(]' >/dev/null; then
    available+=("$p")
  else
    log "no candidate for $p in the configured apt sources: skipped"
  fi
done
if ((${#available[@]})); then
  # Servers (nginx, redis) must not be started as system services by their
  # install scripts: the tests start their own instances.
  policy=/usr/sbin/policy-rc.d
  made_policy=0
  if [[ ! -e $policy ]]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy" && made_policy=1
  fi
  apt_locked install -y -qq --no-install-recommends "${available[@]}" \
    || log "apt-get install failed"
  if ((made_policy)); then rm -f "$policy"; fi
fi

still=()
for p in "${missing[@]}"; do
  installed "$p" || still+=("$p")
done
if ((${#still[@]})); then
  log "FAILED: still missing: ${still[*]}"
  log "(the messages above say why; UEPOLL_SKIP_SETUP=1 tries the demo or the tests without them)"
  exit 1
fi
log "installed: ${missing[*]}"
exit 0
