#!/usr/bin/env bash
# scripts/test.sh - the one command that builds and runs every uepoll test.
#
# Stages (default: all, in this order; name some to run only those):
#   normal   build/        RelWithDebInfo, every test (ctest)
#   asan     build-asan/   Debug, ASan+UBSan, leak checking on, every test
#                          (bench.smoke included: it drives many threads)
#   tsan     build-tsan/   RelWithDebInfo, TSan, every test (bench.smoke too)
#   fuzz     build-fuzz/   clang, libFuzzer+ASan, only `ctest -L fuzz`
#                          (skipped when clang or fuzz/ is absent)
#   install  build-install/  tests/install/check.sh: install into a temporary
#                          prefix, then build and run consumers through
#                          pkg-config and find_package(uepoll)
# It first runs scripts/setup.sh (installs missing Debian packages as root).
# Each stage runs even when an earlier one failed; the script prints one
# summary line per stage and exits 1 if any stage failed.
#
# Environment:
#   UEPOLL_JOBS=2            build parallelism (the CI machine has 2 cores)
#   UEPOLL_CTEST_JOBS=1      ctest parallelism (tests time things: keep 1)
#   UEPOLL_BUILD_PREFIX=build   build directories are <prefix>, <prefix>-asan,
#                            ... relative to the repository root (or absolute)
#   UEPOLL_TEST_TIMEOUT=900  per-test timeout (s) for tests that set none
#   UEPOLL_SKIP_SETUP=1      do not run scripts/setup.sh
# Usage: scripts/test.sh [normal] [asan] [tsan] [fuzz] [install]
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

JOBS="${UEPOLL_JOBS:-2}"
CTEST_JOBS="${UEPOLL_CTEST_JOBS:-1}"
PREFIX="${UEPOLL_BUILD_PREFIX:-build}"
[[ "$PREFIX" = /* ]] || PREFIX="$ROOT/$PREFIX"
TEST_TIMEOUT="${UEPOLL_TEST_TIMEOUT:-900}"

all_stages=(normal asan tsan fuzz install)
stages=()
for a in "$@"; do
  case "$a" in
    normal|asan|tsan|fuzz|install) stages+=("$a") ;;
    all) stages+=("${all_stages[@]}") ;;
    -h|--help) sed -n '2,27p' "$0"; exit 0 ;;
    *) echo "test.sh: unknown stage '$a' (stages: ${all_stages[*]})" >&2; exit 2 ;;
  esac
done
((${#stages[@]})) || stages=("${all_stages[@]}")

banner() { printf '\n===== %s =====\n' "$*"; }
run() { printf '+ %s\n' "$*"; "$@"; }

ctest_run() {   # ctest_run BUILD_DIR [extra ctest args...]
  local dir="$1"; shift
  run ${CTEST_PREFIX:-} ctest --test-dir "$dir" --output-on-failure \
      --no-tests=error --timeout "$TEST_TIMEOUT" -j "$CTEST_JOBS" "$@"
}

configure() {   # configure BUILD_DIR [cmake args...]
  local dir="$1"; shift
  run cmake -S "$ROOT" -B "$dir" "$@"
}

build() {       # build BUILD_DIR [cmake --build args...]
  local dir="$1"; shift
  run cmake --build "$dir" -j "$JOBS" "$@"
}

# ---- stages: each returns 0 (pass), 1 (fail) or 3 (skipped) --------------
stage_normal() {
  local d="$PREFIX"
  configure "$d" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DUEPOLL_SANITIZE= || return 1
  build "$d" || return 1
  ctest_run "$d"
}

stage_asan() {
  local d="$PREFIX-asan"
  configure "$d" -DCMAKE_BUILD_TYPE=Debug -DUEPOLL_SANITIZE=address \
      -DUEPOLL_BUILD_BENCH=ON || return 1
  build "$d" || return 1
  ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:${ASAN_OPTIONS:-}" \
  UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}" \
    ctest_run "$d"
}

# TSan maps its shadow at fixed addresses; with a kernel that randomizes mmap
# over more bits than this TSan runtime expects (vm.mmap_rnd_bits > 28 on
# older runtimes) a TSan binary dies with "unexpected memory mapping".
# A probe binary tells; `setarch -R` (no ASLR) is the workaround, and is
# inherited by everything ctest starts.
tsan_prefix() {
  local tmp out
  tmp="$(mktemp -d)"
  printf '%s\n' '#include <thread>' \
    'int main() { int x = 0; std::thread t([&] { x = 1; }); t.join(); return x - 1; }' \
    >"$tmp/probe.cpp"
  if ! "${CXX:-c++}" -std=c++20 -fsanitize=thread -g "$tmp/probe.cpp" -o "$tmp/probe" -pthread; then
    rm -rf "$tmp"; echo "tsan: cannot build a TSan probe" >&2; return 1
  fi
  if out="$("$tmp/probe" 2>&1)"; then
    TSAN_WRAP=""
  elif setarch "$(uname -m)" -R "$tmp/probe" >/dev/null 2>&1; then
    echo "tsan: probe failed without setarch -R (${out%%$'\n'*}); running ctest under setarch -R"
    TSAN_WRAP="setarch $(uname -m) -R"
  else
    echo "tsan: a TSan binary does not run here, even under setarch -R: $out" >&2
    rm -rf "$tmp"; return 1
  fi
  rm -rf "$tmp"
}

stage_tsan() {
  local d="$PREFIX-tsan"
  TSAN_WRAP=""
  tsan_prefix || return 1
  configure "$d" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DUEPOLL_SANITIZE=thread \
      -DUEPOLL_BUILD_BENCH=ON || return 1
  build "$d" || return 1
  TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 ${TSAN_OPTIONS:-}" \
  CTEST_PREFIX="$TSAN_WRAP" ctest_run "$d"
}

stage_fuzz() {
  local d="$PREFIX-fuzz"
  if ! command -v clang >/dev/null || ! command -v clang++ >/dev/null; then
    echo "fuzz: clang not installed: skipped"; return 3
  fi
  if [[ ! -f "$ROOT/fuzz/CMakeLists.txt" ]]; then
    echo "fuzz: no fuzz/CMakeLists.txt: skipped"; return 3
  fi
  configure "$d" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
      -DUEPOLL_BUILD_FUZZ=ON -DUEPOLL_SANITIZE=address -DUEPOLL_BUILD_BENCH=OFF \
      || return 1
  # Build only the executables the fuzz-labelled tests run (the unit tests in
  # this tree would double the stage's time); fall back to a full build when
  # the test commands do not name build targets.
  local targets
  targets="$(ctest --test-dir "$d" -L fuzz --show-only=json-v1 2>/dev/null | python3 -c '
# Before the build, ctest knows the fuzz tests by name but not their
# executables; the generated CTestTestfile.cmake files name them.
import json, os, re, sys
d = os.path.realpath(sys.argv[1])
want = {t["name"] for t in json.load(sys.stdin).get("tests", [])}
names = set()
for dirpath, _, files in os.walk(d):
    if "CTestTestfile.cmake" in files:
        text = open(os.path.join(dirpath, "CTestTestfile.cmake")).read()
        for name, exe in re.findall(r"add_test\(\[=\[(.*?)\]=\] \"([^\"]*)\"", text):
            if name in want and os.path.realpath(exe).startswith(d + "/"):
                names.add(os.path.basename(exe))
print(" ".join(sorted(names)))' "$d")" || targets=""
  if [[ -n "$targets" ]]; then
    # shellcheck disable=SC2086
    build "$d" --target $targets || build "$d" || return 1
  else
    build "$d" || return 1
  fi
  ASAN_OPTIONS="detect_leaks=1:${ASAN_OPTIONS:-}" \
  UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}" \
    ctest_run "$d" -L fuzz
}

stage_install() {
  BUILD_DIR="$PREFIX-install" JOBS="$JOBS" run bash "$ROOT/tests/install/check.sh"
}

# ---- main ----------------------------------------------------------------
if [[ "${UEPOLL_SKIP_SETUP:-0}" != 1 ]]; then
  banner setup
  bash "$ROOT/scripts/setup.sh" || { echo "test.sh: setup failed" >&2; exit 1; }
fi

declare -A result secs
t_all=$SECONDS
for s in "${stages[@]}"; do
  banner "$s"
  t0=$SECONDS
  "stage_$s"
  rc=$?
  secs[$s]=$((SECONDS - t0))
  case $rc in
    0) result[$s]=PASS ;;
    3) result[$s]=SKIP ;;
    *) result[$s]=FAIL ;;
  esac
  echo "----- $s: ${result[$s]} (${secs[$s]} s)"
done

banner summary
failed=0
for s in "${stages[@]}"; do
  printf 'test.sh: %-8s %-4s %5d s\n' "$s" "${result[$s]}" "${secs[$s]}"
  [[ "${result[$s]}" == FAIL ]] && failed=1
done
printf 'test.sh: total %d s: %s\n' "$((SECONDS - t_all))" "$( ((failed)) && echo FAILED || echo OK)"
exit "$failed"
