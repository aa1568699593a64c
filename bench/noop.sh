#!/usr/bin/env bash
# noop.sh ROUNDS REV… : the engine's per-item overhead, BenchmarkRunNoop
# (1,000,000 no-op items through Run, JSONL checkpoint, 8 in flight), of
# several builds alternated in one run so the machine's load falls on all
# of them alike. Each REV is an engine test binary (an executable file) or
# a git revision of this repository, whose engine test binary is built
# first (`go test -c` in a temporary worktree). Round r runs every build
# once, in an order rotated by r. Prints one line per run (load average,
# items/s, B/op, allocs/op, user and system CPU, wall time), then per build
# the median items/s and the median of its per-round ratios to the first
# REV's.
#
# It is also the per-item allocation guard of issue 38, untimed: with
# MAX_ALLOCS (and MAX_BYTES) set, it exits 1 when the last REV's median
# allocs/op (B/op) is over them. ITEMS overrides the 1,000,000.
#
#   bench/noop.sh 4 a979d63 19a9806 HEAD
#   MAX_ALLOCS=3 MAX_BYTES=560 bench/noop.sh 1 HEAD
set -euo pipefail
rounds=${1:?ROUNDS}
shift
[ $# -gt 0 ] || { echo "usage: noop.sh ROUNDS REV..." >&2; exit 2; }
items=${ITEMS:-1000000}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trees=()
trap 'for t in "${trees[@]:-}"; do [ -n "$t" ] && git -C "$root" worktree remove --force "$t" >/dev/null 2>&1; done; rm -rf "$work"' EXIT
names=() bins=()
for rev in "$@"; do
	if [ -f "$rev" ] && [ -x "$rev" ]; then
		names+=("$(basename "$rev" .test)") bins+=("$rev")
		continue
	fi
	name=$(git -C "$root" rev-parse --short "$rev")
	git -C "$root" worktree add --detach "$work/src-$name" "$rev" >/dev/null 2>&1
	trees+=("$work/src-$name")
	(cd "$work/src-$name" && go test -c -o "$work/$name.test" ./engine)
	names+=("$name") bins+=("$work/$name.test")
done
n=${#bins[@]}
printf 'round build load1 items_s B_op allocs_op user_s sys_s wall_s\n'
for ((r = 1; r <= rounds; r++)); do
	for ((k = 0; k < n; k++)); do
		i=$(((k + r - 1) % n))
		load=$(cut -d' ' -f1 /proc/loadavg)
		/usr/bin/time -f '%U %S %e' -o "$work/time" "${bins[$i]}" -test.run '^$' -test.bench '^BenchmarkRunNoop$' \
			-test.benchtime "${items}x" -test.benchmem >"$work/out" 2>&1 || { cat "$work/out" >&2; exit 1; }
		read -r user sys wall <"$work/time"
		# BenchmarkRunNoop-2  N  ns/op  X items/s  Y peak-MiB  B B/op  A allocs/op
		line=$(grep '^BenchmarkRunNoop' "$work/out")
		ips=$(awk '{for (f = 1; f < NF; f++) if ($(f+1) == "items/s") print $f}' <<<"$line")
		bop=$(awk '{for (f = 1; f < NF; f++) if ($(f+1) == "B/op") print $f}' <<<"$line")
		aop=$(awk '{for (f = 1; f < NF; f++) if ($(f+1) == "allocs/op") print $f}' <<<"$line")
		printf '%d %s %s %s %s %s %s %s %s\n' "$r" "${names[$i]}" "$load" "$ips" "$bop" "$aop" "$user" "$sys" "$wall" | tee -a "$work/runs"
	done
done
python3 - "$work/runs" "${names[@]}" <<'PY'
import statistics, sys
runs = [l.split() for l in open(sys.argv[1])]
names = sys.argv[2:]
by = {(int(r[0]), r[1]): r for r in runs}
rounds = sorted({int(r[0]) for r in runs})
base = names[0]
print("build median_items_s median_ratio ratios B_op allocs_op")
for name in names:
    ips = [float(by[(r, name)][3]) for r in rounds]
    ratios = [float(by[(r, name)][3]) / float(by[(r, base)][3]) for r in rounds]
    bop = sorted({by[(r, name)][4] for r in rounds})
    aop = sorted({by[(r, name)][5] for r in rounds})
    print(name, round(statistics.median(ips)), round(statistics.median(ratios), 3),
          ",".join(f"{x:.2f}" for x in ratios), "/".join(bop), "/".join(aop))
PY
last=${names[n - 1]}
median() { awk -v b="$last" -v f="$1" '$2 == b {print $f}' "$work/runs" | sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
status=0
if [ -n "${MAX_ALLOCS:-}" ] && awk -v a="$(median 6)" -v m="$MAX_ALLOCS" 'BEGIN {exit !(a > m)}'; then
	echo "$last: $(median 6) allocs/op, over MAX_ALLOCS=$MAX_ALLOCS" >&2
	status=1
fi
if [ -n "${MAX_BYTES:-}" ] && awk -v a="$(median 5)" -v m="$MAX_BYTES" 'BEGIN {exit !(a > m)}'; then
	echo "$last: $(median 5) B/op, over MAX_BYTES=$MAX_BYTES" >&2
	status=1
fi
exit $status
