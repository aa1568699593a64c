#!/bin/sh
# capture.sh regenerates fix/testdata/captures/*.txt: the real output of go
# test, pytest, jest, vitest, tsc and eslint run on the small broken
# projects under fix/testdata/projects/. The extractor tests read these
# captures (and never need npm or pytest); run this script when a tool's
# output format changes, then check the expected errors in
# fix/extract_capture_test.go.
#
# Needs: go, python3 with pytest (Debian: apt-get install -y python3-pytest),
# node and npm (the npm registry). Run from anywhere:
#   sh fix/testdata/capture.sh
set -u
here=$(cd "$(dirname "$0")" && pwd)
projects=$here/projects
out=$here/captures
mkdir -p "$out"

# Each capture is the tool's combined stdout and stderr, as `tenax fix`
# reads it, without colors (CI-like environment).
export NO_COLOR=1 FORCE_COLOR=0 CI=true

capture() { # name dir command...
	name=$1 dir=$2
	shift 2
	(cd "$dir" && "$@") >"$out/$name.txt" 2>&1
	echo "$name: exit $? ($(wc -l <"$out/$name.txt") lines)"
}

npm_ready() { # dir
	[ -d "$1/node_modules" ] || (cd "$1" && npm install --no-audit --no-fund >/dev/null 2>&1)
}

capture gotest "$projects/gotest" env GOFLAGS=-mod=mod GOWORK=off go test ./...
capture gotest_verbose "$projects/gotest" env GOFLAGS=-mod=mod GOWORK=off go test -v ./...
capture pytest "$projects/pytest" python3 -m pytest -p no:cacheprovider
npm_ready "$projects/jest" && capture jest "$projects/jest" ./node_modules/.bin/jest --ci
npm_ready "$projects/vitest" && capture vitest "$projects/vitest" ./node_modules/.bin/vitest run
npm_ready "$projects/tsc" && capture tsc "$projects/tsc" ./node_modules/.bin/tsc -p . --pretty false
npm_ready "$projects/tsc" && capture tsc_pretty "$projects/tsc" ./node_modules/.bin/tsc -p . --pretty true
npm_ready "$projects/eslint" && capture eslint "$projects/eslint" ./node_modules/.bin/eslint src
# Durations and absolute paths vary from run to run and machine to
# machine; the extractors ignore them, but stable captures diff cleanly.
for f in "$out"/*.txt; do
	sed -i -e "s#$projects/##g" -e 's/[0-9][0-9.]* *m\?s\b/0.01s/g' "$f"
done
