#!/bin/sh
# launcher_test.sh UEPOLL_RUN PROGRAM - uepoll-run's command line: --help and
# --version exit 0 on stdout; bad input (unknown option or kind, an empty
# kind, a --stats file in a missing directory, a --tune that is not
# NAME=VALUE or that the library refuses, no program) exits 2 with a message
# on stderr and runs nothing; good input runs PROGRAM, with --tune's knobs
# set (PROGRAM params prints a new instance's busy-poll window).
set -u
run=$1 prog=$2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fails=0
# expect RC STREAM PATTERN CMD...: exit status RC, PATTERN (grep -E) on
# STREAM (out/err), the other stream empty (for errors: stdout empty).
expect() {
  want=$1 stream=$2 pat=$3; shift 3
  "$@" > "$tmp/out" 2> "$tmp/err"; rc=$?
  other=err; [ "$stream" = err ] && other=out
  if [ "$rc" -ne "$want" ] || ! grep -Eq -- "$pat" "$tmp/$stream" || [ -s "$tmp/$other" ]; then
    echo "FAIL: $* -> exit $rc (want $want), $stream should match '$pat'"
    echo "  stdout: $(cat "$tmp/out")"; echo "  stderr: $(cat "$tmp/err")"
    fails=$((fails + 1))
  else
    echo "ok: $* -> exit $rc"
  fi
}
expect 0 out '^usage: uepoll-run' "$run" --help
expect 0 out '^usage: uepoll-run' "$run" -h
expect 0 out '^uepoll-run \(uepoll\) [0-9]+\.[0-9]+\.[0-9]+$' "$run" --version
expect 2 err "unknown kind 'bogus'" "$run" --kinds bogus "$prog"
expect 2 err "^uepoll-run: UEPOLL_PRELOAD_KINDS: 'epoll,,zz': an empty kind" env UEPOLL_PRELOAD_KINDS=epoll,,zz "$run" "$prog"
expect 2 err "unknown kind 'zz'" env UEPOLL_PRELOAD_KINDS=epoll,zz "$run" "$prog"
expect 2 err "an empty kind" "$run" --kinds= "$prog"
expect 2 err "directory '$tmp/missing' does not exist" "$run" --stats "$tmp/missing/stats" "$prog"
expect 2 err "does not exist" env UEPOLL_STATS="$tmp/missing/s" "$run" "$prog"
expect 2 err "is a directory" "$run" --stats "$tmp" "$prog"
expect 2 err "unknown option '--bogus'" "$run" --bogus "$prog"
expect 2 err "option '--stats' needs an argument" "$run" --stats
expect 2 err "no PROGRAM" "$run"
expect 2 err "no PROGRAM" "$run" --kinds epoll
expect 2 err "--serialize: 'x1': not a decimal seed" "$run" --virtual-time --serialize x1 "$prog"
expect 2 err "--serialize needs --virtual-time" "$run" --serialize 5 "$prog"
expect 2 err "option '--serialize' needs an argument" "$run" --serialize
expect 2 err "--control: an empty path" "$run" --virtual-time manual --control= "$prog"
expect 2 err "^uepoll-run: --tune: 'busy_poll_usecs': not NAME=VALUE" "$run" --tune busy_poll_usecs "$prog" params
expect 2 err "^uepoll-run: --tune: 'busy_poll_usecs=5x': the value is not a decimal integer" "$run" --tune busy_poll_usecs=5x "$prog" params
expect 2 err "^uepoll-run: --tune: 'Busy=1': not a knob name" "$run" --tune Busy=1 "$prog" params
expect 2 err "^uepoll-run: UEPOLL_TUNING: 'rcu_ctl=1,': an empty setting" env UEPOLL_TUNING=rcu_ctl=1, "$run" "$prog" params
expect 2 err "option '--tune' needs an argument" "$run" --tune
# The library checks names and ranges as the program loads: nothing runs.
expect 2 err "^uepoll: UEPOLL_TUNING: 'bogus=1': an unknown knob" "$run" --tune bogus=1 "$prog" params
expect 2 err "^uepoll: UEPOLL_TUNING: 'busy_poll_usecs=-1': an unknown knob or a value out of range" "$run" --tune busy_poll_usecs=-1 "$prog" params
expect 2 err "^uepoll: UEPOLL_TUNING: 'rcu_ctl=2': " "$run" --tune rcu_ctl=1 --tune rcu_ctl=2 "$prog" params
# Knobs apply before the program runs, left to right, and reach its children.
expect 0 out '^busy_poll_usecs 0$' "$run" "$prog" params
expect 0 out '^busy_poll_usecs 50$' "$run" --tune busy_poll_usecs=50 "$prog" params
expect 0 out '^busy_poll_usecs 7$' env UEPOLL_TUNING=busy_poll_usecs=50 "$run" --tune=rcu_ctl=0,busy_poll_usecs=7 "$prog" params
expect 0 out '^busy_poll_usecs 50$' "$run" --tune busy_poll_usecs=50 sh -c '"$1" params' sh "$prog"
# Good input runs the program (which prints on stdout), and --stats writes.
expect 0 out '.' "$run" --kinds=epoll,eventfd --stats "$tmp/stats.%p" "$prog"
if ! ls "$tmp"/stats.* > /dev/null 2>&1; then echo "FAIL: --stats wrote nothing"; fails=$((fails + 1)); fi
expect 0 out '.' "$run" -- "$prog"
# The library's run path has no empty entry (the current directory): a
# program started where files carry its dependencies' names still runs.
mkdir "$tmp/cwd" && echo junk > "$tmp/cwd/libstdc++.so.6" && echo junk > "$tmp/cwd/libgcc_s.so.1"
expect 0 out '.' sh -c 'cd "$1" && shift && exec "$@"' sh "$tmp/cwd" "$run" "$prog"
[ "$fails" -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
