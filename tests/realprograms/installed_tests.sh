#!/usr/bin/env bash
# tests/realprograms/installed_tests.sh - a library's own installed tests,
# plainly and under uepoll-run, result by result:
#   glib: GLib's (Debian's libglib2.0-tests): its main loop (an eventfd
#     wakeup and poll()), unix pipes and fd sources, descriptor passing
#     (unix-fd, gdbus-peer), sockets, pollable streams, cancellables (an
#     eventfd or pipe each), spawning from one and from several threads,
#     thread pools, GTask, GDBus over socket pairs and its own test bus;
#   dbus: libdbus's and dbus-daemon's (Debian's dbus-tests, its debug
#     build): its epoll main loop, loopback and relayed connections,
#     descriptor passing, corrupt input, monitors, the daemon itself.
#
# Each test program runs with --tap in both modes; every "ok"/"not ok"
# line (the SKIP reason dropped) and the exit status are compared.  A
# program whose results differ is run again in both modes and counts as a
# difference only if it differs again.  The uepoll run must print no
# "uepoll:" warning, and its UEPOLL_STATS must show uepoll objects made.
#
# Usage: tests/realprograms/installed_tests.sh glib|dbus [UEPOLL_RUN]
# Environment: TESTS (default below: glib about 40 s per mode on two cores,
# dbus about 15 s).  Exit 0 when every result matched, 1 when one differed,
# 77 (ctest: skipped) when the tests are not installed.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
SUITE=${1:-glib}
RUN=${2:-$root/build/src/preload/uepoll-run}
[[ $RUN == /* ]] || RUN=$PWD/$RUN  # the tests run from their own directory
case $SUITE in
  glib)
    DIR=/usr/libexec/installed-tests/glib PACKAGE=libglib2.0-tests MIN=200
    DEFAULT="mainloop unix unix-fd io-channel spawn-multithreaded spawn-singlethread spawn-test socket
      socket-listener socket-service pollable cancellable credentials unix-streams async-splice-output-stream
      async-close-output-stream thread-pool task contexts sleepy-stream readwrite io-stream signal-handler
      gdbus-peer gdbus-connection-flush gdbus-non-socket gdbus-close-pending gdbus-auth gdbus-server-auth
      gdbus-overflow gdbus-connection gdbus-names gdbus-proxy gdbus-threading gdbus-exit-on-close
      gdbus-connection-loss gdbus-export gsocketclient-slow gapplication network-monitor" ;;
  dbus)
    DIR=/usr/lib/dbus-1.0/debug-build/libexec/installed-tests/dbus PACKAGE=dbus-tests MIN=100
    DEFAULT="test-loopback test-relay test-corrupt test-fdpass test-monitor test-refs test-dbus-daemon
      test-server-oom test-uid-permissions test-containers test-sd-activation"
    # Where its tests find the daemon and their data (dbus's own
    # installed-tests .test files set the same).
    export DBUS_TEST_DAEMON=/usr/lib/dbus-1.0/debug-build/bin/dbus-daemon DBUS_TEST_DATA=$DIR/data \
      DBUS_TEST_EXEC=$DIR ;;
  *) echo "usage: installed_tests.sh glib|dbus [UEPOLL_RUN]" >&2; exit 2 ;;
esac
TESTS=${TESTS:-$DEFAULT}
say() { printf 'installed_tests %s: %s\n' "$SUITE" "$*"; }
# shellcheck source=suite_lib.sh
source "$here/suite_lib.sh"

if [[ ! -d $DIR ]]; then
  say "SKIP: the installed tests are not in $DIR (Debian: $PACKAGE)"
  exit 77
fi
suite_check_run

suite_workdir "$SUITE-tests"

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
if ((n < MIN)); then
  say "FAIL: only $n results from the plain runs"
  failed=1
fi
suite_objects_made
say "$n results compared over $(wc -w <<<"$TESTS") programs (uepoll objects made: $made): $( ((failed)) && echo FAIL || echo equal)"
exit "$failed"
