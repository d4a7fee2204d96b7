#!/usr/bin/env bash
# scripts/setup.sh - installs the Debian 12 packages uepoll needs to build and
# test (compilers, CMake, GoogleTest, Google Benchmark, clang's libFuzzer and
# sanitizer runtimes, valgrind, pkg-config, python3, the aarch64 cross
# compiler and qemu-user for the aarch64 stage, libuv and Boost for two
# examples, lwIP for the lwIP socket provider, and nginx-light, redis-server, redis-tools, wrk, curl and procps
# for the real programs run under uepoll-run by tests/realprograms/run.sh).
#
# Checks: each package's install state with dpkg-query; installs only what is
# missing (one `apt-get update`, one `apt-get install`), and only as root.
# Run as another user it lists what is missing and exits 0, so the build can
# still be attempted.  Idempotent and quick (no apt call) when all is present.
#
# Usage: scripts/setup.sh            (UEPOLL_SETUP_STRICT=1: exit 1 if a
#                                      package is still missing afterwards)
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
  # tests/realprograms/run.sh: unmodified servers and load tools under uepoll-run
  nginx-light         # web server (master + worker processes, epoll)
  redis-server        # key-value store (epoll, fork for BGSAVE)
  redis-tools         # redis-benchmark, redis-cli
  wrk                 # HTTP load generator
  curl                # tests/realprograms: fetches nginx's page to compare
  procps              # tests/realprograms: pgrep finds nginx's worker to stop it
)
log() { printf 'setup: %s\n' "$*"; }

installed() {
  # "install ok installed" is the only state in which the files are there.
  [[ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null || true)" == "install ok installed" ]]
}

if ! command -v dpkg-query >/dev/null 2>&1; then
  log "dpkg-query not found: not a Debian system; install by hand: ${packages[*]}"
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
  log "not root: not installing; run as root: apt-get install -y ${missing[*]}"
  [[ "${UEPOLL_SETUP_STRICT:-0}" == 1 ]] && exit 1
  exit 0
fi

export DEBIAN_FRONTEND=noninteractive
apt-get update -qq || log "apt-get update failed: trying the cached package lists"
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
  apt-get install -y -qq --no-install-recommends "${available[@]}" </dev/null \
    || log "apt-get install failed"
  if ((made_policy)); then rm -f "$policy"; fi
fi

still=()
for p in "${missing[@]}"; do
  installed "$p" || still+=("$p")
done
if ((${#still[@]})); then
  log "still missing: ${still[*]}"
  [[ "${UEPOLL_SETUP_STRICT:-0}" == 1 ]] && exit 1
else
  log "installed: ${missing[*]}"
fi
exit 0
