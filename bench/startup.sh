#!/usr/bin/env bash
# startup.sh TENAX [TRIVIALCLI] [ROUNDS] [OTHER...] — wall time of `tenax
# --help` and `tenax status` (on a job home with one finished job) against a
# trivial cobra CLI's `--help` and `status`, interleaved round by round so the
# machine's load falls on all alike. Each OTHER is a binary with a `status`
# subcommand, timed like the trivial CLI (cmd/depfloor: tenax's libraries and
# nothing else). Prints the median ms per start of each and its ratio to the
# trivial CLI's.
# Build the trivial CLI with: go build -o /tmp/trivialcli ./cmd/trivialcli
set -euo pipefail
tenax=${1:?usage: startup.sh TENAX [TRIVIALCLI] [ROUNDS] [OTHER...]}
trivial=${2:-/tmp/trivialcli}
rounds=${3:-10}
others=("${@:4}")
per=20 # starts per measurement
home=$(mktemp -d)
trap 'rm -rf "$home"' EXIT
printf '{"w":"a"}\n{"w":"b"}\n' >"$home/items.jsonl"
cat >"$home/job.yaml" <<'SPEC'
name: startup
input: items.jsonl
task: {type: exec, argv: ["true"]}
SPEC
(cd "$home" && TENAX_HOME="$home/h" "$tenax" run job.yaml >/dev/null 2>&1) || true

ms() { # ms CMD... — ms per start over $per starts
  local t0 t1
  t0=$(date +%s%N)
  for _ in $(seq $per); do "$@" >/dev/null 2>&1 || true; done
  t1=$(date +%s%N)
  echo $(( (t1 - t0) / per / 1000 ))
}
declare -A all
for r in $(seq "$rounds"); do
  all[trivial-help]+="$(ms "$trivial" --help) "
  all[tenax-help]+="$(ms "$tenax" --help) "
  all[trivial-status]+="$(ms "$trivial" status) "
  all[tenax-status]+="$(cd "$home" && TENAX_HOME="$home/h" ms "$tenax" status) "
  for o in "${others[@]}"; do
    all[$(basename "$o")-help]+="$(ms "$o" --help) "
    all[$(basename "$o")-status]+="$(ms "$o" status) "
  done
done
median() { tr ' ' '\n' | grep . | sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
echo "load $(cut -d' ' -f1-3 /proc/loadavg)"
keys=(trivial-help tenax-help)
for o in "${others[@]}"; do keys+=("$(basename "$o")-help"); done
keys+=(trivial-status tenax-status)
for o in "${others[@]}"; do keys+=("$(basename "$o")-status"); done
for k in "${keys[@]}"; do
  m=$(echo "${all[$k]}" | median)
  base=$(echo "${all[trivial-${k##*-}]}" | median)
  printf '%-22s %6.2f ms %5.2fx\n' "$k" "$(awk -v m="$m" 'BEGIN {print m/1000}')" "$(awk -v m="$m" -v b="$base" 'BEGIN {print m/b}')"
done
