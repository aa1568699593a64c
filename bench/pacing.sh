#!/usr/bin/env bash
# pacing.sh [ROUNDS]: the real-time confirmation of
# TestBatchBarrierAgainstContinuousPipeline. 100 items of an exec task
# `sleep 0.2` through `tenax run`, paced as older tools do (batches of 10,
# 2 in flight, 0.2s between dispatches, 1s between batches) and as
# tenax's continuous pipeline (2, then 10 in flight, no pacing). ROUNDS
# times (default 3), one round going through the three in turn. Prints
# one line per run and the medians with their ratio to the baseline.
set -euo pipefail
cd "$(dirname "$0")"
rounds=${1:-3}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
(cd .. && go build -o "$dir/tenax" ./cmd/tenax)
seq 100 >"$dir/items.txt"
spec() { # spec NAME CONCURRENCY [PACING]
  cat >"$dir/$1.yaml" <<YAML
name: $1
input: items.txt
task:
  type: exec
  argv: ["sleep", "0.2"]
concurrency: {max: $2}
${3:-}
YAML
}
spec batches 2 "pacing: {batch_size: 10, batch_delay: 1s, item_delay: 200ms}"
spec continuous2 2
spec continuous10 10

now() { date +%s.%N; }
names=(batches continuous2 continuous10)
declare -A times
printf '%-5s %-13s %8s  %s\n' round run seconds load
for r in $(seq "$rounds"); do
  for n in "${names[@]}"; do
    load=$(cut -d' ' -f1-3 /proc/loadavg)
    rm -rf "$dir/home"
    start=$(now)
    "$dir/tenax" run "$dir/$n.yaml" --home "$dir/home" -q >/dev/null 2>"$dir/err"
    end=$(now)
    s=$(echo "$end - $start" | bc -l)
    times[$n]+="$s "
    printf '%-5s %-13s %8.3f  %s\n' "$r" "$n" "$s" "$load"
  done
done

median() { tr ' ' '\n' | grep . | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
echo
base=$(echo "${times[batches]}" | median)
for n in "${names[@]}"; do
  m=$(echo "${times[$n]}" | median)
  printf 'median %-13s %8.3f s  batches/this %5.2fx\n' "$n" "$m" "$(echo "$base / $m" | bc -l)"
done
