# tests/realprograms/suite_lib.sh - what the differential runs of programs'
# own test suites (python_stdlib.sh, installed_tests.sh) share; sourced, after
# the script has defined say().

# suite_workdir NAME: a fresh directory for the runs' output, removed at
# exit unless KEEP=1; sets `work`.
suite_workdir() {
  work=$(mktemp -d "/tmp/uepoll-$1.XXXXXX")
  [[ ${KEEP:-0} == 1 ]] || trap 'rm -rf "$work"' EXIT
}

# suite_check_run: exits 1 when uepoll-run is not built at $RUN.
suite_check_run() {
  [[ -x $RUN ]] || { say "uepoll-run not found at $RUN (build first)"; exit 1; }
}

# suite_objects_made: the uepoll epoll instances, pipes and eventfds that
# the UEPOLL_STATS files $work/stats.* count; says FAIL and sets failed=1
# when there are none (the uepoll run served nothing); sets `made`.
suite_objects_made() {
  made=$(cat "$work"/stats.* 2>/dev/null |
    awk '$1 ~ /^(epoll_instances|objects_pipe|objects_eventfd)$/ { s += $2 } END { print s + 0 }')
  if ((made == 0)); then
    say "FAIL: UEPOLL_STATS shows no uepoll object made"
    failed=1
  fi
}
