#!/bin/sh
# A stand-in for a real fixer (a person's script, a code-mod, an agent): it
# knows how to fix each of the three bugs and fixes only the one error
# tenax gives it. tenax passes the error as JSON on stdin and in TENAX_ERROR_*
# variables; the fixer edits the files in its working directory.
set -eu
echo "fixing $TENAX_ERROR_NAME (attempt $TENAX_ERROR_ATTEMPT): $TENAX_ERROR_MESSAGE" >&2
case "$TENAX_ERROR_NAME" in
TestAdd) sed -i.bak 's/return a - b/return a + b/' calc.go ;;
TestMax) sed -i.bak 's/if a < b {/if a > b {/' calc.go ;;
TestShout) sed -i.bak 's/strings.ToLower(s)/strings.ToUpper(s)/' calc.go ;;
*) echo "no fix known for $TENAX_ERROR_NAME" >&2; exit 1 ;;
esac
rm -f calc.go.bak
echo "fixed $TENAX_ERROR_NAME in calc.go"
