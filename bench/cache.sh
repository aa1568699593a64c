#!/usr/bin/env bash
# cache.sh OLD NEW [ITEMS] [ROUNDS]: the response cache end to end. A job of
# ITEMS (default 10000) items on the default configuration — the cache on,
# as for every llm task — against the in-process mock at zero latency (the
# one setting changed: mock.latency, so the cache is what is measured, not
# the mock's sleep), run by the binaries OLD and NEW alternately, ROUNDS
# times (default 5), each in a fresh home; then the same job again in that
# home, every answer served from the cache; and NEW with the cache off, for
# the floor. Prints, per run, the CPU (user + sys from /usr/bin/time), the
# wall time and the files left in the cache directory.
set -euo pipefail
old=$1 new=$2 items=${3:-10000} rounds=${4:-5}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for ((i = 0; i < items; i++)); do printf '{"word":"w%d"}\n' "$i"; done >"$work/items.jsonl"
cat >"$work/job.yaml" <<'YAML'
name: cachebench
input: items.jsonl
task:
  type: llm
  provider: mock
  model: mock-json
  output: json
  prompt: "Describe the word '{{.word}}' as JSON."
mock:
  latency: {min: 0s}
YAML
sed 's/^mock:/cache: {enabled: false}\nmock:/' "$work/job.yaml" >"$work/nocache.yaml"
printf 'round binary run cpu_s wall_s cache_files\n'
for ((r = 1; r <= rounds; r++)); do
	for bin in old new off; do
		home="$work/home-$bin-$r"
		runs="first cached" binary=${!bin:-} spec="$work/job.yaml"
		if [ "$bin" = off ]; then runs=first binary=$new spec="$work/nocache.yaml"; fi
		for run in $runs; do
			/usr/bin/time -f '%U %S %e' -o "$work/time" "$binary" run --home "$home" -q "$spec" >/dev/null 2>&1
			read -r user sys wall <"$work/time"
			files=$({ find "$home/cache" -type f 2>/dev/null || true; } | wc -l)
			printf '%d %s %s %.2f %.2f %d\n' "$r" "$bin" "$run" "$(echo "$user + $sys" | bc)" "$wall" "$files"
		done
		rm -rf "$home"
	done
done
