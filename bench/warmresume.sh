#!/usr/bin/env bash
# warmresume.sh HOME ID ROUNDS TENAX... : the first `tenax resume` of job ID
# under HOME without results.idx, log in the page cache, against `cat` of
# its results.jsonl, each binary TENAX in turn, ROUNDS times; the warm half
# of coldresume.sh on a job it (or cmd/resumejob) already made, for when
# building the job again costs more than the measurement. Before each run
# the log is read with cat, so that it is all cached. Prints wall and CPU
# of each, then the median of each against cat's.
set -euo pipefail
home=$1 id=$2 rounds=$3
shift 3
log="$home/jobs/$id/results.jsonl"
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
declare -A times
measure() { # name cmd...
	local name=$1
	shift
	/usr/bin/time -o "$tmp" -f "%e %U %S" "$@" >/dev/null 2>&1 || true
	read -r wall user sys < <(tail -1 "$tmp")
	printf '%-28s %6.2f s wall  %6.2f s CPU  (load %s)\n' "$name" "$wall" "$(echo "$user + $sys" | bc)" "$(cut -d' ' -f1 /proc/loadavg)"
	times[$name]+="$wall "
}
echo "warm resume of $id: $(du -h "$log" | cut -f1), load $(cut -d' ' -f1-3 /proc/loadavg)"
for round in $(seq "$rounds"); do
	cat "$log" >/dev/null
	measure cat cat "$log"
	for bin in "$@"; do
		rm -f "$home/jobs/$id/results.idx"
		cat "$log" >/dev/null
		measure "$bin" "$bin" --home "$home" -q resume "$id"
	done
done
median() { tr ' ' '\n' | grep . | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
c=$(echo "${times[cat]}" | median)
for bin in "$@"; do
	r=$(echo "${times[$bin]}" | median)
	printf 'median %s: %.2f s = %.2fx cat (%.2f s)\n' "$bin" "$r" "$(echo "$r / $c" | bc -l)" "$c"
done
