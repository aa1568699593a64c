#!/bin/sh
# run.sh copies this example into a fresh git repository in a temporary
# directory (tenax fix edits files and wants a clean git tree), and runs
# `tenax fix` on it there. From the repository's root:
#   sh examples/fix/run.sh
set -eu
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
work=$(mktemp -d)
cp "$here"/go.mod "$here"/calc.go "$here"/calc_test.go "$here"/fixer.sh "$here"/fix.yaml "$work"/
cd "$work"
printf '.tenax/\n' >.gitignore
git init -q
git add -A
git -c user.name=tenax-example -c user.email=example@tenax.invalid commit -qm "the broken calculator"
echo "example copied to $work"
mkdir -p .tenax
(cd "$repo" && go build -o "$work/.tenax/tenax" ./cmd/tenax)
status=0
.tenax/tenax fix fix.yaml || status=$?
echo
.tenax/tenax status "$(ls .tenax/fixes | grep '^fix_' | tail -n 1)"
echo "exit status of tenax fix: $status (the work directory stays in $work)"
exit $status
