#!/usr/bin/env bash
# scripts/demo.sh - sets everything up, builds (Release) and runs the main
# demonstration of uepoll, in about 1.5 minutes on a 2-CPU machine (the
# build about a minute, the benchmark under a minute):
#   1. examples/echo_pipeline: an event-driven echo server on uepoll socket
#      pairs, a timerfd, a nested instance, pipes to a worker and an eventfd;
#   2. uepoll-bench --quick: the side-by-side benchmark (uepoll and Linux epoll
#      in the same run).  The full table, JSON, CSV and SVG chart go to
#      <build>/results/ (with summary.txt and progress.log); the terminal
#      shows a line per case and then a short
#      summary in plain words (what uepoll did faster than Linux epoll on
#      this machine, what it did not and why, what the machine's system-call
#      cost means for the ratios, where the files are): the last thing shown.
# Checks: setup.sh succeeds (else the demo stops with its message), each
# program exits 0; the script exits with the first failure.
#
# The demo has its own build directory (build-demo/): it never reuses the
# README's by-hand build/ or build-release/ nor a scripts/test.sh stage's, and
# configures it afresh (cmake --fresh) with every option it depends on.
#
# Usage: scripts/demo.sh [arguments for uepoll-bench, default: --quick]
# Environment: UEPOLL_JOBS (default 2), UEPOLL_DEMO_BUILD (default
#   build-demo, or <UEPOLL_BUILD_PREFIX>-demo when that is set),
#   UEPOLL_SKIP_SETUP=1 (do not run scripts/setup.sh),
#   UEPOLL_CONFIGURE_ONLY=1 (stop after configuring: tests/packaging).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
JOBS="${UEPOLL_JOBS:-2}"
if [[ -n "${UEPOLL_DEMO_BUILD:-}" ]]; then
  BUILD="$UEPOLL_DEMO_BUILD"
elif [[ -n "${UEPOLL_BUILD_PREFIX:-}" ]]; then
  BUILD="$UEPOLL_BUILD_PREFIX-demo"
else
  BUILD=build-demo
fi
[[ "$BUILD" = /* ]] || BUILD="$ROOT/$BUILD"
bench_args=("$@")
((${#bench_args[@]})) || bench_args=(--quick)

run() { printf '+ %s\n' "$*"; "$@"; }
# A path as the person typed it: relative to the repository root when inside.
shown() { local p="$1"; [[ "$p" == "$ROOT/"* ]] && p="${p#"$ROOT/"}"; printf '%s' "$p"; }

echo "demo: about 1.5 minutes on a 2-CPU machine: build (about 1 min), then"
echo "demo: examples/echo_pipeline and uepoll-bench ${bench_args[*]} (under a minute)"

if [[ "${UEPOLL_SKIP_SETUP:-0}" != 1 ]]; then
  if ! bash "$ROOT/scripts/setup.sh"; then
    echo "demo: stopped: scripts/setup.sh could not install what the demo needs (its" >&2
    echo "demo: message is above); UEPOLL_SKIP_SETUP=1 skips that step" >&2
    exit 1
  fi
fi

have_bench=0
if [[ -f bench/CMakeLists.txt ]] && grep -q 'uepoll-bench' bench/CMakeLists.txt; then
  have_bench=1
fi

run cmake --fresh -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DUEPOLL_SANITIZE= \
    -DUEPOLL_WERROR=OFF -DUEPOLL_BUILD_TESTS=OFF -DUEPOLL_BUILD_FUZZ=OFF \
    -DUEPOLL_BUILD_EXAMPLES=ON -DUEPOLL_BUILD_BENCH="$( ((have_bench)) && echo ON || echo OFF)"
if [[ "${UEPOLL_CONFIGURE_ONLY:-0}" == 1 ]]; then
  echo "demo: configured $(shown "$BUILD") (UEPOLL_CONFIGURE_ONLY=1: stopping here)"
  exit 0
fi
targets=(echo_pipeline)
((have_bench)) && targets+=(uepoll-bench)
run cmake --build "$BUILD" -j "$JOBS" --target "${targets[@]}"

printf '\n===== examples/echo_pipeline =====\n'
run "$BUILD/examples/echo_pipeline"

if ((have_bench)); then
  bench_bin="$(find "$BUILD" -type f -name uepoll-bench -perm -u+x | head -n1)"
  [[ -n "$bench_bin" ]] || { echo "demo: uepoll-bench was built but not found under $BUILD" >&2; exit 1; }
  res="$BUILD/results"
  mkdir -p "$res"
  rel="$(shown "$res")"   # the summary names the files as the person sees them
  out=(--table "$rel/bench.txt" --json "$rel/bench.json" --csv "$rel/bench.csv" --svg "$rel/bench.svg")
  printf '\n===== uepoll-bench %s =====\n' "${bench_args[*]}"
  printf '+ %s \\\n' "$(shown "$bench_bin") ${bench_args[*]}"
  printf '    %s %s \\\n    %s %s \\\n    %s %s \\\n    %s %s\n' "${out[@]}"
  echo "(under a minute; the whole progress goes to $rel/progress.log)"
  # The progress (stderr) goes whole to progress.log; the terminal shows one
  # line per case and the bench's own messages, then the summary (stdout,
  # kept in summary.txt).
  set +e
  "$bench_bin" "${bench_args[@]}" "${out[@]}" 2>&1 >"$res/summary.txt" | tee "$res/progress.log" \
    | grep --line-buffered -v '^    ' >&2
  rc=${PIPESTATUS[0]}
  set -e
  cat "$res/summary.txt"
  ((rc == 0)) || { echo "demo: uepoll-bench exited $rc" >&2; exit "$rc"; }
else
  echo "demo: bench/ has no uepoll-bench yet: the example was the demo"
fi
