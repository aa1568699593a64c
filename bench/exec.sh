#!/usr/bin/env bash
# exec.sh [ROUNDS] [ITEMS]: exec throughput. ITEMS (default 10000) trivial
# commands, `true LINE`, 8 in flight, run by
#   xargs -P 8 -n 1 true         the floor: fork+exec alone
#   tenax run (exec task, -q)    argv ["true", "{{.text}}"], concurrency 8
#   parallel -j 8 --joblog FILE  GNU parallel, with its job log
# ROUNDS times (default 3), one round going through all three in turn so
# that a change in the machine's load falls on all of them alike. Prints
# one line per run (round, tool, seconds, jobs/s, load average) and then
# the median of each tool and the ratios of the medians.
#
# It builds tenax from the main module into a temporary directory; every
# tenax run gets a fresh --home, so no run resumes or reads another's
# checkpoint.
set -euo pipefail
cd "$(dirname "$0")"
rounds=${1:-3}
items=${2:-10000}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
(cd .. && go build -o "$dir/tenax" ./cmd/tenax)
seq "$items" >"$dir/items.txt"
cat >"$dir/true.yaml" <<YAML
name: exec-true
input: items.txt
task:
  type: exec
  argv: ["true", "{{.text}}"]
concurrency: {max: 8}
YAML

now() { date +%s.%N; }
run() { # run TOOL: one timed run of TOOL over the items
  case $1 in
  xargs) xargs -P 8 -n 1 true <"$dir/items.txt" ;;
  tenax)
    rm -rf "$dir/home"
    "$dir/tenax" run "$dir/true.yaml" --home "$dir/home" -q >/dev/null 2>"$dir/tenax.err"
    ;;
  parallel)
    rm -f "$dir/joblog"
    parallel --will-cite -j 8 -n 1 --joblog "$dir/joblog" true :::: "$dir/items.txt"
    ;;
  esac
}

tools=(xargs tenax parallel)
declare -A times
printf '%-5s %-8s %9s %9s  %s\n' round tool seconds jobs/s load
for r in $(seq "$rounds"); do
  for t in "${tools[@]}"; do
    load=$(cut -d' ' -f1-3 /proc/loadavg)
    start=$(now)
    run "$t"
    end=$(now)
    s=$(echo "$end - $start" | bc -l)
    times[$t]+="$s "
    printf '%-5s %-8s %9.3f %9.0f  %s\n' "$r" "$t" "$s" "$(echo "$items / $s" | bc -l)" "$load"
  done
done

median() { tr ' ' '\n' | grep . | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
echo
for t in "${tools[@]}"; do
  m=$(echo "${times[$t]}" | median)
  declare "med_$t=$m"
  printf 'median %-8s %9.3f s %9.0f jobs/s\n' "$t" "$m" "$(echo "$items / $m" | bc -l)"
done
printf 'tenax / xargs wall time:        %.2fx\n' "$(echo "$med_tenax / $med_xargs" | bc -l)"
printf 'tenax / parallel jobs per second: %.2fx\n' "$(echo "$med_parallel / $med_tenax" | bc -l)"
