#!/usr/bin/env bash
# tests/realprograms/python_stdlib.sh - CPython's own test suite, plainly
# and under uepoll-run: the modules that exercise epoll, poll, select,
# selectors, pipes, eventfds, socket pairs, descriptor passing, fcntl,
# signals and EINTR/SA_RESTART (PEP 475), and subprocesses (fork, exec,
# posix_spawn with pipes).
#
# Each module's tests run with -v in both modes; every "name ... outcome"
# line is compared (ok, skipped and why, FAIL, ERROR, expected failure).  A
# test whose outcome differs is run again alone in both modes, and counts as
# a difference only if it differs again (a timing-sensitive test on a
# loaded machine may fail once in either mode).  The uepoll run must print
# no "uepoll:" warning, and its UEPOLL_STATS must show uepoll objects made.
#
# Usage: tests/realprograms/python_stdlib.sh [UEPOLL_RUN]
# Environment: MODULES (default below, about a minute per mode on two
# cores; by hand also test_socket and test_asyncio, README.md), PYTHON (default: /usr/bin/python3
# when it has the test package, Debian's libpython3.11-testsuite, else
# python3 from PATH).  Exit 0 when every outcome matched, 1 when one
# differed, 77 (ctest: skipped) when no Python with its test package is
# found.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
RUN=${1:-$root/build/src/preload/uepoll-run}
MODULES=${MODULES:-test_epoll test_selectors test_poll test_select test_fcntl test_eintr test_os test_signal test_subprocess}
say() { printf 'python_stdlib: %s\n' "$*"; }
# shellcheck source=suite_lib.sh
source "$here/suite_lib.sh"

has_suite() { "$1" -c 'import test.test_epoll, test.regrtest' >/dev/null 2>&1; }
if [[ -z ${PYTHON-} ]]; then
  for p in /usr/bin/python3 python3; do
    if has_suite "$p"; then PYTHON=$p; break; fi
  done
fi
if [[ -z ${PYTHON-} ]] || ! has_suite "$PYTHON"; then
  say "SKIP: no python3 with its test package (Debian: libpython3.11-testsuite)"
  exit 77
fi
suite_check_run

suite_workdir pytest

# outcomes FILE: the sorted "test (module.Class.test) ... outcome" lines;
# an outcome that a test's own output pushed onto a later line is joined
# to its test; the process id in a test file's name (@test_PID_tmp) is
# left out.
outcomes() {
  awk '
    function status(t) { return t ~ /^(ok|skipped.*|FAIL|ERROR|expected failure|unexpected success)$/ }
    /^[A-Za-z_][A-Za-z0-9_]* \([A-Za-z0-9_.]+\) \.\.\. / {
      i = index($0, " ... ")
      head = substr($0, 1, i + 3); rest = substr($0, i + 5)
      if (status(rest)) { print head " " rest; pending = "" } else pending = head
      next
    }
    pending != "" && status($0) { print pending " " $0; pending = "" }
  ' "$1" | sed -E 's/@test_[0-9]+_tmp/@test_PID_tmp/g' | sort -u
}

# suite MODE OUT [ARGS...]: python -m test in MODE (plain or uepoll).
suite() {
  local mode=$1 out=$2
  shift 2
  local cmd=("$PYTHON" -m test -v --timeout 300 "$@")
  if [[ $mode == uepoll ]]; then
    timeout 900 "$RUN" --stats "$work/stats.%p" "${cmd[@]}" >"$out" 2>&1
  else
    timeout 900 "${cmd[@]}" >"$out" 2>&1
  fi
}

# shellcheck disable=SC2086
suite plain "$work/plain.txt" -j2 $MODULES
# shellcheck disable=SC2086
suite uepoll "$work/uepoll.txt" -j2 $MODULES
outcomes "$work/plain.txt" >"$work/plain.out"
outcomes "$work/uepoll.txt" >"$work/uepoll.out"
n=$(wc -l <"$work/plain.out")
if ((n < 100)); then
  say "FAIL: only $n outcomes from the plain run (see below)"
  tail -20 "$work/plain.txt"
  exit 1
fi

failed=0
# The tests whose outcome differs, each run again alone in both modes.
mapfile -t differing < <(diff "$work/plain.out" "$work/uepoll.out" | sed -n 's/^[<>] \([^ ]*\) (\([^)]*\)).*/\2/p' | sort -u)
if ((${#differing[@]} > 20)); then
  say "FAIL: ${#differing[@]} tests differ"
  diff "$work/plain.out" "$work/uepoll.out" | head -40
  failed=1
  differing=()
fi
for id in "${differing[@]}"; do
  module=${id#test.}
  module=${module%%.*}
  name=${id##*.}
  suite plain "$work/again.plain" "$module" -m "$name"
  suite uepoll "$work/again.uepoll" "$module" -m "$name"
  a=$(outcomes "$work/again.plain" | grep -F "($id)")
  b=$(outcomes "$work/again.uepoll" | grep -F "($id)")
  if [[ $a != "$b" ]]; then
    say "FAIL: $id: plain [${a##* ... }], uepoll-run [${b##* ... }], twice"
    failed=1
  else
    say "note: $id differed once, the same when run again ($a)"
  fi
done

if grep -q '^uepoll:' "$work/uepoll.txt"; then
  say "FAIL: uepoll-run printed a warning:"
  grep '^uepoll:' "$work/uepoll.txt" | sort -u | head
  failed=1
fi
suite_objects_made
say "$n outcomes compared over $(wc -w <<<"$MODULES") modules (uepoll objects made: $made): $( ((failed)) && echo FAIL || echo equal)"
exit "$failed"
