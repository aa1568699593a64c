#!/bin/sh
# A validator command for the tests: it rejects any output that holds the
# word "bad", naming the line, as a linter would.
line=0
status=0
while IFS= read -r text || [ -n "$text" ]; do
	line=$((line + 1))
	case $text in
	*bad*)
		echo "check.sh: line $line: found \"bad\"" >&2
		status=3
		;;
	esac
done
exit $status
