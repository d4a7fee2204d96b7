#!/usr/bin/env bash
# tests/packaging/command_order.sh - the README's commands in any order in
# one clone: scripts/demo.sh, scripts/test.sh and the by-hand recipe each
# configure a build directory of their own and do not inherit another's
# options.  In a scratch copy of the source tree (build directories left
# out) it runs, configure steps only (UEPOLL_CONFIGURE_ONLY=1, no setup):
#   demo, test.sh normal+release, the by-hand recipe; then test.sh,
#   demo, the by-hand recipe again;
# and after each step checks every cache so far: the by-hand build/ has
# UEPOLL_WERROR off and the tests on (the README's promise), the test.sh
# stages have the tests and UEPOLL_WERROR on, the demo's directory is none
# of these.  The by-hand configure lines are read from the README's "By
# hand" block, so a change there is tested as written.
# Exit status: 0 when every check passed, 1 otherwise (the failing check is
# printed).  Takes a few seconds: nothing is compiled.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
TMP="$(mktemp -d "${TMPDIR:-/tmp}/uepoll-order.XXXXXX")"
trap 'rm -rf "$TMP"' EXIT
SRC="$TMP/src"
mkdir -p "$SRC"
tar -C "$ROOT" --exclude='./build*' --exclude=./.git --exclude=./out -cf - . | tar -C "$SRC" -xf -

fail() { printf 'command-order: FAIL: %s\n' "$*" >&2; exit 1; }
step() { printf '\ncommand-order: %s\n' "$*"; }

# cache_value DIR VAR: the value of VAR in DIR/CMakeCache.txt ("" if unset).
cache_value() {
  sed -n "s/^$2:[A-Z]*=//p" "$1/CMakeCache.txt" 2>/dev/null | head -n1
}
expect() {   # expect DIR VAR VALUE...: VAR is one of the VALUEs
  local dir="$1" var="$2" v; shift 2
  [[ -f "$dir/CMakeCache.txt" ]] || fail "${dir#"$SRC/"}: not configured"
  v="$(cache_value "$dir" "$var")"
  for want in "$@"; do [[ "$v" == "$want" ]] && return 0; done
  fail "${dir#"$SRC/"}: $var is '$v', expected one of: $*"
}

# The README's by-hand configure lines (cmake -S ...) in its "By hand" block.
readme_configure="$(awk '
  /^By hand/ { inpara = 1 }
  inpara && /^```sh/ { inblock = 1; next }
  inblock && /^```/ { exit }
  inblock && /^cmake -S / { print }' "$SRC/README.md")"
[[ -n "$readme_configure" ]] || fail "README.md: no 'cmake -S' line in the block after 'By hand'"
by_hand_dir="$(sed -n 's/.* -B \([^ ]*\).*/\1/p' <<<"$readme_configure" | head -n1)"
[[ -n "$by_hand_dir" ]] || fail "README.md: the by-hand configure line names no -B directory"

export UEPOLL_SKIP_SETUP=1 UEPOLL_CONFIGURE_ONLY=1
unset UEPOLL_BUILD_PREFIX UEPOLL_DEMO_BUILD

demo() { step "scripts/demo.sh"; (cd "$SRC" && bash scripts/demo.sh) >"$TMP/log" 2>&1 || { cat "$TMP/log"; fail "demo.sh"; }; }
tests() {
  step "scripts/test.sh normal release"
  (cd "$SRC" && bash scripts/test.sh normal release) >"$TMP/log" 2>&1 || { cat "$TMP/log"; fail "test.sh"; }
}
by_hand() {
  step "by hand: $readme_configure"
  (cd "$SRC" && eval "$readme_configure") >"$TMP/log" 2>&1 || { cat "$TMP/log"; fail "by-hand configure"; }
}
check() {   # every directory configured so far keeps its own options
  local d
  if [[ -f "$SRC/$by_hand_dir/CMakeCache.txt" ]]; then
    expect "$SRC/$by_hand_dir" UEPOLL_WERROR "" OFF
    expect "$SRC/$by_hand_dir" UEPOLL_BUILD_TESTS "" ON
  fi
  for d in "$SRC"/build-test-normal "$SRC"/build-test-release; do
    [[ -f "$d/CMakeCache.txt" ]] || continue
    expect "$d" UEPOLL_WERROR ON
    expect "$d" UEPOLL_BUILD_TESTS "" ON
  done
  [[ -f "$SRC/build-test-release/CMakeCache.txt" ]] && expect "$SRC/build-test-release" CMAKE_BUILD_TYPE Release
  if [[ -f "$SRC/build-demo/CMakeCache.txt" ]]; then
    expect "$SRC/build-demo" UEPOLL_BUILD_TESTS OFF
    expect "$SRC/build-demo" CMAKE_BUILD_TYPE Release
  fi
  for d in build-demo build-test-normal build-test-release; do
    [[ "$d" != "$by_hand_dir" ]] || fail "$d is both the README's by-hand directory and a script's"
  done
  echo "command-order: caches as documented"
}

demo; check
tests; check
by_hand; check
tests; check
demo; check
by_hand; check
[[ -f "$SRC/build-demo/CMakeCache.txt" && -f "$SRC/build-test-release/CMakeCache.txt" \
   && -f "$SRC/build-test-normal/CMakeCache.txt" && -f "$SRC/$by_hand_dir/CMakeCache.txt" ]] \
  || fail "a step did not configure its directory"
echo "command-order: ok"
