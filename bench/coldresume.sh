#!/usr/bin/env bash
# coldresume.sh [N] [ROUNDS] [BASE]: the first `tenax resume` of a finished job of N
# records of about 2 KB (default 1,000,000: 2.2 GB of results.jsonl) that
# has no results.idx (a job an older tenax left), against `cat` of its
# results.jsonl, in one run, ROUNDS times (default 3), each with the log out
# of the page cache (cold) and in it (warm):
#
#   cat-cold     cat results.jsonl >/dev/null, the log evicted first
#   resume-cold  tenax resume, results.idx removed and the log evicted
#   cat-warm     cat again, the log just read by cat
#   resume-warm  tenax resume, results.idx removed, the log just read by cat
#   base-cold, base-warm  the same with the tenax of commit BASE, if given
#
# The log is evicted with posix_fadvise(DONTNEED) on its file
# (dd iflag=nocache count=0), not by dropping the machine's caches. Prints
# wall, CPU, peak RSS and the 512-byte blocks read from the device of
# each, then the median ratio resume/cat. One in ten records failed, and
# failures.jsonl is up to date, as a finished job leaves it, so the resume
# runs nothing: what it costs is reading the log and building the index.
# Needs about 2.3 GB of disk per million records in $TMPDIR.
set -euo pipefail
cd "$(dirname "$0")"
n=${1:-1000000}
rounds=${2:-3}
base=${3:-}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/coldresume.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
repo=$(git rev-parse --show-toplevel)
(cd "$repo" && go build -o "$tmp/tenax" ./cmd/tenax)
if [ -n "$base" ]; then
  mkdir "$tmp/base-src"
  git -C "$repo" archive "$base" | tar -x -C "$tmp/base-src"
  (cd "$tmp/base-src" && go build -o "$tmp/tenax-base" ./cmd/tenax)
fi
id=$(go run ./cmd/resumejob -home "$tmp/home" -dir "$tmp/work" -n "$n")
job="$tmp/home/jobs/$id"
log="$job/results.jsonl"
# The first resume writes failures.jsonl, as the end of the job's run did.
"$tmp/tenax" --home "$tmp/home" -q resume "$id" >/dev/null 2>&1 || true
sync
echo "job $id: $(du -h "$log" | cut -f1) of results.jsonl, $n records; load $(cut -d' ' -f1-3 /proc/loadavg)"

evict() {
  sync
  for f in "$log" "$job/results.idx" "$job/failures.jsonl" "$tmp/work/items.jsonl"; do
    if [ -e "$f" ]; then dd if="$f" iflag=nocache count=0 status=none; fi
  done
}
cached() { fincore -n -b -o RES "$log" 2>/dev/null | awk '{printf "%.0f MB", $1/1e6}'; }
declare -A times
measure() { # name cmd... : one timed run, its line printed and its wall time kept
  local name=$1 out
  shift
  local before
  before=$(cached)
  /usr/bin/time -o "$tmp/time" -f "%e %U %S %M %I" "$@" >/dev/null 2>"$tmp/err" || true
  read -r wall user sys rss blocks < <(tail -1 "$tmp/time")
  printf '%-12s %7.2f s wall  %6.2f s CPU  %7d KiB peak RSS  %9d blocks read  (log cached before: %s)\n' \
    "$name" "$wall" "$(echo "$user + $sys" | bc)" "$rss" "$blocks" "$before"
  times[$name]+="$wall "
}
for round in $(seq "$rounds"); do
  echo "round $round (load $(cut -d' ' -f1 /proc/loadavg))"
  evict
  measure cat-cold cat "$log"
  rm -f "$job/results.idx"
  evict
  measure resume-cold "$tmp/tenax" --home "$tmp/home" -q resume "$id"
  test -s "$job/results.idx" || { echo "coldresume: the resume wrote no results.idx" >&2; exit 1; }
  cat "$log" >/dev/null
  measure cat-warm cat "$log"
  rm -f "$job/results.idx"
  cat "$log" >/dev/null
  measure resume-warm "$tmp/tenax" --home "$tmp/home" -q resume "$id"
  if [ -n "$base" ]; then
    rm -f "$job/results.idx"
    evict
    measure base-cold "$tmp/tenax-base" --home "$tmp/home" -q resume "$id"
    rm -f "$job/results.idx"
    cat "$log" >/dev/null
    measure base-warm "$tmp/tenax-base" --home "$tmp/home" -q resume "$id"
  fi
done
median() { tr ' ' '\n' | grep . | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
for kind in cold warm; do
  c=$(echo "${times[cat-$kind]}" | median)
  r=$(echo "${times[resume-$kind]}" | median)
  printf 'median %s: cat %.2f s, first resume %.2f s = %.2fx cat' "$kind" "$c" "$r" "$(echo "$r / $c" | bc -l)"
  if [ -n "$base" ]; then
    b=$(echo "${times[base-$kind]}" | median)
    printf '; %s: %.2f s = %.2fx cat' "$base" "$b" "$(echo "$b / $c" | bc -l)"
  fi
  echo
done
