#!/usr/bin/env bash
# scripts/demo.sh - sets everything up, builds (Release) and runs the main
# demonstration of uepoll:
#   1. uepoll-bench --quick: the side-by-side benchmark (uepoll and Linux epoll
#      in the same run), when bench/ provides it;
#   2. examples/echo_pipeline: an event-driven echo server on uepoll socket
#      pairs, a timerfd, a nested instance, pipes to a worker and an eventfd.
# Checks: each program exits 0; the script exits with the first failure.
#
# Usage: scripts/demo.sh [arguments for uepoll-bench, default: --quick]
# Environment: UEPOLL_JOBS (default 2), UEPOLL_DEMO_BUILD (default build-release)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
JOBS="${UEPOLL_JOBS:-2}"
BUILD="${UEPOLL_DEMO_BUILD:-build-release}"
[[ "$BUILD" = /* ]] || BUILD="$ROOT/$BUILD"
bench_args=("$@")
((${#bench_args[@]})) || bench_args=(--quick)

run() { printf '+ %s\n' "$*"; "$@"; }

bash "$ROOT/scripts/setup.sh"

have_bench=0
if [[ -f bench/CMakeLists.txt ]] && grep -q 'uepoll-bench' bench/CMakeLists.txt; then
  have_bench=1
fi

run cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DUEPOLL_SANITIZE= \
    -DUEPOLL_BUILD_TESTS=OFF -DUEPOLL_BUILD_FUZZ=OFF -DUEPOLL_BUILD_EXAMPLES=ON \
    -DUEPOLL_BUILD_BENCH="$( ((have_bench)) && echo ON || echo OFF)"
targets=(echo_pipeline)
((have_bench)) && targets+=(uepoll-bench)
run cmake --build "$BUILD" -j "$JOBS" --target "${targets[@]}"

if ((have_bench)); then
  bench_bin="$(find "$BUILD" -type f -name uepoll-bench -perm -u+x | head -n1)"
  [[ -n "$bench_bin" ]] || { echo "demo: uepoll-bench was built but not found under $BUILD" >&2; exit 1; }
  printf '\n===== uepoll-bench %s =====\n' "${bench_args[*]}"
  run "$bench_bin" "${bench_args[@]}"
else
  echo "demo: bench/ has no uepoll-bench yet: running the example only"
fi

printf '\n===== examples/echo_pipeline =====\n'
run "$BUILD/examples/echo_pipeline"
