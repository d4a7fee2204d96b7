#!/bin/sh
# opcount.sh - instructions per operation of uepoll's fast paths under
# callgrind: (Ir(N) - Ir(0)) / N for each op of uepoll-opcount (a Release
# build; the same method as docs/design.md's lock-layer costs).
# Usage: bench/opcount.sh BUILD_DIR [N]   (N defaults to 20000)
set -eu
bin="$1/bench/uepoll-opcount"
n="${2:-20000}"
ir() {
  valgrind --tool=callgrind --callgrind-out-file=/dev/null "$bin" "$1" "$2" 2>&1 |
    sed -n 's/.*Collected : *\([0-9]*\).*/\1/p'
}
printf '| operation | instructions per op |\n|---|---:|\n'
for op in ctl-pair ctl-pair-nested ctl-pair-kfd ctl-pair-kfd-linux wait0 wait0-nested eventfd-rw pipe-rw; do
  a=$(ir "$op" 0)
  b=$(ir "$op" "$n")
  printf '| %s | %s |\n' "$op" "$(( (b - a) / n ))"
done
