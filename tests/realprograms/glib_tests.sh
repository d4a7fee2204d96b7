#!/usr/bin/env bash
# tests/realprograms/glib_tests.sh - GLib's own installed tests (Debian's
# libglib2.0-tests), plainly and under uepoll-run: its main loop (an
# eventfd wakeup and poll()), unix pipes and fd sources, descriptor passing
# (unix-fd, gdbus-peer), sockets, pollable streams, cancellables (an
# eventfd or pipe each), spawning from one and from several threads,
# thread pools, GTask, GDBus over socket pairs and its own test bus.
#
# Each test program runs with --tap in both modes; every "ok"/"not ok"
# line (the SKIP reason dropped) and the exit status are compared.  A
# program whose results differ is run again in both modes and counts as a
# difference only if it differs again.  The uepoll run must print no
# "uepoll:" warning, and its UEPOLL_STATS must show uepoll objects made.
#
# Usage: tests/realprograms/glib_tests.sh [UEPOLL_RUN]
# Environment: TESTS (default below, about half a minute per mode on two
# cores), GLIB_TESTS (default /usr/libexec/installed-tests/glib).  Exit 0
# when every result matched, 1 when one differed, 77 (ctest: skipped) when
# the tests are not installed.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
RUN=${1:-$root/build/src/preload/uepoll-run}
DIR=${GLIB_TESTS:-/usr/libexec/installed-tests/glib}
TESTS=${TESTS:-mainloop unix unix-fd io-channel spawn-multithreaded spawn-singlethread spawn-test socket
  socket-listener socket-service pollable cancellable credentials unix-streams async-splice-output-stream
  async-close-output-stream thread-pool task contexts sleepy-stream readwrite io-stream signal-handler
  gdbus-peer gdbus-connection-flush gdbus-non-socket gdbus-close-pending gdbus-auth gdbus-server-auth
  gdbus-overflow gdbus-connection gdbus-names gdbus-proxy gdbus-threading gdbus-exit-on-close
  gdbus-connection-loss gdbus-export gsocketclient-slow gapplication network-monitor}
say() { printf 'glib_tests: %s\n' "$*"; }
# shellcheck source=suite_lib.sh
source "$here/suite_lib.sh"

if [[ ! -x $DIR/mainloop ]]; then
  say "SKIP: GLib's installed tests not found in $DIR (Debian: libglib2.0-tests)"
  exit 77
fi
suite_check_run

suite_workdir glibtest

# one MODE TEST OUT: the test's results (TAP lines without SKIP reasons,
# then its exit status).  The tests find their data files beside them.
one() {
  local mode=$1 t=$2 out=$3 rc
  if [[ $mode == uepoll ]]; then
    (cd "$DIR" && timeout 120 "$RUN" --stats "$work/stats.%p" "./$t" --tap) >"$out.log" 2>&1
  else
    (cd "$DIR" && timeout 120 "./$t" --tap) >"$out.log" 2>&1
  fi
  rc=$?
  { grep -E '^(ok|not ok) ' "$out.log" | sed 's/ # .*//'; echo "exit $rc"; } >"$out"
}

failed=0 n=0
for t in $TESTS; do
  [[ -x $DIR/$t ]] || { say "note: $t not installed, skipped"; continue; }
  one plain "$t" "$work/$t.plain"
  one uepoll "$t" "$work/$t.uepoll"
  n=$((n + $(grep -c '^ok\|^not ok' "$work/$t.plain")))
  if ! cmp -s "$work/$t.plain" "$work/$t.uepoll"; then
    one plain "$t" "$work/$t.plain2"
    one uepoll "$t" "$work/$t.uepoll2"
    if cmp -s "$work/$t.plain2" "$work/$t.uepoll2"; then
      say "note: $t differed once, the same when run again"
    else
      say "FAIL: $t differs, twice:"
      diff "$work/$t.plain2" "$work/$t.uepoll2" | head -20
      failed=1
    fi
  fi
  if grep -q '^uepoll:' "$work/$t.uepoll.log"; then
    say "FAIL: $t: uepoll-run printed a warning:"
    grep '^uepoll:' "$work/$t.uepoll.log" | sort -u | head
    failed=1
  fi
done
if ((n < 100)); then
  say "FAIL: only $n results from the plain runs"
  failed=1
fi
suite_objects_made
say "$n results compared over $(wc -w <<<"$TESTS") programs (uepoll objects made: $made): $( ((failed)) && echo FAIL || echo equal)"
exit "$failed"
