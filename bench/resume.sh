#!/usr/bin/env bash
# resume.sh [N] [BASE] [ROUNDS]: time `tenax resume` of a finished job of N records
# of about 2 KB (default 1,000,000; one in ten failed, so the resume reads
# every outcome and runs nothing), with the tenax of this tree and with the
# tenax of commit BASE (default 3e20a02, before results.idx), interleaved
# in one run, ROUNDS times (default 3). Prints the wall time, the CPU time
# (user + system: on a shared machine the wall time mostly measures the
# others) and the peak RSS of each resume:
#
#   old       BASE's tenax: scans results.jsonl
#   first     this tenax on a job without results.idx (an older job): it
#             scans the log once and writes the index
#   indexed   this tenax with results.idx
#
# Needs about 2.3 GB of disk per million records in $TMPDIR.
set -euo pipefail
cd "$(dirname "$0")"
n=${1:-1000000}
base=${2:-3e20a02}
rounds=${3:-3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
repo=$(git rev-parse --show-toplevel)
(cd "$repo" && go build -o "$tmp/tenax-new" ./cmd/tenax)
mkdir "$tmp/old-src"
git -C "$repo" archive "$base" | tar -x -C "$tmp/old-src"
(cd "$tmp/old-src" && go build -o "$tmp/tenax-old" ./cmd/tenax)
id=$(go run ./cmd/resumejob -home "$tmp/home" -dir "$tmp/work" -n "$n")
job="$tmp/home/jobs/$id"
echo "job $id: $(du -h "$job/results.jsonl" | cut -f1) of results.jsonl, $n records"
measure() { # name binary
  /usr/bin/time -f "$1: %e s wall, %U s user + %S s system, %M KiB peak RSS" "$2" --home "$tmp/home" -q resume "$id" >/dev/null 2>"$tmp/err" || true
  tail -1 "$tmp/err"
}
for round in $(seq "$rounds"); do
  echo "round $round"
  measure old "$tmp/tenax-old"
  rm -f "$job/results.idx"
  measure first "$tmp/tenax-new"
  measure indexed "$tmp/tenax-new"
done
