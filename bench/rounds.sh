#!/usr/bin/env bash
# rounds.sh [N] [test flags]: build the benchmarks once, then run all of
# them N times (default 10), one count each, so that every round goes
# through every library in turn. On a shared or busy machine a change in
# load then falls on all libraries alike instead of on whichever one was
# being repeated at the time, as with -count N. Prints `go test` output
# for benchstat, e.g.:
#
#   ./rounds.sh 10 > new.txt
#   go run golang.org/x/perf/cmd/benchstat@latest -col /lib new.txt
set -euo pipefail
cd "$(dirname "$0")"
n=${1:-10}
shift || true
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
go test -c -o "$dir/bench.test" .
for _ in $(seq "$n"); do
  "$dir/bench.test" -test.run '^$' -test.bench . -test.benchmem \
    -test.count 1 -test.cpu 1,2 -test.benchtime 300ms "$@"
done
