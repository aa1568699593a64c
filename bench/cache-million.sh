#!/usr/bin/env bash
# cache-million.sh TENAX [ITEMS]: the response cache at a million entries.
# A job of ITEMS (default 1,000,000) llm items on the default configuration
# — the cache on, as for every llm task — against the in-process mock at
# zero latency (the one setting changed: mock.latency, so that the run is
# not the mock's 20 ms sleep a million times over), run by TENAX in a fresh
# home; then the files in the home's cache directory are counted and their
# size summed; then the same job is run again in that home, every answer
# served from the cache, and its items per second printed (items over the
# wall time of the whole `tenax run`, start-up and input hashing included).
# Needs about 1 GB of disk per million items in $TMPDIR.
set -euo pipefail
tenax=$1 items=${2:-1000000}
work=$(mktemp -d "${TMPDIR:-/tmp}/cachemillion.XXXXXX")
trap 'rm -rf "$work"' EXIT
awk -v n="$items" 'BEGIN { for (i = 0; i < n; i++) printf "{\"word\":\"w%d\"}\n", i }' >"$work/items.jsonl"
cat >"$work/job.yaml" <<'YAML'
name: cachemillion
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
echo "cache-million: $items items, $("$tenax" --version 2>/dev/null | head -1), load $(cut -d' ' -f1-3 /proc/loadavg)"
home="$work/home"
run() { # name: one timed run of the job in $home
	/usr/bin/time -f '%e %U %S %M' -o "$work/time" "$tenax" run --home "$home" -q "$work/job.yaml" >"$work/out" 2>&1 ||
		{ cat "$work/out" >&2; exit 1; }
	read -r wall user sys rss <"$work/time"
	printf '%-7s %8.2f s wall  %7.2f s CPU  %8d KiB peak RSS  %9.0f items/s  (load %s)\n' \
		"$1" "$wall" "$(echo "$user + $sys" | bc)" "$rss" "$(echo "$items / $wall" | bc -l)" "$(cut -d' ' -f1 /proc/loadavg)"
}
run first
files=$(find "$home/cache" -type f | wc -l)
echo "files in $home/cache after the first job: $files, $(du -sh "$home/cache" | cut -f1) in all:"
find "$home/cache" -type f -printf '  %P %s bytes\n'
run cached
echo "files in the cache directory after the second job: $(find "$home/cache" -type f | wc -l)"
